import type { KeyLimits } from '../admission/scripts.js';
import type { ApiKeyRow } from '../store/api-keys.js';

/** A key's `credit_limit` period: when its spend window started, from its reset interval. */
export type CreditResetInterval = 'none' | 'daily' | 'weekly' | 'monthly';

const DAY_MS = 86_400_000;

/**
 * Start of the spend period containing `nowMs`. Periods follow the UTC calendar (midnight, Monday
 * midnight, the 1st of the month) but never start before `anchorMs`, the moment the limit or its
 * interval was last set, so spend from before a change never counts against the new cap.
 */
export function creditPeriodStartMs(interval: CreditResetInterval, anchorMs: number, nowMs: number): number {
  if (interval === 'none') return anchorMs;
  const now = new Date(nowMs);
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  let start: number;
  if (interval === 'daily') start = midnight;
  else if (interval === 'weekly') start = midnight - ((now.getUTCDay() + 6) % 7) * DAY_MS; // Monday
  else start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  return Math.max(start, anchorMs);
}

/** Start of the current credit period of a key row (anchored where its limit or interval was last set). */
export function keyPeriodStartMs(row: Pick<ApiKeyRow, 'credit_reset_interval' | 'credit_period_start' | 'created_at'>, nowMs: number): number {
  return creditPeriodStartMs(row.credit_reset_interval, (row.credit_period_start ?? row.created_at).getTime(), nowMs);
}

/** What admission enforces for a key at `nowMs`, from its row. */
export function keyLimitsOf(row: ApiKeyRow, nowMs: number): KeyLimits {
  const capped = row.credit_limit_nano !== null;
  return {
    rpm: row.rate_limit_rpm,
    tph: row.rate_limit_tph === null ? null : Number(row.rate_limit_tph),
    tpd: row.rate_limit_tpd === null ? null : Number(row.rate_limit_tpd),
    capNano: row.credit_limit_nano,
    periodStartMs: capped ? keyPeriodStartMs(row, nowMs) : 0,
  };
}
