import { keyLimitsOf } from '../billing/credit-period.js';
import type { TemplatedApp } from './uws.js';
import { IpRanges } from '../auth/ip-ranges.js';
import type { Services } from '../services.js';
import { Router } from './router.js';
import { ApiError } from './errors.js';
import { chatCompletions } from './routes/chat-completions.js';
import { RESPONSES_OUTPUT } from './routes/responses.js';
import { MESSAGES_OUTPUT, countMessageTokens } from './routes/messages.js';
import { imageGenerations } from './routes/images.js';
import { embeddings } from './routes/embeddings.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { billingRoutes } from './routes/billing.js';
import { billingAlertRoutes } from './routes/billing-alerts.js';
import { requestLogRoutes } from './routes/request-logs.js';
import { usageRoutes } from './routes/usage.js';
import { byokRoutes } from './routes/byok.js';
import { modelRoutes } from './routes/models.js';
import { MULTIPART_OVERHEAD_BYTES, mediaRoutes } from './routes/media.js';
import { videoRoutes } from './routes/videos.js';
import { audioRoutes } from './routes/audio.js';
import { accountTaskRoutes } from './routes/account-tasks.js';
import { webhookSecretRoutes } from './routes/webhook-secret.js';
import { STRIPE_SIGNATURE_HEADER, STRIPE_WEBHOOK_MAX_BYTES, stripeTopUpRoutes } from './routes/stripe-topups.js';
import { signInRoutes } from './routes/signin.js';
import { CONSOLE_PATH, consoleRoutes } from './routes/console.js';
import { SealedBox } from '../auth/sealed-box.js';
import { childrenOf, seconds } from '../metrics.js';
import { log } from '../log.js';
import { METRICS_CONTENT_TYPE, metricsGuard } from './metrics-access.js';
import { idempotentHandlers } from '../routing/idempotency.js';

export interface OpsHooks {
  /** Prometheus text of the whole process (all threads). */
  readonly metricsText: () => Promise<string>;
  readonly ready: () => Promise<{ ok: boolean; checks: Record<string, string> }>;
  readonly draining: () => boolean;
}

/** Every route of the gateway on one uWS app. */
export function registerRoutes(app: TemplatedApp, services: Services, ops: OpsHooks): TemplatedApp {
  const { metrics, config } = services;
  const requestsOf = childrenOf(metrics.httpRequests);
  const durationOf = childrenOf(metrics.httpDuration);
  // One line per request only at LOG_LEVEL=debug: at production rates the metrics say it better.
  const accessLog = config.logLevel === 'debug';
  const router = new Router(app, {
    maxBodyBytes: config.maxBodyBytes,
    trustedProxies: new IpRanges(config.trustedProxies),
    inflight: services.inflight,
    onFinished: (ctx, status) => {
      const duration = seconds(ctx.startedAt);
      requestsOf(ctx.route, ctx.method, String(status)).inc();
      durationOf(ctx.route).observe(duration);
      if (accessLog) log.debug('request', { method: ctx.method, path: ctx.path, status, duration_ms: Math.round(duration * 1e6) / 1e3 });
    },
    onUnexpectedError: (ctx, error) => log.error('unexpected error', { route: ctx.route, method: ctx.method, error }),
    onAnsweredWithoutAdmission: (key) => void services.admission.countRequest(key.userId, key.id, keyLimitsOf(key.row, Date.now())),
  });

  const box = new SealedBox(config.keySecret);
  const keys = apiKeyRoutes(services, box);
  const byok = byokRoutes(services, box);
  const billing = billingRoutes(services);
  const alerts = billingAlertRoutes(services);
  const topUps = stripeTopUpRoutes(services);
  const requestLogs = requestLogRoutes(services);
  const usage = usageRoutes(services);
  const signIn = signInRoutes(services);
  // One chat pipeline for the chat, Responses and Messages endpoints (one prompt-cache partition map, one set of metric children).
  const chat = chatCompletions(services);
  const models = modelRoutes(services);
  const media = mediaRoutes(services);
  const videos = videoRoutes(services);
  const audio = audioRoutes(services);
  const accountTasks = accountTaskRoutes(services, {
    'video.generation': videos.cancelOwned, 'audio.speech': audio.speech.cancelOwned, 'audio.generation': audio.music.cancelOwned,
  });
  const webhookSecret = webhookSecretRoutes(services, box);
  // Every paid POST honours Idempotency-Key (docs/routing.md): a repeat gets the first answer, not a second charge.
  const paid = idempotentHandlers(services);
  // Routes whose handler admits the request (Admission counts it in the key's window); every other
  // request made with an API key is counted as it arrives (see RouteWindow).
  const admitted = { admitted: true };

  router
    .post('/v1/chat/completions', paid(chat), admitted)
    .post('/v1/responses', paid((ctx) => chat(ctx, RESPONSES_OUTPUT)), admitted)
    .post('/v1/messages', paid((ctx) => chat(ctx, MESSAGES_OUTPUT)), { admitted: true, anthropic: true })
    .post('/v1/messages/count_tokens', countMessageTokens(services), { anthropic: true })
    .post('/v1/images/generations', paid(imageGenerations(services)), admitted)
    .post('/v1/embeddings', paid(embeddings(services)), admitted)
    .post('/v1/videos/generations', paid(videos.submit), admitted)
    .get('/v1/videos/generations', videos.list)
    .get('/v1/videos/generations/:id', videos.get)
    .del('/v1/videos/generations/:id', videos.cancel)
    .post('/v1/audio/speech', paid(audio.speech.submit), admitted)
    .get('/v1/audio/speech', audio.speech.list)
    .get('/v1/audio/speech/:id', audio.speech.get)
    .del('/v1/audio/speech/:id', audio.speech.cancel)
    .post('/v1/audio/generations', paid(audio.music.submit), admitted)
    .get('/v1/audio/generations', audio.music.list)
    .get('/v1/audio/generations/:id', audio.music.get)
    .del('/v1/audio/generations/:id', audio.music.cancel)
    .post('/hooks/vendor-task/:id', videos.vendorHint)
    .get('/api/v1/webhook-secret', webhookSecret.get)
    .post('/api/v1/webhook-secret/rotate', webhookSecret.rotate)
    .post('/api/v1/api-keys', keys.create)
    .get('/api/v1/api-keys', keys.list)
    .put('/api/v1/api-keys/:id', keys.update)
    .del('/api/v1/api-keys/:id', keys.revoke)
    .get('/api/v1/byok', byok.list)
    .post('/api/v1/byok', byok.create)
    .put('/api/v1/byok/:id', byok.update)
    .del('/api/v1/byok/:id', byok.remove)
    .get('/api/v1/billing/balance', billing.balance)
    .get('/api/v1/billing/transactions', billing.transactions)
    .post('/api/v1/billing/coupons/redeem', billing.redeem)
    .post('/api/v1/billing/checkout', topUps.checkout)
    .post('/hooks/stripe', topUps.webhook, { maxBodyBytes: STRIPE_WEBHOOK_MAX_BYTES, signatureHeader: STRIPE_SIGNATURE_HEADER })
    .post('/api/v1/billing/alerts', alerts.create)
    .get('/api/v1/billing/alerts', alerts.list)
    .del('/api/v1/billing/alerts/:id', alerts.remove)
    .get('/api/v1/requests', requestLogs.list)
    .get('/api/v1/requests/:id', requestLogs.one)
    .get('/api/v1/usage', usage.usage)
    .get('/api/v1/tasks', accountTasks.list)
    .get('/api/v1/tasks/:id', accountTasks.one)
    .del('/api/v1/tasks/:id', accountTasks.cancel)
    // Model ids contain '/': one catch-all per prefix, the handler splits off the id (and '/pricing').
    .get('/api/v1/models', models.list)
    .get('/api/v1/models/popular', models.popular)
    .get('/api/v1/models/*', models.one)
    .get('/api/v1/pricing', models.pricing)
    .get('/v1/models', models.v1List)
    .get('/v1/models/*', models.v1One)
    .post('/v1/uploads', media.upload, { maxBodyBytes: config.media.maxBytes + MULTIPART_OVERHEAD_BYTES, admitted: true })
    .get('/media/:key', media.get)
    .head('/media/:key', media.head)
    // Dashboard sign-in: browser routes with cookies, outside /api/v1 (docs/api.md "Sign-in").
    .get('/auth/login', signIn.login, { browser: true })
    .get('/auth/callback', signIn.callback, { browser: true })
    .post('/auth/session', signIn.session, { browser: true })
    .post('/auth/logout', signIn.logout, { browser: true })
    .get('/healthz', (ctx) => ctx.reply.json(200, { status: 'ok' }))
    .get('/readyz', async (ctx) => {
      if (ops.draining()) return ctx.reply.json(503, { status: 'draining', checks: {} });
      const { ok, checks } = await ops.ready();
      ctx.reply.json(ok ? 200 : 503, { status: ok ? 'ready' : 'not ready', checks });
    });
  // With a metrics listener of its own (METRICS_PORT), the public one has no /metrics: it answers 404 as any unknown path.
  if (config.metrics.port === undefined) {
    const guard = metricsGuard(config.metrics.token);
    router.get('/metrics', async (ctx) => {
      guard(ctx.headers.authorization);
      ctx.reply.send(200, await ops.metricsText(), METRICS_CONTENT_TYPE);
    });
  }
  if (config.console.enabled) {
    // Off (CONSOLE_ENABLED=false): /console is an unknown path like any other.
    const consolePages = consoleRoutes(config);
    const files = { files: true };
    router
      .get(CONSOLE_PATH, consolePages.get, files)
      .get(`${CONSOLE_PATH}/*`, consolePages.get, files)
      .head(CONSOLE_PATH, consolePages.head, files)
      .head(`${CONSOLE_PATH}/*`, consolePages.head, files);
  }
  router
    .any('/*', (ctx) => {
      throw new ApiError(404, 'not_found', `No route for ${ctx.method.toUpperCase()} ${ctx.path}.`);
    });
  return app;
}
