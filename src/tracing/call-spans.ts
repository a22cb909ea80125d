/**
 * The spans of an inference call (docs/operations.md "Traces"): a SERVER span per request of the
 * API, and under it `admission`, a CLIENT span per upstream attempt and `settlement`. Named and
 * attributed after OpenTelemetry's HTTP and GenAI semantic conventions where they apply.
 *
 * Every function here is called only when `tracer` is set (callers test it first): with tracing
 * off, nothing of this file runs. No attribute ever holds a credential, a prompt or an answer, a
 * URL's query (Gemini's `key=`), an e-mail address or a BYOK row's address.
 */
import { SpanKind, SpanStatusCode, context, trace, type Attributes, type Span } from '@opentelemetry/api';
import { contextOf, endFailed, tracer } from './tracing.js';
import type { UpstreamEndpoint } from '../providers/upstream-client.js';

/** What an endpoint's calls are, as GenAI's `gen_ai.operation.name` names them. */
export type GenAiOperation = 'chat' | 'embeddings' | 'generate_content';

/** Vendors as GenAI's `gen_ai.provider.name` (formerly `gen_ai.system`) knows them; the rest by their own name. */
const GEN_AI_PROVIDERS: Readonly<Record<string, string>> = Object.freeze({
  openai: 'openai', anthropic: 'anthropic', gemini: 'gcp.gemini', mistral: 'mistral_ai', xai: 'x_ai', deepseek: 'deepseek',
});

export function genAiProviderOf(vendor: string, vertex = false): string {
  return vertex ? 'gcp.vertex_ai' : GEN_AI_PROVIDERS[vendor] ?? vendor;
}

/** A request's SERVER span, continuing the caller's `traceparent` when it sent a valid one. */
export function startServerSpan(method: string, route: string, requestId: string, traceparent: string): Span {
  const upper = method.toUpperCase();
  return tracer!.startSpan(`${upper} ${route}`, {
    kind: SpanKind.SERVER,
    attributes: { 'http.request.method': upper, 'http.route': route, 'gateway.request_id': requestId },
  }, contextOf(traceparent));
}

/**
 * Ends a request's span with its answer's status. A 5xx is an error (`error.type`: the answer's
 * code, or the exception's class name, never its message); a 4xx only carries its `error.type`.
 */
export function endServerSpan(span: Span, status: number, errorType: string | undefined): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) endFailed(span, errorType ?? String(status));
  else {
    if (errorType !== undefined) span.setAttribute('error.type', errorType);
    span.end();
  }
}

/** What a call asked for, on its request's span. */
export interface CallRequest {
  readonly operation: GenAiOperation;
  readonly vendor: string;
  readonly model: string;
  readonly keyId: string;
  readonly stream: boolean;
  readonly maxTokens?: number | null;
}

export function describeCall(span: Span, call: CallRequest): void {
  if (!span.isRecording()) return; // not sampled: nothing to build
  const provider = genAiProviderOf(call.vendor);
  const attributes: Attributes = {
    'gen_ai.operation.name': call.operation, 'gen_ai.system': provider, 'gen_ai.provider.name': provider,
    'gen_ai.request.model': call.model, 'gateway.key_id': call.keyId, 'gateway.stream': call.stream,
  };
  if (call.maxTokens != null) attributes['gen_ai.request.max_tokens'] = call.maxTokens;
  span.setAttributes(attributes);
}

/** A child of the active span (the request's), e.g. `admission`. */
export function startChildSpan(name: string): Span {
  return tracer!.startSpan(name);
}

/** `work`'s outcome, ending `span` when it settles: failed (`endWithError`) when it throws. */
export function endedWith<T>(span: Span, work: T | Promise<T>): Promise<T> {
  return Promise.resolve(work).then((value) => {
    span.end();
    return value;
  }, (error: unknown) => {
    endWithError(span, error);
    throw error;
  });
}

/** Ends `span`, failed with the error's code when `error` is one (an ApiError's `code`, else its class). */
export function endWithError(span: Span, error: unknown): void {
  endFailed(span, errorTypeOf(error));
}

export function errorTypeOf(error: unknown): string {
  if (error && typeof error === 'object') {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && /^[a-z][a-z0-9_.]{0,63}$/.test(code)) return code;
    const name = (error as { name?: unknown }).name;
    if (typeof name === 'string') return name.slice(0, 64);
  }
  return 'error';
}

/** One upstream attempt, as the route that makes it describes it. */
export interface AttemptLabel {
  /** The routing target's name, or `byok` for the caller's own credential. */
  readonly target: string;
  /** The model id the upstream is asked for. */
  readonly model: string;
  /** Its number among the call's attempts, from 1. */
  readonly attempt: number;
  readonly operation?: GenAiOperation;
}

/**
 * A CLIENT span for one upstream attempt (`chat {upstream model}`), a child of the active span.
 * The server's address is given for the platform's own targets only: a BYOK row's address is the
 * caller's, and a guarded endpoint is one.
 */
export function startAttemptSpan(label: AttemptLabel | undefined, endpoint: UpstreamEndpoint): Span {
  const name = label ? `${label.operation ?? 'chat'} ${label.model}` : 'upstream';
  // A call not sampled: a span all the same (its id is the upstream's parent), with nothing recorded.
  if (trace.getActiveSpan()?.isRecording() !== true) return tracer!.startSpan(name, { kind: SpanKind.CLIENT });
  const attributes: Attributes = { 'gateway.target': label?.target ?? 'unknown', 'gateway.attempt': label?.attempt ?? 1 };
  if (label) attributes['gen_ai.request.model'] = label.model;
  if (!endpoint.guarded && label?.target !== 'byok') {
    const server = serverOf(endpoint.origin);
    if (server) {
      attributes['server.address'] = server.address;
      attributes['server.port'] = server.port;
    }
  }
  return tracer!.startSpan(name, { kind: SpanKind.CLIENT, attributes });
}

/** Platform targets' origins, parsed once (there are few: the routing file's and the vendors'). */
const servers = new Map<string, { address: string; port: number } | undefined>();
function serverOf(origin: string): { address: string; port: number } | undefined {
  if (servers.has(origin)) return servers.get(origin);
  let server: { address: string; port: number } | undefined;
  try {
    const url = new URL(origin);
    server = { address: url.hostname, port: Number(url.port) || (url.protocol === 'https:' ? 443 : 80) };
  } catch {
    server = undefined; // not a URL: left out
  }
  if (servers.size >= 1000) servers.clear();
  servers.set(origin, server);
  return server;
}

/** The attempt's response head arrived: its status and the time to it (an event, and `gateway.ttfb_ms`). */
export function attemptAnswered(span: Span, status: number, startedMs: number): void {
  if (!span.isRecording()) return;
  const ttfbMs = Date.now() - startedMs;
  span.setAttributes({ 'http.response.status_code': status, 'gateway.ttfb_ms': ttfbMs });
  span.addEvent('first_byte', { 'gateway.ttfb_ms': ttfbMs });
  if (status >= 400) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(status) });
    span.setAttribute('error.type', String(status));
  }
}

/** What a call settled, on its request's span and a `settlement` span under it. */
export interface Settled {
  readonly responseModel: string;
  readonly status: number;
  readonly errorCode: string | null;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly chargedNano: bigint;
  readonly attempts: number;
}

export function recordSettlement(server: Span, settled: Settled): void {
  if (!server.isRecording()) return;
  const costUsd = Number(settled.chargedNano) / 1e9;
  server.setAttributes({
    'gen_ai.response.model': settled.responseModel,
    'gen_ai.usage.input_tokens': settled.promptTokens,
    'gen_ai.usage.output_tokens': settled.completionTokens,
    'gen_ai.usage.cache_read.input_tokens': settled.cachedTokens,
    'gateway.cost_usd': costUsd,
    'gateway.attempts': settled.attempts,
  });
  if (settled.errorCode !== null) server.setAttribute('error.type', settled.errorCode);
  const span = tracer!.startSpan('settlement', {
    attributes: {
      'gateway.charged_usd': costUsd, 'gateway.status': settled.status,
      'gen_ai.usage.input_tokens': settled.promptTokens, 'gen_ai.usage.output_tokens': settled.completionTokens,
    },
  }, trace.setSpan(context.active(), server));
  span.end();
}
