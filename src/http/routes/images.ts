import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { MediaModel } from '../../catalog/model.js';
import { ApiError, badRequest, requireJson } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { ImageRequestSchema } from '../schemas/images.js';
import { imageCallOf, imageJobOf, type ImageIo, type ImageJob, type ImageResult } from '../../providers/image-family.js';
import { IMAGE_FAMILIES } from '../../providers/image-families.js';
import { UpstreamAbort, UpstreamError, endpointFor, endpointOf, type UpstreamResponse } from '../../providers/upstream-client.js';
import type { UpstreamTarget } from '../../providers/family.js';
import { admitOwnCredentialsFirst } from '../../providers/byok-attempts.js';
import { upstreamErrorAsIs, upstreamFailure } from '../../providers/upstream-errors.js';
import { PricingError, actualNano, worstCaseNano, type ImageCall } from '../../billing/media-pricing.js';
import type { PriceSheet } from '../../billing/price-sheet.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import { MeteredCall, type CallIdentity } from '../../billing/metered-call.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { hostInputImage, hostResultImage, isLoopbackUrl, mediaTransitOf } from '../../media/rehost.js';
import { mediaModelFor } from './media-model.js';
import { childrenOf } from '../../metrics.js';
import { UpstreamModels, callHeaders, exhausted, withAttempts } from '../../routing/routing.js';
import { retryableAnswer } from '../../routing/retryable.js';
import { attemptAnswered, describeCall, endedWith, startAttemptSpan, startChildSpan, type AttemptLabel } from '../../tracing/call-spans.js';
import { traceparentOf, tracer, type Span } from '../../tracing/tracing.js';

/** Pricing fields as the caller named them. */
const PRICED_FIELDS: Readonly<Record<string, string>> = { images: 'n', inputImages: 'image_urls' };

/** The reservation of a call; a call the price sheet cannot price is the caller's 400, naming the field. */
function reservationOf(sheet: PriceSheet, call: ImageCall): bigint {
  try {
    return worstCaseNano(sheet, call);
  } catch (error) {
    if (!(error instanceof PricingError)) throw error;
    const field = PRICED_FIELDS[error.field] ?? error.field;
    throw badRequest(`${error.message}.`, field, field === 'model' ? 'model_not_supported' : 'invalid_request');
  }
}

/**
 * What `delivered` images cost: at the tiers the request chose, or, where it left size or quality to
 * the vendor (`auto`, unset) and the vendor says what it used, at that tier (never above the reservation:
 * the reservation was the dearest of them).
 */
function chargeOf(sheet: PriceSheet, job: ImageJob, result: ImageResult, delivered: number): bigint {
  const asked = imageCallOf(job, job.inputImages.length);
  const outcome = { kind: 'image', images: delivered } as const;
  const reported: ImageCall = { ...asked, size: asked.size ?? result.size, quality: asked.quality ?? result.quality };
  try {
    return actualNano(sheet, reported, outcome);
  } catch (error) {
    if (!(error instanceof PricingError)) throw error;
    return actualNano(sheet, asked, outcome); // the vendor named a tier the sheet does not price: the reserved one
  }
}

/**
 * What one platform attempt learnt before its vendor took the job: whether it did (a 200 to the
 * submit), and the error that another target may be asked instead (no answer, or a retryable one, to
 * the submit). Once a vendor has the job, a failure is the call's: another target would make and
 * bill the images again.
 */
interface AttemptState {
  accepted: boolean;
  retryable: ApiError | undefined;
}

/**
 * `POST /v1/images/generations`: synchronous whatever the vendor (a submit-and-poll vendor is polled
 * until its task ends). Admission reserves `n` images at the dearest tier the request allows; the
 * charge is for the images delivered, settled before the results are rehosted; a failure releases all.
 * A platform call goes through the model's routing targets (docs/routing.md): a submit that fails
 * retryably is sent to the next target, within one admission, and only the attempt that served is charged.
 */
export function imageGenerations(services: Services) {
  const { admission, auth, metrics, upstream, config, routing } = services;
  const upstreamModels = new UpstreamModels();
  const costOf = childrenOf(metrics.cost);
  const imagesOf = childrenOf(metrics.images);
  const transit = mediaTransitOf(config, services.media);

  /**
   * The upstream leg for one call to `target`: transport failures as 502s, polls paced and bounded by
   * the call's deadline, and the vendor's error answers as `failure` makes them (ours, or as-is on the
   * caller's own key). A target at an address a user chose is guarded: each connection is vetted and
   * pinned, and a transport failure there is told by its kind only (never the socket's own words).
   * `attempt` (platform calls): what decides whether another target may be tried; `headTimeoutMs`
   * (a routing target's `head_timeout_ms`): a submit with no response head by then is abandoned.
   * `span` (tracing on): the attempt's, whose traceparent every exchange carries.
   */
  function ioFor(model: MediaModel, target: UpstreamTarget, deadlineMs: number, failure: (response: UpstreamResponse, vendor: string) => Promise<ApiError>,
    attempt: AttemptState | undefined, headTimeoutMs: number | undefined, span: Span | undefined): ImageIo {
    const vendor = model.upstreamVendor;
    const guarded = target.guarded === true;
    const traceparent = span && traceparentOf(span);
    const reached = async (exchange: Promise<UpstreamResponse>, submit: boolean, timedOut?: UpstreamAbort) => {
      const startedMs = span && Date.now();
      let response: UpstreamResponse;
      try {
        response = await exchange;
      } catch (error) {
        let failed: ApiError;
        if (timedOut?.aborted) {
          metrics.upstreamErrors.inc({ vendor, reason: 'head_timeout' });
          failed = new ApiError(502, 'upstream_unreachable', `The upstream vendor ${vendor} sent no response head within ${headTimeoutMs} ms.`);
        } else {
          metrics.upstreamErrors.inc({ vendor, reason: 'connect' });
          const detail = !guarded ? `: ${(error as Error).message}` : error instanceof UpstreamError ? ` (${error.reason})` : '';
          failed = new ApiError(502, 'upstream_unreachable', `The upstream vendor ${vendor} could not be reached${detail}`);
        }
        // No answer to the submit: the vendor did not take the job.
        if (attempt && submit && !attempt.accepted) attempt.retryable = failed;
        throw failed;
      }
      if (attempt && submit && response.status === 200) attempt.accepted = true;
      if (span && submit) attemptAnswered(span, response.status, startedMs!);
      return response;
    };
    const post = (url: string, headers: Readonly<Record<string, string>>, body: string) => {
      if (headTimeoutMs === undefined) return reached(upstream.post(endpointFor(url, guarded), headers, body, undefined, traceparent), true);
      const abort = new UpstreamAbort();
      const timer = setTimeout(() => abort.abort(), headTimeoutMs);
      return reached(upstream.post(endpointFor(url, guarded), headers, body, abort, traceparent), true, abort).finally(() => clearTimeout(timer));
    };
    return {
      post,
      // Poll addresses hold task ids: parsed per call, not cached.
      get: (url, headers) => reached(upstream.get(endpointOf(url, '', guarded), headers, undefined, traceparent), false),
      refused: async (response) => {
        metrics.upstreamErrors.inc({ vendor, reason: String(response.status) });
        const error = await failure(response, vendor);
        if (attempt && !attempt.accepted && retryableAnswer(response.status, error)) attempt.retryable = error;
        return error;
      },
      wait: async () => {
        const left = deadlineMs - Date.now();
        if (left <= 0) {
          metrics.upstreamErrors.inc({ vendor, reason: 'timeout' });
          throw new ApiError(504, 'upstream_timeout', `The upstream vendor ${vendor} did not finish the image within ${config.upstreamTimeoutMs} ms.`);
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(config.imagePollMs, left)));
      },
    };
  }

  /** One attempt (its submit and polls) in a CLIENT span of its own while tracing is on. */
  function attempted(label: AttemptLabel, target: UpstreamTarget, generate: (span: Span | undefined) => Promise<ImageResult>): Promise<ImageResult> {
    if (tracer === undefined) return generate(undefined);
    const span = startAttemptSpan(label, endpointFor(target.baseUrl, target.guarded === true));
    return endedWith(span, generate(span));
  }

  /** Charges (unless on the caller's own key), rehosts and answers the images of a successful call. */
  async function answer(ctx: RequestContext, call: MeteredCall<MediaModel>, job: ImageJob, result: ImageResult, target: UpstreamTarget, headers: Readonly<Record<string, string>>): Promise<void> {
    const { model } = call.identity;
    call.firstByte();
    const delivered = result.images.slice(0, job.n);
    if (delivered.length === 0) throw new ApiError(502, 'upstream_error', `The upstream vendor ${model.upstreamVendor} answered without an image.`);
    const charged = call.settleCharge(chargeOf(model.sheet, job, result, delivered.length));
    if (charged > 0n) costOf(model.id).inc(nanoToUsd(charged));
    const hosted = await Promise.all(delivered.map((image) => hostResultImage(image, transit, !target.guarded && isLoopbackUrl(target.baseUrl))));
    for (const image of hosted) imagesOf(model.id, String(image.hosted)).inc();
    ctx.reply.json(200, { created: Math.floor(call.startedAtMs / 1000), data: hosted.map((image) => ({ url: image.url })) }, headers);
  }

  return async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    requireJson(ctx.headers.contentType);
    const request = parseWith(ImageRequestSchema, parseJsonObject(await ctx.body()));
    const model = mediaModelFor(services, request.model, 'image');
    const asked = imageJobOf(request, model);
    const family = IMAGE_FAMILIES[model.family];
    const targets = routing.mediaTargetsOf(model);
    if (!family || !targets) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} image API, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    const imageUrls = request.image_urls ?? [];
    const reservedNano = reservationOf(model.sheet, imageCallOf(asked, imageUrls.length));
    const limits = keyLimitsOf(key.row, Date.now());
    const identity: CallIdentity<MediaModel> = { userId: key.userId, keyId: key.id, model, endpoint: 'images.generations', stream: false, callId: ctx.requestId, reservedNano, span: ctx.span };
    if (ctx.span) describeCall(ctx.span, { operation: 'generate_content', vendor: model.upstreamVendor, model: model.id, keyId: key.id, stream: false });
    const checkRevoked = () => auth.requireNotRevoked(key);
    // The caller's images are fetched and hosted once, inside the first admitted call, for every attempt.
    let job: ImageJob | undefined;
    const jobOf = async () => {
      job ??= { ...asked, inputImages: await Promise.all(imageUrls.map((entry, index) => hostInputImage(entry, index, transit))) };
      return job;
    };
    const deadlineMs = Date.now() + config.upstreamTimeoutMs;

    const admissionSpan = ctx.span && startChildSpan('admission');
    admissionSpan?.setAttribute('gateway.reserved_usd', nanoToUsd(reservedNano));
    const admitting = admitOwnCredentialsFirst({
      admission, byok: services.byok, recordUsage: NO_RECORDER, identity, limits, checkRevoked,
      unusable: (candidate) => (candidate.target.cloud ? `its ${candidate.target.cloud.kind} form serves chat only` : undefined),
      attempt: async (candidate, call) => {
        // A bad input image is the caller's error, whichever key would have sent it: not an attempt.
        const ownJob = await jobOf();
        try {
          const label = { target: 'byok', model: ownJob.model.upstreamModel, attempt: call.attempts, operation: 'generate_content' } as const;
          const result = await attempted(label, candidate.target, (span) => family.generate(ownJob, candidate.target, ioFor(model, candidate.target, deadlineMs, upstreamErrorAsIs, undefined, undefined, span)));
          return (headers) => answer(ctx, call, ownJob, result, candidate.target, headers);
        } catch (error) {
          if (error instanceof ApiError) return error;
          throw error;
        }
      },
    });
    const platform = admissionSpan ? await endedWith(admissionSpan, admitting) : await admitting;
    ctx.windowKey = undefined; // counted in its window by admission (a call one of the caller's own credentials served too)
    if (!platform) return;
    const { admitted, identity: platformIdentity, ownAttempts } = platform;
    const call = new MeteredCall<MediaModel>(admission, admitted, NO_RECORDER, platformIdentity);
    await call.run(async () => {
      // The caller's images first: a bad one is the caller's 400, not an attempt.
      const platformJob = await jobOf();
      // Taken now, after admission: a call refused there must not hold a half-open target's probe.
      let index = targets.length === 1 ? 0 : routing.take(targets, routing.first(targets));
      let tried = 0;
      for (let attempt = 1; ; attempt++) {
        checkRevoked();
        // The caller's own credentials' attempts first, then the platform's (request log and header).
        call.attempts = ownAttempts + attempt;
        const target = targets[index]!;
        const served = upstreamModels.of(model, target);
        const job = served === platformJob.model ? platformJob : { ...platformJob, model: served };
        const state: AttemptState = { accepted: false, retryable: undefined };
        let result: ImageResult;
        try {
          const label = { target: target.name, model: job.model.upstreamModel, attempt: call.attempts, operation: 'generate_content' } as const;
          result = await attempted(label, target, (span) => family.generate(job, target, ioFor(model, target, deadlineMs, upstreamFailure, state, target.headTimeoutMs, span)));
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          if (error !== state.retryable) {
            // The vendor refused the request itself, or failed a job it had taken: its answer, from this attempt.
            routing.answered(target);
            throw withAttempts(error, call.attempts);
          }
          routing.failed(target, model.id, attempt, error);
          tried |= 1 << index;
          const next = attempt < routing.config.maxAttempts && Date.now() - call.startedAtMs < routing.config.deadlineMs ? routing.pick(targets, tried) : -1;
          if (next < 0) throw withAttempts(exhausted(error, attempt, targets.length > 1), call.attempts);
          routing.retried(model.id);
          index = next;
          continue;
        }
        routing.answered(target);
        await answer(ctx, call, job, result, target, callHeaders(admitted.headers, platformIdentity.callId, call.attempts));
        return;
      }
    });
  };
}

/** Image calls record their cost themselves (they have no token usage). */
const NO_RECORDER = () => {};
