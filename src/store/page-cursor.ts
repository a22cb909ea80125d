import type { AnySql } from './db.js';

/**
 * Keyset paging of lists shown newest first (request logs, tasks): a page position is the last row
 * shown, by its `created_at` to the microsecond and its id (ties broken by id).
 */
export interface PageCursor {
  readonly createdUs: bigint;
  readonly id: string;
}

/** `created_at` in microseconds since the epoch, as text (a Date keeps milliseconds only): select it as `created_us`. */
export const createdUsColumn = (sql: AnySql) => sql`(extract(epoch from created_at) * 1000000)::bigint::text as created_us`;

/** The rows after `cursor` in `order by created_at desc, id desc`; nothing when there is none. */
export const afterCursor = (sql: AnySql, cursor: PageCursor | undefined) => (cursor === undefined ? sql``
  : sql`and (created_at, id) < (timestamptz 'epoch' + ${cursor.createdUs.toString()}::bigint * interval '1 microsecond', ${cursor.id}::uuid)`);
