/**
 * One HTTP thread: its own uWS app listening on the shared port (SO_REUSEPORT), its own Redis and
 * Postgres connections, caches and upstream pools. Talks to the main thread only for /metrics and shutdown.
 */
import { parentPort, workerData, threadId } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { loadUws, type us_listen_socket } from './uws.js';
import { registerRoutes } from './app.js';
import { connect } from '../store/db.js';
import { defineScripts } from '../admission/scripts.js';
import { RedisKeys } from '../admission/keys.js';
import { DashboardSessions } from '../auth/dashboard-sessions.js';
import { Authenticator } from '../auth/authenticator.js';
import { IdentityProviderTokens } from '../auth/idp-tokens.js';
import { Balances } from '../billing/balances.js';
import { Admission, DEFAULT_LEASE_POLICY } from '../admission/admission.js';
import { RequestWindows, SignInWindow } from '../admission/request-windows.js';
import { ScriptBatcher } from '../admission/script-batcher.js';
import { SettlementJournal } from '../admission/settlement-journal.js';
import { LedgerConfirmer } from '../admission/ledger-confirmer.js';
import { LedgerRecovery } from '../admission/ledger-recovery.js';
import { RedisPipe } from '../store/redis-pipe.js';
import { acknowledge, connectRedis, subscribeChannels, unwrapAcknowledged } from '../store/redis-connect.js';
import { LiveCatalog } from '../catalog/live.js';
import { UpstreamClient, upstreamOptionsOf } from '../providers/upstream-client.js';
import type { UpstreamTarget } from '../providers/family.js';
import { CHAT_FAMILIES } from '../providers/families.js';
import { ByokCredentials } from '../providers/byok-credentials.js';
import { ServiceAccountTokens } from '../providers/cloud/google-token.js';
import { SealedBox } from '../auth/sealed-box.js';
import { createMetrics, createRoutingMetrics } from '../metrics.js';
import { Routing } from '../routing/routing.js';
import { routingWithTokens } from '../routing/access-tokens.js';
import { OnDemandWorkerPool } from '../worker-pool.js';
import { configureLog, log } from '../log.js';
import { startTracing, stopTracing } from '../tracing/tracing.js';
import { collectWhenIdle } from '../idle-gc.js';
import type { Services } from '../services.js';
import type { MainToThread, ThreadToMain } from './thread-messages.js';
import { closeTokenCounter } from '../billing/token-count.js';
import { closeDataUriDecoder } from '../media/data-uri.js';
import { openMediaStorage } from '../media/open.js';
import { LEDGER_INTERVAL_MS } from '../ledger/writer.js';
import { MediaStore } from '../media/store.js';

/** Longest a /readyz check waits for Redis or Postgres to answer. */
const READY_CHECK_MS = 2_000;
const port = parentPort!;
const send = (message: ThreadToMain) => port.postMessage(message);
const { config, name: threadName = `http-${threadId}`, breakers: breakerMemory } = workerData as { config: Config; name?: string; breakers?: SharedArrayBuffer };
configureLog(config.logLevel, { thread: threadName });
await startTracing(threadName); // on only when an OTLP endpoint is set (the main thread logs the settings)
collectWhenIdle(); // an idle thread gives back what its last busy spell left (src/idle-gc.ts)

const uws = loadUws();
const sql = connect(config.databaseUrl, config.databasePools.perThread, 'gateway-http');
const redis = defineScripts(connectRedis(config.redisUrl, { maxRetriesPerRequest: 2 }));
const keys = new RedisKeys(config.redisPrefix);
// This thread's loop, and those of its on-demand worker pools (`http-0/decode-data-uri-0`): see gateway_event_loop_delay_seconds.
const metrics = createMetrics(undefined, {
  thread: threadName,
  pools: () => [...OnDemandWorkerPool.all].flatMap((pool) => pool.loopThreads().map((loop) => ({ ...loop, thread: `${threadName}/${loop.thread}` }))),
});
const balances = new Balances(sql, redis, keys);
// The hot path's script calls go over their own lean connection (see RedisPipe).
const scriptPipe = new RedisPipe(config.redisUrl);
// A random owner: a restarted process (even with a reused pid) never takes a dead thread's journal for its own.
// Always on, whatever SETTLE_FLUSH_MS: it also keeps each call until its ledger entry is in Postgres (LedgerConfirmer).
const journal = new SettlementJournal(config.settleJournalDir, `${randomBytes(6).toString('hex')}.${threadId}`);
// The ledger writer (main thread) idles slowly when nothing comes: settlements after a quiet spell wake it.
let ledgerMarkedAtMs = 0;
const ledgerMarked = () => {
  const nowMs = Date.now();
  if (nowMs - ledgerMarkedAtMs > LEDGER_INTERVAL_MS) send({ type: 'ledger-appended' });
  ledgerMarkedAtMs = nowMs;
};
const scripts = new ScriptBatcher(scriptPipe, keys, ledgerMarked);
const admission = new Admission(scripts, balances, {
  requests: config.rateLimit.requests, windowMs: config.rateLimit.windowMs, reservationTtlMs: config.reservationTtlMs,
}, metrics, { ...DEFAULT_LEASE_POLICY, maxCalls: config.leaseMaxCalls }, { flushMs: config.settleFlushMs, journal });
// API-key requests admission never sees (management calls, task reads and cancels) are counted as they arrive.
const windows = new RequestWindows(scripts, { default: config.rateLimit, reads: config.readRateLimit }, DEFAULT_LEASE_POLICY.lifeMs, metrics);
// Each thread fetches the identity provider's keys itself, when its first token comes (none configured: HS256 JWTs only).
const idpTokens = config.oidc && new IdentityProviderTokens(config.oidc, config.auth.jwtMaxLifetimeSeconds);
const sessions = new DashboardSessions(redis, config.redisPrefix);
const auth = new Authenticator(sql, config.keySecret, config.keyPrefix, config.auth, (found) => metrics.authKeyLookups.labels(found ? 'found' : 'unknown').inc(), windows, idpTokens, sessions);
// Ledger entries Redis loses with its data before the ledger writer committed them are charged again from the journal.
const confirmer = new LedgerConfirmer(journal, redis, keys, new LedgerRecovery({ sql, redis, keys, scripts, balances, ttlMs: config.reservationTtlMs }));

const catalog = await LiveCatalog.open(sql, (error) => log.warn('catalog refresh failed', { error }));

const vendors: Record<string, UpstreamTarget> = {};
for (const vendor of Object.values(config.vendors)) vendors[vendor.name] = Object.freeze({ baseUrl: vendor.baseUrl, apiKey: vendor.apiKey });

const upstream = new UpstreamClient(upstreamOptionsOf(config));
// Service accounts' access tokens: BYOK's Vertex AI rows and the routing file's Vertex AI targets.
const accessTokens = new ServiceAccountTokens(upstream);
// The first tokens are fetched before the thread takes calls.
const liveRouting = await routingWithTokens(config.routing, accessTokens);

// The breakers' memory is the process's (thread-pool.ts): every thread skips a target another found failing.
const routing: Routing = new Routing(liveRouting, vendors, breakerMemory, createRoutingMetrics(metrics.registry, function* () {
  const breakers = routing.breakers;
  if (breakers) for (const target of routing.targets) yield [target.name, breakers.state(target.slot)] as const;
}));

const byok = new ByokCredentials(sql, new SealedBox(config.keySecret), vendors, accessTokens, { allowLoopback: config.fetch.allowLoopback, maxAttempts: config.byok.maxAttemptsPerCall });

const mediaStorage = await openMediaStorage(config.media);
const media = mediaStorage && new MediaStore(mediaStorage, config.media.maxBytes);

const services: Services = {
  config, sql, redis, keys, auth, balances, admission, metrics, byok, media, sessions,
  signInWindow: new SignInWindow(scripts, config.signInRateLimit, metrics),
  catalog: catalog.current,
  upstream,
  vendors,
  routing,
  families: CHAT_FAMILIES,
  inflight: { count: 0 },
};

const subscriber = await subscribeChannels(config.redisUrl, redis, [keys.keyEvents(), keys.leaseRecallChannel()], (channel, message) => {
  // Lease recalls (admit.lua, settle.lua): see Admission.recall.
  if (channel === keys.leaseRecallChannel()) return admission.onRecallMessage(message);
  // `<kind>:<subject>`: change/revoke name a key's public id, byok a user id (which may hold ':').
  const { nonce, text } = unwrapAcknowledged(message);
  const at = text.indexOf(':');
  const kind = text.slice(0, at);
  const subject = text.slice(at + 1);
  if (subject) {
    if (kind === 'byok') byok.invalidate(subject);
    else auth.invalidate(subject, kind === 'revoke');
  }
  if (nonce) acknowledge(redis, keys.keyEventAcks(nonce)).catch((error) => log.warn('a key event was applied but not acknowledged', { error }));
}, () => {
  // Messages published while the subscriber was reconnecting are lost: forget every cached key then.
  auth.forgetAll();
  byok.forgetAll();
});

let listenSocket: us_listen_socket | undefined;
let requestSeq = 0;
const pendingMetrics = new Map<number, (text: string) => void>();
let draining = false;

const app = uws.App();
registerRoutes(app, services, {
  metricsText: () => new Promise((resolve) => {
    const id = ++requestSeq;
    pendingMetrics.set(id, resolve);
    send({ type: 'collect-metrics', id });
  }),
  ready: async () => {
    const checks: Record<string, string> = {};
    // A query waiting for the driver to reconnect to a Postgres that is down waits until it is back:
    // the probe answers within READY_CHECK_MS whatever the dependencies do.
    const check = (name: string, probe: Promise<unknown>) => new Promise<void>((resolve) => {
      const timer = setTimeout(() => { checks[name] = `no answer in ${READY_CHECK_MS} ms`; resolve(); }, READY_CHECK_MS);
      probe.then(() => { checks[name] ??= 'ok'; }, (error: Error) => { checks[name] ??= error.message; }).finally(() => { clearTimeout(timer); resolve(); });
    });
    await Promise.all([check('redis', redis.ping()), check('postgres', sql`select 1`.execute())]);
    return { ok: checks.redis === 'ok' && checks.postgres === 'ok', checks };
  },
  draining: () => draining,
}).listen(config.host, config.port, (socket) => {
  if (!socket) {
    send({ type: 'listen-failed', message: `could not listen on ${config.host}:${config.port}` });
    return;
  }
  listenSocket = socket;
  send({ type: 'listening' });
});

async function drain(deadlineMs: number): Promise<void> {
  draining = true;
  // Stop accepting: a thread must close its listen socket before it ends, or Node aborts at exit.
  if (listenSocket) uws.us_listen_socket_close(listenSocket);
  listenSocket = undefined;
  const until = Date.now() + deadlineMs;
  while (services.inflight.count > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
  }
  // Every lease's last settlements and unused credit go back to Redis before the connection closes.
  await admission.closeAll(Math.max(1000, until - Date.now()));
  await confirmer.drain(Math.max(2000, until - Date.now())); // the ledger writer runs until the threads drained
  await confirmer.stop();
  journal.close();
  // Idle keep-alive connections would keep this thread's loop alive (and abort Node at exit): close them all.
  // The native app has close() although the bundled typings do not declare it.
  (app as unknown as { close(): void }).close();
  catalog.stop();
  await Promise.allSettled([services.upstream.close(), closeTokenCounter(), closeDataUriDecoder(), sql.end({ timeout: 5 }), redis.quit(), scriptPipe.close(), subscriber.close()]);
  await stopTracing(); // the spans still queued are exported before the thread ends
  send({ type: 'drained', unfinished: services.inflight.count });
  port.close(); // nothing is left: the thread ends by itself
}

port.on('message', (message: MainToThread) => {
  switch (message.type) {
    case 'metrics-json':
      metrics.registry.getMetricsAsJSON().then((data) => send({ type: 'metrics-json', id: message.id, data }));
      break;
    case 'metrics-text':
      pendingMetrics.get(message.id)?.(message.text);
      pendingMetrics.delete(message.id);
      break;
    case 'drain':
      void drain(message.deadlineMs);
      break;
  }
});
