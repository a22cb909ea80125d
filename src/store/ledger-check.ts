import type { AnySql, Sql } from './db.js';
import { holdIdOf } from './tasks.js';

/** What `gateway ledger check` reads from Postgres: accounts, their ledger totals, and keys' period spend. */

/** Account ids in order, `limit` at a time after `after` (keyset paging, so millions of accounts stream). */
export async function listAccountIds(sql: AnySql, after: string | null, limit: number): Promise<string[]> {
  const rows = after === null
    ? await sql<{ id: string }[]>`select id from accounts order by id limit ${limit}`
    : await sql<{ id: string }[]>`select id from accounts where id > ${after} order by id limit ${limit}`;
  return rows.map((row) => row.id);
}

export interface UserLedgerTotals {
  /** Sum of all the user's transactions, nano-USD. */
  readonly credits: bigint;
  /** Sum of the user's positive transactions (deposits), nano-USD. */
  readonly deposits: bigint;
}

export interface LedgerSnapshot {
  /** Per user; a user without transactions is absent (both totals 0). */
  readonly totals: Map<string, UserLedgerTotals>;
  /** Of the transaction ids asked about, those already committed, with their credits_nano. */
  readonly committed: Map<string, bigint>;
  /** Per user, the holds of their pending tasks (hold id -> nano-USD): each must be open in Redis. */
  readonly taskHolds: Map<string, Map<string, bigint>>;
}

/**
 * The users' ledger totals and which of `transactionIds` (ledger-stream entries still in Redis)
 * are already committed, from ONE snapshot (repeatable read), so an entry the writer commits
 * meanwhile is seen either in both answers or in neither.
 */
export async function ledgerSnapshot(sql: Sql, userIds: readonly string[], transactionIds: readonly string[]): Promise<LedgerSnapshot> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const rows = await tx<{ user_id: string; credits: bigint; deposits: bigint }[]>`
      select user_id, coalesce(sum(credits_nano), 0)::bigint as credits,
             coalesce(sum(credits_nano) filter (where credits_nano > 0), 0)::bigint as deposits
      from transactions where user_id = any(${tx.array(userIds as string[])}::text[])
      group by user_id`;
    const committed = transactionIds.length === 0 ? [] : await tx<{ id: string; credits_nano: bigint }[]>`
      select id, credits_nano from transactions where id = any(${tx.array(transactionIds as string[])}::uuid[])`;
    const holds = await tx<{ user_id: string; id: string; api_key_id: string; hold_nano: bigint }[]>`
      select user_id, id, api_key_id, hold_nano from tasks
      where user_id = any(${tx.array(userIds as string[])}::text[]) and status = 'pending' and hold_nano > 0`;
    const taskHolds = new Map<string, Map<string, bigint>>();
    for (const hold of holds) {
      let ofUser = taskHolds.get(hold.user_id);
      if (!ofUser) taskHolds.set(hold.user_id, ofUser = new Map());
      ofUser.set(holdIdOf(hold.api_key_id, hold.id), hold.hold_nano);
    }
    return {
      totals: new Map(rows.map((row) => [row.user_id, { credits: row.credits, deposits: row.deposits }])),
      committed: new Map(committed.map((row) => [row.id, row.credits_nano])),
      taskHolds,
    };
  });
}

export interface LimitedKeyRow {
  id: string;
  user_id: string;
  credit_limit_nano: bigint;
  credit_reset_interval: 'none' | 'daily' | 'weekly' | 'monthly';
  credit_period_start: Date | null;
  created_at: Date;
}

/** Live (not revoked) keys with a credit limit, of one user or of everyone. */
export async function listLimitedKeys(sql: AnySql, userId: string | null): Promise<LimitedKeyRow[]> {
  return sql<LimitedKeyRow[]>`
    select id, user_id, credit_limit_nano, credit_reset_interval, credit_period_start, created_at
    from api_keys
    where revoked_at is null and credit_limit_nano is not null ${userId === null ? sql`` : sql`and user_id = ${userId}`}
    order by user_id, id`;
}

/**
 * Each key's spend (nano-USD, positive) in Postgres since its period start: minus the sum of its usage
 * transactions created at or after it. One statement for any number of keys (index transactions_key_created).
 */
export async function keyPeriodSpend(sql: AnySql, periods: readonly { keyId: string; since: Date }[]): Promise<Map<string, bigint>> {
  if (periods.length === 0) return new Map();
  const rows = await sql<{ id: string; spent: bigint }[]>`
    select k.id, coalesce(-sum(t.credits_nano), 0)::bigint as spent
    from unnest(${sql.array(periods.map((p) => p.keyId))}::uuid[], ${sql.array(periods.map((p) => p.since.toISOString()))}::timestamptz[]) as k(id, since)
    left join transactions t on t.api_key_id = k.id and t.created_at >= k.since and t.payment_method = 'usage'
    group by k.id`;
  return new Map(rows.map((row) => [row.id, row.spent]));
}
