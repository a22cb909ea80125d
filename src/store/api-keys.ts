import type { AnySql, TransactionSql } from './db.js';

export interface ApiKeyRow {
  id: string;
  user_id: string;
  public_id: string;
  secret_hash: Buffer;
  full_key_enc: Buffer | null;
  name: string;
  is_provisioning: boolean;
  disabled: boolean;
  ip_whitelist: string[];
  rate_limit_rpm: number | null;
  rate_limit_tph: bigint | null;
  rate_limit_tpd: bigint | null;
  credit_limit_nano: bigint | null;
  credit_reset_interval: 'none' | 'daily' | 'weekly' | 'monthly';
  credit_period_start: Date | null;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

export interface NewApiKey {
  id: string;
  userId: string;
  publicId: string;
  secretHash: Buffer;
  fullKeyEnc: Buffer;
  name: string;
  isProvisioning: boolean;
  ipWhitelist: string[];
  rateLimitRpm: number | null;
  rateLimitTph: number | null;
  rateLimitTpd: number | null;
  creditLimitNano: bigint | null;
  creditResetInterval: string;
  expiresAt: Date | null;
}

export async function insertApiKey(sql: AnySql, key: NewApiKey): Promise<ApiKeyRow> {
  const [row] = await sql<ApiKeyRow[]>`
    insert into api_keys (id, user_id, public_id, secret_hash, full_key_enc, name, is_provisioning, ip_whitelist,
                          rate_limit_rpm, rate_limit_tph, rate_limit_tpd, credit_limit_nano, credit_reset_interval,
                          credit_period_start, expires_at)
    values (${key.id}, ${key.userId}, ${key.publicId}, ${key.secretHash}, ${key.fullKeyEnc}, ${key.name}, ${key.isProvisioning},
            ${sql.array(key.ipWhitelist)}, ${key.rateLimitRpm}, ${key.rateLimitTph}, ${key.rateLimitTpd},
            ${key.creditLimitNano === null ? null : key.creditLimitNano.toString()}, ${key.creditResetInterval},
            ${key.creditLimitNano === null ? null : sql`now()`}, ${key.expiresAt})
    returning *`;
  return row!;
}

/** The live (not revoked) key with this public id, for authentication. */
export async function findActiveKeyByPublicId(sql: AnySql, publicId: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`select * from api_keys where public_id = ${publicId} and revoked_at is null`;
  return row;
}

export async function listUserKeys(sql: AnySql, userId: string): Promise<ApiKeyRow[]> {
  return sql<ApiKeyRow[]>`
    select * from api_keys where user_id = ${userId} and revoked_at is null order by created_at desc, id desc`;
}

/** Revokes a key owned by the user; returns its public id, or undefined when the user owns no such live key. */
export async function revokeUserKey(sql: AnySql, userId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set revoked_at = now()
    where id = ${keyId} and user_id = ${userId} and revoked_at is null
    returning *`;
  return row;
}

/** Fields PUT may change, as stored; an absent field stays as it is. */
export interface ApiKeyChanges {
  name?: string;
  ip_whitelist?: string[];
  rate_limit_rpm?: number | null;
  rate_limit_tph?: number | null;
  rate_limit_tpd?: number | null;
  disabled?: boolean;
  credit_limit_nano?: bigint | null;
  credit_reset_interval?: string;
  expires_at?: Date | null;
}

/**
 * Updates a live key owned by the user; undefined when there is none. A change of the credit limit
 * or of its interval starts a new spend period (none when the key has no limit); the same values sent
 * again (a form saved twice) keep the period and what it spent. One statement whatever the fields:
 * each column is set from its parameter when given, kept otherwise.
 */
export async function updateUserKey(sql: AnySql, userId: string, keyId: string, changes: ApiKeyChanges): Promise<ApiKeyRow | undefined> {
  const given = (field: keyof ApiKeyChanges) => changes[field] !== undefined;
  const limit = changes.credit_limit_nano === undefined || changes.credit_limit_nano === null ? null : changes.credit_limit_nano.toString();
  const [row] = await sql<ApiKeyRow[]>`
    update api_keys set
      name = case when ${given('name')} then ${changes.name ?? null}::text else name end,
      ip_whitelist = case when ${given('ip_whitelist')} then ${sql.array(changes.ip_whitelist ?? [])}::text[] else ip_whitelist end,
      rate_limit_rpm = case when ${given('rate_limit_rpm')} then ${changes.rate_limit_rpm ?? null}::integer else rate_limit_rpm end,
      rate_limit_tph = case when ${given('rate_limit_tph')} then ${changes.rate_limit_tph ?? null}::bigint else rate_limit_tph end,
      rate_limit_tpd = case when ${given('rate_limit_tpd')} then ${changes.rate_limit_tpd ?? null}::bigint else rate_limit_tpd end,
      disabled = case when ${given('disabled')} then ${changes.disabled ?? false}::boolean else disabled end,
      credit_limit_nano = case when ${given('credit_limit_nano')} then ${limit}::bigint else credit_limit_nano end,
      credit_reset_interval = case when ${given('credit_reset_interval')} then ${changes.credit_reset_interval ?? 'none'}::text else credit_reset_interval end,
      expires_at = case when ${given('expires_at')} then ${changes.expires_at ?? null}::timestamptz else expires_at end,
      -- The other expressions of an UPDATE see the row as it was: the new values are the parameters.
      credit_period_start = case
        when (case when ${given('credit_limit_nano')} then ${limit}::bigint else credit_limit_nano end) is not distinct from credit_limit_nano
          and (case when ${given('credit_reset_interval')} then ${changes.credit_reset_interval ?? 'none'}::text else credit_reset_interval end) = credit_reset_interval
          then credit_period_start
        when (case when ${given('credit_limit_nano')} then ${limit}::bigint else credit_limit_nano end) is null then null
        else now() end
    where id = ${keyId} and user_id = ${userId} and revoked_at is null
    returning *`;
  return row;
}

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
