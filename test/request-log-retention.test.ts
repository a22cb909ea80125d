import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { connect, ensureDatabase } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { dropExpiredRequestLogPartitions, ensureRequestLogPartitions } from '../src/store/request-logs.js';
import { dropDatabase } from '../bench/namespaces.js';

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `gw_test_retention_${randomBytes(4).toString('hex')}`;
const url = new URL(ADMIN_URL);
url.pathname = `/${database}`;

t.test('request logs live in monthly partitions; retention drops whole months older than two', async (t) => {
  await ensureDatabase(url.toString());
  const sql = connect(url.toString(), 2);
  t.teardown(async () => {
    await sql.end({ timeout: 5 });
    await dropDatabase(ADMIN_URL, database);
  });
  const files = readdirSync(new URL('../../migrations/', import.meta.url)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  t.same(await migrate(sql), files, 'every migration file, in order');
  t.same(await migrate(sql), [], 'a second run applies nothing');

  const partitions = async () => (await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = 'request_logs' order by 1`).map((row) => row.name);
  await ensureRequestLogPartitions(sql, new Date(Date.UTC(2026, 8, 15)));
  await ensureRequestLogPartitions(sql, new Date(Date.UTC(2026, 10, 3)));
  t.same(await partitions(), ['request_logs_default', 'request_logs_y2026m09', 'request_logs_y2026m10', 'request_logs_y2026m11', 'request_logs_y2026m12']);

  const insert = (id: string, at: string) => sql`
    insert into request_logs (id, created_at, user_id, model, endpoint, stream, status) values (${id}, ${at}, 'u', 'm', 'chat.completions', false, 200)`;
  await insert('00000000-0000-4000-8000-000000000001', '2026-09-30T23:59:59Z');
  await insert('00000000-0000-4000-8000-000000000002', '2026-10-01T00:00:00Z');
  await insert('00000000-0000-4000-8000-000000000003', '2026-11-20T12:00:00Z');
  const [september] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs_y2026m09`;
  t.equal(september!.n, 1n, 'a row lands in the partition of its month');

  // On 2026-11-21 the retention keeps September 21 onwards: only whole months older than that go.
  t.same(await dropExpiredRequestLogPartitions(sql, new Date(Date.UTC(2026, 10, 21))), [], 'September still overlaps the window');
  t.same(await dropExpiredRequestLogPartitions(sql, new Date(Date.UTC(2026, 11, 1))), ['request_logs_y2026m09']);
  t.same(await partitions(), ['request_logs_default', 'request_logs_y2026m10', 'request_logs_y2026m11', 'request_logs_y2026m12']);
  const ids = (await sql<{ id: string }[]>`select id from request_logs order by id`).map((row) => row.id);
  t.same(ids, ['00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'], 'newer months are untouched');
});
