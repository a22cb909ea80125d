import * as v from 'valibot';
import { isIpv4OrCidr } from './auth/ip-ranges.js';
import { availableParallelism } from 'node:os';
import { createHash, createHmac } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRedisUrl } from './store/redis-url.js';
import { localUrl } from './local-url.js';
import { DEV_JWT_SECRET, DEV_KEY_SECRET, weakSecretReason } from './weak-secrets.js';
import { RoutingFileError, readRoutingFile } from './routing/file.js';
import type { RoutingTable } from './routing/targets.js';
import type { OidcConfig } from './auth/idp-tokens.js';
import { vendorKeyProblem } from './vendor-keys.js';

/** Upstream vendors whose credentials and base URLs come from the environment. */
export const VENDORS = ['openai', 'anthropic', 'gemini', 'deepseek', 'xai', 'mistral', 'moonshot', 'zhipu', 'minimax', 'alibaba', 'bytedance', 'shengshu', 'bfl', 'elevenlabs', 'kuaishou', 'runway', 'luma', 'stability'] as const;
export type VendorName = (typeof VENDORS)[number];

/** Real base URLs, used when `<VENDOR>_API_KEY` is set and `<VENDOR>_BASE_URL` is not. */
const REAL_BASE_URLS: Record<VendorName, string> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  gemini: 'https://generativelanguage.googleapis.com/v1beta',
  deepseek: 'https://api.deepseek.com/v1',
  xai: 'https://api.x.ai/v1',
  mistral: 'https://api.mistral.ai/v1',
  moonshot: 'https://api.moonshot.ai/v1',
  zhipu: 'https://api.z.ai/api/paas/v4',
  minimax: 'https://api.minimax.io/v1',
  alibaba: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1',
  bytedance: 'https://ark.ap-southeast.bytepluses.com/api/v3',
  shengshu: 'https://api.vidu.com',
  bfl: 'https://api.bfl.ai/v1',
  elevenlabs: 'https://api.elevenlabs.io/v1',
  kuaishou: 'https://api-singapore.klingai.com/v1',
  runway: 'https://api.dev.runwayml.com/v1',
  luma: 'https://agents.lumalabs.ai/v1',
  // Stability versions each API in its path (`/v2beta/audio/...`): the base ends at the version, as Gemini's does.
  stability: 'https://api.stability.ai/v2beta',
};

const intFrom = (min: number, max: number) =>
  v.pipe(v.string(), v.trim(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(min), v.maxValue(max));
const url = (protocols: RegExp) => v.pipe(v.string(), v.trim(), v.url('must be a URL'), v.regex(protocols, `must start with ${protocols.source}`));
/** One node (`redis://`, `rediss://`) or a cluster's seeds (`redis-cluster://h:p,h:p`, `rediss-cluster://`); see redis-url.ts. */
const redisUrl = v.pipe(v.string(), v.trim(), v.rawCheck(({ dataset, addIssue }) => {
  if (!dataset.typed) return;
  try {
    parseRedisUrl(dataset.value);
  } catch (error) {
    addIssue({ message: error instanceof TypeError ? 'must be redis://[user:password@]host:port[/db] or redis-cluster://[user:password@]host:port,host:port,...' : (error as Error).message });
  }
}));
const DAY_MS = 86_400_000;
const secret = v.pipe(v.string(), v.minLength(32, 'must be at least 32 characters'));

/** The environment the gateway reads (besides `<VENDOR>_API_KEY` and `<VENDOR>_BASE_URL`); docs/configuration.md documents every key (test/docs.test.ts). */
export const EnvSchema = v.object({
  NODE_ENV: v.optional(v.string(), 'development'),
  PORT: v.optional(intFrom(0, 65535), '8080'),
  HOST: v.optional(v.pipe(v.string(), v.minLength(1)), '127.0.0.1'),
  HTTP_THREADS: v.optional(intFrom(1, 256), String(availableParallelism())),
  DATABASE_URL: v.optional(url(/^postgres(ql)?:\/\//), 'postgres://postgres@127.0.0.1:5432/gateway'),
  REDIS_URL: v.optional(redisUrl, 'redis://127.0.0.1:6379'),
  REDIS_PREFIX: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9:_.-]*$/, 'letters, digits and : _ . - only')), 'gw:'),
  JWT_SECRET: v.optional(secret, DEV_JWT_SECRET),
  KEY_SECRET: v.optional(secret, DEV_KEY_SECRET),
  KEY_PREFIX: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9]{1,8}$/, '1 to 8 lowercase letters or digits'), v.check((p) => p !== 'prov', 'must not be "prov"')), 'gw'),
  MAX_BODY_BYTES: v.optional(intFrom(1024, 512 * 1024 * 1024), String(10 * 1024 * 1024)),
  // "<requests>/<seconds>": the default per-key window (spec: 20 per 10 s).
  RATE_LIMIT_DEFAULT: v.optional(v.pipe(v.string(), v.regex(/^\d+\/\d+$/, 'must look like 20/10 (requests/seconds)')), '20/10'),
  // The per-key window of reads (GET, HEAD) made with an API key: task polls, balance, lists.
  RATE_LIMIT_READS: v.optional(v.pipe(v.string(), v.regex(/^\d+\/\d+$/, 'must look like 300/10 (requests/seconds)')), '300/10'),
  // The per-address window of GET /auth/login and GET /auth/callback together (dashboard sign-in).
  RATE_LIMIT_SIGNIN: v.optional(v.pipe(v.string(), v.regex(/^\d+\/\d+$/, 'must look like 30/60 (requests/seconds)')), '30/60'),
  RESERVATION_TTL_SECONDS: v.optional(intFrom(1, 86400), '900'),
  RESERVATION_JANITOR_SECONDS: v.optional(intFrom(1, 3600), '30'),
  ADMISSION_LEASE_CALLS: v.optional(intFrom(1, 4096), '256'),
  SETTLE_FLUSH_MS: v.optional(intFrom(0, 1000), '20'),
  // Not in a shared, world-writable folder such as /tmp: created 0700, refused when another user owns it (settlement-journal.ts).
  SETTLE_JOURNAL_DIR: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), './state/settlements'),
  SETTLE_JOURNAL_STALE_SECONDS: v.optional(intFrom(2, 3600), '30'),
  LEDGER_IDLE_POLL_MS: v.optional(intFrom(100, 60_000), '1000'),
  UPSTREAM_TIMEOUT_MS: v.optional(intFrom(1000, 3_600_000), '600000'),
  // Open connections one HTTP thread keeps to one upstream origin (one per call in progress: a stream holds one); calls beyond wait for one.
  UPSTREAM_MAX_CONNECTIONS: v.optional(intFrom(1, 1_000_000), '10000'),
  // Bounds of every upstream exchange: connecting (DNS and vetting included), its whole length (a stream's too), and the bodies read whole.
  UPSTREAM_CONNECT_TIMEOUT_MS: v.optional(intFrom(100, 600_000), '10000'),
  UPSTREAM_DEADLINE_MS: v.optional(intFrom(1000, 86_400_000), '1800000'),
  UPSTREAM_MAX_ERROR_BODY_BYTES: v.optional(intFrom(1024, 16 * 1024 * 1024), '65536'),
  UPSTREAM_MAX_BODY_BYTES: v.optional(intFrom(64 * 1024, 1024 * 1024 * 1024), String(16 * 1024 * 1024)),
  // A streamed answer is relayed as it comes; what it holds is one event until its blank line, at most this.
  UPSTREAM_MAX_EVENT_BYTES: v.optional(intFrom(16 * 1024, 256 * 1024 * 1024), String(1024 * 1024)),
  SHUTDOWN_DRAIN_MS: v.optional(intFrom(0, 3_600_000), '30000'),
  // `auto`: the built-in mock plays keyless vendors outside production only; `on`: in production too.
  MOCK_VENDOR: v.optional(v.picklist(['auto', 'on', 'off'], 'must be auto, on or off'), 'auto'),
  MOCK_VENDOR_PORT: v.optional(intFrom(0, 65535), '8090'),
  LOG_LEVEL: v.optional(v.picklist(['debug', 'info', 'warn', 'error'], 'must be debug, info, warn or error'), 'info'),
  SMTP_URL: v.optional(url(/^smtps?:\/\//)),
  ALERT_MAIL_FROM: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^[^\r\n]*@[^\r\n]*$/, 'must be a mail address, optionally with a display name')), 'Model gateway <alerts@localhost>'),
  ALERT_MAIL_POLL_MS: v.optional(intFrom(10, 3_600_000), '2000'),
  ALERT_MAIL_RETRY_MS: v.optional(intFrom(10, 3_600_000), '10000'),
  ALERT_SWEEP_MS: v.optional(intFrom(100, 86_400_000), '60000'),
  // Media storage (uploads, rehosted results): local files by default, S3 when a bucket is set.
  MEDIA_STORAGE: v.optional(v.picklist(['local', 's3', 'off'], 'must be local, s3 or off')),
  MEDIA_DIR: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), './media'),
  MEDIA_URL: v.optional(url(/^https?:\/\//)),
  MEDIA_MAX_BYTES: v.optional(intFrom(1024, 1024 * 1024 * 1024), String(20 * 1024 * 1024)),
  MEDIA_RETENTION_DAYS: v.optional(intFrom(1, 3650), '14'),
  MEDIA_SWEEP_MS: v.optional(intFrom(100, 86_400_000), '3600000'),
  MEDIA_S3_BUCKET: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9._-]{3,255}$/, 'must be a bucket name'))),
  MEDIA_S3_REGION: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), 'us-east-1'),
  MEDIA_S3_ENDPOINT: v.optional(url(/^https?:\/\//)),
  MEDIA_S3_FORCE_PATH_STYLE: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false'),
  MEDIA_S3_PREFIX: v.optional(v.pipe(v.string(), v.regex(/^(?:[A-Za-z0-9._-]+\/)*$/, 'must be empty or end with /')), ''),
  MEDIA_S3_TIMEOUT_MS: v.optional(intFrom(100, 600_000), '10000'),
  // The media host: reads in progress per HTTP thread, and how long a client may take no bytes before it is dropped.
  MEDIA_READ_CONCURRENCY: v.optional(intFrom(1, 100_000), '128'),
  MEDIA_STALL_MS: v.optional(intFrom(100, 10_000), '10000'),
  // Bytes one user's live uploads may hold in storage.
  MEDIA_USER_QUOTA_BYTES: v.optional(intFrom(1024, 2 ** 50), String(1024 * 1024 * 1024)),
  // Image calls: how often a submit-and-poll vendor is asked for its result; the whole wait is bounded by UPSTREAM_TIMEOUT_MS.
  IMAGE_POLL_MS: v.optional(intFrom(10, 60_000), '1000'),
  // URLs fetched for callers (image_urls, results to rehost): time bound, and loopback allowed (tests only).
  FETCH_TIMEOUT_MS: v.optional(intFrom(100, 600_000), '30000'),
  FETCH_ALLOW_LOOPBACK: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false'),
  // BYOK: rows one user may hold per provider, and rows one call tries (attempts are admitted without credit).
  BYOK_MAX_ROWS_PER_PROVIDER: v.optional(intFrom(1, 1000), '10'),
  BYOK_MAX_ATTEMPTS_PER_CALL: v.optional(intFrom(1, 1000), '3'),
  // Async tasks (video, audio): per-user actors on Redis Streams (README "Async tasks").
  TASK_SHARDS: v.optional(intFrom(1, 1024), '16'),
  TASK_LEASE_MS: v.optional(intFrom(300, 600_000), '10000'),
  TASK_TIMER_TICK_MS: v.optional(intFrom(5, 60_000), '250'),
  TASK_POLL_MS: v.optional(intFrom(10, 600_000), '3000'),
  TASK_TIMEOUT_MS: v.optional(intFrom(1000, 7 * DAY_MS), String(DAY_MS)),
  TASK_USER_CONCURRENCY: v.optional(intFrom(1, 10_000), '10'),
  TASK_MAX_STEPS: v.optional(intFrom(1, 10_000), '128'),
  TASK_WORKERS: v.optional(intFrom(1, 64), '2'),
  TASK_REHOST_ATTEMPTS: v.optional(intFrom(1, 20), '3'),
  TASK_RETRY_MS: v.optional(intFrom(10, 3_600_000), '2000'),
  TASK_CALLBACK_RETRY_MS: v.optional(intFrom(10, 3_600_000), '5000'),
  TASK_CALLBACK_MAX_DELAY_MS: v.optional(intFrom(10, DAY_MS), '3600000'),
  TASK_CALLBACK_WINDOW_MS: v.optional(intFrom(1000, 7 * DAY_MS), String(DAY_MS)),
  TASK_CALLBACK_TIMEOUT_MS: v.optional(intFrom(100, 600_000), '10000'),
  // The gateway's public address: vendors that call back (Vidu, Ark) are given a hint URL under it.
  PUBLIC_URL: v.optional(url(/^https?:\/\//)),
  MEDIA_MAX_VIDEO_BYTES: v.optional(intFrom(1024, 4 * 1024 * 1024 * 1024), String(256 * 1024 * 1024)),
  MEDIA_MAX_AUDIO_BYTES: v.optional(intFrom(1024, 1024 * 1024 * 1024), String(64 * 1024 * 1024)),
  TASK_GENERATE_TIMEOUT_MS: v.optional(intFrom(1000, 3_600_000), '600000'),
  // Postgres connections of one gateway process: the main thread's pool, each HTTP thread's and the task runtime's (docs/configuration.md).
  DATABASE_POOL_MAIN: v.optional(intFrom(1, 1000), '4'),
  DATABASE_POOL_PER_THREAD: v.optional(intFrom(1, 1000), '4'),
  DATABASE_POOL_TASKS: v.optional(intFrom(1, 1000), '8'),
  // GET /api/v1/usage's hourly rollup lives this many calendar months (the request log itself two).
  USAGE_ROLLUP_RETENTION_MONTHS: v.optional(intFrom(2, 120), '13'),
  TRUSTED_PROXIES: v.optional(v.pipe(
    v.string(),
    v.transform((list) => list.split(',').map((entry) => entry.trim()).filter(Boolean)),
    v.check((entries) => entries.every(isIpv4OrCidr), 'must be a comma-separated list of IPv4 addresses or CIDRs'),
  ), ''),
  // /metrics: a Bearer token, and/or its own listener (the public one then has no /metrics); production refuses it open on the public one unless METRICS_PUBLIC=true.
  METRICS_TOKEN: v.optional(secret),
  METRICS_PORT: v.optional(intFrom(1, 65535)),
  METRICS_HOST: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), '127.0.0.1'),
  METRICS_PUBLIC: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'false'),
  // Credentials (docs/api.md "Credentials and roles"): failed-authentication budget per source address, key cache, JWT lifetime, per-account caps.
  AUTH_FAILURE_BUDGET: v.optional(intFrom(0, 1_000_000), '30'),
  AUTH_FAILURE_WINDOW_SECONDS: v.optional(intFrom(1, 86400), '60'),
  AUTH_KEY_CACHE_ENTRIES: v.optional(intFrom(100, 10_000_000), '100000'),
  JWT_MAX_LIFETIME_SECONDS: v.optional(intFrom(60, 30 * 86400), '86400'),
  // Access tokens of an OpenID provider on /api/v1 (docs/api.md "Identity-provider tokens"): its issuer, the audience they must name, where its keys are.
  OIDC_ISSUER: v.optional(url(/^https?:\/\//)),
  OIDC_AUDIENCE: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(1024))),
  OIDC_JWKS_URL: v.optional(url(/^https?:\/\//)),
  OIDC_FETCH_TIMEOUT_MS: v.optional(intFrom(100, 60_000), '5000'),
  OIDC_JWKS_COOLDOWN_MS: v.optional(intFrom(100, 3_600_000), '30000'),
  // Dashboard sign-in with an OpenID provider (docs/api.md "Sign-in"): off unless OIDC_CLIENT_ID is set.
  OIDC_SIGNIN_ISSUER: v.optional(url(/^https?:\/\//)),
  OIDC_CLIENT_ID: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(1024))),
  OIDC_CLIENT_SECRET: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(4096))),
  OIDC_REDIRECT_URL: v.optional(url(/^https?:\/\//)),
  OIDC_SIGNIN_SCOPES: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^openid( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'must be space-separated scopes starting with openid')), 'openid email profile'),
  SIGNIN_SUCCESS_URL: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^\/(?![\/\\])[\x21-\x7e]*$/, 'must be a path on this gateway (starting with a single /)')), '/console'),
  SIGNIN_SESSION_TTL_SECONDS: v.optional(intFrom(300, 90 * 86400), String(7 * 86400)),
  SESSION_JWT_TTL_SECONDS: v.optional(intFrom(60, 3600), '900'),
  SIGNIN_COOKIE_SECURE: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'true'),
  // Development sign-in (docs/configuration.md): `auto` starts a local OpenID provider outside production when OIDC_CLIENT_ID is unset.
  DEV_IDENTITY_PROVIDER: v.optional(v.picklist(['auto', 'on', 'off'], 'must be auto, on or off'), 'auto'),
  DEV_IDENTITY_PROVIDER_PORT: v.optional(intFrom(0, 65535), '8091'),
  API_KEYS_PER_ACCOUNT: v.optional(intFrom(1, 1_000_000), '1000'),
  COUPON_FAILURE_BUDGET: v.optional(intFrom(1, 1_000_000), '10'),
  COUPON_FAILURE_WINDOW_SECONDS: v.optional(intFrom(1, 7 * 86400), '3600'),
  // Idempotency-Key on paid POSTs (docs/routing.md): how long an answer is kept, its size bound, how long a repeat waits for a running first request.
  IDEMPOTENCY_RETENTION_SECONDS: v.optional(intFrom(60, 7 * 86400), '86400'),
  IDEMPOTENCY_MAX_ENTRY_BYTES: v.optional(intFrom(1024, 64 * 1024 * 1024), String(1024 * 1024)),
  IDEMPOTENCY_WAIT_MS: v.optional(intFrom(0, 600_000), '10000'),
  // Routing (docs/routing.md): the file of targets, and the bounds of the attempts before a call's first byte.
  ROUTING_FILE: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1))),
  ROUTING_MAX_ATTEMPTS: v.optional(intFrom(1, 32), '3'),
  ROUTING_DEADLINE_MS: v.optional(intFrom(100, 3_600_000), '30000'),
  ROUTING_BREAKER_FAILURES: v.optional(intFrom(1, 1000), '5'),
  ROUTING_BREAKER_COOLDOWN_MS: v.optional(intFrom(100, 3_600_000), '30000'),
  // Card top-ups through Stripe Checkout (docs/payments.md): off (503 payments_unavailable) without a secret key.
  STRIPE_SECRET_KEY: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^(sk|rk)_[A-Za-z0-9_]+$/, 'must be a Stripe secret or restricted key (sk_... or rk_...)'))),
  STRIPE_WEBHOOK_SECRET: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^whsec_[A-Za-z0-9+/=_]+$/, 'must be a webhook signing secret (whsec_...)'))),
  // Where the SDK sends its API calls instead of https://api.stripe.com (tests and the demo: the mock vendor).
  STRIPE_API_BASE: v.optional(url(/^https?:\/\//)),
  STRIPE_TIMEOUT_MS: v.optional(intFrom(1000, 120_000), '20000'),
  STRIPE_WEBHOOK_TOLERANCE_SECONDS: v.optional(intFrom(1, 3600), '300'),
  STRIPE_SUCCESS_URL: v.optional(url(/^https?:\/\//)),
  STRIPE_CANCEL_URL: v.optional(url(/^https?:\/\//)),
  TOPUP_MIN_USD: v.optional(intFrom(1, 1_000_000), '5'),
  TOPUP_MAX_USD: v.optional(intFrom(1, 1_000_000), '10000'),
  // The web console at /console (docs/console.md): on by default, served from the built files in CONSOLE_DIR.
  CONSOLE_ENABLED: v.optional(v.picklist(['true', 'false'], 'must be true or false'), 'true'),
  CONSOLE_DIR: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1))),
});

export interface VendorConfig {
  readonly name: VendorName;
  readonly baseUrl: string;
  readonly apiKey: string;
  /** True when no key is set and no base URL either, and a mock may play it (outside production, or MOCK_VENDOR=on). */
  readonly mocked: boolean;
  /** False when the vendor has no key, no base URL and no mock: its models are listed inactive (catalog/seed). */
  readonly served: boolean;
}

/** Who may read /metrics, and where. */
export interface MetricsAccessConfig {
  /** Bearer token /metrics requires (compared in constant time); undefined: none. */
  readonly token: string | undefined;
  /** A listener of its own for /metrics (the public listener then answers 404 there); undefined: the public listener serves it. */
  readonly port: number | undefined;
  readonly host: string;
}

export interface Config {
  readonly production: boolean;
  readonly port: number;
  readonly host: string;
  readonly httpThreads: number;
  readonly databaseUrl: string;
  /** Most Postgres connections of each pool of a process: the main thread's, each HTTP thread's, the task runtime's. */
  readonly databasePools: { readonly main: number; readonly perThread: number; readonly tasks: number };
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly jwtSecret: string;
  readonly keySecret: string;
  readonly keyPrefix: string;
  readonly maxBodyBytes: number;
  /** The default request window of every API key (RATE_LIMIT_DEFAULT). */
  readonly rateLimit: { readonly requests: number; readonly windowMs: number };
  /** The read window (GET, HEAD) of every API key (RATE_LIMIT_READS). */
  readonly readRateLimit: { readonly requests: number; readonly windowMs: number };
  /** The sign-in window of each client address: /auth/login and /auth/callback together (RATE_LIMIT_SIGNIN). */
  readonly signInRateLimit: { readonly requests: number; readonly windowMs: number };
  readonly reservationTtlMs: number;
  /** How often the janitor looks for leases past their deadline. */
  readonly reservationJanitorMs: number;
  /** Most calls one admission lease may admit; 1 admits call by call. */
  readonly leaseMaxCalls: number;
  /** How long settlements may wait to leave for Redis together (0: at the end of their turn). */
  readonly settleFlushMs: number;
  /** The settlement journals of this Redis and prefix (SETTLE_JOURNAL_DIR has one folder per pair). */
  readonly settleJournalDir: string;
  /** A journal untouched this long belongs to a dead HTTP thread and is replayed. */
  readonly settleJournalStaleMs: number;
  /** The ledger writer's longest pause while no events come (a thread's settlements end it at once). */
  readonly ledgerIdlePollMs: number;
  readonly upstreamTimeoutMs: number;
  /** Most connections one HTTP thread opens to one upstream origin (each call in progress holds one). */
  readonly upstreamMaxConnections: number;
  /** A new upstream connection (resolving and vetting a guarded host included) must be up within this. */
  readonly upstreamConnectTimeoutMs: number;
  /** The longest one upstream exchange may last, streams included: the documented maximum call duration. */
  readonly upstreamDeadlineMs: number;
  /** An upstream error body is read up to this, then its connection closed. */
  readonly upstreamMaxErrorBodyBytes: number;
  /** A non-streamed upstream answer larger than this is refused (502 upstream_response_too_large). */
  readonly upstreamMaxBodyBytes: number;
  /** A streamed upstream event still incomplete after this many bytes breaks the stream (upstream_stream_broken). */
  readonly upstreamMaxEventBytes: number;
  readonly shutdownDrainMs: number;
  readonly mockVendor: 'auto' | 'on' | 'off';
  readonly mockVendorPort: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Proxies whose `X-Forwarded-For` is believed (IPv4 addresses or CIDRs). */
  readonly trustedProxies: readonly string[];
  readonly vendors: Readonly<Record<VendorName, VendorConfig>>;
  /** SMTP relay of the alert mails; without it they stay queued in the outbox. */
  readonly smtpUrl: string | undefined;
  readonly alertMailFrom: string;
  readonly alertMailPollMs: number;
  readonly alertMailRetryMs: number;
  readonly alertSweepMs: number;
  /** Calendar months the usage rollup (GET /api/v1/usage) is kept. */
  readonly usageRollupRetentionMonths: number;
  readonly usesDevSecrets: boolean;
  readonly media: MediaConfig;
  readonly imagePollMs: number;
  readonly fetch: FetchConfig;
  readonly tasks: TaskConfig;
  readonly byok: ByokConfig;
  readonly metrics: MetricsAccessConfig;
  readonly auth: AuthConfig;
  /** The identity provider whose access tokens /api/v1 takes; undefined: none (OIDC_ISSUER unset). */
  readonly oidc: OidcConfig | undefined;
  /** Dashboard sign-in through an OpenID provider; undefined: off (OIDC_CLIENT_ID unset). */
  readonly signIn: SignInConfig | undefined;
  /** Lifetime of a dashboard session JWT (SESSION_JWT_TTL_SECONDS). */
  readonly sessionJwtTtlSeconds: number;
  readonly routing: RoutingConfig;
  readonly idempotency: IdempotencyConfig;
  readonly payments: PaymentsConfig;
  readonly console: ConsoleConfig;
  /** The development identity provider to start (src/auth/dev-identity-provider.ts); undefined: none. */
  readonly devIdentityProvider: DevIdentityProviderConfig | undefined;
}

export interface DevIdentityProviderConfig {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** DEV_IDENTITY_PROVIDER=on: a provider that cannot start stops the gateway (`auto` goes on without sign-in). */
  readonly required: boolean;
  /** The gateway's /auth/callback, where the provider sends a signed-in browser back. */
  readonly redirectUrl: string;
}

/** The web console (src/http/routes/console.ts). */
export interface ConsoleConfig {
  /** False: /console answers 404 as any unknown path. */
  readonly enabled: boolean;
  /** The built console (index.html and assets/), read at start-up. */
  readonly dir: string;
}

/** Where `npm run build` puts the console: dist/console, beside this module's dist/src. */
const BUILT_CONSOLE_DIR = fileURLToPath(new URL('../console', import.meta.url));

/** Dashboard sign-in (src/auth/signin-flow.ts, docs/api.md "Sign-in"). */
export interface SignInConfig {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** OIDC_REDIRECT_URL: the gateway's /auth/callback, exactly as registered with the provider. */
  readonly redirectUrl: string;
  /** The gateway's origin (the redirect URL's): the only `Origin` cookie-authenticated POSTs may come from. */
  readonly origin: string;
  readonly scopes: string;
  /** Where a signed-in browser is sent (a path on this gateway). */
  readonly successPath: string;
  readonly sessionTtlSeconds: number;
  readonly secureCookies: boolean;
  /** Bound of each request to the provider (discovery, token endpoint, keys), body included. */
  readonly fetchTimeoutMs: number;
  /** Plain-http providers are allowed (development and tests); never in production. */
  readonly allowHttp: boolean;
}

/** Card top-ups through Stripe Checkout (src/payments/, docs/payments.md). */
export interface PaymentsConfig {
  /** Undefined: top-ups by card are off (503 `payments_unavailable`); set, so are the webhook secret and both return URLs. */
  readonly stripe: {
    readonly secretKey: string;
    readonly webhookSecret: string;
    /** The SDK's `protocol`, `host` and `port` when STRIPE_API_BASE is set; undefined: Stripe itself. */
    readonly apiBase: { readonly protocol: 'http' | 'https'; readonly host: string; readonly port: number } | undefined;
    readonly timeoutMs: number;
    /** Oldest signature timestamp the webhook takes, seconds. */
    readonly webhookToleranceSeconds: number;
    /** Where Checkout sends the payer back: set by the operator, never by the caller (no open redirect). */
    readonly successUrl: string;
    readonly cancelUrl: string;
    /**
     * Set when the built-in mock vendor plays Stripe (development without STRIPE_SECRET_KEY): the
     * gateway's own webhook, where the mock's checkout page delivers its signed events.
     */
    readonly mock: { readonly webhookUrl: string } | undefined;
  } | undefined;
  /** Bounds of one top-up, whole USD. */
  readonly minUsd: number;
  readonly maxUsd: number;
}

/** Idempotency-Key on paid POSTs (src/routing/idempotency.ts). */
export interface IdempotencyConfig {
  /** How long a first request's answer is kept for its repeats. */
  readonly retentionMs: number;
  /** The largest answer kept (status, headers and body); a larger one's repeat is 409 `idempotency_replay_too_large`. */
  readonly maxEntryBytes: number;
  /** How long a repeat waits for its first request to finish before 409 `idempotency_in_progress` (0: at once). */
  readonly waitMs: number;
}

/** Limits on credentials and on guessing them (src/auth/). */
export interface AuthConfig {
  /** Failed authentications one source address may have per window in one HTTP thread (0: no limit); past it 429 before any lookup. */
  readonly failureBudget: number;
  readonly failureWindowMs: number;
  /** API keys one HTTP thread keeps verified in memory (least recently used go first). */
  readonly keyCacheEntries: number;
  /** Longest lifetime a JWT may claim (`exp` - `iat`, and `exp` - now). */
  readonly jwtMaxLifetimeSeconds: number;
  /** Live API keys (regular and management) one account may hold. */
  readonly keysPerAccount: number;
  /** Failed coupon redemptions one account may have per window (all threads and processes: Redis). */
  readonly couponFailureBudget: number;
  readonly couponFailureWindowMs: number;
}

/** Bounds on users' own upstream credentials (docs/byok.md "Limits"). */
export interface ByokConfig {
  /** Rows one user may hold for one provider (disabled ones included). */
  readonly maxRowsPerProvider: number;
  /** Rows one call tries at most, in selection order, before the platform credential (or the always_use error). */
  readonly maxAttemptsPerCall: number;
}

/** The task runtime (src/tasks/): shards, leases, timers and pacing. */
export interface TaskConfig {
  /** Shards users are spread over (`hash(user) mod shards`); keep it fixed for the life of a deployment. */
  readonly shards: number;
  /** A shard lease's life; its owner renews it every third of that. A dead owner's shards move after it. */
  readonly leaseMs: number;
  /** Least time between two passes that move due timers (polls, retries, callback attempts) into the shard streams. */
  readonly timerTickMs: number;
  /** Pause between two polls of a vendor task. */
  readonly pollMs: number;
  /** A vendor task still running this long after it was accepted fails (`upstream_timeout`). */
  readonly timeoutMs: number;
  /** Tasks one user may have running at vendors at once; later ones wait their turn, in order. */
  readonly userConcurrency: number;
  /** Steps one process runs at once (across users). */
  readonly maxSteps: number;
  /** Worker threads of the task pool (vendor calls, downloads, callbacks). */
  readonly workers: number;
  /** Downloads of a result tried before its task fails. */
  readonly rehostAttempts: number;
  /** First pause after a transient failure (doubling, up to the poll pacing's 10-fold). */
  readonly retryMs: number;
  readonly callbackRetryMs: number;
  readonly callbackMaxDelayMs: number;
  /** Callback attempts continue this long after the first one. */
  readonly callbackWindowMs: number;
  readonly callbackTimeoutMs: number;
  /** Largest result a task downloads to rehost. */
  readonly maxMediaBytes: number;
  /** Largest audio result taken (it is held whole: it is timed from its bytes). */
  readonly maxAudioBytes: number;
  /** Longest exchange with a vendor that answers with the result itself (a song takes minutes). */
  readonly generateTimeoutMs: number;
  /** PUBLIC_URL without a trailing slash: where vendors' status callbacks (hints to poll now) reach the gateway; undefined: none asked for. */
  readonly publicUrl: string | undefined;
}

/** Fetching URLs named by callers or returned by vendors (src/media/url-guard.ts). */
export interface FetchConfig {
  readonly timeoutMs: number;
  /** Tests only (refused in production): loopback addresses, and plain http to them, are fetched. */
  readonly allowLoopback: boolean;
}

export interface MediaConfig {
  /** `off`: no uploads (503) and no rehosting. */
  readonly storage: 'local' | 's3' | 'off';
  /** Directory of the local storage. */
  readonly dir: string;
  /** Public base address of stored media, no trailing slash (default: this gateway's `/media`). */
  readonly url: string;
  readonly maxBytes: number;
  readonly retentionMs: number;
  /** How often the main process's janitor deletes expired media. */
  readonly sweepMs: number;
  readonly s3: {
    readonly bucket: string; readonly region: string; readonly endpoint: string | undefined; readonly forcePathStyle: boolean; readonly prefix: string;
    /** The store's silence bound: connecting, an answer's head, each piece of a body the gateway waits for. */
    readonly timeoutMs: number;
  } | undefined;
  /** Media reads in progress per HTTP thread; more are answered 503 `media_busy`. */
  readonly readConcurrency: number;
  /** A media read whose client takes no bytes this long is disconnected (uWS's own HTTP idle timeout, 10 s, caps it). */
  readonly stallMs: number;
  /** Bytes one user's unexpired uploads may hold; an upload past it is 413 `upload_quota_exceeded`. */
  readonly userQuotaBytes: number;
}

/** Targets beyond each vendor's one credential, and how calls move between them (docs/routing.md). */
export interface RoutingConfig {
  /** The ROUTING_FILE's targets; undefined without one (each vendor is its one `<VENDOR>_API_KEY` target). */
  readonly table: RoutingTable | undefined;
  /** Most attempts of one call before its first byte, each on another target. */
  readonly maxAttempts: number;
  /** No attempt starts later than this after the call began. */
  readonly deadlineMs: number;
  /** Consecutive retryable failures that cool a target down. */
  readonly breakerFailures: number;
  /** How long a target that kept failing is skipped before one probe call. */
  readonly breakerCooldownMs: number;
}

export class ConfigError extends Error {}

/** Parses the environment once; a bad value throws ConfigError with one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, mockVendorUrl?: string): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = v.safeParse(EnvSchema, present);
  if (!result.success) {
    const issue = result.issues[0];
    const name = issue.path?.map((p) => String(p.key)).join('.') ?? 'environment';
    throw new ConfigError(`invalid ${name}: ${issue.message}`);
  }
  const e = result.output;
  const production = e.NODE_ENV === 'production';
  const usesDevSecrets = e.JWT_SECRET === DEV_JWT_SECRET || e.KEY_SECRET === DEV_KEY_SECRET;
  if (production) refuseInProduction(e);
  const rateLimit = windowOf('RATE_LIMIT_DEFAULT', e.RATE_LIMIT_DEFAULT);
  const oidc = oidcOf(e);
  const readRateLimit = windowOf('RATE_LIMIT_READS', e.RATE_LIMIT_READS);

  // Production never answers with the mock (at real prices) unless asked to in so many words. Outside
  // production, MOCK_VENDOR=off only keeps the built-in one from starting: keyless vendors go to a separately run mock.
  const mockAllowed = e.MOCK_VENDOR === 'on' || !production;
  const vendors = {} as Record<VendorName, VendorConfig>;
  for (const name of VENDORS) {
    const upper = name.toUpperCase();
    const apiKey = env[`${upper}_API_KEY`] ?? '';
    const baseUrl = env[`${upper}_BASE_URL`] ?? '';
    if (baseUrl && !/^https?:\/\/[^\s]+$/.test(baseUrl)) throw new ConfigError(`invalid ${upper}_BASE_URL: must be an http(s) URL`);
    const keyProblem = apiKey ? vendorKeyProblem(name, apiKey) : undefined;
    if (keyProblem) throw new ConfigError(`invalid ${upper}_API_KEY: ${keyProblem}`);
    const mocked = !apiKey && !baseUrl && mockAllowed;
    const mockBase = `${mockVendorUrl ?? `http://127.0.0.1:${e.MOCK_VENDOR_PORT}`}/${name}/v1`;
    vendors[name] = Object.freeze({
      name,
      // A URL without a key (a mock or proxy of the operator's) gets the placeholder key; an unconfigured vendor none.
      apiKey: apiKey || (baseUrl || mocked ? 'mock-key' : ''),
      baseUrl: (baseUrl || (mocked ? mockBase : REAL_BASE_URLS[name])).replace(/\/+$/, ''),
      mocked,
      served: Boolean(apiKey || baseUrl) || mocked,
    });
  }

  let table: RoutingTable | undefined;
  if (e.ROUTING_FILE !== undefined) {
    try {
      table = readRoutingFile(e.ROUTING_FILE, vendors, env, { allowLoopback: e.FETCH_ALLOW_LOOPBACK === 'true' });
    } catch (error) {
      if (error instanceof RoutingFileError) throw new ConfigError(`invalid ROUTING_FILE: ${error.message}`);
      throw error;
    }
    // A vendor the file gives credentials is served even without `<VENDOR>_API_KEY`.
    for (const name of Object.keys(table.vendors) as VendorName[]) vendors[name] = Object.freeze({ ...vendors[name], served: true });
  }

  const storage = e.MEDIA_STORAGE ?? (e.MEDIA_S3_BUCKET ? 's3' : 'local');
  if (storage === 's3' && !e.MEDIA_S3_BUCKET) throw new ConfigError('invalid MEDIA_S3_BUCKET: required when MEDIA_STORAGE is s3');
  const media: MediaConfig = Object.freeze({
    storage,
    dir: e.MEDIA_DIR,
    url: (e.MEDIA_URL ?? `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}/media`).replace(/\/+$/, ''),
    maxBytes: e.MEDIA_MAX_BYTES,
    retentionMs: e.MEDIA_RETENTION_DAYS * DAY_MS,
    sweepMs: e.MEDIA_SWEEP_MS,
    s3: storage === 's3' ? Object.freeze({
      bucket: e.MEDIA_S3_BUCKET!,
      region: e.MEDIA_S3_REGION,
      endpoint: e.MEDIA_S3_ENDPOINT,
      forcePathStyle: e.MEDIA_S3_FORCE_PATH_STYLE === 'true',
      prefix: e.MEDIA_S3_PREFIX,
      timeoutMs: e.MEDIA_S3_TIMEOUT_MS,
    }) : undefined,
    readConcurrency: e.MEDIA_READ_CONCURRENCY,
    stallMs: e.MEDIA_STALL_MS,
    userQuotaBytes: e.MEDIA_USER_QUOTA_BYTES,
  });

  return Object.freeze({
    production,
    port: e.PORT,
    host: e.HOST,
    httpThreads: e.HTTP_THREADS,
    databaseUrl: e.DATABASE_URL,
    databasePools: Object.freeze({ main: e.DATABASE_POOL_MAIN, perThread: e.DATABASE_POOL_PER_THREAD, tasks: e.DATABASE_POOL_TASKS }),
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    jwtSecret: e.JWT_SECRET,
    keySecret: e.KEY_SECRET,
    keyPrefix: e.KEY_PREFIX,
    maxBodyBytes: e.MAX_BODY_BYTES,
    rateLimit,
    readRateLimit,
    signInRateLimit: windowOf('RATE_LIMIT_SIGNIN', e.RATE_LIMIT_SIGNIN),
    reservationTtlMs: e.RESERVATION_TTL_SECONDS * 1000,
    reservationJanitorMs: e.RESERVATION_JANITOR_SECONDS * 1000,
    leaseMaxCalls: e.ADMISSION_LEASE_CALLS,
    settleFlushMs: e.SETTLE_FLUSH_MS,
    settleJournalDir: join(e.SETTLE_JOURNAL_DIR, journalNamespace(e.REDIS_URL, e.REDIS_PREFIX)),
    settleJournalStaleMs: e.SETTLE_JOURNAL_STALE_SECONDS * 1000,
    ledgerIdlePollMs: e.LEDGER_IDLE_POLL_MS,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    upstreamMaxConnections: e.UPSTREAM_MAX_CONNECTIONS,
    upstreamConnectTimeoutMs: e.UPSTREAM_CONNECT_TIMEOUT_MS,
    upstreamDeadlineMs: e.UPSTREAM_DEADLINE_MS,
    upstreamMaxErrorBodyBytes: e.UPSTREAM_MAX_ERROR_BODY_BYTES,
    upstreamMaxBodyBytes: e.UPSTREAM_MAX_BODY_BYTES,
    upstreamMaxEventBytes: e.UPSTREAM_MAX_EVENT_BYTES,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    mockVendor: e.MOCK_VENDOR,
    mockVendorPort: e.MOCK_VENDOR_PORT,
    logLevel: e.LOG_LEVEL,
    trustedProxies: Object.freeze(e.TRUSTED_PROXIES),
    vendors: Object.freeze(vendors),
    smtpUrl: e.SMTP_URL,
    alertMailFrom: e.ALERT_MAIL_FROM,
    alertMailPollMs: e.ALERT_MAIL_POLL_MS,
    alertMailRetryMs: e.ALERT_MAIL_RETRY_MS,
    alertSweepMs: e.ALERT_SWEEP_MS,
    usageRollupRetentionMonths: e.USAGE_ROLLUP_RETENTION_MONTHS,
    usesDevSecrets,
    media,
    imagePollMs: e.IMAGE_POLL_MS,
    fetch: Object.freeze({ timeoutMs: e.FETCH_TIMEOUT_MS, allowLoopback: e.FETCH_ALLOW_LOOPBACK === 'true' }),
    byok: Object.freeze({ maxRowsPerProvider: e.BYOK_MAX_ROWS_PER_PROVIDER, maxAttemptsPerCall: e.BYOK_MAX_ATTEMPTS_PER_CALL }),
    tasks: Object.freeze({
      shards: e.TASK_SHARDS,
      leaseMs: e.TASK_LEASE_MS,
      timerTickMs: e.TASK_TIMER_TICK_MS,
      pollMs: e.TASK_POLL_MS,
      timeoutMs: e.TASK_TIMEOUT_MS,
      userConcurrency: e.TASK_USER_CONCURRENCY,
      maxSteps: e.TASK_MAX_STEPS,
      workers: e.TASK_WORKERS,
      rehostAttempts: e.TASK_REHOST_ATTEMPTS,
      retryMs: e.TASK_RETRY_MS,
      callbackRetryMs: e.TASK_CALLBACK_RETRY_MS,
      callbackMaxDelayMs: e.TASK_CALLBACK_MAX_DELAY_MS,
      callbackWindowMs: e.TASK_CALLBACK_WINDOW_MS,
      callbackTimeoutMs: e.TASK_CALLBACK_TIMEOUT_MS,
      maxMediaBytes: e.MEDIA_MAX_VIDEO_BYTES,
      maxAudioBytes: e.MEDIA_MAX_AUDIO_BYTES,
      generateTimeoutMs: e.TASK_GENERATE_TIMEOUT_MS,
      publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    }),
    routing: Object.freeze({
      table, maxAttempts: e.ROUTING_MAX_ATTEMPTS, deadlineMs: e.ROUTING_DEADLINE_MS,
      breakerFailures: e.ROUTING_BREAKER_FAILURES, breakerCooldownMs: e.ROUTING_BREAKER_COOLDOWN_MS,
    }),
    metrics: Object.freeze({ token: e.METRICS_TOKEN, port: e.METRICS_PORT, host: e.METRICS_HOST }),
    auth: Object.freeze({
      failureBudget: e.AUTH_FAILURE_BUDGET,
      failureWindowMs: e.AUTH_FAILURE_WINDOW_SECONDS * 1000,
      keyCacheEntries: e.AUTH_KEY_CACHE_ENTRIES,
      jwtMaxLifetimeSeconds: e.JWT_MAX_LIFETIME_SECONDS,
      keysPerAccount: e.API_KEYS_PER_ACCOUNT,
      couponFailureBudget: e.COUPON_FAILURE_BUDGET,
      couponFailureWindowMs: e.COUPON_FAILURE_WINDOW_SECONDS * 1000,
    }),
    payments: paymentsOf(e, production, mockVendorUrl),
    console: Object.freeze({ enabled: e.CONSOLE_ENABLED === 'true', dir: e.CONSOLE_DIR ?? BUILT_CONSOLE_DIR }),
    devIdentityProvider: devIdentityProviderOf(e, production),
    oidc,
    signIn: signInOf(e, production),
    sessionJwtTtlSeconds: e.SESSION_JWT_TTL_SECONDS,
    idempotency: Object.freeze({
      retentionMs: e.IDEMPOTENCY_RETENTION_SECONDS * 1000,
      maxEntryBytes: e.IDEMPOTENCY_MAX_ENTRY_BYTES,
      waitMs: e.IDEMPOTENCY_WAIT_MS,
    }),
  });
}

type Env = v.InferOutput<typeof EnvSchema>;

/** What NODE_ENV=production refuses: published, guessable or shared secrets, test-only switches, an open /metrics. */
function refuseInProduction(e: Env): void {
  if (e.FETCH_ALLOW_LOOPBACK === 'true') throw new ConfigError('invalid FETCH_ALLOW_LOOPBACK: only for tests, never in production');
  // The provider's keys decide who may manage accounts: never fetched where they could be swapped on the way.
  for (const name of ['OIDC_ISSUER', 'OIDC_JWKS_URL'] as const) {
    if (e[name] !== undefined && !e[name].startsWith('https://')) throw new ConfigError(`invalid ${name}: must be https in production`);
  }
  if (e.JWT_SECRET === DEV_JWT_SECRET || e.KEY_SECRET === DEV_KEY_SECRET) {
    throw new ConfigError('invalid JWT_SECRET/KEY_SECRET: set both in production (at least 32 characters each)');
  }
  const secrets: [string, string | undefined][] = [['JWT_SECRET', e.JWT_SECRET], ['KEY_SECRET', e.KEY_SECRET], ['METRICS_TOKEN', e.METRICS_TOKEN]];
  for (const [name, value] of secrets) {
    const reason = value === undefined ? undefined : weakSecretReason(value);
    if (reason) throw new ConfigError(`invalid ${name}: refused in production because ${reason}; generate one, e.g. openssl rand -base64 48`);
  }
  for (let i = 0; i < secrets.length; i++) {
    for (let j = i + 1; j < secrets.length; j++) {
      if (secrets[i]![1] !== undefined && secrets[i]![1] === secrets[j]![1]) {
        throw new ConfigError(`invalid ${secrets[j]![0]}: must differ from ${secrets[i]![0]} (one leaked secret must not give away the other)`);
      }
    }
  }
  if (e.METRICS_TOKEN === undefined && e.METRICS_PORT === undefined && e.METRICS_PUBLIC !== 'true') {
    throw new ConfigError('invalid METRICS_TOKEN: production does not serve /metrics open on the public listener; set METRICS_TOKEN, or METRICS_PORT (a listener of its own), or METRICS_PUBLIC=true');
  }
}

/**
 * The Stripe settings: all or nothing (a key without its webhook secret would take payments it can never
 * credit). The return URLs default to the console's billing page under PUBLIC_URL. Outside production,
 * with no key and the built-in mock vendor allowed (MOCK_VENDOR not off), the mock plays Stripe: top-ups
 * work out of the box in development, and never in production.
 */
function paymentsOf(e: Env, production: boolean, mockVendorUrl: string | undefined): PaymentsConfig {
  if (e.TOPUP_MIN_USD > e.TOPUP_MAX_USD) throw new ConfigError('invalid TOPUP_MIN_USD: must not exceed TOPUP_MAX_USD');
  const bounds = { minUsd: e.TOPUP_MIN_USD, maxUsd: e.TOPUP_MAX_USD };
  if (e.STRIPE_SECRET_KEY === undefined) {
    if (e.STRIPE_WEBHOOK_SECRET !== undefined) throw new ConfigError('invalid STRIPE_SECRET_KEY: required when STRIPE_WEBHOOK_SECRET is set');
    if (production || e.MOCK_VENDOR === 'off') return Object.freeze({ stripe: undefined, ...bounds });
    const gateway = localUrl(e.HOST, e.PORT);
    return Object.freeze({
      stripe: Object.freeze({
        secretKey: MOCK_STRIPE_SECRET_KEY,
        webhookSecret: mockStripeWebhookSecret(e.KEY_SECRET),
        apiBase: apiBaseOf(mockVendorUrl ?? `http://127.0.0.1:${e.MOCK_VENDOR_PORT}`),
        timeoutMs: e.STRIPE_TIMEOUT_MS,
        webhookToleranceSeconds: e.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
        ...returnUrlsOf(e, e.PUBLIC_URL ?? gateway),
        mock: Object.freeze({ webhookUrl: `${gateway}/hooks/stripe` }),
      }),
      ...bounds,
    });
  }
  if (e.STRIPE_WEBHOOK_SECRET === undefined) throw new ConfigError('invalid STRIPE_WEBHOOK_SECRET: required when STRIPE_SECRET_KEY is set (payments could not be credited without it)');
  return Object.freeze({
    stripe: Object.freeze({
      secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET,
      apiBase: e.STRIPE_API_BASE === undefined ? undefined : apiBaseOf(e.STRIPE_API_BASE),
      timeoutMs: e.STRIPE_TIMEOUT_MS, webhookToleranceSeconds: e.STRIPE_WEBHOOK_TOLERANCE_SECONDS,
      ...returnUrlsOf(e, e.PUBLIC_URL), mock: undefined,
    }),
    ...bounds,
  });
}

/** The mock's Stripe takes any test key; this one names itself in logs and in the mock's records. */
export const MOCK_STRIPE_SECRET_KEY = 'sk_test_gateway_development_mock';

/**
 * The webhook secret shared by the gateway and the mock playing Stripe: derived from KEY_SECRET, so every
 * loadConfig of one process agrees on it and it is as private as that secret.
 */
function mockStripeWebhookSecret(keySecret: string): string {
  return `whsec_test_${createHmac('sha256', keySecret).update('mock stripe webhook').digest('hex')}`;
}

/** STRIPE_SUCCESS_URL and STRIPE_CANCEL_URL, by default the console's billing page under `origin`. */
function returnUrlsOf(e: Env, origin: string | undefined): { successUrl: string; cancelUrl: string } {
  const billingPage = origin === undefined ? undefined : `${origin.replace(/\/+$/, '')}/console/billing`;
  const successUrl = e.STRIPE_SUCCESS_URL ?? (billingPage && `${billingPage}?checkout=success&session_id={CHECKOUT_SESSION_ID}`);
  const cancelUrl = e.STRIPE_CANCEL_URL ?? (billingPage && `${billingPage}?checkout=cancelled`);
  if (successUrl === undefined || cancelUrl === undefined) {
    throw new ConfigError('invalid STRIPE_SUCCESS_URL: required with STRIPE_SECRET_KEY unless PUBLIC_URL is set (then the console billing page is the default)');
  }
  return { successUrl, cancelUrl };
}

/** The SDK's `protocol`, `host` and `port` for another API origin (STRIPE_API_BASE, or the mock's). */
function apiBaseOf(origin: string): NonNullable<PaymentsConfig['stripe']>['apiBase'] {
  const base = new URL(origin);
  if (base.pathname !== '/' || base.search !== '') throw new ConfigError('invalid STRIPE_API_BASE: must be an origin (scheme, host, port) without a path');
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return Object.freeze({ protocol, host: base.hostname.replace(/^\[|\]$/g, ''), port: Number(base.port || (protocol === 'http' ? 80 : 443)) });
}

/**
 * OIDC_ISSUER turns identity-provider tokens on, and then needs OIDC_AUDIENCE (a token for another API
 * of the same provider must not pass); the other OIDC_ settings mean nothing without it.
 */
function oidcOf(e: Env): OidcConfig | undefined {
  if (e.OIDC_ISSUER === undefined) {
    if (e.OIDC_AUDIENCE !== undefined) throw new ConfigError('invalid OIDC_AUDIENCE: set OIDC_ISSUER too (the identity provider whose tokens name this audience)');
    if (e.OIDC_JWKS_URL !== undefined) throw new ConfigError('invalid OIDC_JWKS_URL: set OIDC_ISSUER too (the identity provider whose keys these are)');
    return undefined;
  }
  if (e.OIDC_AUDIENCE === undefined) throw new ConfigError('invalid OIDC_AUDIENCE: required with OIDC_ISSUER (the `aud` the provider puts in access tokens for this gateway)');
  return Object.freeze({
    issuer: e.OIDC_ISSUER, audience: e.OIDC_AUDIENCE, jwksUrl: e.OIDC_JWKS_URL,
    fetchTimeoutMs: e.OIDC_FETCH_TIMEOUT_MS, jwksCooldownMs: e.OIDC_JWKS_COOLDOWN_MS,
  });
}

/**
 * OIDC_CLIENT_ID turns sign-in on, and then needs the secret, the redirect URL and an issuer
 * (OIDC_SIGNIN_ISSUER, or OIDC_ISSUER when the same provider also issues API tokens). Cookies are
 * `Secure` unless SIGNIN_COOKIE_SECURE=false, which only a plain-http localhost redirect URL may use
 * (browsers drop Secure cookies set over http), never production.
 */
function signInOf(e: Env, production: boolean): SignInConfig | undefined {
  const issuer = e.OIDC_SIGNIN_ISSUER ?? e.OIDC_ISSUER;
  if (e.OIDC_CLIENT_ID === undefined) {
    for (const name of ['OIDC_SIGNIN_ISSUER', 'OIDC_CLIENT_SECRET', 'OIDC_REDIRECT_URL'] as const) {
      if (e[name] !== undefined) throw new ConfigError(`invalid ${name}: set OIDC_CLIENT_ID too (sign-in is off without it)`);
    }
    return undefined;
  }
  if (issuer === undefined) throw new ConfigError('invalid OIDC_SIGNIN_ISSUER: required with OIDC_CLIENT_ID (or set OIDC_ISSUER)');
  if (e.OIDC_CLIENT_SECRET === undefined) throw new ConfigError('invalid OIDC_CLIENT_SECRET: required with OIDC_CLIENT_ID');
  if (e.OIDC_REDIRECT_URL === undefined) throw new ConfigError('invalid OIDC_REDIRECT_URL: required with OIDC_CLIENT_ID (the gateway\'s /auth/callback as the provider knows it)');
  const redirect = new URL(e.OIDC_REDIRECT_URL);
  if (redirect.pathname !== '/auth/callback' || redirect.search !== '' || redirect.hash !== '') {
    throw new ConfigError('invalid OIDC_REDIRECT_URL: must be this gateway\'s origin followed by /auth/callback');
  }
  if (production && (!issuer.startsWith('https://') || redirect.protocol !== 'https:')) {
    throw new ConfigError(`invalid ${e.OIDC_SIGNIN_ISSUER === undefined ? 'OIDC_ISSUER' : 'OIDC_SIGNIN_ISSUER'}/OIDC_REDIRECT_URL: must be https in production`);
  }
  const secureCookies = e.SIGNIN_COOKIE_SECURE === 'true';
  if (!secureCookies && (production || redirect.protocol !== 'http:' || !['localhost', '127.0.0.1', '[::1]'].includes(redirect.hostname))) {
    throw new ConfigError('invalid SIGNIN_COOKIE_SECURE: false only for development on http://localhost (OIDC_REDIRECT_URL), never in production');
  }
  return Object.freeze({
    issuer, clientId: e.OIDC_CLIENT_ID, clientSecret: e.OIDC_CLIENT_SECRET, redirectUrl: redirect.href, origin: redirect.origin,
    scopes: e.OIDC_SIGNIN_SCOPES, successPath: e.SIGNIN_SUCCESS_URL, sessionTtlSeconds: e.SIGNIN_SESSION_TTL_SECONDS,
    secureCookies, fetchTimeoutMs: e.OIDC_FETCH_TIMEOUT_MS, allowHttp: !production,
  });
}

/**
 * The development identity provider starts when sign-in is not configured (OIDC_CLIENT_ID unset),
 * outside production, unless DEV_IDENTITY_PROVIDER=off; `on` insists (refused in production, and with
 * OIDC_CLIENT_ID). Its redirect is this gateway's /auth/callback at PUBLIC_URL, else at the listen
 * address (127.0.0.1 for a wildcard HOST).
 */
function devIdentityProviderOf(e: Env, production: boolean): DevIdentityProviderConfig | undefined {
  if (e.DEV_IDENTITY_PROVIDER === 'off') return undefined;
  if (e.DEV_IDENTITY_PROVIDER === 'on') {
    if (production) throw new ConfigError('invalid DEV_IDENTITY_PROVIDER: the development identity provider signs anyone in; never in production');
    if (e.OIDC_CLIENT_ID !== undefined) throw new ConfigError('invalid DEV_IDENTITY_PROVIDER: on replaces sign-in with a development provider; unset OIDC_CLIENT_ID, or leave DEV_IDENTITY_PROVIDER at auto');
  }
  if (production || e.OIDC_CLIENT_ID !== undefined) return undefined;
  const origin = e.PUBLIC_URL === undefined ? localUrl(e.HOST, e.PORT) : new URL(e.PUBLIC_URL).origin;
  return Object.freeze({ port: e.DEV_IDENTITY_PROVIDER_PORT, required: e.DEV_IDENTITY_PROVIDER === 'on', redirectUrl: `${origin}/auth/callback` });
}

/** A `<requests>/<seconds>` window setting; both at least 1. */
function windowOf(name: string, text: string): { readonly requests: number; readonly windowMs: number } {
  const [requests, seconds] = text.split('/').map(Number) as [number, number];
  if (requests < 1 || seconds < 1) throw new ConfigError(`invalid ${name}: both numbers must be at least 1`);
  return Object.freeze({ requests, windowMs: seconds * 1000 });
}

/**
 * A journal is replayed only into the Redis database and prefix it was written for (no password in the
 * name). A cluster is named by its distinct seeds, sorted: the same whatever order REDIS_URL lists them in.
 */
function journalNamespace(redisUrl: string, prefix: string): string {
  const target = parseRedisUrl(redisUrl);
  if (target.cluster) {
    const seeds = new Set(target.nodes.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`));
    return createHash('sha256').update(`cluster ${[...seeds].sort().join(',')}\n${prefix}`).digest('hex').slice(0, 16);
  }
  const url = new URL(redisUrl);
  return createHash('sha256').update(`${url.hostname}:${url.port}${url.pathname}\n${prefix}`).digest('hex').slice(0, 16);
}
