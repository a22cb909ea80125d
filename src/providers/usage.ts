/** Token counts of one call, whatever the upstream family called them. */
export interface NormalizedUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens: number;
}

/** No tokens: the usage of a call that failed (nothing charged). */
export const NO_USAGE: NormalizedUsage = Object.freeze({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/** Reads an OpenAI-shaped usage object (also DeepSeek's cache-hit fields and cache-write fields where present). */
export function readOpenAiUsage(usage: unknown): NormalizedUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const u = usage as Record<string, any>;
  if (typeof u.prompt_tokens !== 'number' && typeof u.completion_tokens !== 'number') return undefined;
  const details = (u.prompt_tokens_details ?? {}) as Record<string, unknown>;
  return {
    promptTokens: count(u.prompt_tokens),
    completionTokens: count(u.completion_tokens),
    cachedTokens: count(details.cached_tokens ?? details.cache_read_input_tokens ?? u.prompt_cache_hit_tokens),
    cacheWriteTokens: count(details.cache_creation_input_tokens ?? u.cache_creation_input_tokens),
    reasoningTokens: count(u.completion_tokens_details?.reasoning_tokens),
  };
}

/**
 * The `usage` object as the spec words it: cache details present only when non-zero, and `cost` (USD,
 * what the call is charged: OpenRouter's convention) when the caller knows it.
 */
export function renderUsage(usage: NormalizedUsage, cost?: number): Record<string, unknown> {
  const rendered: Record<string, unknown> = {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
  const promptDetails: Record<string, number> = {};
  if (usage.cachedTokens > 0) {
    promptDetails.cached_tokens = usage.cachedTokens;
    promptDetails.cache_read_input_tokens = usage.cachedTokens;
  }
  if (usage.cacheWriteTokens > 0) promptDetails.cache_creation_input_tokens = usage.cacheWriteTokens;
  if (Object.keys(promptDetails).length > 0) rendered.prompt_tokens_details = promptDetails;
  if (usage.reasoningTokens > 0) rendered.completion_tokens_details = { reasoning_tokens: usage.reasoningTokens };
  if (cost !== undefined) rendered.cost = cost;
  return rendered;
}
