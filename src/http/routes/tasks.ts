/**
 * What every task endpoint shares (videos, speech, music): accepting a priced job (hold, row, message
 * to the user's actor), reading one task or a page of them, cancelling one. A task is visible only to
 * the user who owns it.
 */
import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { AuthenticatedKey } from '../../auth/authenticator.js';
import type { MediaModel } from '../../catalog/model.js';
import { ApiError, notFound } from '../errors.js';
import { pageOf } from './billing.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { settleTaskHold } from '../../admission/scripts.js';
import { UrlGuardError, vetPublicUrl } from '../../media/url-guard.js';
import {
  cancelTask, deleteUnstartedTask, getUserTask, holdIdOf, insertTask, listUserTasks, type TaskKind,
} from '../../store/tasks.js';
import { shardOf } from '../../tasks/shards.js';
import { taskObject } from '../../tasks/task-object.js';
import { children } from '../../metrics.js';
import { log } from '../../log.js';
import { UUID } from '../../store/ids.js';

export interface TaskSubmission {
  readonly model: MediaModel;
  /** The job, or what builds it once the cost is held (work a refused submit must not do, e.g. storing inline images). */
  readonly job: object | (() => Promise<object>);
  readonly costNano: bigint;
  readonly callbackUrl: string | null;
}

/** The routes of one task kind; `noun` names it in messages ("video generation task"). */
export function taskRoutes(services: Services, kind: TaskKind, noun: string) {
  const { auth, admission, sql, redis, keys, config, metrics } = services;
  const submittedOf = children((model) => metrics.tasksSubmitted.labels(model));
  const notYours = (id: string) => notFound(`No ${noun} with id '${id}' belongs to this account.`);

  /**
   * Holds the cost (admission: rate windows, the key's credit limit, the user's available credit),
   * writes the pending task and hands it to the user's actor through the shard stream, then answers
   * without waiting for the vendor.
   */
  const accept = async (ctx: RequestContext, key: AuthenticatedKey, submission: TaskSubmission): Promise<void> => {
    const { model, job, costNano, callbackUrl } = submission;
    const taskId = randomUUID();
    const holdId = holdIdOf(key.id, taskId);
    const headers = await admission.holdTask(key.userId, key.id, holdId, costNano, keyLimitsOf(key.row, Date.now()));
    const shard = shardOf(key.userId, config.tasks.shards);
    let accepted = false;
    try {
      const row = await insertTask(sql, {
        id: taskId, userId: key.userId, keyId: key.id, kind, model: model.id, shard, job: typeof job === 'function' ? await job() : job, holdNano: costNano, upstreamVendor: model.upstreamVendor, callbackUrl,
      });
      // The hold becomes the task's (no deadline) and its actor is told. Not one MULTI: the user's keys
      // and the shard's are in different cluster slots. Neither needs the other: a step pins the hold
      // again (TaskSteps.pinHold), and if either fails the task is not accepted and both are undone below.
      await Promise.all([
        redis.zrem(keys.reservationDeadlines(key.userId), holdId),
        redis.xadd(keys.taskStream(shard), '*', 'k', 'a', 't', taskId, 'u', key.userId),
      ]);
      accepted = true;
      submittedOf(model.id).inc();
      log.info('task submitted', { task: taskId, kind, model: model.id, hold_nano: String(costNano) });
      ctx.reply.json(200, taskObject(row, config.media.retentionMs), { ...headers, 'x-request-id': taskId });
    } finally {
      if (!accepted) {
        // Not accepted: no task, no hold (a hold this cannot release expires at its deadline).
        await deleteUnstartedTask(sql, taskId).catch((error) => log.error('an unaccepted task row was not deleted', { task: taskId, error }));
        await settleTaskHold(redis, keys, key.userId, key.id, holdId, 0n).catch(() => {});
      }
    }
  };

  const get = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    const id = ctx.params[0] ?? '';
    const row = UUID.test(id) ? await getUserTask(sql, key.userId, kind, id.toLowerCase()) : undefined;
    if (!row) throw notYours(id);
    ctx.reply.json(200, taskObject(row, config.media.retentionMs));
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    const { page, perPage } = pageOf(ctx.query);
    const { rows, total } = await listUserTasks(sql, key.userId, kind, page, perPage);
    ctx.reply.json(200, { object: 'list', data: rows.map((row) => taskObject(row, config.media.retentionMs)), total, page, per_page: perPage });
  };

  /**
   * Ends a task that has not ended: failed with code `cancelled`, its hold released at once; its actor
   * then asks the vendor to cancel (where the vendor can) and sends the callback. An ended task is 409.
   */
  const cancel = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    const id = (ctx.params[0] ?? '').toLowerCase();
    if (!UUID.test(id)) throw notYours(id);
    const row = await cancelTask(sql, id, key.userId, kind);
    if (!row) {
      const existing = await getUserTask(sql, key.userId, kind, id);
      if (!existing) throw notYours(id);
      throw new ApiError(409, 'task_ended', `The ${noun} '${id}' has already ended (${existing.status}); only a pending task can be cancelled.`);
    }
    // The credit is the user's again now, not when the actor gets to it (it settles again harmlessly).
    if (row.hold_nano > 0n) {
      await settleTaskHold(redis, keys, row.user_id, row.api_key_id, holdIdOf(row.api_key_id, row.id), 0n)
        .catch((error) => log.warn('cancelled task hold not released at once; its actor releases it', { task: row.id, error }));
    }
    await redis.xadd(keys.taskStream(row.shard), '*', 'k', 'x', 't', row.id, 'u', row.user_id)
      .catch((error) => log.warn('cancelled task not passed to its actor; the shard sweep finds it', { task: row.id, error }));
    log.info('task cancelled', { task: row.id, kind });
    ctx.reply.json(200, taskObject(row, config.media.retentionMs));
  };

  return { accept, get, list, cancel };
}

/** A URL the gateway or a vendor will call must be https to a public address (`callback_url` is checked again at each delivery). */
export async function checkPublicUrl(url: string, param: string, code: string, allowLoopback: boolean): Promise<void> {
  try {
    await vetPublicUrl(url, allowLoopback);
  } catch (error) {
    if (!(error instanceof UrlGuardError)) throw error;
    throw new ApiError(400, code, `Invalid value for '${param}': ${error.message}`, param);
  }
}

/** A body's `callback_url`, vetted. */
export async function callbackUrlOf(body: Record<string, unknown>, allowLoopback: boolean): Promise<string | null> {
  const callbackUrl = typeof body.callback_url === 'string' ? body.callback_url : null;
  if (callbackUrl !== null) await checkPublicUrl(callbackUrl, 'callback_url', 'invalid_callback_url', allowLoopback);
  return callbackUrl;
}
