import type { AnySql } from './db.js';
import type { CatalogModel, ChatCapabilities, Family, Modality } from '../catalog/model.js';
import { usdToNano } from '../catalog/model.js';
import type { ChatSeed } from '../catalog/seed/chat.js';

const PRICE_COMPONENTS = [
  ['input_token', 'input'],
  ['cached_input_token', 'cachedInput'],
  ['cache_write_token', 'cacheWrite'],
  ['output_token', 'output'],
] as const;

/** Upserts the catalog seed (models and their prices); safe to run on every start. */
export async function syncChatCatalog(sql: AnySql, seeds: readonly ChatSeed[]): Promise<void> {
  for (const seed of seeds) {
    await sql`
      insert into models (id, name, provider, modality, description, tags, family, upstream_vendor, upstream_model, capabilities, is_popular, is_active)
      values (${seed.id}, ${seed.name}, ${seed.provider}, 'chat', ${seed.description}, ${sql.array([...seed.tags])}, ${seed.family},
              ${seed.upstreamVendor}, ${seed.upstreamModel}, ${sql.json(seed.capabilities as never)}, ${seed.isPopular}, true)
      on conflict (id) do update set
        name = excluded.name, provider = excluded.provider, description = excluded.description, tags = excluded.tags,
        family = excluded.family, upstream_vendor = excluded.upstream_vendor, upstream_model = excluded.upstream_model,
        capabilities = excluded.capabilities, is_popular = excluded.is_popular, updated_at = now()
      where (models.name, models.provider, models.description, models.tags, models.family, models.upstream_vendor,
             models.upstream_model, models.capabilities, models.is_popular)
        is distinct from (excluded.name, excluded.provider, excluded.description, excluded.tags, excluded.family,
             excluded.upstream_vendor, excluded.upstream_model, excluded.capabilities, excluded.is_popular)`;
    for (const [component, field] of PRICE_COMPONENTS) {
      await sql`
        insert into model_prices (model_id, component, tier, nano_usd_per_million)
        values (${seed.id}, ${component}, '', ${usdToNano(seed.usdPerMillion[field]).toString()})
        on conflict (model_id, component, tier) do update set nano_usd_per_million = excluded.nano_usd_per_million`;
    }
  }
}

interface ModelRow {
  id: string; name: string; provider: string; modality: Modality; description: string; tags: string[];
  family: Family; upstream_vendor: string; upstream_model: string; capabilities: ChatCapabilities;
  is_popular: boolean; is_active: boolean; prices: Record<string, string> | null;
}

/** Active chat models with their token prices. */
export async function loadChatModels(sql: AnySql): Promise<CatalogModel[]> {
  const rows = await sql<ModelRow[]>`
    select m.id, m.name, m.provider, m.modality, m.description, m.tags, m.family, m.upstream_vendor, m.upstream_model,
           m.capabilities, m.is_popular, m.is_active,
           (select jsonb_object_agg(p.component, p.nano_usd_per_million::text) from model_prices p where p.model_id = m.id and p.tier = '') as prices
    from models m
    where m.modality = 'chat' and m.is_active`;
  return rows.map((row) => {
    const price = (component: string) => BigInt(row.prices?.[component] ?? '0');
    return Object.freeze({
      id: row.id, name: row.name, provider: row.provider, modality: row.modality, description: row.description,
      tags: Object.freeze([...row.tags]), family: row.family, upstreamVendor: row.upstream_vendor, upstreamModel: row.upstream_model,
      capabilities: Object.freeze(row.capabilities), isPopular: row.is_popular, isActive: row.is_active,
      prices: Object.freeze({ input: price('input_token'), cachedInput: price('cached_input_token'), cacheWrite: price('cache_write_token'), output: price('output_token') }),
    });
  });
}
