import type { AnySql, Sql } from './db.js';
import type { CatalogModality, CatalogModel, ChatCapabilities, EmbeddingCapabilities, EmbeddingModel, Family, MediaModel } from '../catalog/model.js';
import type { CatalogRows } from '../catalog/seed/index.js';
import { priceSheetFromRows, tokenPricesOf, type StoredPriceRow } from '../billing/price-sheet.js';

const CATALOG_SYNC_LOCK = 72_313_005; // advisory lock id: one catalog sync at a time across processes

/**
 * Writes the catalog seed (models, aliases and their prices) in one transaction: upserts every row,
 * touching `updated_at` only when something changed, and deletes price rows of seeded models that the
 * seed no longer has. Rows of models that left the seed are kept (retire a model by `isActive: false`).
 * Safe to run on every start and from `gateway catalog sync`.
 */
export async function syncCatalog(sql: Sql, rows: CatalogRows): Promise<{ models: number; prices: number }> {
  const models = rows.models.map((row) => ({ ...row, capabilities: row.capabilities }));
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${CATALOG_SYNC_LOCK})`;
    // Aliases come last in the list; the self-reference is checked at the end of the statement.
    await tx`
      insert into models (id, name, provider, modality, description, tags, family, upstream_vendor, upstream_model, capabilities,
                          alias_of, is_popular, is_active, status, retired_at, source)
      select r.id, r.name, r.provider, r.modality, r.description, r.tags, r.family, r.upstream_vendor, r.upstream_model, r.capabilities,
             r.alias_of, r.is_popular, r.is_active, r.status, r.retired_at, r.source
      from jsonb_to_recordset(${tx.json(models as never)}) as r(
        id text, name text, provider text, modality text, description text, tags text[], family text, upstream_vendor text,
        upstream_model text, capabilities jsonb, alias_of text, is_popular boolean, is_active boolean, status text, retired_at date, source text)
      on conflict (id) do update set
        name = excluded.name, provider = excluded.provider, modality = excluded.modality, description = excluded.description,
        tags = excluded.tags, family = excluded.family, upstream_vendor = excluded.upstream_vendor, upstream_model = excluded.upstream_model,
        capabilities = excluded.capabilities, alias_of = excluded.alias_of, is_popular = excluded.is_popular, is_active = excluded.is_active,
        status = excluded.status, retired_at = excluded.retired_at, source = excluded.source, updated_at = now()
      where (models.name, models.provider, models.modality, models.description, models.tags, models.family, models.upstream_vendor,
             models.upstream_model, models.capabilities, models.alias_of, models.is_popular, models.is_active, models.status,
             models.retired_at, models.source)
        is distinct from (excluded.name, excluded.provider, excluded.modality, excluded.description, excluded.tags, excluded.family,
             excluded.upstream_vendor, excluded.upstream_model, excluded.capabilities, excluded.alias_of, excluded.is_popular,
             excluded.is_active, excluded.status, excluded.retired_at, excluded.source)`;
    const prices = tx.json(rows.prices as never);
    await tx`
      insert into model_prices (model_id, component, tier, nano_usd_per_million, list_nano_usd_per_million, confidence)
      select r.model_id, r.component, r.tier, r.nano_usd_per_million, r.list_nano_usd_per_million, r.confidence
      from jsonb_to_recordset(${prices}) as r(model_id text, component text, tier text, nano_usd_per_million bigint,
                                              list_nano_usd_per_million bigint, confidence text)
      on conflict (model_id, component, tier) do update set
        nano_usd_per_million = excluded.nano_usd_per_million, list_nano_usd_per_million = excluded.list_nano_usd_per_million,
        confidence = excluded.confidence
      where (model_prices.nano_usd_per_million, model_prices.list_nano_usd_per_million, model_prices.confidence)
        is distinct from (excluded.nano_usd_per_million, excluded.list_nano_usd_per_million, excluded.confidence)`;
    // A tier or component the seed no longer has must not keep pricing calls.
    await tx`
      delete from model_prices p
      where p.model_id = any(${tx.array(rows.models.map((m) => m.id))})
        and not exists (
          select 1 from jsonb_to_recordset(${prices}) as r(model_id text, component text, tier text)
          where r.model_id = p.model_id and r.component = p.component and r.tier = p.tier)`;
  });
  return { models: rows.models.length, prices: rows.prices.length };
}

interface ModelRow {
  id: string; name: string; provider: string; modality: CatalogModality; description: string; tags: string[];
  family: Family; upstream_vendor: string; upstream_model: string; capabilities: ChatCapabilities;
  is_popular: boolean; is_active: boolean; prices: StoredPriceRow[] | null;
}

/**
 * The active models as calls name them, in one query: chat models with their token prices and image,
 * video and audio models with their price sheets, each by id and by every deprecated
 * `<task>_generate.<name>` alias that points at it (a call naming an alias is served, priced and
 * answered as the model).
 */
export interface CallableModels {
  chat: Map<string, CatalogModel>;
  media: Map<string, MediaModel>;
  embedding: Map<string, EmbeddingModel>;
}

export async function loadCallableModels(sql: AnySql): Promise<CallableModels> {
  const rows = await sql<(ModelRow & { alias_of: string | null })[]>`
    select m.id, m.name, m.provider, m.modality, m.description, m.tags, m.family, m.upstream_vendor, m.upstream_model,
           m.capabilities, m.is_popular, m.is_active, m.alias_of,
           (select jsonb_agg(jsonb_build_object('component', p.component, 'tier', p.tier,
                     'nano_usd_per_million', p.nano_usd_per_million::text, 'list_nano_usd_per_million', p.list_nano_usd_per_million::text))
            from model_prices p where p.model_id = m.id) as prices
    from models m
    where m.is_active`;
  const chat = new Map<string, CatalogModel>();
  const media = new Map<string, MediaModel>();
  const embedding = new Map<string, EmbeddingModel>();
  for (const row of rows) {
    if (row.alias_of !== null) continue;
    const capabilities = Object.freeze(row.capabilities as unknown as Record<string, unknown>);
    const sheet = priceSheetFromRows(row.id, capabilities, row.prices ?? []);
    const common = { id: row.id, name: row.name, provider: row.provider, family: row.family, upstreamVendor: row.upstream_vendor, upstreamModel: row.upstream_model };
    if (row.modality === 'chat') {
      chat.set(row.id, Object.freeze({
        ...common, modality: 'chat', description: row.description, tags: Object.freeze([...row.tags]),
        capabilities: capabilities as unknown as ChatCapabilities, isPopular: row.is_popular, isActive: row.is_active,
        prices: tokenPricesOf(sheet),
      }));
    } else if (row.modality === 'embedding') {
      embedding.set(row.id, Object.freeze({ ...common, modality: 'embedding', capabilities: capabilities as unknown as EmbeddingCapabilities, prices: tokenPricesOf(sheet) }));
    } else {
      media.set(row.id, Object.freeze({ ...common, modality: row.modality, capabilities, sheet }));
    }
  }
  for (const row of rows) {
    if (row.alias_of === null) continue;
    const chatTarget = chat.get(row.alias_of);
    if (chatTarget) chat.set(row.id, chatTarget);
    const mediaTarget = media.get(row.alias_of);
    if (mediaTarget) media.set(row.id, mediaTarget);
  }
  return { chat, media, embedding };
}

/** A catalog entry as the catalog API reads it. */
export interface CatalogEntryRow {
  id: string; name: string; provider: string; modality: CatalogModality; description: string; tags: string[];
  capabilities: Record<string, unknown>; alias_of: string | null; is_popular: boolean; is_active: boolean;
  status: string; retired_at: string | null; created_at: Date; updated_at: Date;
}

export interface ModelListFilter {
  readonly tasks: readonly string[];
  readonly providers: readonly string[];
  /** A `to_tsquery('english', …)` text, or null for no search. */
  readonly tsquery: string | null;
  readonly includeInactive: boolean;
}

const ENTRY_COLUMNS = (sql: AnySql) => sql`
  m.id, m.name, m.provider, m.modality, m.description, m.tags, m.capabilities, m.alias_of, m.is_popular, m.is_active,
  m.status, m.retired_at::text as retired_at, m.created_at, m.updated_at`;

function listWhere(sql: AnySql, filter: ModelListFilter) {
  return sql`
    where true
    ${filter.includeInactive ? sql`` : sql`and m.is_active`}
    ${filter.tasks.length ? sql`and m.modality = any(${sql.array([...filter.tasks])})` : sql``}
    ${filter.providers.length ? sql`and m.provider = any(${sql.array([...filter.providers])})` : sql``}
    ${filter.tsquery !== null ? sql`and m.search @@ to_tsquery('english', ${filter.tsquery})` : sql``}`;
}

/**
 * One page of the catalog and the total count. Order: active before inactive, current ids before
 * deprecated aliases, then search rank (when searching), popular first, provider, name.
 */
export async function listModels(sql: AnySql, filter: ModelListFilter, offset: number, limit: number): Promise<{ rows: CatalogEntryRow[]; total: number }> {
  const rank = filter.tsquery !== null ? sql`ts_rank(m.search, to_tsquery('english', ${filter.tsquery})) desc,` : sql``;
  const [rows, [count]] = await Promise.all([
    sql<CatalogEntryRow[]>`
      select ${ENTRY_COLUMNS(sql)} from models m ${listWhere(sql, filter)}
      order by m.is_active desc, (m.alias_of is null) desc, ${rank} m.is_popular desc, m.provider, m.name, m.id
      limit ${limit} offset ${offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from models m ${listWhere(sql, filter)}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}

export async function getModelEntry(sql: AnySql, id: string): Promise<CatalogEntryRow | undefined> {
  const [row] = await sql<CatalogEntryRow[]>`select ${ENTRY_COLUMNS(sql)} from models m where m.id = ${id}`;
  return row;
}

/** Active, popular current models (no aliases). */
export async function popularModels(sql: AnySql): Promise<CatalogEntryRow[]> {
  return sql<CatalogEntryRow[]>`
    select ${ENTRY_COLUMNS(sql)} from models m
    where m.is_active and m.is_popular and m.alias_of is null
    order by array_position(array['chat', 'image', 'video', 'audio', 'embedding'], m.modality), m.provider, m.name`;
}

/** Active current models (no aliases), for `/v1/models`. */
export async function activeModels(sql: AnySql): Promise<CatalogEntryRow[]> {
  return sql<CatalogEntryRow[]>`
    select ${ENTRY_COLUMNS(sql)} from models m
    where m.is_active and m.alias_of is null
    order by m.provider, m.name, m.id`;
}

export interface ModelPriceRow {
  model_id: string; component: string; tier: string; nano_usd_per_million: bigint; list_nano_usd_per_million: bigint | null; confidence: string;
}

export async function pricesOf(sql: AnySql, modelIds: readonly string[]): Promise<ModelPriceRow[]> {
  if (modelIds.length === 0) return [];
  return sql<ModelPriceRow[]>`
    select model_id, component, tier, nano_usd_per_million, list_nano_usd_per_million, confidence
    from model_prices where model_id = any(${sql.array([...modelIds])})`;
}
