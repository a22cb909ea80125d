import type { ChatMessage } from '../http/schemas/chat.js';

type CountTokens = (text: string) => number;
let counter: Promise<CountTokens> | undefined;

/** The o200k_base tokenizer, loaded on first use (its tables are large and only aborted streams need it). */
function tokenizer(): Promise<CountTokens> {
  counter ??= import('gpt-tokenizer').then((module) => module.countTokens as CountTokens);
  return counter;
}

/** Tokens an image part is counted at when the upstream reported no usage (the low-detail floor). */
export const IMAGE_PART_TOKENS = 85;

/** Prompt tokens by OpenAI's documented scheme: 3 per message, its text, 1 for a name, 3 to prime the reply. */
export async function countPromptTokens(messages: readonly ChatMessage[]): Promise<number> {
  const count = await tokenizer();
  let total = 3;
  for (const message of messages) {
    total += 3;
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') total += count(content);
    else if (Array.isArray(content)) {
      for (const part of content) total += part.type === 'text' ? count(part.text) : IMAGE_PART_TOKENS;
    }
    if (typeof (message as { name?: unknown }).name === 'string') total += 1;
    const toolCalls = (message as { tool_calls?: { function: { name: string; arguments: string } }[] }).tool_calls;
    for (const call of toolCalls ?? []) total += count(call.function.name) + count(call.function.arguments);
  }
  return total;
}

export async function countTextTokens(text: string): Promise<number> {
  return text ? (await tokenizer())(text) : 0;
}
