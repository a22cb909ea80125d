import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, badRequest, notFound, requireJson } from '../errors.js';
import { parseJsonObject } from '../schemas/issues.js';
import { parseVideoRequest } from '../schemas/videos.js';
import { pageOf } from './billing.js';
import { PricingError, worstCaseNano } from '../../billing/media-pricing.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { settleTaskHold } from '../../admission/scripts.js';
import { VIDEO_ADAPTERS } from '../../providers/video/index.js';
import { hostInputImage, mediaTransitOf } from '../../media/rehost.js';
import { mediaModelFor } from './media-model.js';
import { UrlGuardError, vetPublicUrl } from '../../media/url-guard.js';
import { deleteUnstartedTask, getTask, getUserTask, holdIdOf, insertTask, listUserTasks, type TaskKind } from '../../store/tasks.js';
import { shardOf } from '../../tasks/shards.js';
import { taskObject } from '../../tasks/task-object.js';
import { videoCallOf } from '../../tasks/video-job.js';
import { vendorHintValid } from '../../tasks/vendor-hints.js';
import { parseQuery } from '../router.js';
import { children } from '../../metrics.js';
import { log } from '../../log.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const KIND: TaskKind = 'video.generation';

/**
 * `POST /v1/videos/generations` and its reads. A submit is validated against the model's profile,
 * priced, held (admission: rate windows, the key's credit limit, the user's available credit), written
 * as a pending task and handed to the user's actor through the shard stream; the answer does not wait
 * for the vendor. Reads show only the caller's own tasks.
 */
export function videoRoutes(services: Services) {
  const { auth, admission, sql, redis, keys, config, metrics } = services;
  const submittedOf = children((model) => metrics.tasksSubmitted.labels(model));
  const transit = mediaTransitOf(config, services.media);

  /**
   * A reference image as the vendor is given it: a `data:` URI (or an upload on this media host) is
   * hosted here, so the task keeps a link rather than megabytes; a URL elsewhere goes to the vendor
   * as sent, once its host is known to be public (the vendor fetches it, not the gateway).
   */
  const isOwnMedia = (entry: string) => services.media !== undefined && entry.startsWith(`${config.media.url}/`);
  const inputImage = async (entry: string, index: number): Promise<string> => {
    if (/^data:/i.test(entry) || isOwnMedia(entry)) return hostInputImage(entry, index, transit);
    await checkPublicUrl(entry, `image_urls[${index}]`, 'invalid_image_url', config.fetch.allowLoopback);
    return entry;
  };

  const submit = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    requireJson(ctx.headers.contentType);
    const body = parseJsonObject(await ctx.body());
    if (typeof body.model !== 'string' || body.model === '') throw badRequest("'model' is required and must be a string.", 'model');
    const model = mediaModelFor(services, body.model, 'video');
    const job = parseVideoRequest(body, model);
    if (!VIDEO_ADAPTERS[model.family] || !services.vendors[model.upstreamVendor]) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} task API, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    const callbackUrl = typeof body.callback_url === 'string' ? body.callback_url : null;
    if (callbackUrl !== null) await checkPublicUrl(callbackUrl, 'callback_url', 'invalid_callback_url', config.fetch.allowLoopback);
    let costNano: bigint;
    try {
      costNano = worstCaseNano(model.sheet, videoCallOf(job));
    } catch (error) {
      if (!(error instanceof PricingError)) throw error;
      throw badRequest(`${error.message}.`, error.field === 'seconds' ? 'duration' : error.field, error.field === 'model' ? 'model_not_supported' : 'invalid_request');
    }
    const imageUrls = await Promise.all(job.imageUrls.map((entry, index) => inputImage(entry, index)));
    await Promise.all(job.videoUrls.map((entry, index) => (isOwnMedia(entry) ? undefined : checkPublicUrl(entry, `video_urls[${index}]`, 'invalid_video_url', config.fetch.allowLoopback))));

    const taskId = randomUUID();
    const holdId = holdIdOf(key.id, taskId);
    const headers = await admission.holdTask(key.userId, key.id, holdId, costNano, keyLimitsOf(key.row, Date.now()));
    const shard = shardOf(key.userId, config.tasks.shards);
    let accepted = false;
    try {
      const row = await insertTask(sql, {
        id: taskId, userId: key.userId, keyId: key.id, kind: KIND, model: model.id, shard, job: { ...job, imageUrls },
        holdNano: costNano, upstreamVendor: model.upstreamVendor, callbackUrl,
      });
      // One round trip: the hold becomes the task's (no deadline) and its actor is told.
      await redis.multi()
        .zrem(keys.reservationDeadlines(key.userId), holdId)
        .xadd(keys.taskStream(shard), '*', 'k', 'a', 't', taskId, 'u', key.userId)
        .exec();
      accepted = true;
      submittedOf(model.id).inc();
      log.info('task submitted', { task: taskId, model: model.id, hold_nano: String(costNano) });
      ctx.reply.json(200, taskObject(row), { ...headers, 'x-request-id': taskId });
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
    const row = UUID.test(id) ? await getUserTask(sql, key.userId, KIND, id.toLowerCase()) : undefined;
    if (!row) throw notFound(`No video generation task with id '${id}' belongs to this account.`);
    ctx.reply.json(200, taskObject(row));
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    const { page, perPage } = pageOf(ctx.query);
    const { rows, total } = await listUserTasks(sql, key.userId, KIND, page, perPage);
    ctx.reply.json(200, { object: 'list', data: rows.map(taskObject), total, page, per_page: perPage });
  };

  /**
   * A vendor's status callback for one task: only a hint that the task moved, so its actor polls the
   * vendor now instead of at its next timer (the body is not read: the poll is what counts).
   */
  const vendorHint = async (ctx: RequestContext): Promise<void> => {
    await ctx.body();
    const id = ctx.params[0] ?? '';
    const token = parseQuery(ctx.query).get('token')?.[0] ?? '';
    if (!UUID.test(id) || !vendorHintValid(config.keySecret, id, token)) throw notFound('No such task callback.');
    const row = await getTask(sql, id);
    if (row?.status === 'pending' && row.upstream_id !== null) {
      await redis.xadd(keys.taskStream(row.shard), '*', 'k', 'a', 't', row.id, 'u', row.user_id);
    }
    ctx.reply.json(200, {});
  };

  return { submit, get, list, vendorHint };
}

/** A URL the gateway or a vendor will call must be https to a public address (`callback_url` is checked again at each delivery). */
async function checkPublicUrl(url: string, param: string, code: string, allowLoopback: boolean): Promise<void> {
  try {
    await vetPublicUrl(url, allowLoopback);
  } catch (error) {
    if (!(error instanceof UrlGuardError)) throw error;
    throw new ApiError(400, code, `Invalid value for '${param}': ${error.message}`, param);
  }
}
