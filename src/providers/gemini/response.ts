import { randomBytes } from 'node:crypto';
import type { CatalogModel } from '../../catalog/model.js';
import type { AnswerOptions, FinishedCompletion } from '../family.js';
import { renderUsage, type NormalizedUsage } from '../usage.js';
import type { GeminiCandidate, GeminiPart, GeminiResponse, GeminiUsageMetadata } from './wire.js';

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION']);

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/**
 * Gemini's usageMetadata as normalized usage: the prompt includes cached tokens (and any tool-use
 * prompt), the completion is the answer plus the thoughts, which Gemini bills as output.
 */
export function readGeminiUsage(usage: GeminiUsageMetadata | undefined): NormalizedUsage | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  if (typeof usage.promptTokenCount !== 'number' && typeof usage.candidatesTokenCount !== 'number') return undefined;
  const thoughts = count(usage.thoughtsTokenCount);
  return {
    promptTokens: count(usage.promptTokenCount) + count(usage.toolUsePromptTokenCount),
    completionTokens: count(usage.candidatesTokenCount) + thoughts,
    cachedTokens: count(usage.cachedContentTokenCount),
    cacheWriteTokens: 0,
    reasoningTokens: thoughts,
  };
}

/** STOP (or a turn that called functions) -> stop/tool_calls, MAX_TOKENS -> length, safety-like -> content_filter, anything else -> stop. */
export function finishReasonOf(reason: string | undefined, calledFunctions: boolean): FinishReason {
  if (reason === 'MAX_TOKENS') return 'length';
  if (reason !== undefined && FILTERED.has(reason)) return 'content_filter';
  return calledFunctions ? 'tool_calls' : 'stop';
}

export const toolCallId = () => `call_${randomBytes(12).toString('base64url')}`;

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One candidate's parts, sorted into the answer, the thoughts and the function calls. */
export interface CandidateParts {
  text: string;
  thoughts: string;
  calls: OpenAiToolCall[];
}

export function readParts(parts: readonly GeminiPart[] | undefined): CandidateParts {
  const read: CandidateParts = { text: '', thoughts: '', calls: [] };
  for (const part of Array.isArray(parts) ? parts : []) {
    if (typeof part !== 'object' || part === null) continue;
    if (part.functionCall && typeof part.functionCall.name === 'string') {
      read.calls.push({ id: toolCallId(), type: 'function', function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) } });
    } else if (typeof part.text === 'string') {
      if (part.thought === true) read.thoughts += part.text;
      else read.text += part.text;
    }
  }
  return read;
}

/** The text a set of parts stands for, to count when the upstream reported no usage. */
export function generatedOf(parts: CandidateParts): string {
  let generated = parts.thoughts + parts.text;
  for (const call of parts.calls) generated += call.function.name + call.function.arguments;
  return generated;
}

export function parseGeminiResponse(text: string): GeminiResponse {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a GenerateContentResponse');
  const response = parsed as GeminiResponse;
  const hasCandidates = Array.isArray(response.candidates);
  if (!hasCandidates && response.candidates !== undefined) throw new Error('candidates is not an array');
  if (!hasCandidates && typeof response.promptFeedback !== 'object' && typeof response.usageMetadata !== 'object') throw new Error('not a GenerateContentResponse');
  return response;
}

/**
 * A GenerateContentResponse as a chat.completion. A prompt blocked before any candidate (promptFeedback.blockReason)
 * is one choice with empty content and finish_reason content_filter.
 */
export function finishGeminiCompletion(upstreamText: string, model: CatalogModel, options: AnswerOptions): FinishedCompletion {
  const response = parseGeminiResponse(upstreamText);
  const candidates: GeminiCandidate[] = response.candidates ?? [];
  let generated = '';
  const choices = candidates.map((candidate, position) => {
    const parts = readParts(candidate?.content?.parts);
    generated += generatedOf(parts);
    const message: Record<string, unknown> = { role: 'assistant', content: parts.text === '' && parts.calls.length > 0 ? null : parts.text };
    if (options.includeReasoning && parts.thoughts !== '') message.reasoning_content = parts.thoughts;
    if (parts.calls.length > 0) message.tool_calls = parts.calls;
    return {
      index: typeof candidate?.index === 'number' ? candidate.index : position,
      message,
      finish_reason: finishReasonOf(candidate?.finishReason, parts.calls.length > 0),
    };
  });
  if (choices.length === 0) {
    choices.push({ index: 0, message: { role: 'assistant', content: '' }, finish_reason: response.promptFeedback?.blockReason ? 'content_filter' : 'stop' });
  }
  const usage = readGeminiUsage(response.usageMetadata);
  const completion: Record<string, unknown> = { id: options.id, object: 'chat.completion', created: options.created, model: model.id, choices };
  if (usage) completion.usage = renderUsage(usage, options.costOf?.(usage));
  return { body: JSON.stringify(completion), usage, generated };
}
