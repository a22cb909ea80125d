import type { AnySql } from './db.js';
import { monthsBefore } from './request-logs.js';

/** How long a rollup row lives by default, in calendar months (USAGE_ROLLUP_RETENTION_MONTHS). */
export const USAGE_ROLLUP_RETENTION_MONTHS = 13;
/** The rollup's stand-in for "no key" (a primary key column cannot be null); the API shows it as null. */
export const NO_KEY = '00000000-0000-0000-0000-000000000000';
/** Rows deleted per statement, so a large backlog never becomes one long transaction. */
const DELETE_BATCH = 10_000;

/** One settled call written outside the ledger writer (a task's ending), as the rollup counts it. */
export interface RollupCall {
  readonly userId: string;
  readonly keyId: string | null;
  readonly model: string;
  /** When the call ended: its usage transaction's created_at. */
  readonly endedAt: Date;
  readonly status: number;
  /** What its usage transaction inserted now (0 when none, or when it was there before). */
  readonly costNano: bigint;
}

/**
 * Adds one call to usage_rollup, in the caller's transaction (the one that inserted its request log
 * and charge). The ledger writer does the same for its batches inside insertUsageRecords.
 */
export async function addToUsageRollup(sql: AnySql, call: RollupCall): Promise<void> {
  await sql`
    insert into usage_rollup as u (user_id, bucket, model, api_key_id, requests, errors, cost_nano)
    values (${call.userId}, date_trunc('hour', ${call.endedAt}::timestamptz, 'UTC'), ${call.model}, ${call.keyId ?? NO_KEY},
            1, ${call.status >= 400 ? 1 : 0}, ${call.costNano.toString()})
    on conflict (user_id, bucket, model, api_key_id) do update set
      requests = u.requests + 1, errors = u.errors + excluded.errors, cost_nano = u.cost_nano + excluded.cost_nano`;
}

/** Deletes the rollup rows of hours before the retention window (`keepMonths` before `now`), in batches. Returns the rows deleted. */
export async function expireUsageRollup(sql: AnySql, now = new Date(), keepMonths = USAGE_ROLLUP_RETENTION_MONTHS): Promise<number> {
  const cutoff = monthsBefore(now, keepMonths);
  let deleted = 0;
  for (;;) {
    const result = await sql`
      delete from usage_rollup where ctid = any(array(select ctid from usage_rollup where bucket < ${cutoff} limit ${DELETE_BATCH}))`;
    deleted += result.count;
    if (result.count < DELETE_BATCH) return deleted;
  }
}

export type UsageInterval = 'day' | 'hour';
export type UsageGrouping = 'model' | 'key' | 'none';

export interface UsageQuery {
  readonly userId: string;
  /** Only this key's calls (a regular key reads only its own). */
  readonly keyId?: string;
  readonly model?: string;
  /** Hours that start at or after `from` and before `to`. */
  readonly from: Date;
  readonly to: Date;
  readonly interval: UsageInterval;
  readonly groupBy: UsageGrouping;
}

export interface UsageRow {
  start: Date;
  group: string | null;
  requests: bigint;
  errors: bigint;
  prompt_tokens: bigint;
  completion_tokens: bigint;
  cached_tokens: bigint;
  reasoning_tokens: bigint;
  cost_nano: bigint;
}

/** The rollup summed by UTC hour or day (a day is the sum of its hours), and by model or key, oldest first. */
export async function usageSeries(sql: AnySql, query: UsageQuery): Promise<UsageRow[]> {
  const group = query.groupBy === 'model' ? sql`model` : query.groupBy === 'key' ? sql`nullif(api_key_id, ${NO_KEY}::uuid)::text` : sql`null::text`;
  return sql<UsageRow[]>`
    select date_trunc(${query.interval}, bucket, 'UTC') as start, ${group} as group,
           sum(requests)::bigint as requests, sum(errors)::bigint as errors,
           sum(prompt_tokens)::bigint as prompt_tokens, sum(completion_tokens)::bigint as completion_tokens,
           sum(cached_tokens)::bigint as cached_tokens, sum(reasoning_tokens)::bigint as reasoning_tokens,
           sum(cost_nano)::bigint as cost_nano
    from usage_rollup
    where user_id = ${query.userId} and bucket >= ${query.from} and bucket < ${query.to}
      ${query.keyId === undefined ? sql`` : sql`and api_key_id = ${query.keyId}::uuid`}
      ${query.model === undefined ? sql`` : sql`and model = ${query.model}`}
    group by 1, 2 order by 1, 2`;
}
