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

/** The account's e-mail address and whether it is verified (a JWT said so, or an operator set it). */
export interface AccountEmail {
  readonly email: string;
  readonly verified: boolean;
}

/**
 * Creates the account if needed and stores an e-mail address. A verified address is replaced only by
 * another verified one (an unverified claim never takes the mail away from the address that was
 * proven); an unverified one by any. Writes nothing when the row already says the same.
 */
export async function setAccountEmail(sql: AnySql, userId: string, address: AccountEmail): Promise<void> {
  await sql`
    insert into accounts (id, email, email_verified) values (${userId}, ${address.email}, ${address.verified})
    on conflict (id) do update set email = excluded.email, email_verified = excluded.email_verified
    where (excluded.email_verified or not accounts.email_verified)
      and (accounts.email is distinct from excluded.email or accounts.email_verified <> excluded.email_verified)`;
}

/** The account's stored address, or null when it has none (an account id is never taken for one). */
export async function accountEmail(sql: AnySql, userId: string): Promise<AccountEmail | null> {
  const [row] = await sql<{ email: string | null; email_verified: boolean }[]>`select email, email_verified from accounts where id = ${userId}`;
  return row?.email ? { email: row.email, verified: row.email_verified } : null;
}
