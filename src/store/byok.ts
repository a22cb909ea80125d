import type { AnySql, Sql } from './db.js';

export type ByokProvider = 'openai' | 'anthropic' | 'google';
export const BYOK_PROVIDERS: readonly ByokProvider[] = Object.freeze(['openai', 'anthropic', 'google'] as const);

export interface ByokRow {
  id: string;
  user_id: string;
  provider: ByokProvider;
  label: string;
  api_key_enc: Buffer | null;
  api_key_prefix: string | null;
  base_url: string | null;
  config_enc: Buffer | null;
  always_use: boolean;
  disabled: boolean;
  priority: number;
  /** The regular API key whose calls alone the row serves (the key that made it); null: every key of the account. */
  api_key_id: string | null;
  last_used_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A `last_error` is kept to this many characters. */
export const MAX_LAST_ERROR = 1000;

export interface NewByok {
  id: string;
  userId: string;
  provider: ByokProvider;
  label: string;
  apiKeyEnc: Buffer | null;
  apiKeyPrefix: string | null;
  baseUrl: string | null;
  configEnc: Buffer | null;
  alwaysUse: boolean;
  disabled: boolean;
  priority: number;
  apiKeyId: string | null;
}

export async function insertByok(sql: AnySql, row: NewByok): Promise<ByokRow> {
  const [inserted] = await sql<ByokRow[]>`
    insert into byok_credentials (id, user_id, provider, label, api_key_enc, api_key_prefix, base_url, config_enc, always_use, disabled, priority, api_key_id)
    values (${row.id}, ${row.userId}, ${row.provider}, ${row.label}, ${row.apiKeyEnc}, ${row.apiKeyPrefix}, ${row.baseUrl},
            ${row.configEnc}, ${row.alwaysUse}, ${row.disabled}, ${row.priority}, ${row.apiKeyId})
    returning *`;
  return inserted!;
}

// Two-key advisory locks live apart from the one-key migration lock; the first key names the use.
const BYOK_LOCK_CLASS = 72_313_014;

/**
 * Inserts the row unless the user already holds `maxRows` rows of its provider (disabled ones
 * included): undefined then. Concurrent inserts of one (user, provider) queue on an advisory lock,
 * so the cap holds against a burst of POSTs.
 */
export async function insertByokUpTo(sql: Sql, row: NewByok, maxRows: number): Promise<ByokRow | undefined> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${BYOK_LOCK_CLASS}, hashtext(${`${row.userId}/${row.provider}`}))`;
    const [held] = await tx<{ count: number }[]>`
      select count(*)::int as count from byok_credentials where user_id = ${row.userId} and provider = ${row.provider}`;
    if (held!.count >= maxRows) return undefined;
    return insertByok(tx, row);
  });
}

/** The user's rows (of one provider when given), priority descending, then created_at descending, then id descending. */
export async function listByok(sql: AnySql, userId: string, provider?: ByokProvider): Promise<ByokRow[]> {
  return sql<ByokRow[]>`
    select * from byok_credentials
    where user_id = ${userId} ${provider === undefined ? sql`` : sql`and provider = ${provider}`}
    order by priority desc, created_at desc, id desc`;
}

/** One row of the user, or undefined (another user's row looks missing); `forUpdate` locks it until the transaction ends. */
export async function findUserByok(sql: AnySql, userId: string, id: string, forUpdate = false): Promise<ByokRow | undefined> {
  const [row] = await sql<ByokRow[]>`
    select * from byok_credentials where id = ${id} and user_id = ${userId} ${forUpdate ? sql`for update` : sql``}`;
  return row;
}

/** Columns PUT may change, as stored; an absent field stays as it is, null clears a nullable column. */
export interface ByokChanges {
  label?: string;
  api_key_enc?: Buffer | null;
  api_key_prefix?: string | null;
  base_url?: string | null;
  config_enc?: Buffer | null;
  always_use?: boolean;
  disabled?: boolean;
  priority?: number;
}

const CHANGE_COLUMNS: readonly (keyof ByokChanges)[] = ['label', 'api_key_enc', 'api_key_prefix', 'base_url', 'config_enc', 'always_use', 'disabled', 'priority'];

/** Applies the changes to a row of the user and bumps updated_at; undefined when the user owns no such row. */
export async function updateByok(sql: AnySql, userId: string, id: string, changes: ByokChanges): Promise<ByokRow | undefined> {
  const columns = CHANGE_COLUMNS.filter((column) => changes[column] !== undefined);
  const [row] = columns.length === 0
    ? await sql<ByokRow[]>`
        update byok_credentials set updated_at = now() where id = ${id} and user_id = ${userId} returning *`
    : await sql<ByokRow[]>`
        update byok_credentials set ${sql(changes as Record<string, any>, columns as string[])}, updated_at = now()
        where id = ${id} and user_id = ${userId} returning *`;
  return row;
}

/** True when a row of that user (made by `keyId`, when given) was deleted. */
export async function deleteByok(sql: AnySql, userId: string, id: string, keyId?: string): Promise<boolean> {
  const rows = await sql`
    delete from byok_credentials where id = ${id} and user_id = ${userId} ${keyId === undefined ? sql`` : sql`and api_key_id = ${keyId}`}
    returning id`;
  return rows.length > 0;
}

/** Success of a call through the row: last_used_at = now(), last_error = null. */
export async function recordByokSuccess(sql: AnySql, id: string): Promise<void> {
  await sql`update byok_credentials set last_used_at = now(), last_error = null where id = ${id}`;
}

/** Failure of a call through the row: last_error = the message (truncated to 1000 characters). */
export async function recordByokFailure(sql: AnySql, id: string, error: string): Promise<void> {
  await sql`update byok_credentials set last_error = ${truncate(error, MAX_LAST_ERROR)} where id = ${id}`;
}

/** At most `max` code points, never splitting a surrogate pair. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}
