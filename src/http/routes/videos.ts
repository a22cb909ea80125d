import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { badRequest, notFound, requireJson } from '../errors.js';
import { parseJsonObject } from '../schemas/issues.js';
import { parseVideoRequest } from '../schemas/videos.js';
import { PricingError, worstCaseNano } from '../../billing/media-pricing.js';
import { VIDEO_ADAPTERS } from '../../providers/video/index.js';
import { hostInputImage, inputVideoSeconds, mediaTransitOf } from '../../media/rehost.js';
import { mediaModelFor } from './media-model.js';
import { getTask } from '../../store/tasks.js';
import { PRICED_BY_INPUT_VIDEO, videoCallOf, type VideoJob } from '../../tasks/video-job.js';
import type { MediaModel } from '../../catalog/model.js';
import { vendorHintValid } from '../../tasks/vendor-hints.js';
import { parseQuery } from '../router.js';
import { callbackUrlOf, checkPublicUrl, taskRoutes } from './tasks.js';
import { UUID } from '../../store/ids.js';
import type { SniffedType } from '../../media/sniff.js';

/**
 * `POST /v1/videos/generations` and its reads. A submit is validated against the model's profile,
 * priced, held and handed to the user's actor (routes/tasks.ts); the answer does not wait for the
 * vendor. Reads show only the caller's own tasks.
 */
export function videoRoutes(services: Services) {
  const { auth, sql, redis, keys, config } = services;
  const tasks = taskRoutes(services, 'video.generation', 'video generation task');
  const transit = mediaTransitOf(config, services.media);

  /**
   * A reference image as the vendor is given it: a `data:` URI (or an upload on this media host) is
   * hosted here, so the task keeps a link rather than megabytes; a URL elsewhere goes to the vendor
   * as sent, once its host is known to be public (the vendor fetches it, not the gateway). Vetting and
   * hosting happen only once the submit is admitted (see `submit`).
   */
  const isOwnMedia = (entry: string) => services.media !== undefined && entry.startsWith(`${config.media.url}/`);
  const isHosted = (entry: string) => /^data:/i.test(entry) || isOwnMedia(entry);
  const checkImageUrl = (entry: string, index: number) =>
    isHosted(entry) ? undefined : checkPublicUrl(entry, `image_urls[${index}]`, 'invalid_image_url', config.fetch.allowLoopback);
  const hostImage = (entry: string, index: number) => (isHosted(entry) ? hostInputImage(entry, index, transit) : entry);
  /**
   * An image the vendor takes only as bytes (Veo's first frame): fetched through the URL guard now,
   * whatever its address, checked to be of a type the vendor takes and hosted, so a bad one is a 4xx
   * here and the submit reads the hosted copy (workers/submit-task.ts).
   */
  const hostInlineImage = (types: readonly SniffedType[]) => (entry: string, index: number) => hostInputImage(entry, index, transit, types);

  /**
   * A job billed per second of its input video, with that length as its duration (seconds rounded
   * up): fetched through the URL guard, or read from this media host, within MEDIA_MAX_BYTES and the
   * fetch timeout. Read only once the longest input's price is held (see submit), so a refused submit
   * fetches nothing; the task is then charged the measured seconds and the rest of the hold released.
   */
  const measuredInput = async (job: VideoJob, model: MediaModel, max: number): Promise<VideoJob> => {
    const seconds = await inputVideoSeconds(job.videoUrls[0]!, 0, transit);
    if (seconds > max) {
      throw badRequest(`'video_urls[0]' is ${Number(seconds.toFixed(3))} seconds long; ${model.id} takes an input video of at most ${max} seconds.`, 'video_urls[0]', 'invalid_video_url');
    }
    return { ...job, duration: Math.ceil(seconds) };
  };

  const submit = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    requireJson(ctx.headers.contentType);
    const body = parseJsonObject(await ctx.body());
    if (typeof body.model !== 'string' || body.model === '') throw badRequest("'model' is required and must be a string.", 'model');
    const model = mediaModelFor(services, body.model, 'video');
    const parsed = parseVideoRequest(body, model);
    const adapter = Object.hasOwn(VIDEO_ADAPTERS, model.family) ? VIDEO_ADAPTERS[model.family] : undefined;
    if (!adapter || !services.routing.mediaTargetsOf(model, adapter.cloudForms)) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} task API, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    const inputPriced = PRICED_BY_INPUT_VIDEO.includes(parsed.profile);
    const maxInputSeconds = model.capabilities.maxInputSeconds;
    if (inputPriced && typeof maxInputSeconds !== 'number') {
      throw badRequest(`The model '${model.id}' is billed by its input video's length and names no longest input to hold for.`, 'model', 'model_not_supported');
    }
    // Priced by its input's length: the longest input it takes is held first, the input measured after.
    const job = inputPriced ? { ...parsed, duration: maxInputSeconds as number } : parsed;
    const callbackUrl = callbackUrlOf(body);
    let costNano: bigint;
    try {
      costNano = worstCaseNano(model.sheet, videoCallOf(job));
    } catch (error) {
      if (!(error instanceof PricingError)) throw error;
      throw badRequest(`${error.message}.`, error.field === 'seconds' ? 'duration' : error.field, error.field === 'model' ? 'model_not_supported' : 'invalid_request');
    }
    // Hosts are resolved, and inline images decoded and stored, only once the submit holds its cost:
    // a refused one (a full window, no credit) does neither.
    const vettedWithHostedImages = async () => {
      await Promise.all(job.imageUrls.map(checkImageUrl));
      await Promise.all(job.videoUrls.map((entry, index) => (isOwnMedia(entry) ? undefined : checkPublicUrl(entry, `video_urls[${index}]`, 'invalid_video_url', config.fetch.allowLoopback))));
      const measured = inputPriced ? await measuredInput(job, model, maxInputSeconds as number) : job;
      const host = adapter.inlineImageTypes ? hostInlineImage(adapter.inlineImageTypes) : hostImage;
      return { ...measured, imageUrls: await Promise.all(job.imageUrls.map(host)) };
    };
    await tasks.accept(ctx, key, { model, job: vettedWithHostedImages, costNano, callbackUrl });
  };

  /**
   * A vendor's status callback for one task: only a hint that the task moved, so its actor polls the
   * vendor now instead of at its next timer. The token is checked before anything else: a caller
   * without it is answered at once, without waiting for its body. The body itself is not used (the
   * poll is what counts); it is read, within the body limit, only to end the request.
   */
  const vendorHint = async (ctx: RequestContext): Promise<void> => {
    const id = ctx.params[0] ?? '';
    const token = parseQuery(ctx.query).get('token')?.[0] ?? '';
    if (!UUID.test(id) || !vendorHintValid(config.keySecret, id, token)) throw notFound('No such task callback.');
    await ctx.body();
    const row = await getTask(sql, id);
    if (row?.status === 'pending' && row.upstream_id !== null) {
      await redis.xadd(keys.taskStream(row.shard), '*', 'k', 'a', 't', row.id, 'u', row.user_id);
    }
    ctx.reply.json(200, {});
  };

  return { submit, get: tasks.get, list: tasks.list, cancel: tasks.cancel, cancelOwned: tasks.cancelOwned, vendorHint };
}
