// Token accounting for the usage object, following OpenAI's documented chat counting scheme
// (as the gateway's own estimator does): per message 3 + tokens(content) (+1 with a name),
// plus 3 for priming the reply.
import { countTokens } from 'gpt-tokenizer';
import { messageText } from './directives.js';

const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING_TOKENS = 3;
const TOKENS_PER_IMAGE = 85;

// Special-token strings such as "<|endoftext|>" in user text are counted as plain text, not rejected.
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

// Benchmarks send the same prompts over and over; BPE is the costly step, so remember counts.
const countCache = new Map<string, number>();
const COUNT_CACHE_LIMIT = 4096;

export function textTokens(text: string): number {
  if (text === '') return 0;
  let count = countCache.get(text);
  if (count === undefined) {
    // countTokens, not encode(...).length: encode spreads a long run's tokens into push(), past the stack.
    count = countTokens(text, PLAIN_TEXT);
    if (countCache.size >= COUNT_CACHE_LIMIT) countCache.clear();
    countCache.set(text, count);
  }
  return count;
}

function imageParts(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  let images = 0;
  for (const part of content) {
    if (part !== null && typeof part === 'object' && (part as { type?: unknown }).type === 'image_url') images++;
  }
  return images;
}

export function promptTokens(messages: readonly unknown[]): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of messages) {
    if (message === null || typeof message !== 'object') continue;
    const { content, name } = message as { content?: unknown; name?: unknown };
    total += TOKENS_PER_MESSAGE + textTokens(messageText(content)) + TOKENS_PER_IMAGE * imageParts(content);
    if (name !== undefined && name !== null) total += TOKENS_PER_NAME;
  }
  return total;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; audio_tokens: number };
  completion_tokens_details: {
    reasoning_tokens: number;
    audio_tokens: number;
    accepted_prediction_tokens: number;
    rejected_prediction_tokens: number;
  };
}

export function buildUsage(prompt: number, reasoning: number, completion: number, cachedRequested: number): Usage {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: Math.min(cachedRequested, prompt), audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}
