// The gateway in its own process, pointed at the mock vendor, with a fresh Redis prefix per run
// (deleted at the end) and a bench user that has credits and an API key.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { onCleanup } from './cleanup.js';
import { deleteKeysWithPrefix, dropDatabase } from './namespaces.js';
import { connectRedis } from '../src/store/redis-connect.js';
import { freePort, spawnNode, waitUntil, type Child } from './child.js';

const execNode = promisify(execFile);
const GATEWAY_MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const GATEWAY_CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432';
const REDIS_URL = 'redis://127.0.0.1:6379';
const BENCH_USER = 'bench';

export interface GatewayProcess {
  readonly child: Child;
  /** Like http://127.0.0.1:PORT */
  readonly url: string;
  /** An API key of the bench user. */
  readonly apiKey: string;
  /** Another key of the bench user with every per-key limit set (none of them binding at bench rates). */
  readonly limitedApiKey: string;
  /** The gateway's environment (its database, Redis prefix, secrets). */
  readonly env: Readonly<Record<string, string>>;
}

export interface GatewayOptions {
  readonly mockUrl: string;
  readonly threads: number;
  /** Extra node flags for the gateway (e.g. --cpu-prof), for profiling runs. */
  readonly nodeArgs?: string[];
  /** The gateway's entry point, when not this build's (bench/ab.ts runs another checkout's build beside it). */
  readonly main?: string;
  /** Extra environment for the gateway (bench/ab.ts compares settings this way); its REDIS_URL may name a Redis Cluster. */
  readonly env?: Readonly<Record<string, string>>;
  /** The Postgres server the run's database is made on, without a database (the local one on 5432 unless said; bench/capacity.ts starts its own). */
  readonly postgresUrl?: string;
}

export async function startGatewayProcess(options: GatewayOptions): Promise<GatewayProcess> {
  const run = randomBytes(6).toString('hex');
  const prefix = `bench:${run}:`;
  // A fresh database per run, so earlier runs' rows do not slow this one; the gateway creates it.
  const database = `gateway_bench_${run}`;
  // Registered first, so they run after the gateway has stopped.
  const server = options.postgresUrl ?? POSTGRES_URL;
  onCleanup(() => dropDatabase(`${server}/postgres`, database));
  onCleanup(() => deleteRedisKeys(options.env?.REDIS_URL ?? REDIS_URL, prefix));
  const port = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    HTTP_THREADS: String(options.threads),
    DATABASE_URL: `${server}/${database}`,
    REDIS_URL,
    REDIS_PREFIX: prefix,
    MOCK_VENDOR: 'off',
    DEV_IDENTITY_PROVIDER: 'off',
    OPENAI_BASE_URL: `${options.mockUrl}/openai/v1`,
    OPENAI_API_KEY: 'bench',
    ANTHROPIC_BASE_URL: `${options.mockUrl}/anthropic/v1`,
    ANTHROPIC_API_KEY: 'bench',
    LOG_LEVEL: 'warn',
    // Lift the per-key rate limit: the load is far above the product default.
    RATE_LIMIT_DEFAULT: '1000000000/10',
    ...options.env,
  };
  const child = spawnNode('gateway', options.main ?? GATEWAY_MAIN, env, options.nodeArgs);
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(child, 'readiness', async () => (await request(`${url}/readyz`)).statusCode === 200);
  const jwt = await cli(env, 'token', '--user', BENCH_USER);
  await cli(env, 'topup', '--user', BENCH_USER, '--amount', '100000', '--method', 'bench');
  return { child, url, env, apiKey: await createBenchKey(url, jwt, { name: 'bench' }), limitedApiKey: await createBenchKey(url, jwt, LIMITED_KEY) };
}

/** Every limit a key can carry, each far above what a bench run uses, so each is checked and none refuses. */
const LIMITED_KEY = {
  name: 'bench-limited',
  ip_whitelist: ['127.0.0.0/8'],
  rate_limit_rpm: 100_000_000,
  rate_limit_tph: 1_000_000_000_000,
  rate_limit_tpd: 10_000_000_000_000,
  credit_limit: 50_000,
  credit_reset_interval: 'monthly',
};

async function cli(env: Record<string, string>, ...args: string[]): Promise<string> {
  const { stdout } = await execNode(process.execPath, [GATEWAY_CLI, ...args], { env: { ...process.env, ...env } });
  return stdout.trim();
}

export async function createBenchKey(url: string, jwt: string, body: Record<string, unknown>): Promise<string> {
  const response = await request(`${url}/api/v1/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  if (response.statusCode !== 201) throw new Error(`creating the bench API key: ${response.statusCode} ${text}`);
  return (JSON.parse(text) as { key: string }).key;
}

/** SCAN + DEL of this run's keys only (never FLUSHALL: Redis is shared), on one Redis or every primary of a cluster. */
async function deleteRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = connectRedis(url, { maxRetriesPerRequest: 2 });
  try {
    await deleteKeysWithPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}
