import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { NormalizedUsage } from './providers/usage.js';
import { nanoToUsd } from './billing/pricing.js';

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const SCRIPT_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25];

/** The gateway's own metrics; one set per HTTP thread, summed across threads on /metrics. */
export function createMetrics(registry = new Registry()) {
  const registers = [registry];
  // The histogram records the gap between timer wake-ups, so the delay is what exceeds the resolution;
  // 20 ms is fine enough to see a stalled loop without waking an idle thread often. Read and restarted at each scrape.
  const resolutionMs = 20;
  const loopDelay = monitorEventLoopDelay({ resolution: resolutionMs });
  loopDelay.enable();
  const delaySeconds = (ns: number) => Math.max(0, ns / 1e6 - resolutionMs) / 1000;
  return {
    eventLoopDelay: new Gauge({
      name: 'gateway_http_event_loop_delay_seconds',
      help: 'Event-loop delay of the HTTP threads since the previous scrape, by quantile (0.5, 0.99, 1 for the max); the worst thread.',
      labelNames: ['quantile'], aggregator: 'max', registers,
      collect() {
        for (const q of [0.5, 0.99]) this.set({ quantile: String(q) }, loopDelay.count > 0 ? delaySeconds(loopDelay.percentile(q * 100)) : 0);
        this.set({ quantile: '1' }, loopDelay.count > 0 ? delaySeconds(loopDelay.max) : 0);
        loopDelay.reset();
      },
    }),
    registry,
    httpRequests: new Counter({ name: 'gateway_http_requests_total', help: 'HTTP requests answered, by route, method and status.', labelNames: ['route', 'method', 'status'], registers }),
    httpDuration: new Histogram({ name: 'gateway_http_request_duration_seconds', help: 'Time from request to the last byte of the response, by route.', labelNames: ['route'], buckets: LATENCY_BUCKETS, registers }),
    upstreamTtfb: new Histogram({ name: 'gateway_upstream_ttfb_seconds', help: 'Time from sending an upstream request to its first body byte, by vendor.', labelNames: ['vendor'], buckets: LATENCY_BUCKETS, registers }),
    upstreamErrors: new Counter({ name: 'gateway_upstream_errors_total', help: 'Upstream calls that failed, by vendor and reason.', labelNames: ['vendor', 'reason'], registers }),
    tokens: new Counter({ name: 'gateway_tokens_total', help: 'Tokens billed, by model and kind (prompt, cached, completion, reasoning).', labelNames: ['model', 'kind'], registers }),
    cost: new Counter({ name: 'gateway_cost_usd_total', help: 'USD charged for usage, by model.', labelNames: ['model'], registers }),
    rejections: new Counter({ name: 'gateway_admission_rejections_total', help: 'Inference calls refused at admission, by reason (rate_limited, token_limited, insufficient_credits, credit_limit).', labelNames: ['reason'], registers }),
    settledOutsideLease: new Counter({
      name: 'gateway_settled_outside_lease_total',
      help: 'Settlement batches charged without their lease\'s reservation (the janitor had released it at its deadline, or Redis lost it).', registers,
    }),
    activeStreams: new Gauge({ name: 'gateway_active_streams', help: 'Streaming responses in progress.', registers }),
    scriptDuration: new Histogram({ name: 'gateway_redis_script_duration_seconds', help: 'Round-trip time of the Redis Lua scripts, by script.', labelNames: ['script'], buckets: SCRIPT_BUCKETS, registers }),
    mediaStored: new Counter({ name: 'gateway_media_stored_total', help: 'Media objects stored (uploads, rehosted results), by sniffed content type.', labelNames: ['content_type'], registers }),
    images: new Counter({ name: 'gateway_images_total', help: 'Images delivered by image calls, by model and whether they were rehosted on the media host.', labelNames: ['model', 'hosted'], registers }),
    mediaStoredBytes: new Counter({ name: 'gateway_media_stored_bytes_total', help: 'Bytes of media objects stored.', registers }),
    tasksSubmitted: new Counter({ name: 'gateway_tasks_submitted_total', help: 'Async tasks accepted (video, audio), by model.', labelNames: ['model'], registers }),
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
  };
}

export type TaskMetrics = ReturnType<typeof createTaskMetrics>;

export const seconds = (sinceNs: bigint) => Number(process.hrtime.bigint() - sinceNs) / 1e9;

/**
 * Memoises a labelled metric's children: prom-client hashes the label object on every call,
 * which shows on the hot path; a child looked up once per label combination does not.
 */
export function children<T>(lookup: (...values: string[]) => T): (...values: string[]) => T {
  const cache = new Map<string, T>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = cache.get(key);
    if (child === undefined) {
      child = lookup(...values);
      cache.set(key, child);
    }
    return child;
  };
}

/** Records a settled call's tokens and cost by model. */
export function usageRecorder(metrics: Metrics) {
  const tokensOf = children((model, kind) => metrics.tokens.labels(model, kind));
  const costOf = children((model) => metrics.cost.labels(model));
  return (modelId: string, usage: NormalizedUsage, chargedNano: bigint): void => {
    tokensOf(modelId, 'prompt').inc(usage.promptTokens - usage.cachedTokens);
    if (usage.cachedTokens) tokensOf(modelId, 'cached').inc(usage.cachedTokens);
    tokensOf(modelId, 'completion').inc(usage.completionTokens);
    if (usage.reasoningTokens) tokensOf(modelId, 'reasoning').inc(usage.reasoningTokens);
    costOf(modelId).inc(nanoToUsd(chargedNano));
  };
}
