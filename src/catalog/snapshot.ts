import type { CatalogModel, MediaModel } from './model.js';

/** An immutable in-memory view of the catalog; a refresh swaps the whole snapshot. */
export class CatalogSnapshot {
  private readonly byId: ReadonlyMap<string, CatalogModel>;
  private readonly mediaById: ReadonlyMap<string, MediaModel>;

  /** Both maps hold current ids and deprecated alias ids alike, mapped to the current model. */
  constructor(chat: ReadonlyMap<string, CatalogModel>, media: ReadonlyMap<string, MediaModel>) {
    this.byId = chat;
    this.mediaById = media;
  }
  /** An active chat model by its id or a deprecated alias of it. */
  get(id: string): CatalogModel | undefined {
    return this.byId.get(id);
  }
  /** An active image, video or audio model by its id or a deprecated alias of it. */
  media(id: string): MediaModel | undefined {
    return this.mediaById.get(id);
  }
}
