// The Anthropic Message object, rendered from the chat.completion a non-Anthropic family made. Pure.
import { createHash, type Hash } from 'node:crypto';
import type { ContentBlock, Message, StopReason, Usage } from '@anthropic-ai/sdk/resources/messages';
import type { NormalizedUsage } from '../../providers/usage.js';

/** What a Message says about its call, fixed before the upstream answers. */
export interface MessageMeta {
  /** `msg_...` */
  readonly id: string;
  /** The model as the caller named it. */
  readonly model: string;
  /** The call's charge for a usage in USD (`usage.cost`, as chat answers carry it); absent: no `cost` rendered. */
  readonly costOf?: (usage: NormalizedUsage) => number;
}

/** The Message id of a call: `msg_` and the call id's hex. */
export const messageIdOf = (callId: string): string => `msg_${callId.replaceAll('-', '')}`;

/** The four token counts of Anthropic's `usage`, and the gateway's `cost` (USD) once the call is settled. */
export type AnthropicUsage = Pick<Usage, 'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'> & { cost?: number };

/**
 * The gateway's usage in Anthropic's fields, the inverse of readAnthropicUsage
 * (src/providers/anthropic/answer.ts): Anthropic's `input_tokens` leaves out cache reads and writes,
 * which the gateway's `promptTokens` includes. `cost` when given (the SDKs ignore fields they do not know).
 */
export function anthropicUsage(usage: NormalizedUsage, cost?: number): AnthropicUsage {
  const rendered: AnthropicUsage = {
    input_tokens: Math.max(0, usage.promptTokens - usage.cachedTokens - usage.cacheWriteTokens),
    output_tokens: usage.completionTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedTokens,
  };
  if (cost !== undefined) rendered.cost = cost;
  return rendered;
}

/**
 * A chat finish reason as Anthropic's `stop_reason`. A chat `stop` covers both the natural end and a
 * stop sequence (the vendors do not say which), so it is `end_turn`, with
 * `stop_sequence` null; a content filter is a `refusal`.
 */
export function stopReasonOf(finishReason: unknown, hasToolCalls: boolean): StopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'content_filter') return 'refusal';
  if (finishReason === 'tool_calls' || finishReason === 'function_call' || hasToolCalls) return 'tool_use';
  return 'end_turn';
}

/**
 * The `signature` of a thinking block from a non-Anthropic model. Anthropic signs thinking so it can
 * be sent back; these models have no signature, so the gateway makes an opaque deterministic one
 * (a hash of the message id, the block's index and its text). It is never verified: thinking blocks
 * sent back are dropped for these models (see to-chat.ts), but clients such as Claude Code send
 * them back and need a signature to hold.
 */
export class ThinkingSignature {
  private readonly hash: Hash;

  constructor(messageId: string, index: number) {
    this.hash = createHash('sha256').update(`${messageId}\0${index}\0`);
  }

  add(thinking: string): void {
    this.hash.update(thinking);
  }

  digest(): string {
    return `gw1_${this.hash.digest('base64url')}`;
  }
}

export function thinkingSignature(messageId: string, index: number, thinking: string): string {
  const signature = new ThinkingSignature(messageId, index);
  signature.add(thinking);
  return signature.digest();
}

/** A tool call's arguments as the `input` object (`{}` for arguments that are not a JSON object: Anthropic's input is always one). */
export function toolInputOf(args: unknown): Record<string, unknown> {
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed = JSON.parse(args) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

interface CompletionChoice {
  message?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown; tool_calls?: unknown };
  finish_reason?: unknown;
}

/**
 * A finished chat.completion body (the family's rendering) as the Anthropic Message JSON: thinking
 * first (with its signature), then the text, then one `tool_use` block per tool call.
 */
export function messageFromCompletion(completionJson: string, usage: NormalizedUsage, meta: MessageMeta): string {
  const completion = JSON.parse(completionJson) as { choices?: CompletionChoice[] };
  const choice = completion.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const content: ContentBlock[] = [];
  const reasoning = typeof message.reasoning_content === 'string' ? message.reasoning_content : typeof message.reasoning === 'string' ? message.reasoning : '';
  if (reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: thinkingSignature(meta.id, content.length, reasoning) });
  if (typeof message.content === 'string' && message.content !== '') content.push({ type: 'text', text: message.content, citations: null });
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) : [];
  calls.forEach((call, n) => {
    content.push({
      type: 'tool_use', id: typeof call.id === 'string' && call.id !== '' ? call.id : toolUseIdOf(meta, n),
      name: String(call.function?.name ?? ''), input: toolInputOf(call.function?.arguments),
    });
  });
  const rendered: Omit<Message, 'usage'> & { usage: AnthropicUsage } = {
    id: meta.id,
    type: 'message',
    role: 'assistant',
    model: meta.model,
    content,
    stop_reason: stopReasonOf(choice.finish_reason, calls.length > 0),
    stop_sequence: null,
    usage: anthropicUsage(usage, meta.costOf?.(usage)),
  };
  return JSON.stringify(rendered);
}

/** The id of a tool call the upstream gave none (`toolu_<message hex>_<n>`). */
export const toolUseIdOf = (meta: MessageMeta, n: number): string => `toolu_${meta.id.replace(/^msg_/, '')}_${n}`;
