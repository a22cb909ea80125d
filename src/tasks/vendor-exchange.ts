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
    const timedOut = (error as Error).name === 'TimeoutError';
    return {
      kind: 'refused', retryable: true, code: timedOut ? 'timeout' : 'network', httpStatus: 0,
      message: timedOut ? `The vendor did not answer within ${timeoutMs} ms.` : `The vendor could not be reached: ${(error as Error).message}`,
    };
  }
}
