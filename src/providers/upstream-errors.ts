import type { UpstreamResponse } from './upstream-client.js';
import { ApiError } from '../http/errors.js';

/**
 * An upstream's error answer as an error of ours: what the vendor refused as malformed stays a 400,
 * its rate limit a 429 (with its Retry-After); anything else, our credential included, is a 502.
 */
export async function upstreamFailure(response: UpstreamResponse, vendor: string): Promise<ApiError> {
  const detail = await errorDetail(response);
  const status = response.status;
  const suffix = detail ? `: ${detail}` : '';
  if (status === 400 || status === 404 || status === 413 || status === 422) return new ApiError(400, 'upstream_rejected', `The upstream vendor rejected the request${suffix}`);
  if (status === 429) {
    const retryAfter = String(response.headers['retry-after'] ?? '1');
    return new ApiError(429, 'upstream_rate_limited', `The upstream vendor is rate limiting this gateway${suffix}`, null, { 'retry-after': retryAfter });
  }
  return new ApiError(502, 'upstream_error', `The upstream vendor ${vendor} failed with status ${status}${suffix}`);
}

/** The message of an upstream error body (vendors put it in `error.message`), or its first bytes. */
async function errorDetail(response: UpstreamResponse): Promise<string> {
  let text = '';
  try {
    text = await response.text();
    const parsed = JSON.parse(text) as { error?: { message?: string } };
    return parsed.error?.message ?? text.slice(0, 500);
  } catch {
    return text.slice(0, 500); // an unreadable error body: the status says the rest
  }
}

/**
 * An upstream's error answer kept as it is: its status and message in our envelope. For a call on
 * the caller's own credential that may not fall back (BYOK `always_use`): the caller's vendor
 * account said it, and the caller is the one to act on it.
 */
export async function upstreamErrorAsIs(response: UpstreamResponse, vendor: string): Promise<ApiError> {
  const detail = await errorDetail(response);
  const retryAfter = response.headers['retry-after'];
  return new ApiError(response.status, 'upstream_error', `The upstream vendor ${vendor} answered ${response.status}${detail ? `: ${detail}` : ''}`, null,
    retryAfter ? { 'retry-after': String(retryAfter) } : {});
}
