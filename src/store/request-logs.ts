import type { AnySql } from './db.js';

const partitionName = (year: number, month: number) => `request_logs_y${year}m${String(month).padStart(2, '0')}`;

/** Creates the monthly partitions of request_logs for this month and the next `ahead` months. */
export async function ensureRequestLogPartitions(sql: AnySql, now = new Date(), ahead = 1): Promise<void> {
  for (let i = 0; i <= ahead; i++) {
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1));
    const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    const name = partitionName(start.getUTCFullYear(), start.getUTCMonth() + 1);
    await sql.unsafe(`create table if not exists ${name} partition of request_logs for values from ('${start.toISOString()}') to ('${end.toISOString()}')`);
  }
}

/** Drops whole monthly partitions that ended before the retention window (2 months): retention is a partition drop. */
export async function dropExpiredRequestLogPartitions(sql: AnySql, now = new Date(), keepMonths = 2): Promise<string[]> {
  const cutoff = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - keepMonths, 1));
  const partitions = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.relname = 'request_logs' and c.relname ~ '^request_logs_y[0-9]{4}m[0-9]{2}$'`;
  const dropped: string[] = [];
  for (const { name } of partitions) {
    const year = Number(name.slice(14, 18));
    const month = Number(name.slice(19, 21));
    const end = new Date(Date.UTC(year, month, 1));
    if (end <= cutoff) {
      await sql.unsafe(`drop table if exists ${name}`);
      dropped.push(name);
    }
  }
  return dropped;
}
