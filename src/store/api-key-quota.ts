import type { AnySql, TransactionSql } from './db.js';
import type { ApiKeyRow } from './api-keys.js';

// Two-key advisory locks live apart from the one-key migration lock; the first key names the use.
const API_KEYS_LOCK_CLASS = 72_313_013;

/** Serialises key creation of one account until the transaction ends, so concurrent creates cannot pass the cap together. */
export async function lockUserKeys(tx: TransactionSql, userId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${API_KEYS_LOCK_CLASS}, hashtext(${userId}))`;
}

/** Live (not revoked) keys of the account, regular and management. */
export async function countLiveKeys(sql: AnySql, userId: string): Promise<number> {
  const [row] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from api_keys where user_id = ${userId} and revoked_at is null`;
  return Number(row!.n);
}

/** A live key of the account by id, or undefined. */
export async function findUserKey(sql: AnySql, userId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`select * from api_keys where id = ${keyId} and user_id = ${userId} and revoked_at is null`;
  return row;
}
