/**
 * The gateway process: config -> database (create, migrate, catalog) -> Redis -> ledger writer ->
 * N HTTP threads on one port -> janitors. SIGTERM drains streams, then flushes the ledger.
 */
import { Redis } from 'ioredis';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { ConfigError, loadConfig, type Config } from './config.js';
import { prepareDatabase } from './bootstrap.js';
import { RedisKeys } from './admission/keys.js';
import { LedgerWriter } from './ledger/writer.js';
import { createMainMetrics } from './metrics.js';
import { configureLog, log } from './log.js';
import { ensureRequestLogPartitions, dropExpiredRequestLogPartitions } from './store/request-logs.js';
import { HttpThreadPool } from './http/thread-pool.js';

const DAY_MS = 86_400_000;

async function startMockVendorIfNeeded(port: number, env: NodeJS.ProcessEnv): Promise<{ url: string; close(): Promise<void> } | undefined> {
  const probe = loadConfig(env);
  const mocked = Object.values(probe.vendors).filter((v) => v.mocked).map((v) => v.name);
  if (probe.mockVendor === 'off' || mocked.length === 0) return undefined;
  const { startMockVendor } = await import('../bench/mock-vendor/server.js');
  const mock = await startMockVendor({ port, keepRequests: 0 });
  log.info('mock vendor started for vendors without an API key', { url: mock.url, vendors: mocked });
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
  if (config.usesDevSecrets) log.warn('using built-in development secrets; set JWT_SECRET and KEY_SECRET outside development');

  const mock = await startMockVendorIfNeeded(config.mockVendorPort, process.env);
  if (mock) config = loadConfig(process.env, mock.url);

  const { sql, applied } = await prepareDatabase(config);
  if (applied.length) log.info('migrations applied', { applied });
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2 });
  await redis.ping();
  const keys = new RedisKeys(config.redisPrefix);

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gateway_process_' });
  const mainMetrics = createMainMetrics(registry);
  const ledger = new LedgerWriter(sql, redis, keys, {
    onError: (error) => {
      mainMetrics.ledgerErrors.inc();
      log.error('ledger drain failed; events stay in Redis and are retried', { error });
    },
    onWritten: (events) => mainMetrics.ledgerEvents.inc(events),
    onUnreadable: (entry) => {
      mainMetrics.ledgerUnreadable.inc();
      log.error('ledger event unreadable: its charge is kept, its request log is not', entry);
    },
  });
  ledger.start();

  const janitor = setInterval(() => {
    Promise.all([ensureRequestLogPartitions(sql), dropExpiredRequestLogPartitions(sql)])
      .then(([, dropped]) => dropped.length && log.info('request log partitions dropped', { dropped }))
      .catch((error) => log.error('request log partition upkeep failed', { error }));
  }, DAY_MS);
  janitor.unref();

  let stopping = false;
  let threads: HttpThreadPool | undefined;
  threads = await HttpThreadPool.start(config, registry, (code) => {
    // During start-up the failure surfaces through start() itself.
    if (!threads) return;
    log.error('HTTP thread exited; stopping the process', { code });
    void stop(1);
  });

  const base = `http://${config.host}:${config.port}`;
  log.info('gateway listening', { url: base, threads: config.httpThreads, openai_base_url: `${base}/v1`, mock_vendor: mock?.url ?? null });
  if (!config.production) {
    process.stdout.write([
      '',
      `Gateway ready at ${base}  (OpenAI SDK base URL: ${base}/v1)`,
      'Get an API key:',
      '  TOKEN=$(npx gateway token --user alice)',
      `  npx gateway topup --user alice --amount 10 --method manual`,
      `  curl -s -X POST ${base}/api/v1/api-keys -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"name":"dev"}'`,
      '',
    ].join('\n') + '\n');
  }

  async function stop(code: number): Promise<void> {
    if (stopping) return;
    stopping = true;
    log.info('shutting down: draining streams', { deadline_ms: config.shutdownDrainMs });
    await threads!.drain(config.shutdownDrainMs);
    // Every settlement is in Redis now: write the last ledger events before anything else can go wrong.
    await ledger.stop().catch((error) => log.error('final ledger flush failed; events stay in Redis', { error }));
    await threads!.stop();
    clearInterval(janitor);
    await Promise.allSettled([sql.end({ timeout: 5 }), redis.quit(), mock?.close()]);
    log.info('stopped');
    process.exit(code);
  }
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
}

main().catch((error) => {
  log.error('start-up failed', { error });
  process.exit(1);
});
