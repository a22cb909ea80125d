import * as v from 'valibot';
import type { AnySql } from './db.js';

const EmailAddress = v.pipe(v.string(), v.trim(), v.minLength(3), v.maxLength(254), v.email());

/** `value` as an e-mail address (trimmed), or undefined when it is not one. */
export function emailAddress(value: unknown): string | undefined {
  const result = v.safeParse(EmailAddress, value);
  return result.success ? result.output : undefined;
}

/** Creates the account the first time an id is named (JWT or credit); no-op afterwards. */
export async function ensureAccount(sql: AnySql, userId: string): Promise<void> {
  await sql`insert into accounts (id) values (${userId}) on conflict (id) do nothing`;
}

/**
 * Creates the account if needed and sets its e-mail address. Writes nothing when the address is
 * already the stored one (the conditional update leaves the row alone), so repeating it is cheap.
 */
export async function setAccountEmail(sql: AnySql, userId: string, email: string): Promise<void> {
  await sql`
    insert into accounts (id, email) values (${userId}, ${email})
    on conflict (id) do update set email = excluded.email where accounts.email is distinct from excluded.email`;
}

/**
 * Where the account's mail goes: its stored address, else its id when the id is itself an address,
 * else null (no address known).
 */
export async function accountAddress(sql: AnySql, userId: string): Promise<string | null> {
  const [row] = await sql<{ email: string | null }[]>`select email from accounts where id = ${userId}`;
  return row?.email ?? emailAddress(userId) ?? null;
}
