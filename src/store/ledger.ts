import type { AnySql, Sql } from './db.js';
import { holdIdOf } from './tasks.js';

export interface TransactionRow {
  id: string;
  credits_nano: bigint;
  payment_method: string;
  status: string;
  created_at: Date;
}

/** The Postgres side of a balance: credits (all transactions) and deposits (positive ones). */
export async function ledgerTotals(sql: AnySql, userId: string): Promise<{ credits: bigint; deposits: bigint }> {
  const [row] = await sql<{ credits: bigint; deposits: bigint }[]>`
    select coalesce(sum(credits_nano), 0)::bigint as credits,
           coalesce(sum(credits_nano) filter (where credits_nano > 0), 0)::bigint as deposits
    from transactions where user_id = ${userId}`;
  return row!;
}

/**
 * A balance as it is loaded into Redis: the ledger's totals and the holds of the user's pending tasks,
 * in ONE statement (one snapshot even under read committed, so a task ending meanwhile, its charge
 * committed with its row, is counted in exactly one of them, and the snapshot is taken after any
 * lock the transaction took before it).
 */
export async function balanceFigures(sql: AnySql, userId: string): Promise<{ credits: bigint; deposits: bigint; holds: { holdId: string; nano: bigint }[] }> {
  const [row] = await sql<{ credits: bigint; deposits: bigint; holds: { id: string; key: string; nano: string }[] }[]>`
    select coalesce(sum(credits_nano), 0)::bigint as credits,
           coalesce(sum(credits_nano) filter (where credits_nano > 0), 0)::bigint as deposits,
           (select coalesce(json_agg(json_build_object('id', id, 'key', api_key_id, 'nano', hold_nano::text) order by created_at), '[]'::json)
            from tasks where user_id = ${userId} and status = 'pending' and hold_nano > 0) as holds
    from transactions where user_id = ${userId}`;
  return {
    credits: row!.credits,
    deposits: row!.deposits,
    holds: row!.holds.map((hold) => ({ holdId: holdIdOf(hold.key, hold.id), nano: BigInt(hold.nano) })),
  };
}

/** What a key was charged since `since` (its credit period), nano-USD. */
export async function keySpendSince(sql: AnySql, keyId: string, since: Date): Promise<bigint> {
  const [row] = await sql<{ spent: bigint }[]>`
    select coalesce(-sum(credits_nano), 0)::bigint as spent from transactions
    where api_key_id = ${keyId} and created_at >= ${since} and payment_method = 'usage'`;
  return row!.spent;
}

export async function insertDeposit(sql: AnySql, deposit: { id: string; userId: string; creditsNano: bigint; method: string; reference: string | null }): Promise<void> {
  await sql`
    insert into transactions (id, user_id, credits_nano, payment_method, reference)
    values (${deposit.id}, ${deposit.userId}, ${deposit.creditsNano.toString()}, ${deposit.method}, ${deposit.reference})`;
}

/** A deposit whose id names it for good (a processor payment): true when this call inserted it, false when it was already there. */
export async function insertDepositOnce(sql: AnySql, deposit: { id: string; userId: string; creditsNano: bigint; method: string; reference: string | null }): Promise<boolean> {
  const inserted = await sql`
    insert into transactions (id, user_id, credits_nano, payment_method, reference)
    values (${deposit.id}, ${deposit.userId}, ${deposit.creditsNano.toString()}, ${deposit.method}, ${deposit.reference})
    on conflict (id) do nothing returning id`;
  return inserted.length === 1;
}

export async function listTransactions(sql: AnySql, userId: string, page: number, perPage: number): Promise<{ rows: TransactionRow[]; total: number }> {
  const rows = await sql<TransactionRow[]>`
    select id, credits_nano, payment_method, status, created_at from transactions
    where user_id = ${userId}
    order by created_at desc, id desc
    limit ${perPage} offset ${(page - 1) * perPage}`;
  const [count] = await sql<{ total: bigint }[]>`select count(*)::bigint as total from transactions where user_id = ${userId}`;
  return { rows, total: Number(count!.total) };
}

export type CouponRedemption =
  | { kind: 'redeemed'; creditsNano: bigint }
  | { kind: 'unknown' }
  | { kind: 'unavailable' };

/** Redeems a coupon once: the conditional update lets exactly one of any number of concurrent callers win. */
export async function redeemCoupon(sql: Sql, code: string, userId: string, transactionId: string): Promise<CouponRedemption> {
  return sql.begin(async (tx) => {
    const [won] = await tx<{ credits_nano: bigint }[]>`
      update coupons set redeemed_by = ${userId}, redeemed_at = now()
      where code = ${code} and active and redeemed_at is null
      returning credits_nano`;
    if (!won) {
      const [exists] = await tx`select 1 from coupons where code = ${code}`;
      return exists ? { kind: 'unavailable' as const } : { kind: 'unknown' as const };
    }
    await insertDeposit(tx, { id: transactionId, userId, creditsNano: won.credits_nano, method: 'coupon', reference: code });
    return { kind: 'redeemed' as const, creditsNano: won.credits_nano };
  });
}

export async function createCoupon(sql: AnySql, code: string, creditsNano: bigint): Promise<void> {
  await sql`insert into coupons (code, credits_nano) values (${code}, ${creditsNano.toString()})`;
}
