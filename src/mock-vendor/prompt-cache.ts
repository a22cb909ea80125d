// A vendor's prompt cache, as the gateway's tests need it: a prompt seen before within the cache's
// lifetime, under the same partition (a `prompt_cache_key`, or nothing), is read from cache in
// 128-token blocks once it reaches the vendor's 1,024-token minimum.
import { createHash } from 'node:crypto';

const MIN_TOKENS = 1024;
const BLOCK_TOKENS = 128;
const TTL_MS = 5 * 60_000;
const MAX_ENTRIES = 10_000;

const seen = new Map<string, number>();

/** Tokens of `prompt` read from cache under `partition`; remembers the prompt for the next call. */
export function cachedPromptTokens(partition: string, prompt: string, promptTokens: number): number {
  if (promptTokens < MIN_TOKENS) return 0;
  const key = createHash('sha256').update(partition).update('\0').update(prompt).digest('base64');
  const now = Date.now();
  const hit = (seen.get(key) ?? 0) > now;
  if (seen.size >= MAX_ENTRIES) seen.clear();
  seen.set(key, now + TTL_MS);
  return hit ? Math.floor(promptTokens / BLOCK_TOKENS) * BLOCK_TOKENS : 0;
}
