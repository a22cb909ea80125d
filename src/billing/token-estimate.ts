import type { Family } from '../catalog/model.js';
import type { ChatRequest } from '../http/schemas/chat.js';
import { countTexts, promptTexts } from './token-count.js';
import { CountCache } from './count-cache.js';

/** Texts of 256 characters and more are remembered (a system prompt), up to 8 Mi characters on each HTTP thread. */
const cache = new CountCache(8 * 1024 * 1024, 256);

/**
 * What a family's vendor reports for a prompt, over its o200k count, at most: the safety factor
 * its text tokens are reserved at. Measured against the mock vendor's reported counts for a corpus
 * of prompts (prose, code, JSON, non-Latin scripts, tool calls and results, system prompts:
 * test/token-estimate.test.ts) and rounded up; docs/money.md "Token budgets" gives the figures.
 */
export const FAMILY_TOKEN_FACTORS: Readonly<Record<Family, number>> = Object.freeze({
  openai: 1,
  anthropic: 1,
  gemini: 1,
});

/**
 * A tight estimate of a chat prompt's tokens, for a key with a token budget: its texts, tool
 * definitions and response format counted with the o200k tokenizer (in the counting worker: the
 * tokenizer is too slow for an HTTP thread) and scaled by the family's factor, OpenAI's fixed tokens
 * per message, and each image part at `imageTokens` (the model's worst image cost). The counts of
 * `userId`'s long texts are remembered (see CountCache).
 */
export async function promptTokenEstimate(userId: string, request: ChatRequest, family: Family, imageTokens: number): Promise<number> {
  const { texts, fixedTokens } = promptTexts(request.messages, imageTokens);
  for (const message of request.messages) {
    // Fields a message carries beyond its role, content and tool calls pass upstream as they are
    // (a vendor may read them as prompt text): counted as their JSON.
    const { role: _role, content: _content, tool_calls: _toolCalls, ...rest } = message as Record<string, unknown>;
    if (Object.keys(rest).length > 0) texts.push(JSON.stringify(rest));
  }
  if (request.tools?.length) texts.push(JSON.stringify(request.tools));
  if (request.response_format) texts.push(JSON.stringify(request.response_format));
  let textTokens = 0;
  const uncounted: string[] = [];
  for (const text of texts) {
    const known = text.length >= cache.minChars ? cache.get(userId, text) : undefined;
    if (known === undefined) uncounted.push(text);
    else textTokens += known;
  }
  if (uncounted.length > 0) {
    const counts = await countTexts(uncounted);
    uncounted.forEach((text, i) => {
      const count = counts[i] ?? 0;
      textTokens += count;
      if (text.length >= cache.minChars) cache.set(userId, text, count);
    });
  }
  return fixedTokens + Math.ceil(textTokens * FAMILY_TOKEN_FACTORS[family]);
}
