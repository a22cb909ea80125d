// Retention, with the clock driven by the test (old timestamps, old partitions; nothing sleeps):
// request logs live two calendar months to the pass (whole months dropped as partitions, the edge of
// the window and the default partition deleted row by row), sent mails 30 days, unsent mails forever.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { connect, ensureDatabase } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import {
  deleteExpiredRequestLogs, dropExpiredRequestLogPartitions, ensureRequestLogPartitions, expireRequestLogs, monthsBefore,
} from '../src/store/request-logs.js';
import { deleteSentMails, SENT_MAIL_RETENTION_DAYS } from '../src/mail/outbox-sender.js';
import { dropDatabase } from '../bench/namespaces.js';
import { eventually } from './helpers/billing-checks.js';
import { PG_BASE, startGateway } from './helpers/harness.js';

const database = `gw_test_retention_${randomBytes(4).toString('hex')}`;
const url = new URL(PG_BASE);
url.pathname = `/${database}`;
const DAY_MS = 86_400_000;

const sql = connect(url.toString(), 2);
t.before(async () => {
  await ensureDatabase(url.toString());
});
t.teardown(async () => {
  await sql.end({ timeout: 5 });
  await dropDatabase(PG_BASE, database);
});

const partitions = async () => (await sql<{ name: string }[]>`
  select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
  where p.relname = 'request_logs' order by 1`).map((row) => row.name);
const insertLog = (id: string, at: string) => sql`
  insert into request_logs (id, created_at, user_id, model, endpoint, stream, status) values (${id}, ${at}, 'u', 'm', 'chat.completions', false, 200)`;
const logTimes = async () => (await sql<{ created_at: Date }[]>`select created_at from request_logs order by created_at`).map((r) => r.created_at.toISOString());
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

t.test('migrations apply once', async (t) => {
  const files = readdirSync(new URL('../../migrations/', import.meta.url)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  t.same(await migrate(sql), files, 'every migration file, in order');
  t.same(await migrate(sql), [], 'a second run applies nothing');
});

t.test('two calendar months before, in UTC, the day clamped to a shorter month', async (t) => {
  const cases: [string, string][] = [
    ['2026-11-21T06:00:00.000Z', '2026-09-21T06:00:00.000Z'],
    ['2026-12-31T10:30:00.500Z', '2026-10-31T10:30:00.500Z'],
    ['2026-05-31T00:00:00.000Z', '2026-03-31T00:00:00.000Z'],
    ['2026-04-30T23:59:59.999Z', '2026-02-28T23:59:59.999Z'],
    ['2028-04-30T12:00:00.000Z', '2028-02-29T12:00:00.000Z'],
    ['2027-01-15T08:00:00.000Z', '2026-11-15T08:00:00.000Z'],
    ['2027-02-01T00:00:00.000Z', '2026-12-01T00:00:00.000Z'],
  ];
  for (const [now, cutoff] of cases) t.equal(monthsBefore(new Date(now), 2).toISOString(), cutoff, `${now} -> ${cutoff}`);
  // The same as Postgres's own interval arithmetic in UTC.
  for (const [now] of cases) {
    const [row] = await sql<{ at: Date }[]>`select (${now}::timestamptz at time zone 'UTC' - interval '2 months') at time zone 'UTC' as at`;
    t.equal(monthsBefore(new Date(now), 2).toISOString(), row!.at.toISOString(), `${now}: as Postgres computes it`);
  }
});

t.test('a log record lives two months to the pass: whole months dropped, the edge deleted row by row', async (t) => {
  await ensureRequestLogPartitions(sql, new Date(Date.UTC(2026, 8, 15)));
  await ensureRequestLogPartitions(sql, new Date(Date.UTC(2026, 10, 3)));
  t.same(await partitions(), ['request_logs_default', 'request_logs_y2026m09', 'request_logs_y2026m10', 'request_logs_y2026m11', 'request_logs_y2026m12']);

  await insertLog(id(1), '2026-09-20T12:00:00Z');
  await insertLog(id(2), '2026-09-21T05:59:59.999Z');
  await insertLog(id(3), '2026-09-21T06:00:00Z');
  await insertLog(id(4), '2026-09-30T23:59:59Z');
  await insertLog(id(5), '2026-10-01T00:00:00Z');
  await insertLog(id(6), '2026-11-20T12:00:00Z');
  await insertLog(id(7), '2026-07-15T00:00:00Z'); // no partition for July: the default partition
  await insertLog(id(8), '2027-06-01T00:00:00Z'); // nor for next June
  const [september] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs_y2026m09`;
  t.equal(september!.n, 4n, 'a row lands in the partition of its month');
  const [fallback] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs_default`;
  t.equal(fallback!.n, 2n, 'rows of months without a partition land in the default one');

  // 2026-11-21 06:00: the window starts 2026-09-21 06:00. September overlaps it, so it stays as a
  // partition, but its rows from before the window go, and so does the default partition's July row.
  const now = new Date('2026-11-21T06:00:00Z');
  t.same(await expireRequestLogs(sql, now), { dropped: [], deleted: 3 }, 'no partition dropped; three rows deleted');
  t.same(await logTimes(), [
    '2026-09-21T06:00:00.000Z', '2026-09-30T23:59:59.000Z', '2026-10-01T00:00:00.000Z', '2026-11-20T12:00:00.000Z', '2027-06-01T00:00:00.000Z',
  ], 'a row exactly two months old stays; a millisecond older is gone; the future row in the default partition stays');
  const [older] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs where created_at < ${monthsBefore(now, 2)}`;
  t.equal(older!.n, 0n, 'nothing older than two months is left');
  t.same(await expireRequestLogs(sql, now), { dropped: [], deleted: 0 }, 'a second pass finds nothing');

  // An hour later the window moved an hour: rows are deleted as they age, not a month at a time.
  await insertLog(id(9), '2026-09-21T06:30:00Z');
  t.equal(await deleteExpiredRequestLogs(sql, new Date('2026-11-21T07:00:00Z')), 2, 'the rows that aged out in that hour');

  // 2026-12-01: the window starts 2026-10-01, so September is wholly older and dropped.
  t.same(await expireRequestLogs(sql, new Date(Date.UTC(2026, 11, 1))), { dropped: ['request_logs_y2026m09'], deleted: 0 });
  t.same(await partitions(), ['request_logs_default', 'request_logs_y2026m10', 'request_logs_y2026m11', 'request_logs_y2026m12']);
  t.same(await logTimes(), ['2026-10-01T00:00:00.000Z', '2026-11-20T12:00:00.000Z', '2027-06-01T00:00:00.000Z'], 'newer rows are untouched');

  // Old partitions left behind (a gateway that was down for months) all go at once.
  await sql`drop table request_logs_y2026m10`;
  await sql`drop table request_logs_y2026m11`;
  await sql`drop table request_logs_y2026m12`;
  await ensureRequestLogPartitions(sql, new Date(Date.UTC(2026, 9, 1)), 3);
  t.same(await dropExpiredRequestLogPartitions(sql, new Date(Date.UTC(2027, 3, 10))), ['request_logs_y2026m10', 'request_logs_y2026m11', 'request_logs_y2026m12', 'request_logs_y2027m01']);
});

t.test('a large backlog is deleted in batches, all of it', async (t) => {
  await sql`
    insert into request_logs (id, created_at, user_id, model, endpoint, stream, status)
    select gen_random_uuid(), timestamptz '2026-01-01T00:00:00Z' + n * interval '1 second', 'u', 'm', 'chat.completions', false, 200
    from generate_series(1, 25000) n`;
  t.equal(await deleteExpiredRequestLogs(sql, new Date('2026-05-01T00:00:00Z')), 25_000, 'three batches of at most 10,000 rows');
  const [left] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs where created_at < '2026-03-01T00:00:00Z'`;
  t.equal(left!.n, 0n);
});

t.test(`sent mails live ${SENT_MAIL_RETENTION_DAYS} days; unsent ones are never deleted`, async (t) => {
  await sql`insert into accounts (id) values ('mail-user') on conflict do nothing`;
  const now = new Date('2026-11-21T06:00:00Z');
  const ago = (days: number) => new Date(now.getTime() - days * DAY_MS);
  const rows: [string, Date, Date | null][] = [
    ['sent 31 days ago', ago(40), ago(31)],
    ['sent 30 days and a second ago', ago(30), new Date(ago(30).getTime() - 1000)],
    ['sent 29 days ago', ago(29), ago(29)],
    ['queued a year ago, never sent', ago(365), null],
    ['sent just now', ago(0), ago(0)],
  ];
  for (const [subject, created, sent] of rows) {
    await sql`
      insert into mail_outbox (id, user_id, recipient, subject, body, created_at, sent_at, attempts)
      values (${randomUUID()}, 'mail-user', 'mail-user@example.com', ${subject}, 'body', ${created}, ${sent}, ${sent ? 1 : 3})`;
  }
  t.equal(await deleteSentMails(sql, now), 2, 'the two sent more than 30 days ago');
  const left = (await sql<{ subject: string }[]>`select subject from mail_outbox order by created_at`).map((r) => r.subject);
  t.same(left, ['queued a year ago, never sent', 'sent 29 days ago', 'sent just now']);
  t.equal(await deleteSentMails(sql, now), 0, 'a second pass finds nothing');
});

t.test("a gateway's start-up retention pass deletes expired log rows and sent mails", async (t) => {
  const first = await startGateway();
  t.teardown(() => first.close());
  const now = new Date();
  const threeMonthsAgo = monthsBefore(now, 3); // no partition for that month: the default one
  await first.sql`insert into accounts (id) values ('startup-user') on conflict do nothing`;
  await first.sql`
    insert into request_logs (id, created_at, user_id, model, endpoint, stream, status)
    values (${randomUUID()}, ${threeMonthsAgo}, 'startup-user', 'm', 'chat.completions', false, 200), (${randomUUID()}, ${now}, 'startup-user', 'm', 'chat.completions', false, 200)`;
  await first.sql`
    insert into mail_outbox (id, user_id, recipient, subject, body, sent_at)
    values (${randomUUID()}, 'startup-user', 'a@example.com', 'old', 'b', ${new Date(now.getTime() - 40 * DAY_MS)}),
           (${randomUUID()}, 'startup-user', 'a@example.com', 'new', 'b', ${now})`;
  // A second process on the same database runs its pass at start-up.
  const second = await startGateway({ mock: first.mock, shared: { database: first.database, prefix: first.prefix } });
  t.teardown(() => second.close());
  await eventually('the expired rows to be deleted', async () => {
    const [logs] = await first.sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs where user_id = 'startup-user'`;
    const [mails] = await first.sql<{ n: bigint }[]>`select count(*)::bigint as n from mail_outbox where user_id = 'startup-user'`;
    return logs!.n === 1n && mails!.n === 1n ? true : undefined;
  });
  const [mail] = await first.sql<{ subject: string }[]>`select subject from mail_outbox where user_id = 'startup-user'`;
  t.equal(mail!.subject, 'new', 'the recent mail stays');
  const [log] = await first.sql<{ created_at: Date }[]>`select created_at from request_logs where user_id = 'startup-user'`;
  t.equal(log!.created_at.getTime(), now.getTime(), 'the recent log row stays');
});
