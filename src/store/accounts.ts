import type { AnySql } from './db.js';

/** Creates the account the first time an id is named (JWT or credit); no-op afterwards. */
export async function ensureAccount(sql: AnySql, userId: string): Promise<void> {
  await sql`insert into accounts (id) values (${userId}) on conflict (id) do nothing`;
}
