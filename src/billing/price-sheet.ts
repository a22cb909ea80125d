/**
 * The price sheet of one model: its price lines in nano-USD per one million units, with the
 * capabilities that map request parameters onto price tiers (e.g. a video `size` onto its
 * `resolution`). Built from the seed or from stored `model_prices` rows; pure.
 */
import { usdToNano, type PriceSheet, type SheetLine, type TokenPrices } from '../catalog/model.js';
import type { MediaSeed, PriceSeed } from '../catalog/seed/types.js';

export type { PriceSheet, SheetLine };

const SCALE: Readonly<Record<NonNullable<PriceSeed['per']>, bigint>> = { 1: 1_000_000n, 1000: 1_000n, 1000000: 1n };

/** The sheet of a seeded media model: `usd` per `per` units, exactly, as the catalog sync stores it. */
export function priceSheetFromSeed(seed: MediaSeed): PriceSheet {
  return Object.freeze({
    modelId: seed.id,
    capabilities: seed.capabilities,
    lines: Object.freeze(seed.prices.map((price) => {
      const scale = SCALE[price.per ?? 1];
      return Object.freeze({
        component: price.component,
        tier: price.tier ?? '',
        nanoPerMillion: usdToNano(price.usd) * scale,
        listNanoPerMillion: price.listUsd === undefined ? null : usdToNano(price.listUsd) * scale,
      });
    })),
  });
}

/** A stored `model_prices` row (amounts as bigint from the store, or decimal strings from the seed rows). */
export interface StoredPriceRow {
  readonly component: string;
  readonly tier: string;
  readonly nano_usd_per_million: bigint | string;
  readonly list_nano_usd_per_million: bigint | string | null;
}

/** The sheet of a model from its `models` capabilities and its `model_prices` rows. */
export function priceSheetFromRows(modelId: string, capabilities: Readonly<Record<string, unknown>>, rows: readonly StoredPriceRow[]): PriceSheet {
  return Object.freeze({
    modelId,
    capabilities,
    lines: Object.freeze(rows.map((row) => Object.freeze({
      component: row.component,
      tier: row.tier,
      nanoPerMillion: BigInt(row.nano_usd_per_million),
      listNanoPerMillion: row.list_nano_usd_per_million === null ? null : BigInt(row.list_nano_usd_per_million),
    }))),
  });
}

const LONG_CONTEXT_TIER = /^prompt>(\d+)$/;

/**
 * The token prices of a sheet (chat, or token-billed speech): `input_token`, `cached_input_token`,
 * `cache_write_token` and `output_token` (or `audio_output_token`) of the base tier, plus the
 * `prompt>N` long-context tier when present. Without a `cached_input_token` line a cached token is
 * priced as an input token; without a `cache_write_token` line cache writes cost 0 (the vendor has none).
 * The caller checks that the input and output lines exist (`worstCaseNano` refuses a sheet without them).
 */
export function tokenPricesOf(sheet: PriceSheet): TokenPrices {
  const tierPrices = (tier: string) => {
    const price = (...components: string[]) =>
      sheet.lines.find((line) => line.tier === tier && components.includes(line.component))?.nanoPerMillion ?? 0n;
    const input = price('input_token');
    return {
      input,
      cachedInput: sheet.lines.some((l) => l.tier === tier && l.component === 'cached_input_token') ? price('cached_input_token') : input,
      cacheWrite: price('cache_write_token'),
      output: price('output_token', 'audio_output_token'),
    };
  };
  const longTier = sheet.lines.map((line) => LONG_CONTEXT_TIER.exec(line.tier)).find((match) => match !== null);
  const longContext = longTier ? { aboveTokens: Number(longTier[1]), ...tierPrices(longTier[0]) } : undefined;
  return Object.freeze({ ...tierPrices(''), ...(longContext ? { longContext: Object.freeze(longContext) } : {}) });
}
