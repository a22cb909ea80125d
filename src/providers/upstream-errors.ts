import { UpstreamError, type UpstreamResponse } from './upstream-client.js';
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
    const retryAfter = retryAfterOf(response) ?? '1';
    return new ApiError(429, 'upstream_rate_limited', `The upstream vendor is rate limiting this gateway${suffix}`, null, { 'retry-after': retryAfter });
  }
  return new ApiError(502, 'upstream_error', `The upstream vendor ${vendor} failed with status ${status}${suffix}`);
}

/**
 * An upstream's error answer kept as it is: its status and message in our envelope. For a call on
 * the caller's own credential that may not fall back (BYOK `always_use`): the caller's vendor
 * account said it, and the caller is the one to act on it.
 */
export async function upstreamErrorAsIs(response: UpstreamResponse, vendor: string): Promise<ApiError> {
  const detail = await errorDetail(response);
  const retryAfter = retryAfterOf(response);
  return new ApiError(response.status, 'upstream_error', `The upstream vendor ${vendor} answered ${response.status}${detail ? `: ${detail}` : ''}`, null,
    retryAfter ? { 'retry-after': retryAfter } : {});
}

/**
 * A call that got no HTTP answer as an error of ours (502 `upstream_unreachable`). An address a user
 * chose (`guarded`) gets one and the same message whatever went wrong (refused, reset, no TLS,
 * silence, not HTTP, an address the guard refused), so the answers cannot map the host's ports.
 */
export function upstreamUnreachable(error: unknown, vendor: string, guarded: boolean): ApiError {
  if (guarded) return new ApiError(502, 'upstream_unreachable', `The upstream vendor ${vendor} could not be reached at the configured address.`);
  const timedOut = error instanceof UpstreamError && error.reason === 'timeout';
  return new ApiError(502, 'upstream_unreachable', `The upstream vendor ${vendor} could not be reached${timedOut ? ' in time' : ''}: ${(error as Error).message}`);
}

/** The longest message a guarded host's answer contributes. */
const GUARDED_DETAIL_CHARS = 200;

/**
 * The message of an upstream error body (vendors put it in `error.message`), or its first bytes.
 * From a guarded host only a JSON message string, cut short and reduced to printable characters:
 * never the raw body (an internal service's page, a port scanner's banner).
 */
async function errorDetail(response: UpstreamResponse): Promise<string> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    return ''; // an unreadable error body: the status says the rest
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return response.guarded ? '' : text.slice(0, 500);
  }
  const message = messageOf(parsed);
  if (response.guarded) return message === undefined ? '' : printable(message).slice(0, GUARDED_DETAIL_CHARS);
  return message ?? text.slice(0, 500);
}

/** `error.message`, or a top-level `message`, when it is a string. */
function messageOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error, message } = body as { error?: unknown; message?: unknown };
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
  return typeof message === 'string' ? message : undefined;
}

/** Printable characters only: control and format characters become spaces, runs of spaces one. */
function printable(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu, ' ').replace(/\s+/g, ' ').trim();
}

const DELAY_SECONDS = /^\d{1,9}$/;
const HTTP_DATE = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** The upstream's Retry-After when it is a plain number of seconds or an HTTP date; anything else is dropped. */
function retryAfterOf(response: UpstreamResponse): string | undefined {
  const value = response.headers['retry-after'];
  return value !== undefined && (DELAY_SECONDS.test(value) || HTTP_DATE.test(value)) ? value : undefined;
}
