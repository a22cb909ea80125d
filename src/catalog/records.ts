/** The JSON records of the catalog API, from catalog rows. Pure. */
import { comparePriceRows, priceLine, type PriceLine, type PriceRow } from './price-record.js';

export interface EntryLike {
  id: string; name: string; provider: string; modality: string; description: string; tags: string[];
  capabilities: Record<string, unknown>; alias_of: string | null; is_popular: boolean; is_active: boolean;
  status: string; retired_at: string | null; created_at: Date; updated_at: Date;
}

const snake = (key: string) => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** Capabilities are stored camelCase (the chat route reads them so); the API speaks snake_case. Values keep their keys (e.g. sizes). */
function snakeKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [snake(key), inner]));
}

/** A model record: the spec's fields plus lifecycle, alias and capabilities. */
export function modelRecord(row: EntryLike) {
  return {
    id: row.id,
    object: 'model' as const,
    name: row.name,
    provider: row.provider,
    modality: row.modality,
    description: row.description,
    tags: row.tags,
    is_popular: row.is_popular,
    is_active: row.is_active,
    deprecated: row.alias_of !== null || row.status === 'deprecated' || row.status === 'retired',
    alias_of: row.alias_of,
    status: row.status,
    retirement_date: row.retired_at,
    capabilities: snakeKeys(row.capabilities),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface PricingRecord {
  model_id: string;
  priced_as: string;
  modality: string;
  provider: string;
  currency: 'USD';
  prices: PriceLine[];
}

/** The pricing record of a model; an alias is priced as its current model (`priced_as`). */
export function pricingRecord(entry: EntryLike, rows: readonly PriceRow[]): PricingRecord {
  return {
    model_id: entry.id,
    priced_as: entry.alias_of ?? entry.id,
    modality: entry.modality,
    provider: entry.provider,
    currency: 'USD',
    prices: [...rows].sort(comparePriceRows).map(priceLine),
  };
}
