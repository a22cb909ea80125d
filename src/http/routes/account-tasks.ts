/**
 * GET /api/v1/tasks, GET /api/v1/tasks/:id and DELETE /api/v1/tasks/:id: an account's video, speech
 * and music tasks on the management API (docs/api.md "Tasks"), for a dashboard JWT or a management key
 * (the whole account's) and a regular key (only the tasks it created). Each item is the task object of
 * its /v1 route plus `kind`; a cancel is that route's cancel.
 */
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { TaskKind, TaskRow, TaskStatus } from '../../store/tasks.js';
import { getAccountTask, listAccountTasks } from '../../store/tasks.js';
import { taskObject } from '../../tasks/task-object.js';
import { notFound } from '../errors.js';
import { QueryParams } from '../query/management-params.js';
import { decodePageCursor, encodePageCursor } from '../query/page-cursor.js';
import { MAX_REQUESTS_PER_PAGE, ownKeyOf } from './request-logs.js';
import { UUID } from '../../store/ids.js';

const DEFAULT_TASKS_PER_PAGE = 20;

/** The `kind` of the API and the kind of task it names. */
const KINDS = Object.freeze({ video: 'video.generation', speech: 'audio.speech', music: 'audio.generation' } as const satisfies Record<string, TaskKind>);
type KindName = keyof typeof KINDS;
const KIND_NAMES = Object.keys(KINDS) as KindName[];
const KIND_OF: Readonly<Record<TaskKind, KindName>> = Object.freeze(Object.fromEntries(KIND_NAMES.map((name) => [KINDS[name], name])) as Record<TaskKind, KindName>);
const STATUSES: readonly TaskStatus[] = ['pending', 'success', 'failed'];

/** Each kind's cancel (its /v1 route's `cancelOwned`, src/http/routes/tasks.ts). */
export type TaskCancels = Readonly<Record<TaskKind, (task: TaskRow) => Promise<TaskRow>>>;

export function accountTaskRoutes(services: Services, cancels: TaskCancels) {
  const { auth, config, sql } = services;
  const item = (row: TaskRow) => ({ ...taskObject(row, config.media.retentionMs), kind: KIND_OF[row.kind] });

  const list = async (ctx: RequestContext): Promise<void> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    const q = new QueryParams(ctx.query);
    const limit = q.integer('limit', 1, MAX_REQUESTS_PER_PAGE) ?? DEFAULT_TASKS_PER_PAGE;
    const kind = q.oneOf('kind', KIND_NAMES);
    const status = q.oneOf('status', STATUSES);
    const cursor = q.text('cursor', 128);
    const after = cursor === undefined ? undefined : decodePageCursor(cursor);
    const { rows, more } = await listAccountTasks(sql, {
      userId: principal.userId, keyId: ownKeyOf(principal), kind: kind && KINDS[kind], status, after, limit,
    });
    ctx.reply.json(200, { data: rows.map(item), has_more: more, next_cursor: more ? encodePageCursor(rows[rows.length - 1]!) : null });
  };

  /** The caller's task by the path's id: another account's, another key's (for a regular key) and no id at all answer alike. */
  const taskOf = async (ctx: RequestContext): Promise<TaskRow> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    const id = ctx.params[0] ?? '';
    const row = UUID.test(id) ? await getAccountTask(sql, principal.userId, id.toLowerCase(), ownKeyOf(principal)) : undefined;
    if (!row) throw notFound(`No task with id '${id.slice(0, 64)}' belongs to this account.`);
    return row;
  };

  const one = async (ctx: RequestContext): Promise<void> => {
    ctx.reply.json(200, item(await taskOf(ctx)));
  };

  const cancel = async (ctx: RequestContext): Promise<void> => {
    const task = await taskOf(ctx);
    ctx.reply.json(200, item(await cancels[task.kind](task)));
  };

  return { list, one, cancel };
}
