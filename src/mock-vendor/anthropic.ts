// Anthropic's Messages API (`POST .../v1/messages`, and Claude on Vertex AI), steered by the same `[[mock ...]]` directives
// as the OpenAI route: JSON or SSE in Anthropic's documented event order, its error shape, and a
// prompt cache that behaves like the real one (prefixes up to `cache_control` breakpoints, 5 min).
import { createHash } from 'node:crypto';
import type http from 'node:http';
import type { MockBehaviour } from './completion.js';
import { directivesFromMessages, type Directives } from './directives.js';
import type { MockError } from './errors.js';
import { bearerToken, cutPoint, playFault, retryAfterHeader, streamFailure, type FaultBook, type StreamFailure } from './faults.js';
import { randomId } from './ids.js';
import { recordBody, type MockRequestRecord } from './records.js';
import type { Frame, FrameKind } from './stream.js';
import { textTokens } from './usage.js';
import { CONTENT_WORDS, REASONING_WORDS, TOOL_ARGUMENTS, TOOL_ARGUMENT_FRAGMENTS } from './words.js';

export const ANTHROPIC_MESSAGES_SUFFIX = '/v1/messages';
/** Anthropic answers with the dated snapshot of the alias asked for. */
export const ANTHROPIC_SNAPSHOT_SUFFIX = '-20250929';
export const MIN_CACHEABLE_TOKENS = 1024;
export const CACHE_TTL_MS = 5 * 60_000;

/** What the route hands over: server.ts's Exchange, seen structurally. */
export interface MockExchange {
  readonly record: MockRequestRecord;
  after(ms: number, next: () => void): void;
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  stream(frames: Generator<Frame, void, undefined>, delayMs: number, disconnectAfter: number | undefined, failure?: StreamFailure): void;
  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void;
  /** Ends the answer mid-body (a stream that dies after its head). */
  cut(): void;
}
type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** One prompt cache per mock vendor (its behaviour object is per instance): prefix hash -> expiry. */
const caches = new WeakMap<MockBehaviour, Map<string, number>>();

const ERROR_TYPES: Readonly<Record<number, string>> = { 400: 'invalid_request_error', 401: 'authentication_error', 403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large', 429: 'rate_limit_error', 500: 'api_error', 529: 'overloaded_error' };

function sendError(exchange: MockExchange, status: number, message: string, headers = retryAfterHeader(status, undefined)): void {
  const type = ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
  exchange.sendJson(status, JSON.stringify({ type: 'error', error: { type, message } }), headers);
}

/** Anthropic's mid-stream failure: an `error` event, nothing after it (https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events). */
const STREAM_ERROR_EVENT = `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`;

const failureMessage = (status: number): string => (status === 529 ? 'Overloaded' : `Mock failure (${status}).`);

export function anthropicMessages(req: http.IncomingMessage, exchange: MockExchange, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody): void {
  const record = exchange.record;
  record.id = randomId('msg_', 24);
  const apiKey = req.headers['x-api-key'];
  const version = req.headers['anthropic-version'];
  recordAnthropicHeaders(record, req);
  readBody(req, (err, text) => {
    if (err) return sendError(exchange, err.status, err.message);
    if (recordBody(record, text) !== undefined && apiKey) return sendError(exchange, 400, 'There was an issue with the request body: not valid JSON.');
    if (typeof apiKey !== 'string' || apiKey === '') return sendError(exchange, 401, 'x-api-key header is required');
    if (typeof version !== 'string' || version === '') return sendError(exchange, 400, 'anthropic-version: header is required');
    const request = record.body as AnthropicRequest;
    const invalid = validate(request);
    if (invalid) return sendError(exchange, 400, invalid);
    record.stream = request.stream === true;
    const directives = directivesFromMessages(request.messages);
    const fault = faults.meet(apiKey, directives);
    const respond = (): void => {
      if (fault !== undefined && playFault(fault, record.stream, exchange, (status, headers) => sendError(exchange, status, failureMessage(status), headers))) return;
      if (directives.fail !== undefined) return sendError(exchange, directives.fail, failureMessage(directives.fail));
      const plan = planMessage(record.id, request, directives, cacheOf(behaviour), Date.now());
      if (!request.stream) exchange.sendJson(200, messageJson(plan), { 'request-id': `req_${record.id}` });
      else exchange.stream(messageFrames(plan), directives.delayMs ?? behaviour.chunkDelayMs, cutPoint(fault, directives.disconnectAfter), streamFailure(fault, STREAM_ERROR_EVENT));
    };
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, respond);
  });
}

function recordAnthropicHeaders(record: MockRequestRecord, req: http.IncomingMessage): void {
  const { 'anthropic-version': version, 'anthropic-beta': beta } = req.headers;
  if (typeof version === 'string') record.anthropicVersion = version;
  if (typeof beta === 'string') record.anthropicBeta = beta;
}

export const ANTHROPIC_COUNT_TOKENS_SUFFIX = '/v1/messages/count_tokens';

/**
 * `POST .../v1/messages/count_tokens`: the prompt's input tokens as the Messages route would count
 * them (tools, system and messages; cache breakpoints do not change a count), `{"input_tokens": N}`.
 */
export function anthropicCountTokens(req: http.IncomingMessage, exchange: MockExchange, readBody: ReadBody): void {
  const record = exchange.record;
  const apiKey = req.headers['x-api-key'];
  const version = req.headers['anthropic-version'];
  recordAnthropicHeaders(record, req);
  readBody(req, (err, text) => {
    if (err) return sendError(exchange, err.status, err.message);
    if (recordBody(record, text) !== undefined) return sendError(exchange, 400, 'There was an issue with the request body: not valid JSON.');
    if (typeof apiKey !== 'string' || apiKey === '') return sendError(exchange, 401, 'x-api-key header is required');
    if (typeof version !== 'string' || version === '') return sendError(exchange, 400, 'anthropic-version: header is required');
    const request = record.body as AnthropicRequest;
    if ('max_tokens' in (request ?? {})) return sendError(exchange, 400, 'max_tokens: Extra inputs are not permitted');
    const invalid = validate({ ...request, max_tokens: 1 << 30 });
    if (invalid) return sendError(exchange, 400, invalid);
    const counted = promptAccounting(request, new Map(), Date.now());
    exchange.sendJson(200, JSON.stringify({ input_tokens: counted.input + counted.read + counted.creation }));
  });
}

/** Claude on Vertex AI: the `anthropic` publisher's model, `rawPredict` whole or `streamRawPredict` as Anthropic's SSE. */
export const VERTEX_CLAUDE_PATH = /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/anthropic\/models\/([^/:]+):(rawPredict|streamRawPredict)$/;
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/**
 * Claude on Vertex AI: the Messages body without `model` (the path names it) and with Vertex's
 * `anthropic_version`, authorised by an access token the mock's token endpoint issued (`tokenValid`);
 * faults are met by that token. Answers as Anthropic does.
 */
export function anthropicOnVertex(req: http.IncomingMessage, exchange: MockExchange, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody, tokenValid: (authorization: string | undefined) => boolean): void {
  const record = exchange.record;
  record.id = randomId('msg_vrtx_', 24);
  recordAnthropicHeaders(record, req);
  const [, model, method] = VERTEX_CLAUDE_PATH.exec(record.path)!;
  record.stream = method === 'streamRawPredict';
  readBody(req, (err, text) => {
    if (err) return sendError(exchange, err.status, err.message);
    const unreadable = recordBody(record, text);
    // Google's own refusal, in Google's shape: the call never reached Claude.
    if (!tokenValid(req.headers.authorization)) {
      return exchange.sendJson(401, JSON.stringify({ error: { code: 401, message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', status: 'UNAUTHENTICATED' } }));
    }
    if (unreadable !== undefined) return sendError(exchange, 400, 'There was an issue with the request body: not valid JSON.');
    const body = record.body as AnthropicRequest & { anthropic_version?: unknown };
    if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return sendError(exchange, 400, `anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`);
    if ('model' in body) return sendError(exchange, 400, 'model: Extra inputs are not permitted');
    if ((body.stream === true) !== record.stream) return sendError(exchange, 400, `stream: must be ${record.stream} for ${method}`);
    const request = { ...body, model: decodeURIComponent(model!) } as AnthropicRequest;
    const invalid = validate(request);
    if (invalid) return sendError(exchange, 400, invalid);
    const directives = directivesFromMessages(request.messages);
    const fault = faults.meet(bearerToken(req.headers.authorization), directives);
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, () => {
      if (fault !== undefined && playFault(fault, record.stream, exchange, (status, headers) => sendError(exchange, status, failureMessage(status), headers))) return;
      if (directives.fail !== undefined) return sendError(exchange, directives.fail, failureMessage(directives.fail));
      const plan = planMessage(record.id, request, directives, cacheOf(behaviour), Date.now());
      if (!record.stream) exchange.sendJson(200, messageJson(plan));
      else exchange.stream(messageFrames(plan), directives.delayMs ?? behaviour.chunkDelayMs, cutPoint(fault, directives.disconnectAfter), streamFailure(fault, STREAM_ERROR_EVENT));
    });
  });
}

export function cacheOf(behaviour: MockBehaviour): Map<string, number> {
  let cache = caches.get(behaviour);
  if (!cache) caches.set(behaviour, (cache = new Map()));
  return cache;
}

export interface AnthropicRequest {
  model?: unknown;
  max_tokens?: unknown;
  messages?: { role: string; content: unknown }[];
  system?: unknown;
  tools?: { name: string }[];
  tool_choice?: { type: string; name?: string };
  thinking?: { type: string; budget_tokens?: number };
  temperature?: number;
  top_p?: number;
  stream?: boolean;
}

/** The documented refusals the gateway must never trigger. */
export function validate(req: AnthropicRequest): string | undefined {
  if (typeof req !== 'object' || req === null || Array.isArray(req)) return 'The request body must be a JSON object.';
  if (typeof req.model !== 'string' || req.model === '') return 'model: Field required';
  if (typeof req.max_tokens !== 'number' || !Number.isInteger(req.max_tokens) || req.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(req.messages) || req.messages.length === 0) return 'messages: Field required';
  for (let i = 0; i < req.messages.length; i++) {
    const role = req.messages[i]?.role;
    if (role !== 'user' && role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (i > 0 && req.messages[i - 1]!.role === role) return 'messages: roles must alternate between "user" and "assistant"';
  }
  if (typeof req.temperature === 'number' && (req.temperature < 0 || req.temperature > 1)) return 'temperature: range: 0..1';
  if (req.temperature != null && req.top_p != null) return 'temperature and top_p cannot both be specified for this model. Please use only one.';
  if (req.thinking?.type === 'enabled') {
    const budget = req.thinking.budget_tokens ?? 0;
    if (budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (budget >= req.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`.';
    if (req.temperature != null && req.temperature !== 1) return '`temperature` may only be set to 1 when thinking is enabled.';
    if (req.tool_choice && (req.tool_choice.type === 'any' || req.tool_choice.type === 'tool')) return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  return undefined;
}

/** Canonical JSON (sorted keys, no cache_control) so a prefix hashes the same however it was written. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([k]) => k !== 'cache_control').sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function blockTokens(block: unknown): number {
  if (typeof block === 'string') return textTokens(block);
  if (block === null || typeof block !== 'object') return 0;
  const b = block as Record<string, unknown>;
  switch (b.type) {
    case 'text': return textTokens(String(b.text ?? ''));
    case 'image': return 85;
    case 'thinking': return textTokens(String(b.thinking ?? ''));
    case 'tool_use': return textTokens(String(b.name ?? '') + JSON.stringify(b.input ?? {}));
    case 'tool_result': return typeof b.content === 'string' ? textTokens(b.content) : Array.isArray(b.content) ? b.content.reduce((n: number, c) => n + blockTokens(c), 0) : 0;
    default: return textTokens(canonical(block));
  }
}

const asBlocks = (content: unknown): unknown[] => (Array.isArray(content) ? content : typeof content === 'string' ? [{ type: 'text', text: content }] : []);

/**
 * Prompt tokens and cache accounting. The prefix runs tools, system, messages (Anthropic's
 * order); each block carrying `cache_control` is a breakpoint. The longest cached breakpoint
 * prefix of at least MIN_CACHEABLE_TOKENS is read; the last breakpoint's remainder is written.
 */
export function promptAccounting(req: AnthropicRequest, cache: Map<string, number>, now: number): { input: number; read: number; creation: number } {
  const hash = createHash('sha256').update(String(req.model));
  let tokens = 3;
  const breakpoints: { key: string; tokens: number }[] = [];
  const visit = (element: unknown, cost: number, marked: boolean) => {
    tokens += cost;
    hash.update(canonical(element));
    if (marked) breakpoints.push({ key: hash.copy().digest('hex'), tokens });
  };
  const marked = (b: unknown) => typeof b === 'object' && b !== null && (b as { cache_control?: unknown }).cache_control != null;
  for (const tool of req.tools ?? []) visit(tool, textTokens(canonical(tool)), marked(tool));
  for (const block of asBlocks(req.system)) visit(block, blockTokens(block), marked(block));
  for (const message of req.messages ?? []) {
    tokens += 3;
    hash.update(message.role);
    for (const block of asBlocks(message.content)) visit(block, blockTokens(block), marked(block));
  }
  let read = 0;
  for (let i = breakpoints.length - 1; i >= 0; i--) {
    const bp = breakpoints[i]!;
    if (bp.tokens >= MIN_CACHEABLE_TOKENS && (cache.get(bp.key) ?? 0) > now) { read = bp.tokens; break; }
  }
  const last = breakpoints[breakpoints.length - 1];
  const creation = last && last.tokens >= MIN_CACHEABLE_TOKENS && last.tokens > read ? last.tokens - read : 0;
  for (const bp of breakpoints) if (bp.tokens >= MIN_CACHEABLE_TOKENS) cache.set(bp.key, now + CACHE_TTL_MS);
  if (cache.size > 10_000) for (const [key, expiry] of cache) if (expiry <= now) cache.delete(key);
  return { input: tokens - read - creation, read, creation };
}

export interface MessagePlan {
  id: string;
  model: string;
  reasoningTokens: number;
  answerTokens: number;
  toolName: string | undefined;
  /** With `toolName`: text tokens before the call (directive `tool_text`). */
  toolTextTokens: number;
  stopReason: 'end_turn' | 'max_tokens' | 'tool_use';
  usage: { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number; output_tokens: number };
}

export function planMessage(id: string, req: AnthropicRequest, directives: Directives, cache: Map<string, number>, now: number): MessagePlan {
  const hasTools = Array.isArray(req.tools) && req.tools.length > 0;
  const forced = req.tool_choice?.type === 'tool' ? req.tool_choice.name : undefined;
  const toolName = hasTools ? forced ?? directives.tool : undefined;
  // Like the real API: no thinking unless it was enabled.
  const wantedReasoning = req.thinking?.type === 'enabled' ? directives.reasoning ?? 0 : 0;
  const wantedAnswer = toolName !== undefined ? TOOL_ARGUMENT_FRAGMENTS.length : directives.chunks ?? 16;
  const wantedToolText = toolName !== undefined ? directives.toolText ?? 0 : 0;
  const cap = req.max_tokens as number;
  const reasoningTokens = Math.min(wantedReasoning, cap);
  const toolTextTokens = Math.min(wantedToolText, cap - reasoningTokens);
  const answerTokens = Math.min(wantedAnswer, cap - reasoningTokens - toolTextTokens);
  const truncated = reasoningTokens + toolTextTokens + answerTokens < wantedReasoning + wantedToolText + wantedAnswer;
  const prompt = promptAccounting(req, cache, now);
  let { read, creation, input } = prompt;
  if (directives.cached !== undefined) {
    const total = input + read + creation;
    read = Math.min(directives.cached, total);
    creation = Math.min(creation, total - read);
    input = total - read - creation;
  }
  return {
    id, model: String(req.model) + ANTHROPIC_SNAPSHOT_SUFFIX, reasoningTokens, answerTokens, toolName, toolTextTokens,
    stopReason: truncated ? 'max_tokens' : toolName !== undefined ? 'tool_use' : 'end_turn',
    usage: { input_tokens: input, cache_creation_input_tokens: creation, cache_read_input_tokens: read, output_tokens: reasoningTokens + toolTextTokens + answerTokens },
  };
}

const words = (list: readonly string[], n: number) => Array.from({ length: n }, (_, i) => list[i % list.length] as string);
const SIGNATURE = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds'; // opaque, like the real one

export function messageJson(plan: MessagePlan): string {
  const content: unknown[] = [];
  if (plan.reasoningTokens > 0) content.push({ type: 'thinking', thinking: words(REASONING_WORDS, plan.reasoningTokens).join(''), signature: SIGNATURE });
  if (plan.toolTextTokens > 0) content.push({ type: 'text', text: words(CONTENT_WORDS, plan.toolTextTokens).join('') });
  if (plan.toolName !== undefined) {
    if (plan.answerTokens > 0) {
      const input = plan.answerTokens === TOOL_ARGUMENT_FRAGMENTS.length ? JSON.parse(TOOL_ARGUMENTS) : {};
      content.push({ type: 'tool_use', id: randomId('toolu_', 24), name: plan.toolName, input });
    }
  } else if (plan.answerTokens > 0) content.push({ type: 'text', text: words(CONTENT_WORDS, plan.answerTokens).join('') });
  return JSON.stringify({
    id: plan.id, type: 'message', role: 'assistant', model: plan.model, content,
    stop_reason: plan.stopReason, stop_sequence: null, usage: { ...plan.usage, service_tier: 'standard' },
  });
}

const frame = (kind: FrameKind, type: string, data: unknown): Frame => ({ kind, data: `event: ${type}\ndata: ${JSON.stringify(data)}\n\n` });

/** The documented event order: message_start, ping, per block start/deltas/stop, message_delta, message_stop. */
export function* messageFrames(plan: MessagePlan): Generator<Frame, void, undefined> {
  const startUsage = { ...plan.usage, output_tokens: 1 };
  yield frame('head', 'message_start', { type: 'message_start', message: { id: plan.id, type: 'message', role: 'assistant', model: plan.model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } });
  yield frame('head', 'ping', { type: 'ping' });
  let index = 0;
  if (plan.reasoningTokens > 0) {
    yield frame('head', 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const word of words(REASONING_WORDS, plan.reasoningTokens)) {
      yield frame('reasoning', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: word } });
    }
    yield frame('head', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: SIGNATURE } });
    yield frame('head', 'content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  if (plan.toolTextTokens > 0) {
    yield frame('toolHeader', 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const word of words(CONTENT_WORDS, plan.toolTextTokens)) {
      yield frame('content', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: word } });
    }
    yield frame('head', 'content_block_stop', { type: 'content_block_stop', index });
    index++;
  }
  if (plan.toolName !== undefined) {
    if (plan.answerTokens > 0) {
      yield frame('toolHeader', 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: randomId('toolu_', 24), name: plan.toolName, input: {} } });
      yield frame('toolHeader', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const fragment of TOOL_ARGUMENT_FRAGMENTS.slice(0, plan.answerTokens)) {
        yield frame('content', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: fragment } });
      }
      yield frame('finish', 'content_block_stop', { type: 'content_block_stop', index });
    }
  } else if (plan.answerTokens > 0) {
    yield frame('toolHeader', 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const word of words(CONTENT_WORDS, plan.answerTokens)) {
      yield frame('content', 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: word } });
    }
    yield frame('finish', 'content_block_stop', { type: 'content_block_stop', index });
  }
  yield frame('finish', 'message_delta', { type: 'message_delta', delta: { stop_reason: plan.stopReason, stop_sequence: null }, usage: plan.usage });
  yield frame('done', 'message_stop', { type: 'message_stop' });
}
