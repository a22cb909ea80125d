import type { AnySql } from './db.js';

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
