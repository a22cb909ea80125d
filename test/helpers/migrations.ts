// A database of a test's own, migrated up to a given migration, so the test can put old rows in and
// watch that migration (and those after it) change them. The test's teardown drops it.
import type { Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, ensureDatabase, type Sql } from '../../src/store/db.js';
import { migrate, MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { dropDatabase } from '../../bench/namespaces.js';

/** A new database with every migration before `first` (e.g. '0009') applied; `migrate(sql)` then applies the rest. */
export async function databaseBefore(t: Test, first: string): Promise<Sql> {
  const admin = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `gw_test_before${first}_${randomUUID().slice(0, 8)}`;
  const url = new URL(admin);
  url.pathname = `/${database}`;
  await ensureDatabase(url.toString());
  const sql = connect(url.toString(), 2);
  const earlier = mkdtempSync(join(tmpdir(), 'gw-migrations-'));
  t.teardown(async () => {
    rmSync(earlier, { recursive: true, force: true });
    await sql.end({ timeout: 5 });
    await dropDatabase(admin, database);
  });
  const source = fileURLToPath(MIGRATIONS_DIR);
  for (const file of readdirSync(source).filter((f) => /^\d{4}_.+\.sql$/.test(f) && f < first)) copyFileSync(join(source, file), join(earlier, file));
  await migrate(sql, new URL(`file://${earlier}/`));
  return sql;
}
