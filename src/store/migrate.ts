import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from './db.js';

export const MIGRATIONS_DIR = new URL('../../../migrations/', import.meta.url);
const MIGRATION_LOCK = 72_313_001; // advisory lock id shared by every gateway process

/** Applies the pending migrations/NNNN_name.sql in order, in one transaction, under an advisory lock (all or nothing). */
export async function migrate(sql: Sql, dir: URL = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    // Transaction-scoped lock: released on commit or on a crash, never leaked by a dead process.
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`create table if not exists schema_migrations (name text primary key, applied_at timestamptz not null default now())`;
    const done = new Set((await tx<{ name: string }[]>`select name from schema_migrations`).map((r) => r.name));
    for (const file of files) {
      if (done.has(file)) continue;
      const text = await readFile(new URL(file, dir), 'utf8');
      await tx.unsafe(text);
      await tx`insert into schema_migrations (name) values (${file})`;
      applied.push(file);
    }
  });
  return applied;
}
