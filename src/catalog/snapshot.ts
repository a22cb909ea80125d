import type { CatalogModel, EmbeddingModel, MediaModel } from './model.js';

/** An immutable in-memory view of the catalog; a refresh swaps the whole snapshot. */
export class CatalogSnapshot {
  private readonly byId: ReadonlyMap<string, CatalogModel>;
  private readonly mediaById: ReadonlyMap<string, MediaModel>;
  private readonly embeddingById: ReadonlyMap<string, EmbeddingModel>;

  /** Both maps hold current ids and deprecated alias ids alike, mapped to the current model. */
  constructor(chat: ReadonlyMap<string, CatalogModel>, media: ReadonlyMap<string, MediaModel>, embedding: ReadonlyMap<string, EmbeddingModel> = new Map()) {
    this.byId = chat;
    this.mediaById = media;
    this.embeddingById = embedding;
  }
  /** An active chat model by its id or a deprecated alias of it. */
  get(id: string): CatalogModel | undefined {
    return this.byId.get(id);
  }
  /**
   * An active chat model by the name its vendor's own API gives it (`upstream_model`, such as
   * `claude-sonnet-4-5`), when exactly one model of the catalog has that name.
   */
  byVendorName(name: string): CatalogModel | undefined {
    if (!this.vendorNames) {
      const names = new Map<string, CatalogModel | null>();
      for (const model of this.byId.values()) {
        const known = names.get(model.upstreamModel);
        names.set(model.upstreamModel, known === undefined || known === model ? model : null);
      }
      this.vendorNames = names;
    }
    return this.vendorNames.get(name) ?? undefined;
  }
  private vendorNames: Map<string, CatalogModel | null> | undefined;

  /** An active image, video or audio model by its id or a deprecated alias of it. */
  media(id: string): MediaModel | undefined {
    return this.mediaById.get(id);
  }
  /** An active embedding model by its id. */
  embedding(id: string): EmbeddingModel | undefined {
    return this.embeddingById.get(id);
  }
}
