import { OnDemandWorkerPool } from '../worker-pool.js';
import type { ChatMessage } from '../http/schemas/chat.js';
import type { CountTokensInput } from '../../workers/count-tokens.js';

// Only calls without upstream usage need it: the worker starts on first use.
const counter = new OnDemandWorkerPool<CountTokensInput, number[]>(new URL('../../workers/count-tokens.js', import.meta.url));

export function closeTokenCounter(): Promise<void> {
  return counter.close();
}

/** Tokens an image part is counted at when the upstream reported no usage (the low-detail floor). */
export const IMAGE_PART_TOKENS = 85;

/** OpenAI's documented prompt scheme: 3 per message, its texts, 1 for a name, 3 to prime the reply. */
export function promptTexts(messages: readonly ChatMessage[]): { texts: string[]; fixedTokens: number } {
  const texts: string[] = [];
  let fixedTokens = 3;
  for (const message of messages) {
    fixedTokens += 3;
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        if (part.type === 'text') texts.push(part.text);
        else fixedTokens += IMAGE_PART_TOKENS;
      }
    }
    if (typeof (message as { name?: unknown }).name === 'string') fixedTokens += 1;
    const toolCalls = (message as { tool_calls?: { function: { name: string; arguments: string } }[] }).tool_calls;
    for (const call of toolCalls ?? []) texts.push(call.function.name, call.function.arguments);
  }
  return { texts, fixedTokens };
}

/** Prompt and completion tokens counted in one trip to the worker. */
export async function countTokens(messages: readonly ChatMessage[], completionText: string): Promise<{ promptTokens: number; completionTokens: number }> {
  const { texts, fixedTokens } = promptTexts(messages);
  const counts = await counter.run({ texts: [completionText, ...texts] });
  const [completionTokens = 0, ...promptCounts] = counts;
  return { promptTokens: fixedTokens + promptCounts.reduce((a, b) => a + b, 0), completionTokens };
}

/** Tokens of each text, counted in the worker (the tokenizer is too slow for an HTTP thread). */
export function countTexts(texts: readonly string[]): Promise<number[]> {
  return counter.run({ texts: [...texts] });
}
