import type { VendorRefusal, VendorRequest } from '../providers/video/adapter.js';
import { UrlGuardError, exchangeGuarded } from '../media/url-guard.js';
import { ApiError } from '../http/errors.js';
import { trace } from '@opentelemetry/api';
import { SpanKind, endFailed, traceparentOf, tracer, withSpan } from '../tracing/tracing.js';

/** A vendor's answer as the adapters read it. */
export interface VendorAnswer {
  readonly kind: 'answer';
  readonly status: number;
  readonly body: string;
}

/**
 * The request an adapter builds, or the refusal its building amounts to: a target that cannot be
 * called right now (a Vertex AI target without an access token yet, a 503) is a retryable refusal.
 */
export function builtRequest(build: () => VendorRequest): VendorRequest | VendorRefusal {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { kind: 'refused', retryable: error.status >= 500, code: error.code, message: error.message, httpStatus: error.status };
  }
}

/** Largest vendor answer read by default (task APIs answer small JSON; a result itself is downloaded separately). */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface ExchangeOptions {
  /** The answer's limit (default MAX_ANSWER_BYTES): a longer one is a retryable `answer_too_large`. */
  readonly maxBytes?: number;
  /** Tests and the offline demo: a guarded request may go to loopback. */
  readonly allowLoopback?: boolean;
}

/**
 * Sends one vendor request, bounded by `timeoutMs` and in size (read as it arrives, never past the
 * limit). A transport failure (refused, reset, timed out) is a retryable refusal: the task tries
 * again later rather than failing on a blip. A guarded request goes through the URL guard.
 */
export async function exchange(request: VendorRequest, timeoutMs: number, options: ExchangeOptions = {}): Promise<VendorAnswer | VendorRefusal> {
  return inExchangeSpan(request, (sent) => exchangeOnce(sent, timeoutMs, options));
}

async function exchangeOnce(request: VendorRequest, timeoutMs: number, options: ExchangeOptions): Promise<VendorAnswer | VendorRefusal> {
  const maxBytes = options.maxBytes ?? MAX_ANSWER_BYTES;
  const tooLarge = (status: number): VendorRefusal =>
    ({ kind: 'refused', retryable: true, code: 'answer_too_large', message: `The vendor answered more than ${maxBytes} bytes.`, httpStatus: status });
  if (request.guarded) {
    try {
      const answer = await exchangeGuarded(request.url, { ...request, maxBytes, timeoutMs, allowLoopback: options.allowLoopback });
      return { kind: 'answer', status: answer.status, body: answer.body.toString('utf8') };
    } catch (error) {
      if (error instanceof UrlGuardError && error.reason === 'too_large') return tooLarge(0);
      return transportRefusal(error, timeoutMs);
    }
  }
  const answer = await exchangeBytes(request, timeoutMs, maxBytes);
  if (answer.kind === 'refused') return answer.code === 'answer_too_large' ? tooLarge(answer.httpStatus) : answer;
  return { kind: 'answer', status: answer.status, body: answer.body.toString('utf8') };
}

function transportRefusal(error: unknown, timeoutMs: number): VendorRefusal {
  const timedOut = (error as Error).name === 'TimeoutError' || (error instanceof UrlGuardError && error.reason === 'timeout');
  return {
    kind: 'refused', retryable: true, code: timedOut ? 'timeout' : 'network', httpStatus: 0,
    message: timedOut ? `The vendor did not answer within ${timeoutMs} ms.` : `The vendor could not be reached: ${(error as Error).message}`,
  };
}

/** A vendor's binary answer (a synchronous audio API's file). */
export interface VendorBytes {
  readonly kind: 'bytes';
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

/**
 * `exchange` for an answer that is the result itself: read as bytes, at most `maxBytes` (a longer
 * answer is a final refusal: trying again makes the same file).
 */
export async function exchangeBytes(request: VendorRequest, timeoutMs: number, maxBytes: number): Promise<VendorBytes | VendorRefusal> {
  return inExchangeSpan(request, (sent) => exchangeBytesOnce(sent, timeoutMs, maxBytes));
}

async function exchangeBytesOnce(request: VendorRequest, timeoutMs: number, maxBytes: number): Promise<VendorBytes | VendorRefusal> {
  try {
    const response = await fetch(request.url, {
      method: request.method, headers: request.headers, body: request.body, redirect: 'error', signal: AbortSignal.timeout(timeoutMs),
    });
    const parts: Buffer[] = [];
    let size = 0;
    for await (const part of response.body ?? []) {
      size += part.length;
      if (size > maxBytes) {
        await response.body?.cancel().catch(() => {});
        return { kind: 'refused', retryable: false, code: 'answer_too_large', message: `The vendor's answer is larger than ${maxBytes} bytes.`, httpStatus: response.status };
      }
      parts.push(Buffer.from(part));
    }
    return { kind: 'bytes', status: response.status, contentType: response.headers.get('content-type') ?? undefined, body: Buffer.concat(parts) };
  } catch (error) {
    return transportRefusal(error, timeoutMs);
  }
}

/**
 * One vendor exchange as an HTTP client span, a child of the active span (a task step's worker span,
 * a cancel's request), its `traceparent` sent to the vendor. Only the method, host and port, the
 * answer's status and size are recorded: never the path or query (a key may ride in one), headers or
 * bodies. Without tracing, or with no span active, the request goes as it is.
 */
async function inExchangeSpan<T extends VendorAnswer | VendorBytes | VendorRefusal>(request: VendorRequest, send: (request: VendorRequest) => Promise<T>): Promise<T> {
  if (!tracer || !trace.getActiveSpan()) return send(request);
  let url: URL | undefined;
  try {
    url = new URL(request.url);
  } catch {
    return send(request); // refused by the fetch itself
  }
  const span = tracer.startSpan(request.method, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': request.method, 'server.address': url.hostname,
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80), 'url.scheme': url.protocol.slice(0, -1),
    },
  });
  const answer = await withSpan(span, () => send({ ...request, headers: { ...request.headers, traceparent: traceparentOf(span) } }));
  if (answer.kind === 'refused') {
    if (answer.httpStatus > 0) span.setAttribute('http.response.status_code', answer.httpStatus);
    endFailed(span, answer.httpStatus >= 400 ? String(answer.httpStatus) : answer.code);
    return answer;
  }
  span.setAttributes({ 'http.response.status_code': answer.status, 'http.response.body.size': typeof answer.body === 'string' ? Buffer.byteLength(answer.body) : answer.body.length });
  if (answer.status >= 400) endFailed(span, String(answer.status));
  else span.end();
  return answer;
}
