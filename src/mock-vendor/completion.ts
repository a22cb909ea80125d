// What to answer: validates a chat completion request and plans the reply (token counts,
// finish reason, usage) from the request, its directives and the server defaults. No I/O.
import type { Directives } from './directives.js';
import { invalidParam, type MockError } from './errors.js';
import { randomId } from './ids.js';
import { buildUsage, promptTokens, type Usage } from './usage.js';
import { cachedPromptTokens } from './prompt-cache.js';
import { contentText, reasoningText, TOOL_ARGUMENT_FRAGMENTS } from './words.js';

export interface MockBehaviour {
  /** Delay before the response head. */
  latencyMs: number;
  /** Content tokens per choice. */
  chunks: number;
  /** Delay before each streamed token chunk. */
  chunkDelayMs: number;
}

export interface ChatRequest {
  model: string;
  messages: unknown[];
  stream: boolean;
  includeUsage: boolean;
  n: number;
  /** max_completion_tokens / max_tokens, whichever is smaller. */
  maxTokens: number | undefined;
  hasTools: boolean;
  /** The request's `prompt_cache_key` ('' without one): the prompt cache's partition. */
  promptCacheKey: string;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

export interface CompletionPlan {
  id: string;
  created: number;
  /** Vendors answer with a dated snapshot name, not the alias that was asked for. */
  model: string;
  choices: number;
  /** Per choice. */
  reasoningTokens: number;
  /** Per choice: content words, or tool-call argument fragments when `toolName` is set. */
  answerTokens: number;
  toolName: string | undefined;
  /** Per choice, with `toolName`: content words before the call (directive `tool_text`). */
  toolTextTokens: number;
  finishReason: FinishReason;
  /** Undefined when the directive `no_usage` suppresses it. */
  usage: Usage | undefined;
}

export const SNAPSHOT_SUFFIX = '-2024-07-18';

function tokenLimit(value: unknown, param: string): number | undefined | MockError {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    return invalidParam(param, `Invalid '${param}': expected an integer greater than or equal to 1.`);
  }
  return value;
}

function isError(value: unknown): value is MockError {
  return typeof value === 'object' && value !== null && 'status' in value;
}

export function parseChatRequest(body: unknown): ChatRequest | MockError {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return invalidParam('body', 'The request body must be a JSON object.');
  }
  const req = body as Record<string, unknown>;
  if (typeof req.model !== 'string' || req.model === '') {
    return { ...invalidParam('model', "Missing required parameter: 'model'."), code: 'missing_required_parameter' };
  }
  if (!Array.isArray(req.messages) || req.messages.length === 0) {
    return { ...invalidParam('messages', "Missing required parameter: 'messages'."), code: 'missing_required_parameter' };
  }
  const n = req.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 128) {
    return invalidParam('n', "Invalid 'n': expected an integer between 1 and 128.");
  }
  const maxTokens = tokenLimit(req.max_tokens, 'max_tokens');
  if (isError(maxTokens)) return maxTokens;
  const maxCompletionTokens = tokenLimit(req.max_completion_tokens, 'max_completion_tokens');
  if (isError(maxCompletionTokens)) return maxCompletionTokens;
  const streamOptions = req.stream_options as { include_usage?: unknown } | null | undefined;
  return {
    model: req.model,
    messages: req.messages,
    stream: req.stream === true,
    includeUsage: req.stream === true && streamOptions?.include_usage === true,
    n,
    maxTokens: maxTokens === undefined ? maxCompletionTokens : Math.min(maxTokens, maxCompletionTokens ?? Infinity),
    hasTools: Array.isArray(req.tools) && req.tools.length > 0,
    promptCacheKey: typeof req.prompt_cache_key === 'string' ? req.prompt_cache_key : '',
  };
}

export function planCompletion(id: string, req: ChatRequest, directives: Directives, behaviour: MockBehaviour): CompletionPlan {
  const toolName = req.hasTools ? directives.tool : undefined;
  const wantedReasoning = directives.reasoning ?? 0;
  const wantedAnswer = toolName !== undefined ? TOOL_ARGUMENT_FRAGMENTS.length : directives.chunks ?? behaviour.chunks;
  // The cap spends reasoning tokens first, as reasoning models do.
  const wantedToolText = toolName !== undefined ? directives.toolText ?? 0 : 0;
  const cap = req.maxTokens ?? Infinity;
  const reasoningTokens = Math.min(wantedReasoning, cap);
  const toolTextTokens = Math.min(wantedToolText, cap - reasoningTokens);
  const answerTokens = Math.min(wantedAnswer, cap - reasoningTokens - toolTextTokens);
  const truncated = reasoningTokens + toolTextTokens + answerTokens < wantedReasoning + wantedToolText + wantedAnswer;
  const finishReason: FinishReason = truncated ? 'length' : toolName !== undefined ? 'tool_calls' : 'stop';
  const perChoice = reasoningTokens + toolTextTokens + answerTokens;
  const prompt = promptTokens(req.messages);
  return {
    id,
    created: Math.floor(Date.now() / 1000),
    model: req.model + SNAPSHOT_SUFFIX,
    choices: req.n,
    reasoningTokens,
    answerTokens,
    toolName,
    toolTextTokens,
    finishReason,
    usage: directives.noUsage
      ? undefined
      : buildUsage(prompt, reasoningTokens * req.n, perChoice * req.n,
        Math.max(directives.cached ?? 0, cachedPromptTokens(`${req.model}\n${req.promptCacheKey}`, JSON.stringify(req.messages), prompt))),
  };
}

/** The arguments string of a (possibly truncated) mocked tool call. */
export function toolArguments(fragments: number): string {
  return TOOL_ARGUMENT_FRAGMENTS.slice(0, fragments).join('');
}

/** The non-streaming `chat.completion` response body. */
export function completionJson(plan: CompletionPlan): string {
  const choices = [];
  for (let index = 0; index < plan.choices; index++) {
    const message: Record<string, unknown> = { role: 'assistant', content: null };
    if (plan.toolName === undefined) message.content = contentText(plan.answerTokens);
    else if (plan.toolTextTokens > 0) message.content = contentText(plan.toolTextTokens);
    if (plan.reasoningTokens > 0) message.reasoning_content = reasoningText(plan.reasoningTokens);
    // A cap spent entirely on reasoning leaves no room for the call to begin.
    if (plan.toolName !== undefined && plan.answerTokens > 0) {
      message.tool_calls = [{
        id: randomId('call_', 24),
        type: 'function',
        function: { name: plan.toolName, arguments: toolArguments(plan.answerTokens) },
      }];
    }
    message.refusal = null;
    choices.push({ index, message, logprobs: null, finish_reason: plan.finishReason });
  }
  return JSON.stringify({
    id: plan.id,
    object: 'chat.completion',
    created: plan.created,
    model: plan.model,
    choices,
    usage: plan.usage,
    system_fingerprint: 'fp_mock',
  });
}
