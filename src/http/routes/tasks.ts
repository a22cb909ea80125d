/**
 * What every task endpoint shares (videos, speech, music): accepting a priced job (hold, row, message
 * to the user's actor), reading one task or a page of them, cancelling one. A task is visible only to
 * the user who owns it.
 */
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { AuthenticatedKey } from '../../auth/authenticator.js';
import type { MediaModel } from '../../catalog/model.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { pageOf } from './billing.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { settleTaskHold } from '../../admission/scripts.js';
import { UrlGuardError, vetPublicUrl } from '../../media/url-guard.js';
import {
  MADE_AT_ONCE, cancelTask, deleteUnstartedTask, getUserTask, holdIdOf, insertTask, listUserTasks, type CancelTerms, type TaskKind, type TaskRow,
} from '../../store/tasks.js';
import { cancelAtVendor } from '../../tasks/vendor-cancel.js';
import { acceptedTarget } from '../../tasks/task-target.js';
import { shardOf } from '../../tasks/shards.js';
import { taskObject } from '../../tasks/task-object.js';
import { childrenOf } from '../../metrics.js';
import { log } from '../../log.js';
import { UUID } from '../../store/ids.js';
import { traceparentOf, withSpan } from '../../tracing/tracing.js';
import { endTaskCreation, startTaskCreation } from '../../tasks/task-tracing.js';

export interface TaskSubmission {
  readonly model: MediaModel;
  /**
   * The job, or what builds it once the cost is held: work a refused submit must not do (resolving the
   * hosts of image URLs, storing inline images). A 400 it throws releases the hold.
   */
  readonly job: object | (() => Promise<object>);
  readonly costNano: bigint;
  /** Not vetted yet: `accept` vets it once the cost is held (resolving its host is work a full window refuses). */
  readonly callbackUrl: string | null;
}

/** The routes of one task kind; `noun` names it in messages ("video generation task"). */
export function taskRoutes(services: Services, kind: TaskKind, noun: string) {
  const { auth, admission, sql, redis, keys, config, metrics } = services;
  const submittedOf = childrenOf(metrics.tasksSubmitted);
  const notYours = (id: string) => notFound(`No ${noun} with id '${id}' belongs to this account.`);

  /**
   * Holds the cost (admission: rate windows, the key's credit limit, the user's available credit),
   * then vets `callbackUrl` and builds the job (a 400 there releases the hold: nothing is charged),
   * writes the pending task and hands it to the user's actor through the shard stream, then answers
   * without waiting for the vendor.
   */
  const accept = async (ctx: RequestContext, key: AuthenticatedKey, submission: TaskSubmission): Promise<void> => {
    const { model, job, costNano, callbackUrl } = submission;
    const taskId = ctx.requestId;
    const holdId = holdIdOf(key.id, taskId);
    const headers = await admission.holdTask(key.userId, key.id, holdId, costNano, keyLimitsOf(key.row, Date.now()));
    ctx.windowKey = undefined; // counted in its window by admission: a refusal from here on is not counted again
    const shard = shardOf(key.userId, config.tasks.shards);
    // The task's own trace begins here; its steps, on whichever gateway runs them, continue it.
    const creation = startTaskCreation({ id: taskId, kind, model: model.id, vendor: model.upstreamVendor });
    let accepted = false;
    let refusal = 'internal_error';
    try {
      if (callbackUrl !== null) await checkPublicUrl(callbackUrl, 'callback_url', 'invalid_callback_url', config.fetch.allowLoopback);
      const row = await insertTask(sql, {
        id: taskId, userId: key.userId, keyId: key.id, kind, model: model.id, shard, job: typeof job === 'function' ? await job() : job, holdNano: costNano, upstreamVendor: model.upstreamVendor, callbackUrl,
        traceParent: creation ? traceparentOf(creation) : null,
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
      const submitted = () => log.info('task submitted', { task: taskId, kind, model: model.id, hold_nano: String(costNano) });
      if (creation) withSpan(creation, submitted);
      else submitted();
      ctx.reply.json(200, taskObject(row, config.media.retentionMs), { ...headers, 'x-request-id': taskId });
    } catch (error) {
      if (error instanceof ApiError) refusal = error.code;
      throw error;
    } finally {
      endTaskCreation(creation, accepted ? undefined : refusal);
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

  const ended = (task: TaskRow) => new ApiError(409, 'task_ended', `The ${noun} '${task.id}' has already ended (${task.status}); only a pending task can be cancelled.`);
  const starting = (task: TaskRow) => new ApiError(409, 'task_starting',
    `The ${noun} '${task.id}' is being submitted to its vendor right now; retry the cancel in a moment.`, null, { 'retry-after': '1' });

  /**
   * How a cancel ends a task its vendor accepted: a vendor that runs every job to its end (no cancel of
   * its own, or a job made at once) is paid, so the cancel is charged the task's hold; otherwise the
   * vendor is asked to cancel first, and only a cancel it confirms (2xx) is free.
   */
  const acceptedCancelTerms = async (task: TaskRow, upstreamId: string): Promise<CancelTerms> => {
    const charged = (why: string): CancelTerms => ({
      started: true, upstreamId, chargeNano: task.hold_nano, message: `Cancelled by its owner after its vendor accepted it; ${why}, so its price was charged.`,
    });
    const model = services.catalog().media(task.model);
    // The target that accepted the task: a vendor cancels only a task of the account asking.
    const target = model && acceptedTarget(services.routing, services.vendors, model, task);
    if (upstreamId === MADE_AT_ONCE || !model || !target) return charged('the vendor makes it to its end');
    const answer = await cancelAtVendor({ family: model.family, upstreamId, target, timeoutMs: config.fetch.timeoutMs });
    if (answer.kind === 'no_cancel') return charged('the vendor has no cancel and runs it to its end');
    if (answer.kind === 'sent' && answer.httpStatus >= 200 && answer.httpStatus < 300) {
      log.info('vendor cancelled a task', { task: task.id, vendor: task.upstream_vendor });
      return { started: true, upstreamId, chargeNano: 0n, message: 'Cancelled by its owner and by its vendor; nothing was charged.' };
    }
    log.info('vendor did not cancel a task; charged', { task: task.id, vendor: task.upstream_vendor, status: answer.kind === 'sent' ? answer.httpStatus : answer.code });
    return charged('the vendor did not confirm the cancel (it runs the job to its end)');
  };

  /**
   * Ends a task of the caller's that has not ended: failed with code `cancelled`. One its vendor never
   * saw is free, its hold released at once; one its vendor accepted is free only when the vendor's own
   * cancel stops it, and charged its hold otherwise (see docs/tasks.md). Its actor then sends the
   * callback. An ended task is 409 `task_ended`; one being submitted to its vendor right now, 409
   * `task_starting`. Returns the ended row. Also DELETE /api/v1/tasks/:id's (routes/account-tasks.ts).
   */
  const cancelOwned = async (task: TaskRow): Promise<TaskRow> => {
    const { id, user_id: userId } = task;
    if (task.status !== 'pending') throw ended(task);
    if (task.upstream_id === null && task.started_at !== null) throw starting(task);
    const terms: CancelTerms = task.upstream_id === null ? { started: false } : await acceptedCancelTerms(task, task.upstream_id);
    let row = await cancelTask(sql, id, userId, kind, terms);
    const endedHere = row !== undefined;
    if (!row) {
      // It ended, or its vendor state moved on (a submit began), since it was read.
      const now = await getUserTask(sql, userId, kind, id);
      if (now?.status === 'pending') throw starting(now);
      // The vendor confirmed the cancel and the task's actor, polling, ended it first (failed, free): the cancel is done.
      if (!(now?.status === 'failed' && terms.started && terms.chargeNano === 0n)) throw ended(now ?? task);
      row = now;
    }
    // The hold ends now (released, or charged), not when the actor gets to it (it settles again harmlessly).
    if (row.hold_nano > 0n) {
      const settled = row;
      await settleTaskHold(redis, keys, settled.user_id, settled.api_key_id, holdIdOf(settled.api_key_id, settled.id), settled.charged_nano ?? 0n)
        .catch((error) => log.warn('cancelled task hold not settled at once; its actor settles it', { task: settled.id, error }));
    }
    if (endedHere) {
      const cancelled = row;
      await redis.xadd(keys.taskStream(cancelled.shard), '*', 'k', 'x', 't', cancelled.id, 'u', cancelled.user_id)
        .catch((error) => log.warn('cancelled task not passed to its actor; the shard sweep finds it', { task: cancelled.id, error }));
      log.info('task cancelled', { task: cancelled.id, kind, charged_nano: String(cancelled.charged_nano ?? 0n) });
    }
    return row;
  };

  /** DELETE of the kind's /v1 route: any key of the account cancels its task (cancelOwned). */
  const cancel = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    const id = (ctx.params[0] ?? '').toLowerCase();
    if (!UUID.test(id)) throw notYours(id);
    const task = await getUserTask(sql, key.userId, kind, id);
    if (!task) throw notYours(id);
    ctx.reply.json(200, taskObject(await cancelOwned(task), config.media.retentionMs));
  };

  return { accept, get, list, cancel, cancelOwned };
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

/**
 * A body's `callback_url`, not vetted yet (`accept` vets it once admitted); anything but a string or
 * nothing is refused, whatever the route's schema let through.
 */
export function callbackUrlOf(body: Record<string, unknown>): string | null {
  if (body.callback_url !== undefined && body.callback_url !== null && typeof body.callback_url !== 'string') {
    throw badRequest("Invalid value for 'callback_url': must be a string.", 'callback_url');
  }
  return typeof body.callback_url === 'string' ? body.callback_url : null;
}
