import type { TokenPrices } from '../catalog/model.js';

const PER_MILLION = 1_000_000n;

export interface TokenUsage {
  /** All prompt tokens, cached ones and cache writes included (the OpenAI convention). */
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly cacheWriteTokens: number;
  /** All generated tokens, reasoning included. */
  readonly completionTokens: number;
}

/** Integer division rounding half up (both operands non-negative). */
function divideRounded(numerator: bigint, denominator: bigint): bigint {
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/**
 * Actual cost in nano-USD: uncached input at the input price, cache reads and writes at their
 * prices, output at the output price; exact in nano-USD per million, rounded half up once per call.
 */
export function tokenCostNano(tiers: TokenPrices, usage: TokenUsage): bigint {
  const long = tiers.longContext;
  const prices = long && usage.promptTokens > long.aboveTokens ? long : tiers;
  const cached = BigInt(Math.max(0, usage.cachedTokens));
  const writes = BigInt(Math.max(0, usage.cacheWriteTokens));
  const uncached = BigInt(Math.max(0, usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens));
  const total = uncached * prices.input + cached * prices.cachedInput + writes * prices.cacheWrite +
    BigInt(Math.max(0, usage.completionTokens)) * prices.output;
  return divideRounded(total, PER_MILLION);
}

/**
 * Worst-case cost reserved before the call: every input token at the dearest input rate and the
 * full output allowance, rounded up. Never below what `tokenCostNano` can charge for the same bounds.
 */
export function worstCaseCostNano(tiers: TokenPrices, maxInputTokens: number, maxOutputTokens: number): bigint {
  const long = tiers.longContext;
  // The long-context tier is the dearer one: it applies as soon as the prompt may pass its threshold.
  const prices = long && maxInputTokens > long.aboveTokens ? long : tiers;
  const inputRate = [prices.input, prices.cachedInput, prices.cacheWrite].reduce((a, b) => (b > a ? b : a));
  const total = BigInt(maxInputTokens) * inputRate + BigInt(maxOutputTokens) * prices.output;
  return (total + PER_MILLION - 1n) / PER_MILLION;
}

/** nano-USD -> USD number for the API edge. */
export function nanoToUsd(nano: bigint | number): number {
  return Number(nano) / 1e9;
}
