import type { VendorRefusal, VendorRequest } from '../providers/video/adapter.js';

/** A vendor's answer as the adapters read it. */
export interface VendorAnswer {
  readonly kind: 'answer';
  readonly status: number;
  readonly body: string;
}

/** Largest vendor answer read (task APIs answer small JSON; a result itself is downloaded separately). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/**
 * Sends one vendor request, bounded by `timeoutMs`. A transport failure (refused, reset, timed out) is
 * a retryable refusal: the task tries again later rather than failing on a blip.
 */
export async function exchange(request: VendorRequest, timeoutMs: number): Promise<VendorAnswer | VendorRefusal> {
  try {
    const response = await fetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await response.text();
    if (body.length > MAX_ANSWER_BYTES) return { kind: 'refused', retryable: true, code: 'answer_too_large', message: 'The vendor answered more than 4 MiB.', httpStatus: response.status };
    return { kind: 'answer', status: response.status, body };
  } catch (error) {
    return transportRefusal(error, timeoutMs);
  }
}

function transportRefusal(error: unknown, timeoutMs: number): VendorRefusal {
  const timedOut = (error as Error).name === 'TimeoutError';
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
