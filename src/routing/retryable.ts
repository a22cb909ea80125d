import { ApiError } from '../http/errors.js';

/** Upstream statuses worth another target: rate limited, failing, overloaded (Anthropic's 529). */
const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504, 529]);
/** Statuses that say the request itself is wrong: another target would answer the same. */
const REQUEST_FAULTS = new Set([400, 401, 403, 404, 409, 413, 422]);

/**
 * Whether an upstream's error answer (its HTTP status, and our error made of it) may be tried on
 * another target: the retryable statuses, and any other non-request fault whose message says the
 * vendor is overloaded (some vendors say so with a 4xx or 5xx of their own).
 */
export function retryableAnswer(status: number, error: ApiError): boolean {
  if (RETRYABLE_STATUSES.has(status)) return true;
  return !REQUEST_FAULTS.has(status) && /overloaded/i.test(error.message);
}

const DELAY_SECONDS = /^\d{1,9}$/;

/** An upstream Retry-After (seconds or an HTTP date, as upstream-errors.ts keeps it) in milliseconds from `nowMs`. */
export function retryAfterMs(error: ApiError, nowMs: number): number | undefined {
  const value = error.headers['retry-after'];
  if (value === undefined) return undefined;
  if (DELAY_SECONDS.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
