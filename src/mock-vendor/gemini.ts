// The mock's Gemini API: `POST .../models/{model}:generateContent` and `:streamGenerateContent?alt=sse`,
// steered by the same `[[mock ...]]` directives (read from the last user turn's text parts). Like the
// real API: thoughts count against maxOutputTokens, thought parts only with includeThoughts, and an
// implicit prefix cache (systemInstruction plus the turns before the last user turn, 1024+ tokens,
// kept 5 minutes) reported as cachedContentTokenCount. A request for IMAGE output is an image model's
// (gemini-images.ts), one for AUDIO a speech model's and one to a Lyria model a song (gemini-audio.ts).
import { createHash } from 'node:crypto';
import type http from 'node:http';
import type { MockBehaviour } from './completion.js';
import { parseDirectives, DIRECTIVE_MARKER, type Directives } from './directives.js';
import { randomId } from './ids.js';
import { endMidBody, resetConnection } from './connection.js';
import { bearerToken, cutPoint, playFault, streamFailure, type FaultBook, type StreamFailure } from './faults.js';
import type { MockRequestRecord, RequestLog } from './records.js';
import { textTokens } from './usage.js';
import { asksForImages, imageAnswerJson, imageRequestError } from './gemini-images.js';
import { asksForMusic, asksForSpeech, musicAnswerJson, speechAnswerJson, speechRequestError } from './gemini-audio.js';
import { CONTENT_WORDS, REASONING_WORDS, TOOL_ARGUMENT_FRAGMENTS, contentText, reasoningText, wordAt } from './words.js';

const PATH = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** Gemini counts an image at 258 tokens. */
const IMAGE_TOKENS = 258;
export const MIN_CACHED_PREFIX_TOKENS = 1024;
const CACHE_TTL_MS = 5 * 60_000;
const STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED', 499: 'CANCELLED', 500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
});

/** True for the paths this module answers. */
export const isGeminiPath = (path: string): boolean => PATH.test(path);

interface GeminiError {
  status: number;
  message: string;
  /** Google's RetryInfo detail (a 429 that says when to come back), seconds. */
  retryDelaySeconds?: number;
}

export function geminiErrorJson(err: GeminiError): string {
  const status = STATUS_NAMES[err.status] ?? (err.status >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
  const details = err.retryDelaySeconds === undefined ? undefined : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${err.retryDelaySeconds}s` }];
  return JSON.stringify({ error: { code: err.status, message: err.message, status, ...(details ? { details } : {}) } });
}

type Part = Record<string, any>;
interface Content { role?: string; parts?: Part[] }
interface Body {
  contents?: Content[];
  systemInstruction?: Content;
  tools?: { functionDeclarations?: unknown[] }[];
  generationConfig?: {
    maxOutputTokens?: number; candidateCount?: number; thinkingConfig?: { thinkingBudget?: number; includeThoughts?: boolean };
    responseModalities?: unknown; imageConfig?: { aspectRatio?: unknown; imageSize?: unknown };
    speechConfig?: { voiceConfig?: { prebuiltVoiceConfig?: { voiceName?: unknown } } };
  };
}

/** Remembered prompt prefixes (hash -> expiry), the implicit cache. */
export class PrefixCache {
  private readonly expiries = new Map<string, number>();
  constructor(private readonly now: () => number = Date.now) {}

  /** Tokens read from cache for this prefix (0 on a miss); remembers it either way. */
  lookup(key: string, tokens: number): number {
    if (tokens < MIN_CACHED_PREFIX_TOKENS) return 0;
    const now = this.now();
    const expiry = this.expiries.get(key);
    if (this.expiries.size > 10_000) this.expiries.clear();
    this.expiries.set(key, now + CACHE_TTL_MS);
    return expiry !== undefined && expiry > now ? tokens : 0;
  }
}

const partsOf = (content: Content | undefined): Part[] => (Array.isArray(content?.parts) ? content!.parts! : []);

function partTokens(part: Part): number {
  if (typeof part.text === 'string') return textTokens(part.text);
  if (part.inlineData || part.fileData) return IMAGE_TOKENS;
  if (part.functionCall || part.functionResponse) return textTokens(JSON.stringify(part.functionCall ?? part.functionResponse));
  return 0;
}

const contentTokens = (content: Content | undefined) => partsOf(content).reduce((sum, part) => sum + partTokens(part), 0);

interface Plan {
  candidates: number;
  thoughts: number;
  includeThoughts: boolean;
  answer: number;
  toolName: string | undefined;
  /** With `toolName`: text tokens before the call (directive `tool_text`). */
  toolText: number;
  finishReason: 'STOP' | 'MAX_TOKENS';
  usage: Record<string, number> | undefined;
}

function plan(body: Body, directives: Directives, behaviour: MockBehaviour, cache: PrefixCache): Plan {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const config = body.generationConfig ?? {};
  const hasTools = Array.isArray(body.tools) && body.tools.some((tool) => Array.isArray(tool.functionDeclarations) && tool.functionDeclarations.length > 0);
  const toolName = hasTools ? directives.tool : undefined;
  const budget = config.thinkingConfig?.thinkingBudget;
  const cap = config.maxOutputTokens ?? Infinity;
  // Thoughts count against maxOutputTokens, as on the real 2.5 models.
  const thoughts = Math.min(directives.reasoning ?? 0, budget !== undefined && budget >= 0 ? budget : Infinity, cap);
  const wantedAnswer = toolName !== undefined ? TOOL_ARGUMENT_FRAGMENTS.length : directives.chunks ?? behaviour.chunks;
  const toolText = toolName !== undefined ? Math.min(directives.toolText ?? 0, cap - thoughts) : 0;
  const answer = Math.min(wantedAnswer, cap - thoughts - toolText);
  const truncated = answer < wantedAnswer;
  const n = config.candidateCount ?? 1;

  let lastUser = contents.length - 1;
  while (lastUser >= 0 && contents[lastUser]?.role !== 'user') lastUser--;
  const prefix = { systemInstruction: body.systemInstruction ?? null, contents: contents.slice(0, Math.max(lastUser, 0)) };
  const prefixTokens = contentTokens(body.systemInstruction) + prefix.contents.reduce((sum, c) => sum + contentTokens(c), 0);
  const prompt = contentTokens(body.systemInstruction) + contents.reduce((sum, c) => sum + contentTokens(c), 0);
  const implicit = cache.lookup(createHash('sha256').update(JSON.stringify(prefix)).digest('hex'), prefixTokens);
  const cached = Math.min(directives.cached ?? implicit, prompt);

  const usage: Record<string, number> = { promptTokenCount: prompt, candidatesTokenCount: ((truncated && toolName ? 0 : answer) + toolText) * n };
  if (thoughts > 0) usage.thoughtsTokenCount = thoughts * n;
  if (cached > 0) usage.cachedContentTokenCount = cached;
  usage.totalTokenCount = prompt + (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0);
  return {
    candidates: n,
    thoughts,
    includeThoughts: config.thinkingConfig?.includeThoughts === true,
    answer: truncated && toolName ? 0 : answer,
    toolName: truncated ? undefined : toolName,
    toolText,
    finishReason: truncated ? 'MAX_TOKENS' : 'STOP',
    usage: directives.noUsage ? undefined : usage,
  };
}

const TOOL_ARGS = { city: 'Paris' };
const caches = new WeakMap<RequestLog, PrefixCache>();

function answerParts(p: Plan): Part[] {
  const parts: Part[] = [];
  if (p.includeThoughts && p.thoughts > 0) parts.push({ text: reasoningText(p.thoughts), thought: true });
  if (p.toolText > 0) parts.push({ text: contentText(p.toolText) });
  if (p.toolName !== undefined) parts.push({ functionCall: { name: p.toolName, args: TOOL_ARGS } });
  else parts.push({ text: contentText(p.answer) });
  return parts;
}

function responseJson(p: Plan, model: string, responseId: string): string {
  const candidates = [];
  for (let index = 0; index < p.candidates; index++) {
    candidates.push({ content: { parts: answerParts(p), role: 'model' }, finishReason: p.finishReason, index });
  }
  return JSON.stringify({ candidates, ...(p.usage ? { usageMetadata: p.usage } : {}), modelVersion: model, responseId });
}

interface Frame { kind: 'thought' | 'content' | 'finish'; data: string }

/** One event per token (a function call is one event), then a finishing event with the usage. */
function* frames(p: Plan, model: string, responseId: string): Generator<Frame, void, undefined> {
  const event = (index: number, parts: Part[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ candidates: [{ content: { parts, role: 'model' }, index, ...extra }], modelVersion: model, responseId })}\r\n\r\n`;
  if (p.includeThoughts) {
    for (let t = 0; t < p.thoughts; t++) {
      for (let index = 0; index < p.candidates; index++) yield { kind: 'thought', data: event(index, [{ text: wordAt(REASONING_WORDS, t), thought: true }]) };
    }
  }
  for (let t = 0; t < p.toolText; t++) {
    for (let index = 0; index < p.candidates; index++) yield { kind: 'content', data: event(index, [{ text: wordAt(CONTENT_WORDS, t) }]) };
  }
  if (p.toolName !== undefined) {
    for (let index = 0; index < p.candidates; index++) yield { kind: 'content', data: event(index, [{ functionCall: { name: p.toolName, args: TOOL_ARGS } }]) };
  } else {
    for (let t = 0; t < p.answer; t++) {
      for (let index = 0; index < p.candidates; index++) yield { kind: 'content', data: event(index, [{ text: wordAt(CONTENT_WORDS, t) }]) };
    }
  }
  for (let index = 0; index < p.candidates; index++) {
    const last = index === p.candidates - 1;
    const extra = { finishReason: p.finishReason };
    const data = `data: ${JSON.stringify({
      candidates: [{ content: { parts: [{ text: '' }], role: 'model' }, index, ...extra }],
      ...(last && p.usage ? { usageMetadata: p.usage } : {}),
      modelVersion: model, responseId,
    })}\r\n\r\n`;
    yield { kind: 'finish', data };
  }
}

function lastUserDirectives(body: Body): Directives {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  for (let i = contents.length - 1; i >= 0; i--) {
    if (contents[i]?.role !== 'user') continue;
    const text = partsOf(contents[i]).map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
    return text.includes(DIRECTIVE_MARKER) ? parseDirectives(text) : {};
  }
  return {};
}

/** Handles one Gemini API request; `url` is the raw request URL (for `alt=sse`). */
/** Vertex AI's path for a publisher model: authorised with an OAuth access token, not an API key. */
const VERTEX_PATH = /^\/v1\/projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\//;

/** `vertexToken` says whether an Authorization header holds an access token the mock issued (Vertex paths). */
export function geminiRoute(req: http.IncomingMessage, res: http.ServerResponse, behaviour: MockBehaviour, faults: FaultBook, log: RequestLog, vertexToken: (authorization: string | undefined) => boolean = () => false): void {
  // One cache per mock server, and its request log is one per server too.
  let cache = caches.get(log);
  if (!cache) caches.set(log, (cache = new PrefixCache()));
  const url = new URL(req.url ?? '/', 'http://mock');
  const match = PATH.exec(url.pathname)!;
  const model = match[1]!;
  const stream = match[2] === 'streamGenerateContent';
  const vertex = VERTEX_PATH.test(url.pathname);
  // The Gemini API takes its key in a header or, as Google's samples do, in `?key=`.
  const key = vertex ? req.headers.authorization : req.headers['x-goog-api-key'] ?? url.searchParams.get('key') ?? undefined;
  const record: MockRequestRecord = {
    id: randomId('gemini-', 22), path: url.pathname, authorization: typeof key === 'string' ? key : undefined, body: undefined,
    stream, contentChunksWritten: 0, completed: false, clientAborted: false, status: 0,
  };
  log.add(record);
  const exchange = new GeminiExchange(res, record);
  if (req.method !== 'POST') {
    req.resume();
    exchange.sendError({ status: 404, message: `Method ${req.method} not found.` });
    return;
  }
  const parts: Buffer[] = [];
  let size = 0;
  req.on('data', (part: Buffer) => {
    size += part.length;
    if (size <= MAX_BODY_BYTES) parts.push(part);
  });
  req.on('error', () => {});
  req.on('end', () => {
    if (size > MAX_BODY_BYTES) return exchange.sendError({ status: 400, message: 'Request payload size exceeds the limit.' });
    const text = Buffer.concat(parts).toString('utf8');
    let body: Body;
    try {
      body = JSON.parse(text);
      record.body = body;
    } catch {
      record.body = text;
      return exchange.sendError({ status: 400, message: 'Invalid JSON payload received.' });
    }
    if (vertex && !vertexToken(record.authorization)) return exchange.sendError({ status: 401, message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.' });
    if (!record.authorization) return exchange.sendError({ status: 403, message: 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.' });
    if (stream && url.searchParams.get('alt') !== 'sse') return exchange.sendError({ status: 400, message: 'The mock streams with alt=sse only.' });
    if (!Array.isArray(body.contents) || body.contents.length === 0) return exchange.sendError({ status: 400, message: '* GenerateContentRequest.contents: contents is not specified' });
    const directives = lastUserDirectives(body);
    const fault = faults.meet(vertex ? bearerToken(record.authorization) : record.authorization, directives);
    const respond = () => {
      if (fault !== undefined && playFault(fault, stream, exchange, (status, headers) => exchange.sendError({ status, message: failureMessage(status), retryDelaySeconds: fault.retryAfterSeconds }, headers))) return;
      if (directives.fail !== undefined) return exchange.sendError({ status: directives.fail, message: failureMessage(directives.fail) });
      if (asksForImages(body)) {
        const invalid = imageRequestError(body, model);
        if (invalid !== undefined) return exchange.sendError({ status: 400, message: invalid });
        return exchange.sendJson(200, imageAnswerJson(body, model, randomId('', 22), directives, record));
      }
      if (asksForMusic(model)) {
        const song = musicAnswerJson(body, model, randomId('', 22));
        return song === undefined ? exchange.sendError({ status: 400, message: '* GenerateContentRequest.contents: the prompt is empty.' }) : exchange.sendJson(200, song);
      }
      if (asksForSpeech(body)) {
        const invalid = speechRequestError(body);
        if (invalid !== undefined) return exchange.sendError({ status: 400, message: invalid });
        return exchange.sendJson(200, speechAnswerJson(body, model, randomId('', 22)));
      }
      const p = plan(body, directives, behaviour, cache);
      const responseId = randomId('', 22);
      if (!stream) exchange.sendJson(200, responseJson(p, model, responseId));
      else exchange.stream(frames(p, model, responseId), directives.delayMs ?? behaviour.chunkDelayMs, cutPoint(fault, directives.disconnectAfter), streamFailure(fault, STREAM_ERROR_EVENT));
    };
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, respond);
  });
}

const failureMessage = (status: number): string => `Mock failure (${status}).`;

/** One response in progress; stops all work (timers, writes) once the connection closes. */
/** Google's mid-stream failure: an event carrying only `error`, and the end. */
const STREAM_ERROR_EVENT = `data: ${JSON.stringify({ error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } })}\n\n`;

class GeminiExchange {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private cutByServer = false;

  constructor(private readonly res: http.ServerResponse, readonly record: MockRequestRecord) {
    res.on('finish', () => { record.completed = true; });
    res.on('close', () => {
      this.closed = true;
      if (this.timer !== undefined) clearTimeout(this.timer);
      if (!res.writableFinished && !this.cutByServer) record.clientAborted = true;
    });
  }

  after(ms: number, next: () => void): void {
    if (ms <= 0) next();
    else this.timer = setTimeout(() => { if (!this.closed) next(); }, ms);
  }

  sendJson(status: number, body: string, headers?: Record<string, string>): void {
    if (this.closed) return;
    this.record.status = status;
    this.res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(body), ...headers }).end(body);
  }

  sendError(err: GeminiError, headers?: Record<string, string>): void {
    this.sendJson(err.status, geminiErrorJson(err), headers);
  }

  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void {
    this.cutByServer = true;
    resetConnection(this.res);
  }

  stream(events: Generator<Frame, void, undefined>, delayMs: number, disconnectAfter: number | undefined, failure?: StreamFailure): void {
    if (this.closed) return;
    this.record.status = 200;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const pump = (): void => {
      for (;;) {
        if (this.closed) return;
        const next = events.next();
        if (next.done) return void this.res.end();
        const frame = next.value;
        if (disconnectAfter !== undefined && frame.kind !== 'thought' && this.record.contentChunksWritten >= disconnectAfter) return this.cut();
        if (failure !== undefined && frame.kind !== 'thought' && this.record.contentChunksWritten >= failure.afterChunks) return void this.res.end(failure.data);
        const write = () => {
          this.res.write(frame.data);
          if (frame.kind === 'content') this.record.contentChunksWritten++;
        };
        if (delayMs > 0 && frame.kind !== 'finish') {
          this.timer = setTimeout(() => {
            if (this.closed) return;
            write();
            pump();
          }, delayMs);
          return;
        }
        write();
      }
    };
    pump();
  }

  private cut(): void {
    this.cutByServer = true;
    endMidBody(this.res);
  }
}
