import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { pipelineAcrossSlots, type RedisClient } from './store/redis-connect.js';
import type { NormalizedUsage } from './providers/usage.js';
import type { RedisKeys } from './admission/keys.js';
import { DIRTY_SHARDS } from './ledger/dirty-set.js';
import { nanoToUsd } from './billing/pricing.js';
import { LoopDelaySampler, selfUtilization, type LoopDelay, type LoopThread } from './worker-pool.js';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const SCRIPT_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25];

/**
 * `gateway_event_loop_delay_seconds{thread,quantile}` and `gateway_event_loop_utilization{thread}`:
 * each thread's loop since the previous scrape. Every registry (main thread, each HTTP thread) reports
 * the threads it can see; their names differ, so /metrics keeps one series per thread.
 */
export function createLoopMetrics(registry: Registry, threads: () => LoopThread[]) {
  const registers = [registry];
  return {
    delay: new Gauge({
      name: 'gateway_event_loop_delay_seconds',
      help: 'Event-loop delay of each thread since the previous scrape, by quantile (0.5, 0.99, 1 for the max): main, http-N, tasks-N (task workers), http-N/<pool>-0 (an HTTP thread\'s on-demand worker).',
      labelNames: ['thread', 'quantile'], aggregator: 'max', registers,
      async collect() {
        const list = threads();
        const delays = await Promise.all(list.map((thread) => thread.delay()));
        this.reset();
        list.forEach(({ thread }, index) => {
          const delay = delays[index];
          if (!delay) return; // unknown this scrape (a busy worker answers at the next one)
          this.set({ thread, quantile: '0.5' }, delay.p50);
          this.set({ thread, quantile: '0.99' }, delay.p99);
          this.set({ thread, quantile: '1' }, delay.max);
        });
      },
    }),
    utilization: new Gauge({
      name: 'gateway_event_loop_utilization',
      help: 'Share of the time since the previous scrape each thread\'s event loop was busy (0 to 1), by thread (as gateway_event_loop_delay_seconds).',
      labelNames: ['thread'], aggregator: 'max', registers,
      collect() {
        this.reset();
        for (const thread of threads()) {
          const utilization = thread.utilization();
          if (utilization !== undefined) this.set({ thread: thread.thread }, utilization);
        }
      },
    }),
  };
}

/** This thread's loop as a `LoopThread`: its delay sampler (`resolutionMs` timer period) and, when asked, its utilisation. */
export function selfLoop(thread: string, resolutionMs: number, withUtilization: boolean): LoopThread & { last(): LoopDelay | undefined } {
  const sampler = new LoopDelaySampler(resolutionMs);
  const utilization = withUtilization ? selfUtilization() : () => undefined;
  let last: LoopDelay | undefined;
  return {
    thread,
    delay: () => (last = sampler.read()),
    utilization,
    /** The delay the latest `delay()` read (the window is read once per scrape). */
    last: () => last,
  };
}

export interface HttpThreadLoops {
  /** This HTTP thread's name (`http-0`). */
  readonly thread: string;
  /** The loops of this thread's worker pools, named by the caller. */
  readonly pools?: () => LoopThread[];
}

/** The gateway's own metrics; one set per HTTP thread, summed across threads on /metrics. */
export function createMetrics(registry = new Registry(), loops: HttpThreadLoops = { thread: 'http' }) {
  const registers = [registry];
  // The delay is what exceeds the sampler's 20 ms timer period: fine enough to see a stalled loop without
  // waking an idle thread often. The thread's utilisation is read by the main thread, from its Worker handle,
  // so that a stuck HTTP thread still shows.
  const self = selfLoop(loops.thread, 20, false);
  // Registered first: its collect reads the window that gateway_http_event_loop_delay_seconds reports too.
  const loopMetrics = createLoopMetrics(registry, () => [self, ...(loops.pools?.() ?? [])]);
  return {
    loopMetrics,
    eventLoopDelay: new Gauge({
      name: 'gateway_http_event_loop_delay_seconds',
      help: 'Event-loop delay of the HTTP threads since the previous scrape, by quantile (0.5, 0.99, 1 for the max); the worst thread (per thread: gateway_event_loop_delay_seconds).',
      labelNames: ['quantile'], aggregator: 'max', registers,
      collect() {
        const delay = self.last() ?? { p50: 0, p99: 0, max: 0 };
        this.set({ quantile: '0.5' }, delay.p50);
        this.set({ quantile: '0.99' }, delay.p99);
        this.set({ quantile: '1' }, delay.max);
      },
    }),
    registry,
    httpRequests: new Counter({ name: 'gateway_http_requests_total', help: 'HTTP requests answered, by route, method and status.', labelNames: ['route', 'method', 'status'], registers }),
    httpDuration: new Histogram({ name: 'gateway_http_request_duration_seconds', help: 'Time from request to the last byte of the response, by route.', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers }),
    upstreamTtfb: new Histogram({ name: 'gateway_upstream_ttfb_seconds', help: 'Time from sending an upstream request to its first body byte, by vendor.', labelNames: ['vendor'], buckets: LATENCY_BUCKETS, registers }),
    upstreamErrors: new Counter({ name: 'gateway_upstream_errors_total', help: 'Upstream calls that failed, by vendor and reason.', labelNames: ['vendor', 'reason'], registers }),
    tokens: new Counter({ name: 'gateway_tokens_total', help: 'Tokens billed, by model and kind (prompt, cached, completion, reasoning).', labelNames: ['model', 'kind'], registers }),
    cost: new Counter({ name: 'gateway_cost_usd_total', help: 'USD charged for usage, by model.', labelNames: ['model'], registers }),
    rejections: new Counter({ name: 'gateway_admission_rejections_total', help: 'Inference calls refused at admission, and other API-key requests refused by their key\'s request windows, by reason (rate_limited, reads_limited, token_limited, insufficient_credits, credit_limit), and sign-in requests refused by their address\'s window (signin_limited).', labelNames: ['reason'], registers }),
    settledOutsideLease: new Counter({
      name: 'gateway_settled_outside_lease_total',
      help: 'Settlement batches charged without their lease\'s reservation (the janitor had released it at its deadline, or Redis lost it).', registers,
    }),
    activeStreams: new Gauge({ name: 'gateway_active_streams', help: 'Streaming responses in progress.', registers }),
    scriptDuration: new Histogram({ name: 'gateway_redis_script_duration_seconds', help: 'Round-trip time of the Redis Lua scripts, by script.', labelNames: ['script'], buckets: SCRIPT_BUCKETS, registers }),
    mediaStored: new Counter({ name: 'gateway_media_stored_total', help: 'Uploads stored (POST /v1/uploads), by sniffed content type; rehosted task and image results are not counted here.', labelNames: ['content_type'], registers }),
    images: new Counter({ name: 'gateway_images_total', help: 'Images delivered by image calls, by model and whether they were rehosted on the media host.', labelNames: ['model', 'hosted'], registers }),
    mediaStoredBytes: new Counter({ name: 'gateway_media_stored_bytes_total', help: 'Bytes of uploads stored (POST /v1/uploads).', registers }),
    tasksSubmitted: new Counter({ name: 'gateway_tasks_submitted_total', help: 'Async tasks accepted (video, audio), by model.', labelNames: ['model'], registers }),
    topUps: new Counter({ name: 'gateway_topups_total', help: 'Card top-ups credited to a balance (each payment once, however often its event came), by processor.', labelNames: ['processor'], registers }),
    topUpUsd: new Counter({ name: 'gateway_topup_usd_total', help: 'USD credited by card top-ups, by processor.', labelNames: ['processor'], registers }),
    paymentReversals: new Counter({ name: 'gateway_payment_reversals_total', help: 'Refunds and disputes the payment processor reported (not debited: for the operator), by processor and kind (refund, dispute).', labelNames: ['processor', 'kind'], registers }),
    authKeyLookups: new Counter({ name: 'gateway_auth_key_lookups_total', help: 'API keys read from Postgres to authenticate (cache misses), by result (found, unknown).', labelNames: ['result'], registers }),
    leaseSlots: new Histogram({
      name: 'gateway_admission_lease_slots', help: 'Calls each admission lease granted may admit (1: admitted call by call); the count is the number of leases granted.',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024], registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Process-wide metrics kept by the main thread (ledger writer, alert mail sender). */
export function createMainMetrics(registry: Registry) {
  const registers = [registry];
  return {
    ledgerEvents: new Counter({ name: 'gateway_ledger_events_written_total', help: 'Ledger events drained from Redis into Postgres.', registers }),
    ledgerErrors: new Counter({ name: 'gateway_ledger_write_errors_total', help: 'Failed ledger drain passes (retried).', registers }),
    journalBatchesReplayed: new Counter({ name: 'gateway_settlement_journal_batches_replayed_total', help: 'Settlement batches sent to Redis from the journal of a dead HTTP thread.', registers }),
    reservationsExpired: new Counter({ name: 'gateway_reservations_expired_total', help: 'Leases released by the janitor at their deadline (their gateway died or lost touch).', registers }),
    ledgerUnreadable: new Counter({ name: 'gateway_ledger_unreadable_events_total', help: 'Ledger events that could not be read (their charge is still written).', registers }),
    alertMailsSent: new Counter({ name: 'gateway_alert_mails_sent_total', help: 'Balance-alert mails accepted by the SMTP relay.', registers }),
    mediaSwept: new Counter({ name: 'gateway_media_swept_total', help: 'Media objects deleted by the retention janitor.', registers }),
    mediaSweepErrors: new Counter({ name: 'gateway_media_sweep_errors_total', help: 'Failed media janitor passes (retried at the next interval).', registers }),
    alertMailFailures: new Counter({ name: 'gateway_alert_mail_failures_total', help: 'Failed attempts to send a balance-alert mail (the mail stays queued and is retried).', registers }),
    buildInfo: createBuildInfo(registry),
  };
}

/** `gateway_build_info{version, node_version, commit}` = 1 (commit only when known). */
export function createBuildInfo(registry: Registry): Gauge {
  const gauge = new Gauge({
    name: 'gateway_build_info', help: 'Always 1: the gateway\'s version (package.json), the Node.js version and, when known, the git commit (GATEWAY_COMMIT, or the checkout\'s HEAD).',
    labelNames: ['version', 'node_version', 'commit'], registers: [registry], aggregator: 'first',
  });
  const root = new URL('../../', import.meta.url); // dist/src/metrics.js -> the package's root
  let version = 'unknown';
  try {
    version = String((JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version?: unknown }).version ?? 'unknown');
  } catch {
    // not shipped with its package.json
  }
  const commit = process.env.GATEWAY_COMMIT || process.env.GIT_COMMIT || gitHead(root);
  gauge.set({ version, node_version: process.version, ...(commit ? { commit } : {}) }, 1);
  return gauge;
}

/** The commit checked out at `root`, read from `.git` (no git binary needed); undefined when there is none. */
function gitHead(root: URL): string | undefined {
  const read = (path: string | URL) => {
    try {
      return readFileSync(path, 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  let gitDir = new URL('.git/', root);
  const pointer = read(new URL('.git', root)); // a worktree's or submodule's `.git` file: `gitdir: <path>`
  if (pointer?.startsWith('gitdir: ')) gitDir = new URL(`${pointer.slice(8).replace(/\/?$/, '/')}`, root);
  const head = read(new URL('HEAD', gitDir));
  if (!head) return undefined;
  if (!head.startsWith('ref: ')) return /^[0-9a-f]{40,64}$/.test(head) ? head : undefined;
  const ref = head.slice(5);
  const common = read(new URL('commondir', gitDir));
  const refsDir = common ? new URL(`${common.replace(/\/?$/, '/')}`, gitDir) : gitDir;
  const loose = read(new URL(ref, refsDir));
  if (loose && /^[0-9a-f]{40,64}$/.test(loose)) return loose;
  const packed = read(new URL('packed-refs', refsDir))?.split('\n').find((line) => line.endsWith(` ${ref}`));
  return packed?.split(' ')[0];
}

const raceTimeout = <T>(promise: Promise<T>, ms: number): Promise<T | undefined> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), ms); timer.unref(); })])
    .finally(() => clearTimeout(timer));
};

/**
 * `gateway_dependency_up{dependency}`: whether each dependency answered a probe (Redis PING, Postgres
 * `select 1`) within `timeoutMs` at this scrape. A probe still waiting from an earlier scrape is not repeated.
 */
export function createDependencyMetrics(registry: Registry, probes: Record<string, () => Promise<unknown>>, timeoutMs = 1_000): Gauge {
  const inFlight = new Map<string, Promise<boolean>>();
  const probe = (name: string, run: () => Promise<unknown>) => {
    let pending = inFlight.get(name);
    if (!pending) {
      pending = run().then(() => true, () => false).finally(() => inFlight.delete(name));
      inFlight.set(name, pending);
    }
    return raceTimeout(pending, timeoutMs).then((ok) => ok === true);
  };
  return new Gauge({
    name: 'gateway_dependency_up', help: 'Whether a dependency (redis, postgres) answered this process\'s probe at this scrape (1) or not (0).',
    labelNames: ['dependency'], registers: [registry], aggregator: 'first',
    async collect() {
      const names = Object.keys(probes);
      const results = await Promise.all(names.map((name) => probe(name, probes[name]!)));
      names.forEach((name, index) => this.set({ dependency: name }, results[index] ? 1 : 0));
    },
  });
}

/** Users whose ledger stream is looked at per scrape for the oldest waiting event. */
const LEDGER_LAG_SAMPLE = 100;

/**
 * The ledger writer's backlog, read from Redis at each scrape: `gateway_ledger_pending_users` (users whose
 * ledger stream has events not yet written to Postgres) and `gateway_ledger_lag_seconds` (age of the oldest
 * such event among up to 100 of them, by Redis's clock; 0 when nothing waits). Both shared by every
 * gateway process on the same Redis; NaN while Redis does not answer.
 */
export function createLedgerLagMetrics(registry: Registry, redis: RedisClient, keys: RedisKeys, timeoutMs = 1_000) {
  const registers = [registry];
  let read: Promise<{ users: number; lagSeconds: number } | undefined> | undefined;
  const measure = async () => {
    // The dirty sets live in slots of their own (ledger/dirty-set.ts): one pipeline per node, and a sample from each.
    const [counts, time] = await Promise.all([
      pipelineAcrossSlots(redis, DIRTY_SHARDS, (shard) => keys.ledgerDirty(shard),
        (pipeline, shard) => pipeline.scard(keys.ledgerDirty(shard)).srandmember(keys.ledgerDirty(shard), Math.ceil(LEDGER_LAG_SAMPLE / DIRTY_SHARDS.length))),
      redis.time() as Promise<unknown> as Promise<[string, string]>,
    ]);
    let users = 0;
    const sample: string[] = [];
    for (const [error, reply] of counts) {
      if (error) throw error;
      if (typeof reply === 'number') users += reply;
      else sample.push(...(reply as string[]));
    }
    sample.splice(LEDGER_LAG_SAMPLE);
    const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    let oldestMs = nowMs;
    if (sample.length) {
      const firsts = await pipelineAcrossSlots(redis, sample, (userId) => keys.ledger(userId), (pipeline, userId) => pipeline.xrange(keys.ledger(userId), '-', '+', 'COUNT', 1));
      for (const [error, entries] of firsts) {
        const id = !error && (entries as [string, string[]][])[0]?.[0];
        if (id) oldestMs = Math.min(oldestMs, Number(id.slice(0, id.indexOf('-'))));
      }
    }
    return { users, lagSeconds: Math.max(0, nowMs - oldestMs) / 1000 };
  };
  // One Redis read serves both gauges of a scrape; a read still waiting from an earlier scrape is not repeated.
  let current: Promise<{ users: number; lagSeconds: number } | undefined> | undefined;
  const sample = () => {
    read ??= measure().catch(() => undefined).finally(() => { read = undefined; });
    return raceTimeout(read, timeoutMs);
  };
  return {
    pendingUsers: new Gauge({
      name: 'gateway_ledger_pending_users', help: 'Users whose ledger stream in Redis has events the ledger writer has not yet written to Postgres (all gateways on this Redis).',
      registers, aggregator: 'first',
      async collect() {
        // Registered first: starts the read that gateway_ledger_lag_seconds reports too.
        current = sample();
        const result = await current;
        this.set(result ? result.users : NaN); // NaN (a gap) while Redis does not answer
      },
    }),
    lag: new Gauge({
      name: 'gateway_ledger_lag_seconds', help: 'Age of the oldest ledger event waiting in Redis for the ledger writer (among up to 100 pending users, by Redis\'s clock); 0 when none waits.',
      registers, aggregator: 'first',
      async collect() {
        const result = await (current ?? sample());
        current = undefined;
        this.set(result ? result.lagSeconds : NaN);
      },
    }),
  };
}

const TASK_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 21600];

/** The task runtime's metrics (main thread): tasks, actors, shards, workers, callbacks. */
export function createTaskMetrics(registry: Registry) {
  const registers = [registry];
  return {
    ended: new Counter({ name: 'gateway_tasks_ended_total', help: 'Async tasks ended, by model and status (success, failed).', labelNames: ['model', 'status'], registers }),
    duration: new Histogram({ name: 'gateway_task_duration_seconds', help: 'Time from submit to the end of a task, by model and status.', labelNames: ['model', 'status'], buckets: TASK_BUCKETS, registers }),
    cost: new Counter({ name: 'gateway_task_cost_usd_total', help: 'USD charged for successful tasks, by model.', labelNames: ['model'], registers }),
    steps: new Counter({ name: 'gateway_task_steps_total', help: 'Actor steps run, by kind (start, poll, callback, settle) and outcome (ok, retry, error).', labelNames: ['kind', 'outcome'], registers }),
    upstreamErrors: new Counter({ name: 'gateway_task_upstream_errors_total', help: 'Vendor task calls that failed, by vendor and reason (retried when transient).', labelNames: ['vendor', 'reason'], registers }),
    mailboxDepth: new Gauge({ name: 'gateway_task_mailbox_depth', help: 'Messages waiting in this process\'s user mailboxes (queued and starts waiting for a slot).', registers }),
    mailboxes: new Gauge({ name: 'gateway_task_mailboxes', help: 'User mailboxes open in this process.', registers }),
    streamLag: new Gauge({ name: 'gateway_task_stream_pending', help: 'Messages of an owned shard\'s stream delivered and not yet acknowledged, by shard.', labelNames: ['shard'], registers }),
    timersPending: new Gauge({ name: 'gateway_task_timers', help: 'Timers (polls, retries, callback attempts) scheduled on this process\'s shards.', registers }),
    shardsOwned: new Gauge({ name: 'gateway_task_shards_owned', help: 'Task shards whose lease this process holds.', registers }),
    shardMoves: new Counter({ name: 'gateway_task_shard_moves_total', help: 'Shard leases acquired, released (handed over) or lost (expired) by this process.', labelNames: ['event'], registers }),
    workerUtilization: new Gauge({ name: 'gateway_task_worker_utilization', help: 'Utilisation of the task worker pool (0 to 1).', registers }),
    workerQueue: new Gauge({ name: 'gateway_task_worker_queue', help: 'Steps waiting for a task worker.', registers }),
    callbacks: new Counter({ name: 'gateway_task_callbacks_total', help: 'callback_url delivery attempts, by outcome (delivered, retry, failed).', labelNames: ['outcome'], registers }),
    // Submits' attempts on their targets, summed with the HTTP threads' chat and image attempts.
    routing: createRoutingMetrics(registry),
  };
}

export type TaskMetrics = ReturnType<typeof createTaskMetrics>;

export const seconds = (sinceNs: bigint) => Number(process.hrtime.bigint() - sinceNs) / 1e9;

export interface CounterChild {
  inc(value?: number): void;
}

export interface HistogramChild {
  observe(value: number): void;
}

/** What prom-client (v15) keeps of a labelled metric: one record per label set, in `hashMap`. */
interface MetricInternals {
  readonly labelNames: readonly string[];
  readonly hashMap: Record<string, { labels: Record<string, string> }>;
  readonly upperBounds?: readonly number[];
}
interface CounterRecord { labels: Record<string, string>; value: number }
interface HistogramRecord { labels: Record<string, string>; bucketValues: Record<number, number>; sum: number; count: number }

/**
 * A labelled counter's or histogram's children, one per label values, each updating prom-client's own
 * record of its label set in place. prom-client validates and hashes the label values on every `inc`
 * and `observe` (its `labels()` child only binds them), which shows on the hot path; here the record
 * is made by prom-client once, through its public API, and found once. These metrics are never reset
 * (a reset would leave the children counting into records no longer read).
 */
export function childrenOf(metric: Counter<string>): (...values: string[]) => CounterChild;
export function childrenOf(metric: Histogram<string>): (...values: string[]) => HistogramChild;
export function childrenOf(metric: Counter<string> | Histogram<string>): (...values: string[]) => CounterChild | HistogramChild {
  const internals = metric as unknown as MetricInternals;
  const bounds = internals.upperBounds;
  const cache = new Map<string, CounterChild | HistogramChild>();
  // The record of exactly these label values, whoever made it (a call through prom-client's own API too).
  const recordOf = (labels: Record<string, string>) => Object.values(internals.hashMap).find((record) =>
    internals.labelNames.every((name) => record.labels[name] === labels[name]) && Object.keys(record.labels).length === internals.labelNames.length);
  const childFor = (values: readonly string[]): CounterChild | HistogramChild => {
    const labels: Record<string, string> = {};
    internals.labelNames.forEach((name, i) => { labels[name] = values[i]!; });
    if (metric instanceof Histogram) {
      if (!recordOf(labels)) metric.zero(labels);
      const record = recordOf(labels) as unknown as HistogramRecord;
      return {
        observe(value: number): void {
          if (!Number.isFinite(value)) return;
          let i = 0;
          while (i < bounds!.length && value > bounds![i]!) i++;
          if (i < bounds!.length) record.bucketValues[bounds![i]!]! += 1;
          record.sum += value;
          record.count += 1;
        },
      };
    }
    metric.inc(labels, 0);
    const record = recordOf(labels) as unknown as CounterRecord;
    return {
      inc(value = 1): void {
        if (value > 0) record.value += value; // prom-client refuses a decrease; NaN is no count either
      },
    };
  };
  return (...values) => {
    const key = values.join('\u0000');
    let child = cache.get(key);
    if (child === undefined) {
      child = childFor(values);
      cache.set(key, child);
    }
    return child;
  };
}

/** Records a settled call's tokens and cost by model. */
export function usageRecorder(metrics: Metrics) {
  const tokensOf = childrenOf(metrics.tokens);
  const costOf = childrenOf(metrics.cost);
  return (modelId: string, usage: NormalizedUsage, chargedNano: bigint): void => {
    tokensOf(modelId, 'prompt').inc(usage.promptTokens - usage.cachedTokens);
    if (usage.cachedTokens) tokensOf(modelId, 'cached').inc(usage.cachedTokens);
    tokensOf(modelId, 'completion').inc(usage.completionTokens);
    if (usage.reasoningTokens) tokensOf(modelId, 'reasoning').inc(usage.reasoningTokens);
    costOf(modelId).inc(nanoToUsd(chargedNano));
  };
}

/**
 * The routing layer's metrics (docs/routing.md), by target name: attempts by outcome, retries by
 * model, each breaker's state (read from the process's shared breaker memory, so every thread reports
 * the same value: `aggregator: 'first'`) and its transitions. The task runtime's copy (main thread)
 * has no state gauge: its breakers are its own, and the gauge shows the HTTP threads' (docs/routing.md).
 */
export function createRoutingMetrics(registry: Registry, breakerStates?: () => Iterable<readonly [target: string, state: 'closed' | 'open' | 'half_open']>) {
  const registers = [registry];
  const attemptCounts = new Map<string, { served: number; failed: number }>();
  new Counter({ name: 'gateway_routing_attempts_total', help: 'Platform upstream attempts of chat and image calls and of task submits, by target (its name in the routing file, or the vendor) and outcome (served: answered; failed: a retryable failure).', labelNames: ['target', 'outcome'], registers,
    // Counted in plain numbers (the served count is on every call's path, and a prom-client child
    // hashes its labels on each inc); read into the counter when it is scraped.
    collect() {
      this.reset();
      for (const [target, counts] of attemptCounts) {
        if (counts.served > 0) this.inc({ target, outcome: 'served' }, counts.served);
        if (counts.failed > 0) this.inc({ target, outcome: 'failed' }, counts.failed);
      }
    },
  });
  const retries = new Counter({ name: 'gateway_routing_retries_total', help: 'Attempts after a call\'s first (another target after a retryable failure), by model.', labelNames: ['model'], registers });
  const fallbacks = new Counter({ name: 'gateway_routing_fallbacks_total', help: 'Calls that went on from a model whose targets all failed retryably to the next model of their chain (a request\'s models, a virtual model), by both models.', labelNames: ['from', 'to'], registers });
  const transitions = new Counter({ name: 'gateway_routing_breaker_transitions_total', help: 'Breaker state changes of routing targets, by target and new state (open, half_open, closed).', labelNames: ['target', 'state'], registers });
  const STATE_VALUES = { closed: 0, half_open: 1, open: 2 } as const;
  if (breakerStates) {
    new Gauge({
      name: 'gateway_routing_breaker_state', help: 'Breaker state of each routing-file target: 0 closed, 1 half-open (due for a probe), 2 open (cooled down).',
      labelNames: ['target'], registers, aggregator: 'first',
      collect() {
        this.reset();
        for (const [target, state] of breakerStates()) this.set({ target }, STATE_VALUES[state]);
      },
    });
  }
  return {
    attempt(target: string, outcome: 'served' | 'failed'): void {
      let counts = attemptCounts.get(target);
      if (counts === undefined) attemptCounts.set(target, counts = { served: 0, failed: 0 });
      counts[outcome]++;
    },
    retry(model: string): void {
      retries.labels(model).inc();
    },
    fallback(from: string, to: string): void {
      fallbacks.labels(from, to).inc();
    },
    breaker(target: string, to: 'closed' | 'open' | 'half_open'): void {
      transitions.labels(target, to).inc();
    },
  };
}

/**
 * `Idempotency-Key` repeats (docs/routing.md "Idempotency-Key"), by route: those answered from the
 * store (neither run nor charged again) and those refused, by the refusal's error code. A request
 * without the header, or the first with its key, counts in neither.
 */
export function createIdempotencyMetrics(registry: Registry) {
  const registers = [registry];
  const replays = new Counter({
    name: 'gateway_idempotency_replays_total', help: 'Repeats of an Idempotency-Key answered with the kept answer of its first request (not run, not charged), by route.',
    labelNames: ['route'], registers,
  });
  const refusals = new Counter({
    name: 'gateway_idempotency_refusals_total',
    help: 'Repeats of an Idempotency-Key refused, by route and code (idempotency_in_progress: its first request still ran; idempotency_key_reused: another body; idempotency_replay_too_large: its answer was not kept).',
    labelNames: ['route', 'code'], registers,
  });
  const replayOf = childrenOf(replays);
  const refusalOf = childrenOf(refusals);
  return {
    replayed(route: string): void {
      replayOf(route).inc();
    },
    refused(route: string, code: string): void {
      refusalOf(route, code).inc();
    },
  };
}
