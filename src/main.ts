/**
 * The gateway process: config -> database (create, migrate, catalog) -> Redis -> ledger writer and
 * balance alerts -> N HTTP threads on one port -> janitors (reservations, retention of request logs and sent mails, media). SIGTERM drains streams, then flushes the ledger.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { ConfigError, loadConfig, type Config, type VendorConfig } from './config.js';
import { prepareDatabase } from './bootstrap.js';
import { RedisKeys } from './admission/keys.js';
import { LedgerWriter } from './ledger/writer.js';
import { createDependencyMetrics, createLedgerLagMetrics, createLoopMetrics, createMainMetrics, createTaskMetrics, selfLoop } from './metrics.js';
import { configureLog, log } from './log.js';
import { startTracing, stopTracing, type TracingSettings } from './tracing/tracing.js';
import { collectWhenIdle } from './idle-gc.js';
import { ensureRequestLogPartitions, expireRequestLogs } from './store/request-logs.js';
import { expireUsageRollup } from './store/usage-rollup.js';
import { HttpThreadPool } from './http/thread-pool.js';
import { defineScripts } from './admission/scripts.js';
import { ReservationJanitor } from './admission/janitor.js';
import { replayJournals } from './admission/journal-replay.js';
import { LedgerRecovery } from './admission/ledger-recovery.js';
import { ScriptBatcher } from './admission/script-batcher.js';
import { RedisPipe } from './store/redis-pipe.js';
import { connectRedis } from './store/redis-connect.js';
import { Balances } from './billing/balances.js';
import { AlertMonitor } from './billing/alerts.js';
import { OutboxSender, deleteSentMails } from './mail/outbox-sender.js';
import { openMediaStorage } from './media/open.js';
import { MediaJanitor } from './media/janitor.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { connect } from './store/db.js';
import { routingWithTokens } from './routing/access-tokens.js';
import { ServiceAccountTokens } from './providers/cloud/google-token.js';
import { UpstreamClient, upstreamOptionsOf } from './providers/upstream-client.js';
import { TaskRuntime } from './tasks/runtime.js';
import { TaskWorkers } from './tasks/task-workers.js';
import { LiveCatalog } from './catalog/live.js';
import { SealedBox } from './auth/sealed-box.js';
import { prepareJournalDir } from './admission/settlement-journal.js';
import { MetricsListener } from './http/metrics-listener.js';
import { productionWarnings } from './production-warnings.js';
import { startDevIdentityProvider, type DevIdentityProvider } from './auth/dev-identity-provider.js';

/** Period of the retention janitor (request logs, sent mails): a record outlives its retention by at most this. */
const RETENTION_PASS_MS = 3_600_000;

/**
 * The development identity provider (src/auth/dev-identity-provider.ts) when the settings ask for one.
 * One that cannot start (its port taken: another gateway's) stops the gateway only under
 * DEV_IDENTITY_PROVIDER=on; under `auto` the gateway goes on without sign-in, saying why.
 */
async function startDevIdentityProviderIfNeeded(config: Config): Promise<DevIdentityProvider | undefined> {
  const wanted = config.devIdentityProvider;
  if (!wanted) return undefined;
  try {
    return await startDevIdentityProvider(wanted.port, wanted.redirectUrl);
  } catch (error) {
    if (wanted.required) throw error;
    log.warn('development identity provider not started: console sign-in is off (set DEV_IDENTITY_PROVIDER_PORT, or OIDC_CLIENT_ID)', { port: wanted.port, error });
    return undefined;
  }
}

/**
 * The built-in mock, when some vendor is mocked or Stripe is (development without STRIPE_SECRET_KEY) and
 * MOCK_VENDOR lets it start here (`on`, or `auto` outside production). Its checkout pages deliver
 * Stripe's signed events to this gateway's webhook.
 */
async function startMockVendorIfNeeded(port: number, env: NodeJS.ProcessEnv): Promise<{ url: string; close(): Promise<void> } | undefined> {
  const probe = loadConfig(env);
  const mocked = Object.values(probe.vendors).filter((v) => v.mocked).map((v) => v.name);
  const stripe = probe.payments.stripe;
  const stripeWebhook = stripe?.mock && { url: stripe.mock.webhookUrl, secret: stripe.webhookSecret };
  if (probe.mockVendor === 'off' || (mocked.length === 0 && !stripeWebhook)) return undefined;
  if (probe.production) log.warn('MOCK_VENDOR=on in production: vendors without an API key answer with mock text at real prices', { vendors: mocked });
  const { startMockVendor } = await import('./mock-vendor/server.js');
  const mock = await startMockVendor({ port, keepRequests: 0, stripeWebhook });
  log.info('mock vendor started for vendors without an API key', { url: mock.url, vendors: mocked, stripe: stripeWebhook !== undefined });
  return mock;
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`gateway: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  configureLog(config.logLevel, { thread: 'main' });
  logTracing(await startTracing('main'));
  collectWhenIdle(); // as each HTTP thread does (src/idle-gc.ts)
  if (config.usesDevSecrets) log.warn('using built-in development secrets; set JWT_SECRET and KEY_SECRET outside development');

  const mock = await startMockVendorIfNeeded(config.mockVendorPort, process.env);
  const devIdentity = await startDevIdentityProviderIfNeeded(config);
  // Sign-in through the development provider (already started: the reloaded settings start none).
  if (mock || devIdentity) config = loadConfig({ ...process.env, ...devIdentity?.signInEnv, ...(devIdentity ? { DEV_IDENTITY_PROVIDER: 'off' } : {}) }, mock?.url);
  logVendors(config);
  for (const warning of productionWarnings(config)) log.warn(warning);
  // Refused before anything is replayed from it or written to it (src/admission/settlement-journal.ts).
  prepareJournalDir(config.settleJournalDir);

  const { sql, applied } = await prepareDatabase(config);
  if (applied.length) log.info('migrations applied', { applied });
  const redis = defineScripts(connectRedis(config.redisUrl, { maxRetriesPerRequest: 2 }));
  await redis.ping();
  const keys = new RedisKeys(config.redisPrefix);

  const registry = new Registry();
  // The event-loop delay monitor wakes the thread at each sample: prom-client's 10 ms default cost about a
  // third of an idle gateway's CPU; samples a tenth of a second apart still show a stalled loop.
  collectDefaultMetrics({ register: registry, prefix: 'gateway_process_', eventLoopMonitoringPrecision: 100 });
  const mainMetrics = createMainMetrics(registry);
  createDependencyMetrics(registry, { redis: () => redis.ping(), postgres: () => sql`select 1`.execute() });
  createLedgerLagMetrics(registry, redis, keys);
  // Loops seen from here: this thread's (sampled every 100 ms, as the default metrics do), the HTTP threads'
  // utilisation (their delay is their own metric) and the task workers'.
  const mainLoop = selfLoop('main', 100, true);
  let threads: HttpThreadPool | undefined;
  let taskWorkers: TaskWorkers | undefined;
  createLoopMetrics(registry, () => [mainLoop, ...(threads?.loopThreads() ?? []), ...(taskWorkers?.loopThreads() ?? [])]);
  const mail = config.smtpUrl === undefined ? undefined : new OutboxSender(sql, {
    smtpUrl: config.smtpUrl,
    from: config.alertMailFrom,
    pollMs: config.alertMailPollMs,
    retryMs: config.alertMailRetryMs,
    onSent: () => mainMetrics.alertMailsSent.inc(),
    onFailed: (message, error) => {
      mainMetrics.alertMailFailures.inc();
      log.warn('alert mail not sent; it stays queued and is retried', { mail: message.id, attempts: message.attempts, error });
    },
    onError: (error) => log.error('mail outbox pass failed; retried at the next poll', { error }),
  });
  if (mail) mail.start();
  else log.warn('SMTP_URL is not set: balance-alert mails are queued in the outbox but not sent');
  const alerts = new AlertMonitor(sql, {
    sweepMs: config.alertSweepMs,
    onQueued: () => mail?.wake(),
    onError: (error) => log.error('balance alert evaluation failed; the periodic sweep retries it', { error }),
  });
  alerts.start();
  const ledger = new LedgerWriter(sql, redis, keys, {
    idleIntervalMs: config.ledgerIdlePollMs,
    onError: (error) => {
      mainMetrics.ledgerErrors.inc();
      log.error('ledger drain failed; events stay in Redis and are retried', { error });
    },
    onWritten: (events) => mainMetrics.ledgerEvents.inc(events),
    onUsersWritten: (userIds) => alerts.usersWritten(userIds),
    onUnreadable: (entry) => {
      mainMetrics.ledgerUnreadable.inc();
      log.error('ledger event unreadable: its charge is kept, its request log is not', entry);
    },
    onEpochChanged: (userIds) => log.warn('Redis lost ledger data during a ledger pass: nothing written; the settlement journals charge what was lost again', { users: userIds.length }),
  });
  ledger.start();

  // Settlements that dead HTTP threads (of any process on this host) journaled and Redis never applied.
  const replayPipe = new RedisPipe(config.redisUrl);
  const replayScripts = new ScriptBatcher(replayPipe, keys, () => ledger.nudge());
  const replayBalances = new Balances(sql, redis, keys);
  const replayRecovery = new LedgerRecovery({ sql, redis, keys, scripts: replayScripts, balances: replayBalances, ttlMs: config.reservationTtlMs });
  const reservations = new ReservationJanitor(redis, keys, (leaseId, userId, releasedNano) => {
    mainMetrics.reservationsExpired.inc();
    log.warn('lease released at its deadline (its gateway died or lost touch); late calls on it are still charged', { leaseId, userId, released_nano: String(releasedNano) });
  }, (error) => log.error('reservation janitor pass failed', { error }), async () => {
    const { batches } = await replayJournals(config.settleJournalDir, replayScripts, replayBalances, config.reservationTtlMs, config.settleJournalStaleMs, replayRecovery);
    if (batches > 0) mainMetrics.journalBatchesReplayed.inc(batches);
  });
  await reservations.pass(); // before serving: what dead threads left is charged first
  reservations.start(config.reservationJanitorMs);

  // Retention, at start-up and hourly: next month's log partition, request logs older than two months
  // (whole partitions dropped, the oldest kept month and the default partition deleted row by row),
  // usage rollup hours older than USAGE_ROLLUP_RETENTION_MONTHS, and mails sent more than SENT_MAIL_RETENTION_DAYS ago. One pass at a time.
  let retentionPass: Promise<void> | undefined;
  const runRetention = () => {
    retentionPass ??= (async () => {
      await ensureRequestLogPartitions(sql);
      const { dropped, deleted } = await expireRequestLogs(sql);
      const rollup = await expireUsageRollup(sql, new Date(), config.usageRollupRetentionMonths);
      const mails = await deleteSentMails(sql);
      if (dropped.length || deleted || rollup || mails) {
        log.info('retention: expired records deleted', { partitions_dropped: dropped, request_logs_deleted: deleted, usage_rollup_deleted: rollup, sent_mails_deleted: mails });
      }
    })()
      .catch((error) => log.error('retention pass failed; retried at the next one', { error }))
      .finally(() => { retentionPass = undefined; });
  };
  runRetention();
  const janitor = setInterval(runRetention, RETENTION_PASS_MS);
  janitor.unref();

  const mediaStorage = await openMediaStorage(config.media);
  const mediaJanitor = mediaStorage && new MediaJanitor(mediaStorage, {
    retentionMs: config.media.retentionMs,
    onSwept: (count) => {
      mainMetrics.mediaSwept.inc(count);
      log.info('expired media deleted', { count });
    },
    onError: (error) => {
      mainMetrics.mediaSweepErrors.inc();
      log.error('media janitor pass failed; retried at the next interval', { error });
    },
  });
  mediaJanitor?.start(config.media.sweepMs);
  if (config.production && config.media.storage !== 'off' && !process.env.MEDIA_URL) {
    log.warn('MEDIA_URL is not set: media links point at this gateway\'s own listen address', { media_url: config.media.url });
  }

  let stopping = false;
  // Listening before the HTTP threads are, so a gateway that answers /readyz answers its scraper too.
  const metricsListener = config.metrics.port === undefined ? undefined
    : await MetricsListener.start(config.metrics, () => threads ? threads.metricsText() : registry.metrics());
  if (metricsListener) log.info('metrics listening', { url: `${metricsListener.url}/metrics`, token: config.metrics.token !== undefined });
  threads = await HttpThreadPool.start(config, registry, {
    onUnexpectedExit: (code) => {
      // During start-up the failure surfaces through start() itself.
      if (!threads) return;
      log.error('HTTP thread exited; stopping the process', { code });
      void stop(1);
    },
    onLedgerAppended: () => ledger.nudge(),
  });

  // The task runtime: this process's share of the per-user actors (its own Postgres pool and workers).
  const taskSql = connect(config.databaseUrl, config.databasePools.tasks, 'gateway-tasks');
  const taskCatalog = await LiveCatalog.open(taskSql, (error) => log.warn('catalog refresh failed (tasks)', { error }));
  taskWorkers = new TaskWorkers(config.tasks.workers);
  // Vertex AI targets of media tasks (Veo) send the service account's access token, kept fresh here as in each HTTP thread.
  const taskRouting = await routingWithTokens(config.routing, new ServiceAccountTokens(new UpstreamClient(upstreamOptionsOf(config))));
  const tasks = new TaskRuntime({
    owner: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    config: { ...config, routing: taskRouting }, sql: taskSql, redis, keys,
    balances: new Balances(taskSql, redis, keys),
    workers: taskWorkers,
    catalog: taskCatalog.current,
    vendors: Object.fromEntries(Object.values(config.vendors).map((vendor) => [vendor.name, { baseUrl: vendor.baseUrl, apiKey: vendor.apiKey }])),
    box: new SealedBox(config.keySecret),
    metrics: createTaskMetrics(registry),
    onTaskEnded: (row) => { if (row.status === 'success') alerts.usersWritten([row.user_id]); },
  });
  tasks.start();

  const base = `http://${config.host}:${config.port}`;
  log.info('gateway listening', { url: base, threads: config.httpThreads, openai_base_url: `${base}/v1`, mock_vendor: mock?.url ?? null });
  // Where a person signs in: the console's own page, or /auth/login without a console.
  const signInUrl = devIdentity && config.signIn && `${config.signIn.origin}${config.console.enabled ? '/console' : '/auth/login'}`;
  if (devIdentity) log.info('development identity provider: sign in with any login and password', { sign_in: signInUrl, provider: devIdentity.issuer });
  if (!config.production) {
    process.stdout.write([
      '',
      `Gateway ready at ${base}  (OpenAI SDK base URL: ${base}/v1)`,
      ...(signInUrl ? [`Sign in at ${signInUrl} with any login and password (development identity provider at ${devIdentity!.issuer}), then create a key there.`, 'Or get an API key from the command line:'] : ['Get an API key:']),
      '  TOKEN=$(npx gateway token --user alice)',
      `  npx gateway topup --user alice --amount 10 --method manual`,
      `  curl -s -X POST ${base}/api/v1/api-keys -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"name":"dev"}'`,
      ...(config.payments.stripe?.mock ? [
        'Or top up by card through the mock\'s Stripe Checkout (open the answer\'s url, press Pay):',
        `  curl -s -X POST ${base}/api/v1/billing/checkout -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"amount_usd":10}'`,
      ] : []),
      '',
    ].join('\n') + '\n');
  }

  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    log.info('shutting down: draining streams', { deadline_ms: config.shutdownDrainMs });
    await threads!.drain(config.shutdownDrainMs);
    // Steps under way finish, then every shard is handed over: another process goes on with its tasks.
    await tasks.stop(config.shutdownDrainMs).catch((error) => log.error('task runtime stop failed', { error }));
    // Every settlement is in Redis now: write the last ledger events before anything else can go wrong.
    await ledger.stop().catch((error) => log.error('final ledger flush failed; events stay in Redis', { error }));
    await alerts.stop();
    await mail?.stop();
    await threads!.stop();
    await metricsListener?.close();
    clearInterval(janitor); // a pass under way is cut at its next batch when Postgres closes: each batch is its own statement
    await reservations.stop();
    await mediaJanitor?.stop();
    taskCatalog.stop();
    await Promise.allSettled([sql.end({ timeout: 5 }), taskSql.end({ timeout: 5 }), redis.quit(), replayPipe.close(), mock?.close(), devIdentity?.close()]);
    await stopTracing(); // this thread's spans (the task steps'); the task workers exported theirs as their pool closed
    log.info('stopped');
    process.exit(code);
  }
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
}

/** Which vendors this gateway calls for real, which the mock plays, and which it cannot reach (their models inactive). */
function logVendors(config: Config): void {
  const names = (pick: (vendor: VendorConfig) => boolean) => Object.values(config.vendors).filter(pick).map((vendor) => vendor.name);
  log.info('vendors', {
    configured: names((vendor) => vendor.served && !vendor.mocked),
    mocked: names((vendor) => vendor.mocked),
    not_configured: names((vendor) => !vendor.served),
  });
}

main().catch((error) => {
  log.error('start-up failed', { error });
  process.exit(1);
});

/** Tracing's settings, once at start-up (each thread reads the same variables), and what was not understood. */
function logTracing(settings: TracingSettings | undefined): void {
  if (!settings) {
    log.info('tracing off: no OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none)');
    return;
  }
  log.info('tracing on', {
    endpoint: redactedEndpoint(settings.endpoint), service: settings.serviceName, sampler: settings.samplerName,
    batch_delay_ms: settings.batch.scheduledDelayMillis, max_queue: settings.batch.maxQueueSize,
  });
  for (const warning of settings.warnings) log.warn('tracing setting not understood', { warning });
}

/** An endpoint as logged: its user information and query left out (either may hold a token). */
function redactedEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
