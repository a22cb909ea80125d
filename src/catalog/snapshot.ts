import type { CatalogModel, MediaModel } from './model.js';

/** An immutable in-memory view of the catalog; a refresh swaps the whole snapshot. */
export class CatalogSnapshot {
  private readonly byId: ReadonlyMap<string, CatalogModel>;
  private readonly mediaById: ReadonlyMap<string, MediaModel>;

  /** `media` maps current ids and deprecated alias ids alike to the current model. */
  constructor(models: readonly CatalogModel[], media: ReadonlyMap<string, MediaModel> = new Map()) {
    this.byId = new Map(models.map((m) => [m.id, m]));
    this.mediaById = media;
  }
  get(id: string): CatalogModel | undefined {
    return this.byId.get(id);
  }
  /** An active image, video or audio model by its id or a deprecated alias of it. */
  media(id: string): MediaModel | undefined {
    return this.mediaById.get(id);
  }
  get size(): number {
    return this.byId.size;
  }
}
