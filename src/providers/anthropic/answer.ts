import type { Message, MessageDeltaUsage, StopReason, Usage } from '@anthropic-ai/sdk/resources/messages';
import type { AnswerOptions, FinishedCompletion } from '../family.js';
import { renderUsage, type NormalizedUsage } from '../usage.js';
import { JSON_RESPONSE_TOOL } from './request.js';

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/**
 * Anthropic usage as the gateway counts it: `input_tokens` excludes cache reads and writes, our
 * `promptTokens` includes both. Anthropic does not report thinking tokens apart from output.
 */
export function readAnthropicUsage(usage: Partial<Usage | MessageDeltaUsage> | undefined | null): NormalizedUsage | undefined {
  if (typeof usage !== 'object' || usage === null || typeof usage.output_tokens !== 'number') return undefined;
  const reads = count(usage.cache_read_input_tokens);
  const writes = count(usage.cache_creation_input_tokens);
  return { promptTokens: count(usage.input_tokens) + reads + writes, completionTokens: count(usage.output_tokens), cachedTokens: reads, cacheWriteTokens: writes, reasoningTokens: 0 };
}

/** `message_delta` usage is cumulative and may repeat or update the input counts of `message_start`. */
export function mergeUsage(start: Partial<Usage>, delta: Partial<MessageDeltaUsage> | undefined): Partial<Usage> {
  const merged: Record<string, unknown> = { ...start };
  for (const [key, value] of Object.entries(delta ?? {})) if (value != null) merged[key] = value;
  return merged as Partial<Usage>;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** A forced JSON-response tool call is the answer, so it finishes as `stop`. */
export function finishReason(reason: StopReason | (string & {}) | null | undefined, jsonResponse: boolean): FinishReason {
  switch (reason) {
    case 'max_tokens':
    case 'model_context_window_exceeded': return 'length';
    case 'tool_use': return jsonResponse ? 'stop' : 'tool_calls';
    case 'refusal': return 'content_filter';
    default: return 'stop'; // end_turn, stop_sequence, pause_turn
  }
}

/** A Messages API answer as a chat.completion (`model` the gateway's id). Throws on a body that is not a message. */
export function finishAnthropicMessage(upstreamText: string, modelId: string, options: AnswerOptions): FinishedCompletion {
  const message = JSON.parse(upstreamText) as Message;
  if (typeof message !== 'object' || message === null || message.type !== 'message' || !Array.isArray(message.content)) throw new Error('not an Anthropic message');
  let content = '';
  let reasoning = '';
  let jsonResponse = false;
  const toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = [];
  for (const block of message.content) {
    if (block.type === 'text') content += block.text;
    else if (block.type === 'thinking') reasoning += block.thinking;
    else if (block.type === 'tool_use') {
      const args = JSON.stringify(block.input ?? {});
      if (block.name === JSON_RESPONSE_TOOL) {
        jsonResponse = true;
        content += args;
      } else toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: args } });
    }
  }
  const usage = readAnthropicUsage(message.usage);
  const reply: Record<string, unknown> = { role: 'assistant', content: content === '' && toolCalls.length > 0 ? null : content };
  if (reasoning !== '' && options.includeReasoning) reply.reasoning_content = reasoning;
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  const completion: Record<string, unknown> = {
    id: options.id,
    object: 'chat.completion',
    created: options.created,
    model: modelId,
    choices: [{ index: 0, message: reply, logprobs: null, finish_reason: finishReason(message.stop_reason, jsonResponse) }],
  };
  if (usage) completion.usage = renderUsage(usage, options.costOf?.(usage));
  const generated = reasoning + content + toolCalls.map((call) => call.function.name + call.function.arguments).join('');
  return { body: JSON.stringify(completion), usage, generated };
}
