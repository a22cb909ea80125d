/**
 * The pricing record of the catalog API, from `model_prices` rows (integer nano-USD per one million
 * units). Pure: the units of each component, the tier grammar and exact decimal formatting.
 */

/** What one unit of each price component is. A component not listed here is refused by the sync. */
export const COMPONENT_UNITS: Readonly<Record<string, string>> = Object.freeze({
  input_token: 'token',
  cached_input_token: 'token',
  cache_write_token: 'token',
  output_token: 'token',
  audio_output_token: 'token',
  image: 'image',
  input_image: 'image',
  reference_image: 'image',
  video_second: 'second',
  video: 'video',
  audio: 'video',
  audio_character: 'character',
  audio_second: 'second',
  request: 'request',
});

/** `''`, `prompt>N` (long-context: the whole call when the prompt passes N tokens) or `k=v,k=v` in key order. */
const TIER = /^(?:|prompt>\d+|[a-z_]+=[A-Za-z0-9.*_-]+(?:,[a-z_]+=[A-Za-z0-9.*_-]+)*)$/;

export function checkTier(tier: string): void {
  if (!TIER.test(tier)) throw new Error(`bad price tier: '${tier}'`);
  if (tier.includes('=')) {
    const keys = tier.split(',').map((pair) => pair.split('=')[0]!);
    if ([...keys].sort().join() !== keys.join() || new Set(keys).size !== keys.length) throw new Error(`price tier keys must be sorted and unique: '${tier}'`);
  }
}

/** The conditions of a tier as an object: `{}` for the base tier, `{prompt_tokens_above: N}`, or the key=value pairs. */
export function tierConditions(tier: string): Record<string, string | number> {
  if (tier === '') return {};
  const long = /^prompt>(\d+)$/.exec(tier);
  if (long) return { prompt_tokens_above: Number(long[1]) };
  return Object.fromEntries(tier.split(',').map((pair) => pair.split('=') as [string, string]));
}

/** `value / 10^decimals` as an exact decimal string, trailing zeros trimmed: (75_000_000n, 9) -> "0.075". */
export function scaledDecimal(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

export interface PriceRow {
  readonly component: string;
  readonly tier: string;
  readonly nano_usd_per_million: bigint;
  readonly list_nano_usd_per_million: bigint | null;
  readonly confidence: string;
}

export interface PriceLine {
  component: string;
  unit: string;
  tier: string;
  conditions: Record<string, string | number>;
  usd_per_unit: string;
  usd_per_million: string;
  list_usd_per_unit?: string;
  confidence: string;
}

/** One API price line: USD per unit and per million units, exact decimal strings. */
export function priceLine(row: PriceRow): PriceLine {
  const line: PriceLine = {
    component: row.component,
    unit: COMPONENT_UNITS[row.component] ?? 'unit',
    tier: row.tier,
    conditions: tierConditions(row.tier),
    usd_per_unit: scaledDecimal(row.nano_usd_per_million, 15),
    usd_per_million: scaledDecimal(row.nano_usd_per_million, 9),
    confidence: row.confidence,
  };
  if (row.list_nano_usd_per_million !== null && row.list_nano_usd_per_million !== row.nano_usd_per_million) {
    line.list_usd_per_unit = scaledDecimal(row.list_nano_usd_per_million, 15);
  }
  return line;
}

const COMPONENT_ORDER = Object.keys(COMPONENT_UNITS);

/** Stable order: by component (as listed above), then base tier first, then tier text. */
export function comparePriceRows(a: PriceRow, b: PriceRow): number {
  return COMPONENT_ORDER.indexOf(a.component) - COMPONENT_ORDER.indexOf(b.component)
    || (a.tier === '' ? -1 : 0) - (b.tier === '' ? -1 : 0)
    || (a.tier < b.tier ? -1 : a.tier > b.tier ? 1 : 0);
}
