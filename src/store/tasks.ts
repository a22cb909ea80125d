import type { AnySql, Sql } from './db.js';
import { addToUsageRollup } from './usage-rollup.js';
import { afterCursor, createdUsColumn, type PageCursor } from './page-cursor.js';
import { spanContextOf } from '../tracing/tracing.js';

/** Asynchronous generation tasks (migrations/0006_tasks.sql). Every state change is conditional on the row still being pending and on the writer's shard fencing token. */

export type TaskKind = 'video.generation' | 'audio.speech' | 'audio.generation';
export type TaskStatus = 'pending' | 'success' | 'failed';
export type CallbackStatus = 'pending' | 'delivered' | 'failed';

/** The request log's endpoint name of each kind. */
export const TASK_ENDPOINTS: Readonly<Record<TaskKind, string>> = Object.freeze({
  'video.generation': 'videos.generations',
  'audio.speech': 'audio.speech',
  'audio.generation': 'audio.generations',
});

export interface TaskRow {
  id: string;
  user_id: string;
  api_key_id: string;
  kind: TaskKind;
  model: string;
  status: TaskStatus;
  shard: number;
  job: Record<string, unknown>;
  hold_nano: bigint;
  charged_nano: bigint | null;
  upstream_vendor: string;
  upstream_id: string | null;
  /** The routing target that accepted the task (migrations/0010); null before, or for a task accepted before targets were recorded. */
  upstream_target: string | null;
  upstream_status: string | null;
  poll_count: number;
  fence: bigint;
  result: { url: string }[] | null;
  error_code: string | null;
  error_message: string | null;
  callback_url: string | null;
  callback_status: CallbackStatus | null;
  callback_attempts: number;
  callback_last_error: string | null;
  created_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  /** The W3C traceparent of the task's creation span, its steps' parent (migrations/0016); null when created with tracing off. */
  trace_parent: string | null;
}

/** The `upstream_id` of a task whose vendor answers with the result itself (no vendor task): set before the call. */
export const MADE_AT_ONCE = 'made-at-once';

/** The Redis reservation id of a task's hold: it names the key first, as lease ids do, so the janitor finds the key's spend. */
export const holdIdOf = (keyId: string, taskId: string) => `${keyId}:task-${taskId}`;

export interface NewTask {
  readonly id: string;
  readonly userId: string;
  readonly keyId: string;
  readonly kind: TaskKind;
  readonly model: string;
  readonly shard: number;
  readonly job: object;
  readonly holdNano: bigint;
  readonly upstreamVendor: string;
  readonly callbackUrl: string | null;
  /** The task's trace (src/tasks/task-tracing.ts); null with tracing off. */
  readonly traceParent: string | null;
}

export async function insertTask(sql: AnySql, task: NewTask): Promise<TaskRow> {
  const [row] = await sql<TaskRow[]>`
    insert into tasks (id, user_id, api_key_id, kind, model, shard, job, hold_nano, upstream_vendor, callback_url, trace_parent)
    values (${task.id}, ${task.userId}, ${task.keyId}, ${task.kind}, ${task.model}, ${task.shard}, ${sql.json(task.job as never)},
            ${task.holdNano.toString()}, ${task.upstreamVendor}, ${task.callbackUrl}, ${task.traceParent})
    returning *`;
  return row!;
}

/** A submit that admission refused: the row never became a task anyone saw. */
export async function deleteUnstartedTask(sql: AnySql, id: string): Promise<void> {
  await sql`delete from tasks where id = ${id} and status = 'pending' and upstream_id is null`;
}

export async function getTask(sql: AnySql, id: string): Promise<TaskRow | undefined> {
  const [row] = await sql<TaskRow[]>`select * from tasks where id = ${id}`;
  return row;
}

/** The caller's own task of `kind`, or undefined (another user's task is not found either). */
export async function getUserTask(sql: AnySql, userId: string, kind: TaskKind, id: string): Promise<TaskRow | undefined> {
  const [row] = await sql<TaskRow[]>`select * from tasks where id = ${id} and user_id = ${userId} and kind = ${kind}`;
  return row;
}

export async function listUserTasks(sql: AnySql, userId: string, kind: TaskKind, page: number, perPage: number): Promise<{ rows: TaskRow[]; total: number }> {
  const rows = await sql<TaskRow[]>`
    select * from tasks where user_id = ${userId} and kind = ${kind}
    order by created_at desc, id desc limit ${perPage} offset ${(page - 1) * perPage}`;
  const [count] = await sql<{ total: bigint }[]>`select count(*)::bigint as total from tasks where user_id = ${userId} and kind = ${kind}`;
  return { rows, total: Number(count!.total) };
}

/** What GET /api/v1/tasks lists: one account's tasks, or one key's (a regular key's own), of any kind unless asked. */
export interface AccountTaskFilter {
  readonly userId: string;
  readonly keyId?: string;
  readonly kind?: TaskKind;
  readonly status?: TaskStatus;
  readonly after?: PageCursor;
  readonly limit: number;
}

/**
 * A page of tasks, newest first, `limit` after the cursor (one more is read to tell whether a next page
 * exists). Served by tasks_user_created (any kind) and tasks_user_kind_created (one kind).
 */
export async function listAccountTasks(sql: AnySql, f: AccountTaskFilter): Promise<{ rows: (TaskRow & { created_us: string })[]; more: boolean }> {
  const rows = await sql<(TaskRow & { created_us: string })[]>`
    select *, ${createdUsColumn(sql)} from tasks
    where user_id = ${f.userId}
      ${f.keyId === undefined ? sql`` : sql`and api_key_id = ${f.keyId}::uuid`}
      ${f.kind === undefined ? sql`` : sql`and kind = ${f.kind}`}
      ${f.status === undefined ? sql`` : sql`and status = ${f.status}`}
      ${afterCursor(sql, f.after)}
    order by created_at desc, id desc
    limit ${f.limit + 1}`;
  return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
}

/** One task of the account (of the key, when given), whatever its kind; undefined for an id that is not theirs. */
export async function getAccountTask(sql: AnySql, userId: string, id: string, keyId?: string): Promise<TaskRow | undefined> {
  const [row] = await sql<TaskRow[]>`
    select * from tasks where id = ${id} and user_id = ${userId} ${keyId === undefined ? sql`` : sql`and api_key_id = ${keyId}::uuid`}`;
  return row;
}

/** Tasks whose holds make up the user's `held` in Redis. */
export async function pendingTaskHolds(sql: AnySql, userId: string): Promise<{ holdId: string; nano: bigint }[]> {
  const rows = await sql<{ id: string; api_key_id: string; hold_nano: bigint }[]>`
    select id, api_key_id, hold_nano from tasks where user_id = ${userId} and status = 'pending' and hold_nano > 0 order by created_at`;
  return rows.map((row) => ({ holdId: holdIdOf(row.api_key_id, row.id), nano: row.hold_nano }));
}

/** What a key's pending tasks hold (part of its credit-limit spend). */
export async function pendingKeyHold(sql: AnySql, keyId: string): Promise<bigint> {
  const [row] = await sql<{ held: bigint }[]>`
    select coalesce(sum(hold_nano), 0)::bigint as held from tasks where api_key_id = ${keyId} and status = 'pending'`;
  return row!.held;
}

/** The user's tasks accepted by their vendor and not ended: what the per-user concurrency bound counts. */
export async function runningTaskCount(sql: AnySql, userId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from tasks where user_id = ${userId} and status = 'pending' and upstream_id is not null`;
  return row!.n;
}

/** A shard's open work (pending tasks, undelivered callbacks), oldest first: what a new owner schedules. */
export async function openTasksOfShard(sql: AnySql, shard: number, createdBefore?: Date): Promise<Pick<TaskRow, 'id' | 'user_id' | 'status' | 'callback_status'>[]> {
  return sql`
    select id, user_id, status, callback_status from tasks
    where shard = ${shard} and (status = 'pending' or callback_status = 'pending') ${createdBefore ? sql`and created_at < ${createdBefore}` : sql``}
    order by created_at, id`;
}

/**
 * Marks a task as being submitted to its vendor (`started_at` set, no vendor id yet), just before the
 * submit: a cancel from then on cannot be free, since the vendor may be starting the job. False when
 * the row is no longer this writer's to change (cancelled, ended, or a newer fencing token).
 */
export async function markSubmitting(sql: AnySql, id: string, fence: bigint): Promise<boolean> {
  const rows = await sql`
    update tasks set started_at = now(), fence = ${fence.toString()}, updated_at = now()
    where id = ${id} and status = 'pending' and upstream_id is null and fence <= ${fence.toString()}
    returning id`;
  return rows.length === 1;
}

/** A submit the vendor refused and that will be tried again: not being submitted any more until then. */
export async function unmarkSubmitting(sql: AnySql, id: string, fence: bigint): Promise<void> {
  await sql`
    update tasks set started_at = null, updated_at = now()
    where id = ${id} and status = 'pending' and upstream_id is null and fence <= ${fence.toString()}`;
}

/**
 * Records the vendor's task id and the routing target that accepted it (its polls and cancel use that
 * target); false when the row is no longer this writer's to change.
 */
export async function markStarted(sql: AnySql, id: string, fence: bigint, upstreamId: string, upstreamStatus: string | null, target: string | null = null): Promise<boolean> {
  const rows = await sql`
    update tasks set upstream_id = ${upstreamId}, upstream_status = ${upstreamStatus}, upstream_target = ${target}, started_at = now(), fence = ${fence.toString()}, updated_at = now()
    where id = ${id} and status = 'pending' and upstream_id is null and fence <= ${fence.toString()}
    returning id`;
  return rows.length === 1;
}

/** A poll's status, when it changed; false when the row is no longer this writer's to change. */
export async function recordPoll(sql: AnySql, id: string, fence: bigint, upstreamStatus: string): Promise<boolean> {
  const rows = await sql`
    update tasks set upstream_status = ${upstreamStatus}, poll_count = poll_count + 1, fence = ${fence.toString()}, updated_at = now()
    where id = ${id} and status = 'pending' and fence <= ${fence.toString()}
    returning id`;
  return rows.length === 1;
}

export interface TaskSuccess {
  readonly chargeNano: bigint;
  readonly result: readonly object[];
  readonly upstreamStatus: string;
  /** The request log's endpoint name (`videos.generations`, …). */
  readonly endpoint: string;
}

/**
 * Ends a pending task successfully, in one transaction: the row, its usage transaction (the task id
 * is the transaction id) and its request log. Returns the ended row, or undefined when it had already
 * ended or belongs to a newer fencing token (then nothing is written).
 */
export async function endTaskSuccess(sql: Sql, id: string, fence: bigint, success: TaskSuccess): Promise<TaskRow | undefined> {
  return sql.begin(async (tx) => {
    const [row] = await tx<TaskRow[]>`
      update tasks set status = 'success', charged_nano = ${success.chargeNano.toString()}, result = ${tx.json(success.result as never)},
        upstream_status = ${success.upstreamStatus}, ended_at = now(), fence = ${fence.toString()}, updated_at = now(),
        callback_status = case when callback_url is null then null else 'pending' end
      where id = ${id} and status = 'pending' and fence <= ${fence.toString()}
      returning *`;
    if (!row) return undefined;
    const charged = await insertTaskCharge(tx, row, success.chargeNano);
    await insertTaskRequestLog(tx, row, success.endpoint, 200, null, success.chargeNano, charged);
    return row;
  });
}

/** Ends a pending task as failed (nothing charged); undefined when it had already ended or is not this writer's. */
export async function endTaskFailure(sql: Sql, id: string, fence: bigint, error: { code: string; message: string; upstreamStatus: string | null; endpoint: string; httpStatus: number }): Promise<TaskRow | undefined> {
  return sql.begin(async (tx) => {
    const [row] = await tx<TaskRow[]>`
      update tasks set status = 'failed', error_code = ${error.code}, error_message = ${error.message},
        upstream_status = coalesce(${error.upstreamStatus}, upstream_status), ended_at = now(), fence = ${fence.toString()}, updated_at = now(),
        callback_status = case when callback_url is null then null else 'pending' end
      where id = ${id} and status = 'pending' and fence <= ${fence.toString()}
      returning *`;
    if (!row) return undefined;
    await insertTaskRequestLog(tx, row, error.endpoint, error.httpStatus, error.code, 0n, 0n);
    return row;
  });
}

/**
 * How a cancel ends a task: one its vendor never saw (not started, not being submitted) is free; one
 * its vendor accepted (`upstreamId`, the id the decision was made about) is charged `chargeNano`
 * (0 when the vendor's own cancel stopped it), with `message` saying which.
 */
export type CancelTerms =
  | { readonly started: false }
  | { readonly started: true; readonly upstreamId: string; readonly chargeNano: bigint; readonly message: string };

/**
 * The owner's cancel of a pending task: failed with code `cancelled`, whichever process owns its
 * shard (the owner's intent outranks any fencing token). Conditional on `pending` like every ending,
 * so a cancel racing the task's success ends it one way only, and on the vendor state `terms` were
 * decided for. A charge is the task's usage transaction (the task id is its id), as a success's is.
 * Undefined when nothing matched (ended, or its vendor state moved on meanwhile).
 */
export async function cancelTask(sql: Sql, id: string, userId: string, kind: TaskKind, terms: CancelTerms): Promise<TaskRow | undefined> {
  const chargeNano = terms.started ? terms.chargeNano : 0n;
  const message = terms.started ? terms.message : 'Cancelled by its owner before its vendor started it; nothing was charged.';
  return sql.begin(async (tx) => {
    const [row] = await tx<TaskRow[]>`
      update tasks set status = 'failed', error_code = 'cancelled', error_message = ${message},
        charged_nano = ${terms.started ? chargeNano.toString() : null}::bigint,
        ended_at = now(), updated_at = now(), callback_status = case when callback_url is null then null else 'pending' end
      where id = ${id} and user_id = ${userId} and kind = ${kind} and status = 'pending'
        and ${terms.started ? tx`upstream_id = ${terms.upstreamId}` : tx`upstream_id is null and started_at is null`}
      returning *`;
    if (!row) return undefined;
    const charged = await insertTaskCharge(tx, row, chargeNano);
    // 499: the client called it off (the status nginx gave the case).
    await insertTaskRequestLog(tx, row, TASK_ENDPOINTS[kind], 499, 'cancelled', chargeNano, charged);
    return row;
  });
}

/** An ended task's usage transaction (the task id is its id); returns what it inserted now (0 when nothing). */
async function insertTaskCharge(sql: AnySql, row: TaskRow, chargeNano: bigint): Promise<bigint> {
  if (chargeNano <= 0n) return 0n;
  const inserted = await sql`
    insert into transactions (id, user_id, credits_nano, payment_method, api_key_id, model, created_at)
    values (${row.id}, ${row.user_id}, ${(-chargeNano).toString()}, 'usage', ${row.api_key_id}, ${row.model}, ${row.ended_at})
    on conflict (id) do nothing
    returning id`;
  return inserted.length === 1 ? chargeNano : 0n;
}

/**
 * An ended task's request log and its count in usage_rollup (`chargedNano`: what its charge inserted now).
 * Its `trace_id` is the task's own trace, which every step of the task is part of.
 */
async function insertTaskRequestLog(sql: AnySql, row: TaskRow, endpoint: string, status: number, errorCode: string | null, costNano: bigint, chargedNano: bigint): Promise<void> {
  const durationMs = row.ended_at ? row.ended_at.getTime() - row.created_at.getTime() : null;
  await sql`
    insert into request_logs (id, created_at, user_id, api_key_id, model, endpoint, stream, status, error_code, cost_nano, reserved_nano, duration_ms, trace_id)
    values (${row.id}, ${row.created_at}, ${row.user_id}, ${row.api_key_id}, ${row.model}, ${endpoint}, false, ${status}, ${errorCode},
            ${costNano.toString()}, ${row.hold_nano.toString()}, ${durationMs}, ${spanContextOf(row.trace_parent)?.traceId ?? null})`;
  await addToUsageRollup(sql, { userId: row.user_id, keyId: row.api_key_id, model: row.model, endedAt: row.ended_at ?? new Date(), status, costNano: chargedNano });
}

/** A callback attempt's outcome; `status` null keeps it pending (another attempt comes). */
export async function recordCallbackAttempt(sql: AnySql, id: string, outcome: { status: CallbackStatus; error: string | null }): Promise<void> {
  await sql`
    update tasks set callback_attempts = callback_attempts + 1, callback_status = ${outcome.status},
      callback_last_error = ${outcome.error}, updated_at = now()
    where id = ${id} and callback_status = 'pending'`;
}
