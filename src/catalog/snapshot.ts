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
  /** An active image, video or audio model by its id or a deprecated alias of it. */
  media(id: string): MediaModel | undefined {
    return this.mediaById.get(id);
  }
  /** An active embedding model by its id. */
  embedding(id: string): EmbeddingModel | undefined {
    return this.embeddingById.get(id);
  }
}
