/** When a failed `callback_url` delivery is tried again, and when it is given up. Pure. */

/**
 * The pause after failed attempt `attempt` (counting from 1) before the next one: `baseMs` doubling
 * per attempt, with ±20 % jitter so receivers that failed together are not retried in waves, and
 * never above `capMs` (a hard ceiling: an operator's "at most" holds). `random` is injectable for tests.
 */
export function callbackRetryDelayMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  if (!Number.isSafeInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a whole number from 1, not ${attempt}.`);
  // A cap below the base is allowed (settings are separate variables): every pause is then the cap.
  if (!(baseMs > 0 && capMs > 0 && Number.isFinite(baseMs) && Number.isFinite(capMs))) throw new RangeError(`baseMs and capMs must be positive, not ${baseMs} and ${capMs}.`);
  // The exponent stops at 30: 2^30 times any sane base is past every cap, and it keeps the number finite.
  const delay = Math.min(capMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.min(capMs, Math.round(delay * (0.8 + 0.4 * random())));
}

/** Attempts stop once `windowMs` (24 h by default) has passed since the first one. */
export function callbackGivesUp(firstAttemptAt: Date, now: Date, windowMs = 86_400_000): boolean {
  // Written as "not yet within" so an invalid Date (NaN) gives up instead of retrying forever.
  return !(now.getTime() - firstAttemptAt.getTime() < windowMs);
}
