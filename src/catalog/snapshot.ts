import type { CatalogModel } from './model.js';

/** An immutable in-memory view of the catalog; a refresh swaps the whole snapshot. */
export class CatalogSnapshot {
  private readonly byId: ReadonlyMap<string, CatalogModel>;
  constructor(models: readonly CatalogModel[]) {
    this.byId = new Map(models.map((m) => [m.id, m]));
  }
  get(id: string): CatalogModel | undefined {
    return this.byId.get(id);
  }
  get size(): number {
    return this.byId.size;
  }
}
