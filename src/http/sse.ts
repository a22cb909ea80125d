import type { UpstreamResponse } from '../providers/upstream-client.js';
import type { Reply } from './reply.js';
import { ATTEMPTS_HEADER, type CallHeaders } from '../routing/routing.js';
import { inActiveContext } from '../tracing/tracing.js';

export const SSE_HEADERS = Object.freeze({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });

/** A paid call's stream head: SSE_HEADERS and its call headers, field by field (see callHeaders: a spread costs about a microsecond). */
export function sseCallHeaders(call: CallHeaders): Readonly<Record<string, string>> {
  return {
    'content-type': SSE_HEADERS['content-type'],
    'cache-control': SSE_HEADERS['cache-control'],
    'x-accel-buffering': SSE_HEADERS['x-accel-buffering'],
    'x-ratelimit-limit-requests': call['x-ratelimit-limit-requests'],
    'x-ratelimit-remaining-requests': call['x-ratelimit-remaining-requests'],
    'x-ratelimit-reset-requests': call['x-ratelimit-reset-requests'],
    'x-request-id': call['x-request-id'],
    [ATTEMPTS_HEADER]: call[ATTEMPTS_HEADER],
  };
}

/** An SSE event carrying an error in the envelope's `error` shape (for failures after the headers went out). */
export function sseErrorEvent(code: string, message: string): string {
  return `data: ${JSON.stringify({ error: { message, type: 'api_error', code } })}\n\n`;
}

export interface EventRelay {
  /** Set once the upstream reported usage. */
  readonly usage: unknown;
  /** See ChatStreamRelay.usageEventAt. */
  readonly usageEventAt?: number | undefined;
  /** Takes an upstream chunk; returns the bytes to forward now, if any. */
  push(chunk: Buffer): Buffer | undefined;
}

/**
 * Pipes an upstream event stream through `relay` to the client, pausing the upstream while the
 * client is slow (uWS buffered a write) and resuming once it drained. `afterChunk` runs after each
 * chunk's bytes are written, except the bytes that carry the usage and what follows them: those go
 * out after it, so the call it settles is journaled before the client has the end of the stream.
 * Resolves when the upstream ends; rejects when it breaks or is aborted.
 */
export function pipeEvents(body: UpstreamResponse, reply: Reply, relay: EventRelay, afterChunk: () => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    body.consume({
      // Runs from the upstream socket's events: bound to this call's trace context when tracing is on.
      data: inActiveContext((chunk: Buffer) => {
        const hadUsage = relay.usage !== undefined;
        const out = relay.push(chunk);
        // What goes out before afterChunk: all of it, unless this chunk brought the usage (then what precedes its event, if known).
        const length = out?.length ?? 0;
        const before = !hadUsage && relay.usage !== undefined ? Math.min(relay.usageEventAt ?? 0, length) : length;
        let writable = before === 0 || reply.write(before === length ? out! : out!.subarray(0, before));
        afterChunk();
        if (before < length) writable = reply.write(before === 0 ? out! : out!.subarray(before)) && writable;
        if (!writable) {
          body.pause();
          reply.whenWritable(() => body.resume());
        }
      }),
      end: resolve,
      error: reject,
    });
    // What came with the upstream's head went out with the response head; with nothing yet, the head goes alone now.
    reply.sendHead();
  });
}
