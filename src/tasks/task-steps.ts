import type { Config } from '../config.js';
import type { Sql } from '../store/db.js';
import type { ScriptedRedis } from '../admission/scripts.js';
import { settleTaskHold } from '../admission/scripts.js';
import type { RedisKeys } from '../admission/keys.js';
import type { Balances } from '../billing/balances.js';
import type { CatalogSnapshot } from '../catalog/snapshot.js';
import { PricingError, actualNano } from '../billing/media-pricing.js';
import { nanoToUsd } from '../billing/pricing.js';
import type { SealedBox } from '../auth/sealed-box.js';
import type { TaskMetrics } from '../metrics.js';
import { childrenOf } from '../metrics.js';
import { log } from '../log.js';
import { isLoopbackUrl } from '../media/rehost.js';
import type { VendorRefusal, VendorTarget } from '../providers/video/adapter.js';
import {
  MADE_AT_ONCE, TASK_ENDPOINTS, endTaskFailure, endTaskSuccess, getTask, holdIdOf, markStarted, markSubmitting, recordCallbackAttempt, recordPoll, runningTaskCount, unmarkSubmitting, type TaskRow,
} from '../store/tasks.js';
import { signingSecrets, webhookSecretsOf } from '../store/webhook-secrets.js';
import { callbackGivesUp, callbackRetryDelayMs } from './callback-policy.js';
import { taskObject } from './task-object.js';
import { vendorHintUrl } from './vendor-hints.js';
import type { TaskWorkers } from './task-workers.js';
import { videoCallOf, type VideoJob } from './video-job.js';
import { audioCallOf, audioOutcomeOf, type AudioJob } from './audio-job.js';
import { AUDIO_ADAPTERS } from '../providers/audio/index.js';
import { taskApiOf, type TaskJob } from './task-apis.js';
import type { GenerateAudioOutput } from '../../workers/generate-audio.js';
import type { SubmitTaskOutput } from '../../workers/submit-task.js';
import type { MediaModel } from '../catalog/model.js';
import { Routing, type RoutingEvents } from '../routing/routing.js';
import { breakerMemory } from '../routing/breakers.js';
import type { RouteTarget } from '../routing/targets.js';
import { acceptedTarget, jobFor, movesOn, refusalError, vendorTargetOf } from './task-target.js';
import { inTaskStep, noteTaskOutcome, whenTracing, type TaskStep } from './task-tracing.js';

/** What a timer or message asks of a task: advance it (start, poll, settle), deliver its callback, or pass its cancel on (`x`). */
export type StepKind = 'a' | 'c' | 'x';

/** The shard lease a step runs under: its writes carry the token and lose to any newer owner's. */
export interface StepLease {
  readonly shard: number;
  readonly token: bigint;
}

export interface TaskStepDeps {
  readonly config: Config;
  readonly sql: Sql;
  readonly redis: ScriptedRedis;
  readonly keys: RedisKeys;
  readonly balances: Balances;
  readonly workers: TaskWorkers;
  readonly catalog: () => CatalogSnapshot;
  readonly vendors: Readonly<Record<string, VendorTarget>>;
  /** The models' targets for submits (default: the routing file's, with breakers of this runtime's own). */
  readonly routing?: Routing;
  readonly box: SealedBox;
  readonly metrics: TaskMetrics;
  /** Schedules a step of the task `delayMs` from now (a timer on its shard; one per task and kind). */
  readonly schedule: (lease: StepLease, kind: StepKind, row: Pick<TaskRow, 'id' | 'user_id'>, delayMs: number) => Promise<void>;
  /** A task of the user ended: a start waiting for a slot may go. */
  readonly onEnded: (row: TaskRow) => void;
  /** Work that outlives its step (a result being made at once): stopping waits for it. */
  readonly track: (work: Promise<void>) => void;
}

/** A task whose model the catalog no longer serves, or serves through no target. */
function unavailable(row: TaskRow): { code: string; message: string; httpStatus: number } {
  return { code: 'model_unavailable', message: `The model '${row.model}' is no longer served; nothing was charged.`, httpStatus: 503 };
}

/** What a worker's span of a vendor call says: the vendor, the routing target, the attempt (1, 2, … within a routed submit). */
function spanAttributesOf(target: RouteTarget, attempt: number): Record<string, string | number> | undefined {
  return whenTracing(() => ({ 'gen_ai.provider.name': target.vendor, 'gateway.target': target.name, 'gateway.attempt': attempt }));
}

/** What was delivered, on the media host (or the vendor's URL with storage off). */
interface Delivered {
  readonly url: string;
  readonly seconds?: number;
  readonly format?: string;
}

/**
 * The steps of one task, driven by its row in Postgres (the truth), so a replayed or duplicated
 * message changes nothing: an unstarted task is submitted to its vendor, a started one is polled,
 * an ended one has its hold settled and its callback delivered. Every write is conditional on the
 * row still being pending and on the shard's fencing token.
 */
export class TaskSteps {
  /** Transient vendor failures in a row per task (in memory: a new owner starts counting again). */
  private readonly retries = new Map<string, number>();
  /** Failed downloads of a task's result, likewise. */
  private readonly downloads = new Map<string, number>();
  /** Tasks whose result is being made at once in this process (a step finding one does nothing). */
  private readonly making = new Set<string>();
  private readonly endedOf;
  private readonly durationOf;
  private readonly costOf;
  private readonly stepsOf;
  private readonly routing: Routing;

  constructor(private readonly deps: TaskStepDeps) {
    const { metrics, config } = deps;
    this.endedOf = childrenOf(metrics.ended);
    this.durationOf = childrenOf(metrics.duration);
    this.costOf = childrenOf(metrics.cost);
    this.stepsOf = childrenOf(metrics.steps);
    // A submit sent on to another target is a routing retry and a step outcome.
    const events: RoutingEvents = {
      ...metrics.routing,
      retry: (model) => {
        metrics.routing.retry(model);
        this.stepsOf('start', 'next_target').inc();
      },
    };
    const table = config.routing.table;
    this.routing = deps.routing ?? new Routing(config.routing, deps.vendors, table ? breakerMemory(table.slots) : undefined, events);
  }

  /** A task not yet submitted to its vendor: it takes one of the user's slots when it starts. */
  isStart(row: TaskRow): boolean {
    return row.status === 'pending' && row.upstream_id === null;
  }

  /** Whether the user has fewer tasks running at vendors than the concurrency bound. */
  async slotFree(userId: string): Promise<boolean> {
    return (await runningTaskCount(this.deps.sql, userId)) < this.deps.config.tasks.userConcurrency;
  }

  async load(taskId: string): Promise<TaskRow | undefined> {
    return getTask(this.deps.sql, taskId);
  }

  /** Runs the step `kind` asks for on `row` (read just before), as a span of the task's trace. */
  async run(row: TaskRow, kind: StepKind, lease: StepLease): Promise<void> {
    const step: TaskStep = kind === 'c' ? 'callback' : kind === 'x' ? 'cancel' : row.status !== 'pending' ? 'settle'
      : row.upstream_id === MADE_AT_ONCE ? 'make' : row.upstream_id === null ? 'submit' : 'poll';
    return inTaskStep(row, step, () => {
      switch (step) {
        case 'callback': return this.deliver(row, lease);
        case 'cancel': return this.cancelled(row, lease);
        case 'settle': return this.settle(row, lease);
        case 'make': return this.make(row, lease);
        case 'submit': return this.start(row, lease);
        default: return this.poll(row, lease);
      }
    });
  }

  // ---- start ----

  private async start(row: TaskRow, lease: StepLease): Promise<void> {
    const { config, workers } = this.deps;
    if (!(await this.pinHold(row))) {
      return this.fail(row, lease, { code: 'submission_interrupted', message: 'The task was not completely submitted (the gateway stopped meanwhile); nothing was charged. Submit it again.', httpStatus: 500 });
    }
    const route = this.targets(row);
    if ('code' in route) return this.fail(row, lease, route);
    if (this.madeAtOnce(row, route.model.family)) {
      if (!(await markStarted(this.deps.sql, row.id, lease.token, MADE_AT_ONCE, null))) return;
      this.stepsOf('start', 'ok').inc();
      return this.make({ ...row, upstream_id: MADE_AT_ONCE, fence: lease.token }, lease);
    }
    const { publicUrl } = config.tasks;
    // From here a cancel cannot be free: the vendor may accept the job before its id is recorded.
    if (!(await markSubmitting(this.deps.sql, row.id, lease.token))) return;
    const vendorCallbackUrl = publicUrl === undefined ? undefined : vendorHintUrl(publicUrl, config.keySecret, row.id);
    const { output: submitted, target } = await this.routed<SubmitTaskOutput>(route.model, route.targets, (candidate, attempt) => workers.submit({
      family: route.model.family, job: jobFor(row.job as unknown as TaskJob, candidate), target: vendorTargetOf(candidate), timeoutMs: config.fetch.timeoutMs, vendorCallbackUrl,
      allowLoopback: config.fetch.allowLoopback, media: config.media,
    }, spanAttributesOf(candidate, attempt)));
    if (submitted.kind === 'refused') {
      if (submitted.retryable) await unmarkSubmitting(this.deps.sql, row.id, lease.token);
      return this.refused(row, lease, submitted, 'start');
    }
    this.retries.delete(row.id);
    // The target is recorded with the vendor's id: every later call about the task goes to it.
    if (!(await markStarted(this.deps.sql, row.id, lease.token, submitted.upstreamId, null, target.name))) return;
    noteTaskOutcome({ target: target.name });
    this.stepsOf('start', 'ok').inc();
    log.info('task accepted by its vendor', { task: row.id, vendor: row.upstream_vendor, target: target.name });
    await this.deps.schedule(lease, 'a', row, config.tasks.pollMs);
  }

  /**
   * Sends a job to the model's targets in routing order (priority, weight, breakers): a refusal that
   * says the vendor did not take it (`movesOn`) goes on to the next target, within the routing file's
   * attempts and deadline. The last answer, and the target that gave it.
   */
  private async routed<T extends { readonly kind: string }>(model: MediaModel, targets: readonly RouteTarget[], send: (target: RouteTarget, attempt: number) => Promise<T>): Promise<{ output: T; target: RouteTarget }> {
    const { routing } = this;
    const began = Date.now();
    let index = targets.length === 1 ? 0 : routing.take(targets, routing.first(targets));
    let tried = 0;
    for (let attempt = 1; ; attempt++) {
      const target = targets[index]!;
      const output = await send(target, attempt);
      const refusal = output.kind === 'refused' ? output as unknown as VendorRefusal : undefined;
      if (!refusal || !movesOn(refusal)) {
        routing.answered(target);
        return { output, target };
      }
      routing.failed(target, model.id, attempt, refusalError(refusal));
      tried |= 1 << index;
      const next = attempt < routing.config.maxAttempts && Date.now() - began < routing.config.deadlineMs ? routing.pick(targets, tried) : -1;
      // Every target refused: the task tries again later (TaskSteps.refused), from the targets' order again.
      if (next < 0) return { output, target };
      routing.retried(model.id);
      index = next;
    }
  }

  /**
   * Makes the task's hold its own for as long as it runs: the submit left it with the reservation
   * deadline, so that a submit dying halfway holds nothing for long. A hold that is gone (its
   * deadline passed before the task was first run) means the task cannot run on credit it reserved.
   */
  private async pinHold(row: TaskRow): Promise<boolean> {
    if (row.hold_nano === 0n) return true;
    const { redis, keys, balances } = this.deps;
    const holdId = holdIdOf(row.api_key_id, row.id);
    for (let attempt = 0; attempt < 2; attempt++) {
      const replies = await redis.multi()
        .zrem(keys.reservationDeadlines(row.user_id), holdId)
        .hexists(keys.reservations(row.user_id), holdId)
        .exists(keys.balance(row.user_id))
        .exec();
      const [exists, loaded] = [replies?.[1]?.[1], replies?.[2]?.[1]];
      if (exists === 1) return true;
      // A Redis that lost its data rebuilds the hold from this very row when the balance loads.
      if (loaded === 1) return false;
      await balances.load(row.user_id);
    }
    return false;
  }

  /** The model of a task not accepted yet and the targets that may take it. */
  private targets(row: TaskRow): { model: MediaModel; targets: readonly RouteTarget[] } | { code: string; message: string; httpStatus: number } {
    const model = this.deps.catalog().media(row.model);
    const targets = model && this.routing.mediaTargetsOf(model, taskApiOf(model.family)?.cloudForms);
    if (!model || !targets) return unavailable(row);
    return { model, targets };
  }

  /** The family of a task its vendor accepted and the target that accepted it (polls, downloads). */
  private route(row: TaskRow): { family: string; target: VendorTarget } | { code: string; message: string; httpStatus: number } {
    const model = this.deps.catalog().media(row.model);
    if (!model) return unavailable(row);
    const target = acceptedTarget(this.routing, this.deps.vendors, model, row);
    if (!target) {
      return { code: 'target_unavailable', message: `The routing target '${row.upstream_target}' that accepted the task is no longer configured; nothing was charged.`, httpStatus: 503 };
    }
    return { family: model.family, target };
  }

  /** An audio job whose vendor answers with the audio itself (not a vendor task). */
  private madeAtOnce(row: TaskRow, family: string): boolean {
    if (row.kind === 'video.generation') return false;
    const adapter = Object.hasOwn(AUDIO_ADAPTERS, family) ? AUDIO_ADAPTERS[family] : undefined;
    return adapter !== undefined && !adapter.runsAsTask(row.job as unknown as AudioJob);
  }

  // ---- made at once ----

  /**
   * Has the vendor make the result, in the background: the exchange may take minutes (a song), and
   * the user's other steps must not wait behind it. A step that finds it under way here does nothing;
   * one that finds it started elsewhere (an owner that died) makes it again, first taking the row
   * (its fence) so the old owner's late result is not recorded.
   */
  private async make(row: TaskRow, lease: StepLease): Promise<void> {
    if (this.making.has(row.id)) return;
    if (row.fence < lease.token && !(await recordPoll(this.deps.sql, row.id, lease.token, 'making'))) return;
    const route = this.targets(row);
    if ('code' in route) return this.fail(row, lease, route);
    const { config, workers } = this.deps;
    this.making.add(row.id);
    // Made at once, nothing to poll: any target may make it, the next one when a target refuses it.
    const made = this.routed<GenerateAudioOutput>(route.model, route.targets, (target, attempt) => workers.generate({
      family: route.model.family, job: jobFor(row.job as unknown as AudioJob, target), target: vendorTargetOf(target), timeoutMs: config.tasks.generateTimeoutMs,
      media: config.media, maxBytes: config.tasks.maxAudioBytes, allowLoopback: config.fetch.allowLoopback || isLoopbackUrl(target.baseUrl),
    }, spanAttributesOf(target, attempt)));
    this.deps.track(made
      .then(({ output }) => inTaskStep(row, 'made', () => this.made(row, lease, output)))
      .catch((error) => {
        log.error('making a task result failed; tried again', { task: row.id, error });
        return this.deps.schedule(lease, 'a', row, config.tasks.retryMs);
      })
      .finally(() => this.making.delete(row.id)));
  }

  private async made(row: TaskRow, lease: StepLease, output: GenerateAudioOutput): Promise<void> {
    if (output.kind === 'stored') {
      this.retries.delete(row.id);
      return this.succeed(row, lease, { url: output.url, seconds: output.seconds, format: output.format }, 'made');
    }
    if (output.kind === 'refused') return this.refused(row, lease, output, 'start');
    return this.unavailable(row, lease, output, 'made');
  }

  // ---- poll ----

  private async poll(row: TaskRow, lease: StepLease): Promise<void> {
    const { config, workers } = this.deps;
    const route = this.route(row);
    if ('code' in route) return this.fail(row, lease, route);
    const state = await workers.poll({
      family: route.family, upstreamId: row.upstream_id!, target: route.target, timeoutMs: config.fetch.timeoutMs,
      media: config.media, maxInlineBytes: config.media.maxBytes, allowLoopback: config.fetch.allowLoopback,
    }, whenTracing(() => ({ 'gen_ai.provider.name': row.upstream_vendor, ...(row.upstream_target ? { 'gateway.target': row.upstream_target } : {}) })));
    if ('status' in state) noteTaskOutcome({ upstreamStatus: state.status });
    if (state.kind === 'refused') return this.refused(row, lease, state, 'poll');
    this.retries.delete(row.id);
    // The answer carried the result itself, now on the media host (or it could not be stored: polled again, then failed).
    if (state.kind === 'stored') return this.succeed(row, lease, { url: state.url, seconds: state.seconds }, state.status);
    if (state.kind === 'unavailable') return this.unavailable(row, lease, state, state.status);
    if (state.kind === 'failed') {
      this.stepsOf('poll', 'ok').inc();
      return this.fail(row, lease, { code: state.code, message: state.message, httpStatus: 502, upstreamStatus: state.status });
    }
    if (state.kind === 'succeeded') return this.download(row, lease, route, state.resultUrl, state.seconds, state.status);
    if (state.kind === 'unknown') log.warn('vendor reported a status the adapter does not know; polling again', { task: row.id, vendor: row.upstream_vendor, status: state.status });
    if (state.status !== row.upstream_status && !(await recordPoll(this.deps.sql, row.id, lease.token, state.status))) return;
    this.stepsOf('poll', 'ok').inc();
    if (row.started_at && Date.now() - row.started_at.getTime() > config.tasks.timeoutMs) {
      return this.fail(row, lease, { code: 'upstream_timeout', message: `The vendor did not finish the task within ${config.tasks.timeoutMs / 1000} seconds; nothing was charged.`, httpStatus: 504, upstreamStatus: state.status });
    }
    await this.deps.schedule(lease, 'a', row, config.tasks.pollMs);
  }

  /** A refusal: transient ones are tried again after a growing pause (until the task's deadline), others fail the task. */
  private async refused(row: TaskRow, lease: StepLease, refusal: VendorRefusal, step: 'start' | 'poll'): Promise<void> {
    const { config, metrics } = this.deps;
    metrics.upstreamErrors.inc({ vendor: row.upstream_vendor, reason: refusal.httpStatus ? String(refusal.httpStatus) : refusal.code });
    const since = (row.started_at ?? row.created_at).getTime();
    if (refusal.retryable && Date.now() - since < config.tasks.timeoutMs) {
      const failures = (this.retries.get(row.id) ?? 0) + 1;
      this.retries.set(row.id, failures);
      this.stepsOf(step, 'retry').inc();
      log.warn('vendor call failed; trying again', { task: row.id, vendor: row.upstream_vendor, step, code: refusal.code, status: refusal.httpStatus, failures });
      return this.deps.schedule(lease, 'a', row, this.backoffMs(failures));
    }
    this.retries.delete(row.id);
    this.stepsOf(step, 'error').inc();
    const code = refusal.retryable ? 'upstream_timeout' : refusal.code;
    return this.fail(row, lease, { code, message: refusal.ofInput ? `${refusal.message} Nothing was charged.` : `The vendor refused the task: ${refusal.message}`, httpStatus: refusal.httpStatus >= 400 && refusal.httpStatus < 500 ? 400 : 502 });
  }

  private backoffMs(failures: number): number {
    const { retryMs, pollMs } = this.deps.config.tasks;
    return Math.min(retryMs * 2 ** Math.min(failures - 1, 20), Math.max(retryMs, pollMs * 10));
  }

  // ---- end ----

  /** A vendor task's result: downloaded onto the media host before the task counts as done (vendor URLs expire). */
  private async download(row: TaskRow, lease: StepLease, route: { family: string; target: VendorTarget }, vendorUrl: string, seconds: number | undefined, upstreamStatus: string): Promise<void> {
    const { config, workers } = this.deps;
    const { target } = route;
    if (config.media.storage === 'off') return this.succeed(row, lease, { url: vendorUrl, seconds }, upstreamStatus);
    const headers = taskApiOf(route.family)?.resultHeaders?.(vendorUrl, target);
    const hosted = await workers.rehost({
      url: vendorUrl, media: config.media, maxBytes: row.kind === 'video.generation' ? config.tasks.maxMediaBytes : config.tasks.maxAudioBytes,
      timeoutMs: config.fetch.timeoutMs, allowLoopback: config.fetch.allowLoopback || isLoopbackUrl(target.baseUrl),
      expect: row.kind === 'video.generation' ? 'video' : 'audio', ...(headers ? { headers } : {}),
    }, whenTracing(() => ({ 'gen_ai.provider.name': row.upstream_vendor, 'gateway.attempt': (this.downloads.get(row.id) ?? 0) + 1 })));
    if (!hosted.ok) return this.unavailable(row, lease, hosted, upstreamStatus);
    // Audio is charged by its measured length; a video by the seconds its vendor reports.
    return this.succeed(row, lease, { url: hosted.url, seconds: hosted.audio?.seconds ?? seconds, format: hosted.audio?.format }, upstreamStatus);
  }

  /** The result could not be fetched or stored: tried again a few times (a new download, or a new generation), then failed. */
  private async unavailable(row: TaskRow, lease: StepLease, failure: { reason: string; message: string }, upstreamStatus: string): Promise<void> {
    const { config } = this.deps;
    const failures = (this.downloads.get(row.id) ?? 0) + 1;
    this.downloads.set(row.id, failures);
    log.warn('result download failed', { task: row.id, vendor: row.upstream_vendor, reason: failure.reason, failures });
    if (failures < config.tasks.rehostAttempts) {
      this.stepsOf('rehost', 'retry').inc();
      return this.deps.schedule(lease, 'a', row, this.backoffMs(failures));
    }
    this.downloads.delete(row.id);
    this.stepsOf('rehost', 'error').inc();
    return this.fail(row, lease, { code: 'result_unavailable', message: `The result could not be downloaded from the vendor (${failure.message}); nothing was charged.`, httpStatus: 502, upstreamStatus });
  }

  private async succeed(row: TaskRow, lease: StepLease, delivered: Delivered, upstreamStatus: string): Promise<void> {
    this.downloads.delete(row.id);
    const chargeNano = this.chargeOf(row, delivered.seconds);
    const entry = row.kind === 'video.generation'
      ? { url: delivered.url }
      : { url: delivered.url, format: delivered.format ?? (row.job as unknown as AudioJob).format, duration_seconds: delivered.seconds ?? null };
    const ended = await endTaskSuccess(this.deps.sql, row.id, lease.token, { chargeNano, result: [entry], upstreamStatus, endpoint: TASK_ENDPOINTS[row.kind] });
    if (!ended) return;
    if (chargeNano > 0n) this.costOf(row.model).inc(nanoToUsd(chargeNano));
    await this.ended(ended, lease);
  }

  /**
   * The cost of what was delivered, never above the hold: a video's seconds (or fewer, as the vendor
   * reports); audio's characters as sent, its measured seconds, the audio tokens those seconds make.
   */
  private chargeOf(row: TaskRow, seconds: number | undefined): bigint {
    const model = this.deps.catalog().media(row.model);
    if (!model || row.hold_nano === 0n) return row.hold_nano;
    try {
      let charge: bigint;
      if (row.kind === 'video.generation') {
        const job = row.job as unknown as VideoJob;
        charge = actualNano(model.sheet, videoCallOf(job), { kind: 'video', seconds: seconds ?? job.duration });
      } else {
        const perSecond = model.capabilities.audioTokensPerSecond;
        charge = actualNano(model.sheet, audioCallOf(row.job as unknown as AudioJob), audioOutcomeOf(seconds, typeof perSecond === 'number' ? perSecond : undefined));
      }
      return charge < row.hold_nano ? charge : row.hold_nano;
    } catch (error) {
      if (!(error instanceof PricingError)) throw error;
      return row.hold_nano;
    }
  }

  private async fail(row: TaskRow, lease: StepLease, error: { code: string; message: string; httpStatus: number; upstreamStatus?: string }): Promise<void> {
    const ended = await endTaskFailure(this.deps.sql, row.id, lease.token, {
      code: error.code, message: error.message, upstreamStatus: error.upstreamStatus ?? null, endpoint: TASK_ENDPOINTS[row.kind], httpStatus: error.httpStatus,
    });
    if (!ended) return;
    log.info('task failed', { task: row.id, code: error.code });
    await this.ended(ended, lease);
  }

  /**
   * A task its owner cancelled (the API ended it, asked its vendor to cancel where it had accepted the
   * job, and settled its hold): what every ended task gets (hold settled if still there, callback).
   */
  private async cancelled(row: TaskRow, lease: StepLease): Promise<void> {
    if (row.status !== 'failed' || row.error_code !== 'cancelled') return this.settle(row, lease);
    this.stepsOf('cancel', 'ok').inc();
    return this.ended(row, lease);
  }

  private async ended(row: TaskRow, lease: StepLease): Promise<void> {
    noteTaskOutcome({ status: row.status, errorCode: row.error_code });
    this.retries.delete(row.id);
    this.downloads.delete(row.id);
    const seconds = (row.ended_at!.getTime() - row.created_at.getTime()) / 1000;
    this.endedOf(row.model, row.status).inc();
    this.durationOf(row.model, row.status).observe(seconds);
    this.deps.onEnded(row);
    // Its own span: the hold's settlement is a step of the task, whichever step ended it.
    await inTaskStep(row, 'settle', () => this.settle(row, lease));
  }

  /** Brings Redis in line with an ended task (once: a settled hold is gone), then its callback. */
  private async settle(row: TaskRow, lease: StepLease): Promise<void> {
    const { redis, keys } = this.deps;
    if (row.hold_nano > 0n) {
      const charged = await settleTaskHold(redis, keys, row.user_id, row.api_key_id, holdIdOf(row.api_key_id, row.id), row.charged_nano ?? 0n);
      if (charged !== undefined) this.stepsOf('settle', 'ok').inc();
    }
    if (row.callback_status === 'pending') await this.deps.schedule(lease, 'c', row, 0);
  }

  // ---- callback ----

  private async deliver(row: TaskRow, lease: StepLease): Promise<void> {
    if (row.callback_status !== 'pending' || !row.callback_url) return;
    const { config, sql, box, workers, metrics } = this.deps;
    const secrets = signingSecrets(await webhookSecretsOf(sql, box, row.user_id), new Date());
    const outcome = await workers.deliver({
      url: row.callback_url, webhookId: `msg_${row.id.replaceAll('-', '')}`, body: JSON.stringify(taskObject(row, config.media.retentionMs)), secrets,
      timeoutMs: config.tasks.callbackTimeoutMs, allowLoopback: config.fetch.allowLoopback,
    }, whenTracing(() => ({ 'gateway.attempt': row.callback_attempts + 1 })));
    if (outcome.ok) {
      await recordCallbackAttempt(sql, row.id, { status: 'delivered', error: null });
      metrics.callbacks.inc({ outcome: 'delivered' });
      return;
    }
    const error = outcome.status ? `HTTP ${outcome.status}` : outcome.error ?? 'failed';
    if (callbackGivesUp(row.ended_at ?? row.created_at, new Date(), config.tasks.callbackWindowMs)) {
      await recordCallbackAttempt(sql, row.id, { status: 'failed', error });
      metrics.callbacks.inc({ outcome: 'failed' });
      log.warn('callback given up', { task: row.id, attempts: row.callback_attempts + 1, error });
      return;
    }
    await recordCallbackAttempt(sql, row.id, { status: 'pending', error });
    metrics.callbacks.inc({ outcome: 'retry' });
    await this.deps.schedule(lease, 'c', row, callbackRetryDelayMs(row.callback_attempts + 1, config.tasks.callbackRetryMs, config.tasks.callbackMaxDelayMs));
  }
}
