/** When a failed `callback_url` delivery is tried again, and when it is given up. Pure. */

/** The pause before attempt `attempt + 1` (attempt counts from 1): doubling from `baseMs`, capped, with ±20 % jitter so receivers are not hit in waves. */
export function callbackRetryDelayMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const delay = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(0, attempt - 1), 30));
  return Math.round(delay * (0.8 + 0.4 * random()));
}

/** Attempts stop once `windowMs` (24 h by default) has passed since the first one. */
export function callbackGivesUp(firstAttemptAt: Date, now: Date, windowMs = 86_400_000): boolean {
  return now.getTime() - firstAttemptAt.getTime() >= windowMs;
}
