// Small numeric helpers for the report.

/** Nearest-rank percentile (p in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = Float64Array.from(samples).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Rounds for the JSON report (3 decimals: microseconds when the unit is ms). */
export function round(value: number, decimals = 3): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

export const nsToMs = (ns: bigint | number): number => Number(ns) / 1e6;

export function ratio(numerator: number, denominator: number): number {
  return denominator > 0 ? round(numerator / denominator, 4) : NaN;
}

/** The spread of per-round figures: median, mean, its standard error, min and max (what one round's noise is). */
export function spread(values: readonly number[], decimals = 2): Record<string, number> {
  const n = values.length;
  const mean = values.reduce((sum, v) => sum + v, 0) / n;
  const variance = n > 1 ? values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1) : NaN;
  return {
    median: round(percentile(values, 50), decimals), mean: round(mean, decimals), stderr: round(Math.sqrt(variance / n), decimals),
    min: round(Math.min(...values), decimals), max: round(Math.max(...values), decimals),
  };
}
