import type { CatalogSnapshot } from '../../catalog/snapshot.js';

/** A dated snapshot (`-20250929`, or Vertex's `@20250929`) or a `-latest` alias, at the end of a model name. */
const VERSION_SUFFIX = /(?:[-@]\d{8}|-latest)$/;

/**
 * The catalog id for a model as Anthropic's clients name it: a catalog id as it is; else the
 * vendor's own name (`claude-sonnet-4-5` is `anthropic/claude-sonnet-4-5`), also with a dated
 * snapshot or `-latest` after it (the catalog serves each model at its vendor's current snapshot).
 * A name that matches nothing comes back as sent, for the pipeline's 404.
 */
export function catalogModelId(name: string, catalog: CatalogSnapshot): string {
  if (catalog.get(name)) return name;
  const base = name.replace(VERSION_SUFFIX, '');
  for (const candidate of base === name ? [name] : [name, base]) {
    const model = catalog.get(`anthropic/${candidate}`) ?? catalog.byVendorName(candidate) ?? (candidate !== name ? catalog.get(candidate) : undefined);
    if (model) return model.id;
  }
  return name;
}
