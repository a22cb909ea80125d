import type { AnySql } from './db.js';

/** How long a request log record lives (the spec's "log records 2 months"), in calendar months (UTC). */
export const REQUEST_LOG_RETENTION_MONTHS = 2;
/** Rows deleted per statement, so a large backlog never becomes one long transaction. */
const DELETE_BATCH = 10_000;
const DEFAULT_PARTITION = 'request_logs_default';

const partitionName = (year: number, month: number) => `request_logs_y${year}m${String(month).padStart(2, '0')}`;

/**
 * `now` minus `months` calendar months in UTC, the day clamped to the end of a shorter month (as
 * Postgres's `- interval '2 months'` in UTC: May 31 -> March 31, April 30 -> February 28 or 29).
 */
export function monthsBefore(now: Date, months: number): Date {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth() - months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(Date.UTC(year, month, Math.min(now.getUTCDate(), lastDay), now.getUTCHours(), now.getUTCMinutes(), now.getUTCSeconds(), now.getUTCMilliseconds()));
}

/** Creates the monthly partitions of request_logs for this month and the next `ahead` months. */
export async function ensureRequestLogPartitions(sql: AnySql, now = new Date(), ahead = 1): Promise<void> {
  for (let i = 0; i <= ahead; i++) {
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1));
    const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    const name = partitionName(start.getUTCFullYear(), start.getUTCMonth() + 1);
    await sql.unsafe(`create table if not exists ${name} partition of request_logs for values from ('${start.toISOString()}') to ('${end.toISOString()}')`);
  }
}

/** The monthly partitions of request_logs with the first instant of their month. */
async function monthlyPartitions(sql: AnySql): Promise<{ name: string; start: Date; end: Date }[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = 'request_logs' and c.relname ~ '^request_logs_y[0-9]{4}m[0-9]{2}$'`;
  return rows.map(({ name }) => {
    const year = Number(name.slice(14, 18));
    const month = Number(name.slice(19, 21));
    return { name, start: new Date(Date.UTC(year, month - 1, 1)), end: new Date(Date.UTC(year, month, 1)) };
  });
}

/** Drops the monthly partitions wholly older than the retention window (`keepMonths` before `now`). */
export async function dropExpiredRequestLogPartitions(sql: AnySql, now = new Date(), keepMonths = REQUEST_LOG_RETENTION_MONTHS): Promise<string[]> {
  const cutoff = monthsBefore(now, keepMonths);
  const dropped: string[] = [];
  for (const { name, end } of await monthlyPartitions(sql)) {
    if (end <= cutoff) {
      await sql.unsafe(`drop table if exists ${name}`);
      dropped.push(name);
    }
  }
  return dropped.sort();
}

/**
 * Deletes the rows older than the retention window from the monthly partition it cuts through and
 * from the default partition (rows of months that had no partition yet), in batches of 10,000.
 * Returns the rows deleted.
 */
export async function deleteExpiredRequestLogs(sql: AnySql, now = new Date(), keepMonths = REQUEST_LOG_RETENTION_MONTHS): Promise<number> {
  const cutoff = monthsBefore(now, keepMonths);
  const tables = (await monthlyPartitions(sql)).filter((p) => p.start < cutoff).map((p) => p.name).sort();
  tables.push(DEFAULT_PARTITION);
  let deleted = 0;
  for (const table of tables) {
    for (;;) {
      // ctid is unique within one table: each batch is one statement on one partition.
      const result = await sql.unsafe(
        `delete from ${table} where ctid = any(array(select ctid from ${table} where created_at < $1 limit ${DELETE_BATCH}))`,
        [cutoff.toISOString()],
      );
      deleted += result.count;
      if (result.count < DELETE_BATCH) break;
    }
  }
  return deleted;
}

/**
 * Request-log retention: a record lives `keepMonths` calendar months, to the pass. Whole months past
 * the window are dropped as partitions (cheap); the rest of the window's edge is deleted row by row.
 */
export async function expireRequestLogs(sql: AnySql, now = new Date(), keepMonths = REQUEST_LOG_RETENTION_MONTHS): Promise<{ dropped: string[]; deleted: number }> {
  const dropped = await dropExpiredRequestLogPartitions(sql, now, keepMonths);
  const deleted = await deleteExpiredRequestLogs(sql, now, keepMonths);
  return { dropped, deleted };
}
