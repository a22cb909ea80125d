import type { UpstreamResponse } from './upstream-client.js';
import { ApiError } from '../http/errors.js';

/**
 * An upstream's error answer as an error of ours: what the vendor refused as malformed stays a 400,
 * its rate limit a 429 (with its Retry-After); anything else, our credential included, is a 502.
 */
export async function upstreamFailure(response: UpstreamResponse, vendor: string): Promise<ApiError> {
  let detail = '';
  try {
    const text = await response.text();
    const parsed = JSON.parse(text) as { error?: { message?: string } };
    detail = parsed.error?.message ?? text.slice(0, 500);
  } catch {
    // an unreadable error body: the status says enough
  }
  const status = response.status;
  const suffix = detail ? `: ${detail}` : '';
  if (status === 400 || status === 404 || status === 413 || status === 422) return new ApiError(400, 'upstream_rejected', `The upstream vendor rejected the request${suffix}`);
  if (status === 429) {
    const retryAfter = String(response.headers['retry-after'] ?? '1');
    return new ApiError(429, 'upstream_rate_limited', `The upstream vendor is rate limiting this gateway${suffix}`, null, { 'retry-after': retryAfter });
  }
  return new ApiError(502, 'upstream_error', `The upstream vendor ${vendor} failed with status ${status}${suffix}`);
}
