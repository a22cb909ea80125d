/**
 * piscina task: one delivery of a task's final object to its `callback_url`, signed the Standard
 * Webhooks way. The URL passes the URL guard again at delivery (its DNS may have changed since the
 * submit); redirects are not followed. Plain data in and out.
 */
import { UrlGuardError, postGuarded } from '../src/media/url-guard.js';
import { signWebhook } from '../src/tasks/webhook-signature.js';
import { SpanKind, traceparentOf, type Span } from '../src/tracing/tracing.js';
import { inWorkerSpan, startWorkerTracing, type WorkerTrace } from '../src/tasks/worker-spans.js';

export interface DeliverCallbackInput {
  /** The task's `callback_url`: https to public addresses only (http to loopback with allowLoopback). */
  readonly url: string;
  /** The same on every attempt: the receiver's idempotency key. */
  readonly webhookId: string;
  /** The final task object, serialised once: the bytes signed are the bytes sent. */
  readonly body: string;
  /** Every secret that signs (the current one, and the previous one for a day after a rotation). */
  readonly secrets: readonly string[];
  /** Bounds the whole attempt: DNS, connect, body, the answer's headers. */
  readonly timeoutMs: number;
  /** Tests only: loopback addresses and plain http to them. */
  readonly allowLoopback: boolean;
  /** The callback step's span (tracing on): the POST is part of the task's trace and sends its traceparent. */
  readonly trace?: WorkerTrace;
}

export interface DeliverCallbackOutput {
  /** A 2xx answer. */
  readonly ok: boolean;
  readonly status?: number;
  readonly error?: string;
  readonly durationMs: number;
}

await startWorkerTracing();

/**
 * One attempt; never rejects (every failure is an `ok: false` result the runtime records and retries).
 * Its span names the receiver's host only: never the URL's path or query, the signature or the body.
 */
export default function deliverCallback(input: DeliverCallbackInput): Promise<DeliverCallbackOutput> {
  return inWorkerSpan(input.trace, 'callback.deliver', SpanKind.CLIENT, (span) => delivered(input, span), (output) => ({
    attributes: {
      'http.request.method': 'POST', 'server.address': hostOf(input.url), 'http.request.body.size': Buffer.byteLength(input.body),
      ...(output.status ? { 'http.response.status_code': output.status } : {}),
    },
    // A failure's code: the status, or the URL guard's reason (`timeout`, `private_address`), never a message.
    ...(output.ok ? {} : { error: output.status ? String(output.status) : /^[a-z_]+(?=: )/.exec(output.error ?? '')?.[0] ?? 'network' }),
  }));
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
};

async function delivered(input: DeliverCallbackInput, span: Span | undefined): Promise<DeliverCallbackOutput> {
  const started = Date.now();
  const timestamp = Math.floor(started / 1000);
  try {
    const { status } = await postGuarded(input.url, {
      body: input.body,
      timeoutMs: input.timeoutMs,
      allowLoopback: input.allowLoopback,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'model-gateway-webhooks/1',
        'webhook-id': input.webhookId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(input.secrets, input.webhookId, timestamp, input.body),
        ...(span ? { traceparent: traceparentOf(span) } : {}),
      },
    });
    return { ok: status >= 200 && status < 300, status, durationMs: Date.now() - started };
  } catch (error) {
    // `reason: message` so the task row's last error says which check or step failed.
    const message = error instanceof UrlGuardError ? `${error.reason}: ${error.message}` : error instanceof Error ? error.message : String(error);
    return { ok: false, error: message, durationMs: Date.now() - started };
  }
}
