import postgres from 'postgres';
import { withinTime } from '../within-time.js';

export type Sql = postgres.Sql<{ bigint: bigint }>;
export type TransactionSql = postgres.TransactionSql<{ bigint: bigint }>;
export type AnySql = Sql | TransactionSql;

/** How long a lookup on a request's path may wait for Postgres (the driver waits for a reconnect without end). */
export const LOOKUP_TIMEOUT_MS = 2000;

/** `query`, or a rejection once it has not answered within `ms`. */
export function withinTimeout<T>(query: Promise<T>, ms = LOOKUP_TIMEOUT_MS): Promise<T> {
  return withinTime(query, ms, () => new Error(`no answer from Postgres in ${ms} ms`));
}

/**
 * One pool; bigint columns come back as JavaScript bigint (money is never a float). `name` is the
 * connections' application_name, so pg_stat_activity tells the gateway's pools apart.
 */
export function connect(databaseUrl: string, max = 10, name = 'gateway'): Sql {
  return postgres(databaseUrl, {
    max,
    connection: { application_name: name },
    idle_timeout: 60,
    connect_timeout: 10,
    onnotice: () => {},
    types: { bigint: postgres.BigInt },
  }) as unknown as Sql;
}

/** Creates the database named in the URL when it does not exist yet (connects to `postgres` to do it). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) return;
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      try {
        await sql.unsafe(`create database "${name.replace(/"/g, '""')}"`);
      } catch (error) {
        // Another process created it between our check and our create.
        if ((error as { code?: string }).code !== '42P04') throw error;
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}
