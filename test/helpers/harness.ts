/**
 * Starts a real gateway process for a test file: its own Postgres database, its own Redis key
 * prefix, its own port, and the mock vendor (over real HTTP) standing in for every upstream.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { connectRedis, scanKeys, type RedisClient } from '../../src/store/redis-connect.js';
import { startMockVendor, type MockVendor } from '../../src/mock-vendor/server.js';
import { freePort } from '../../bench/child.js';
import { deleteKeysWithPrefix, dropDatabase } from '../../bench/namespaces.js';

const run = promisify(execFile);
const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
/** The Postgres the tests use (its `postgres` database): each gateway gets a database of its own there. */
export const PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const VENDOR_ENV_NAMES = ['OPENAI', 'ANTHROPIC', 'GEMINI', 'DEEPSEEK', 'XAI', 'MISTRAL', 'MOONSHOT', 'ZHIPU', 'MINIMAX', 'ALIBABA', 'BYTEDANCE', 'SHENGSHU', 'BFL', 'ELEVENLABS', 'KUAISHOU', 'RUNWAY', 'LUMA', 'STABILITY'];

export { freePort };

/** The settlement journals of gateways sharing a Redis prefix, deleted with that prefix. */
export const journalDirOf = (prefix: string) => join(tmpdir(), 'gateway-test-journals', prefix.replaceAll(':', '_'));

export interface GatewayOptions {
  readonly env?: Record<string, string>;
  readonly threads?: number;
  /** Reuse an existing mock vendor (several gateways against one upstream). */
  readonly mock?: MockVendor;
  /** Reuse a database and Redis prefix (several gateway processes sharing state). */
  readonly shared?: { database: string; prefix: string };
  /**
   * Where the gateway (and `gateway.cli`) reach Postgres instead of the server itself, e.g. a
   * TcpProxy in front of `postgresAddress()`; the test's own `gateway.sql` still connects directly.
   */
  readonly postgresVia?: { host: string; port: number };
  /** The port to listen on (when the test must know it before start-up, e.g. for PUBLIC_URL). */
  readonly port?: number;
  /** Another Redis (or a Redis Cluster) for the gateway, its CLI and the test's own `gateway.redis`. */
  readonly redisUrl?: string;
  /** The vendors (lowercase names) given a key and the mock's URL; the others get neither. Default: all. */
  readonly vendors?: readonly string[];
}

/** The keys matching `pattern` on one Redis or on every primary of a cluster (KEYS sees one node only). */
export async function keysMatching(redis: RedisClient, pattern: string): Promise<string[]> {
  const found = new Set<string>();
  for await (const batch of scanKeys(redis, pattern)) for (const key of batch) found.add(key);
  return [...found];
}

/** Host and port of the Postgres server the tests use. */
export function postgresAddress(): { host: string; port: number } {
  const url = new URL(PG_BASE);
  return { host: url.hostname, port: Number(url.port || 5432) };
}

export class Gateway {
  output = '';
  constructor(
    readonly url: string,
    readonly env: Record<string, string>,
    readonly mock: MockVendor,
    readonly database: string,
    readonly prefix: string,
    readonly sql: postgres.Sql<{ bigint: bigint }>,
    readonly redis: RedisClient,
    readonly process: ChildProcess,
    private readonly ownsMock: boolean,
    private readonly ownsState: boolean,
  ) {}

  get v1(): string {
    return `${this.url}/v1`;
  }

  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, ...this.env } });
    return stdout.trim();
  }

  token(user: string, ttl = '1h'): Promise<string> {
    return this.cli('token', '--user', user, '--ttl', ttl);
  }

  async topup(user: string, usd: string): Promise<void> {
    await this.cli('topup', '--user', user, '--amount', usd, '--method', 'test-processor');
  }

  async createKey(token: string, body: Record<string, unknown> = { name: 'test' }): Promise<string> {
    const response = await fetch(`${this.url}/api/v1/api-keys`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    if (response.status !== 201) throw new Error(`create key: ${response.status} ${await response.text()}`);
    return ((await response.json()) as { key: string }).key;
  }

  /** A user with credits and one API key. */
  async user(name: string, usd: string): Promise<{ token: string; key: string }> {
    const token = await this.token(name);
    if (usd !== '0') await this.topup(name, usd);
    return { token, key: await this.createKey(token) };
  }

  async balance(token: string): Promise<{ credits: number; held: number; available: number; currency: string }> {
    const response = await fetch(`${this.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${token}` } });
    return (await response.json()) as { credits: number; held: number; available: number; currency: string };
  }

  /** Balance as exact nano-USD straight from Redis. */
  async balanceNano(user: string): Promise<{ credits: bigint; held: bigint }> {
    const [credits, held] = await this.redis.hmget(`${this.prefix}{u:${user}}:bal`, 'credits', 'held');
    return { credits: BigInt(credits ?? '0'), held: BigInt(held ?? '0') };
  }

  /** Waits until the ledger writer has moved every usage transaction of `user` into Postgres. */
  async ledgerSettled(user: string, timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      // One MULTI: settle.lua adds the ledger entry and closes the reservation atomically, so two
      // separate reads could see the stream before the entry and the reservations after it.
      const replies = await this.redis.multi()
        .xlen(`${this.prefix}{u:${user}}:ledger`)
        .hlen(`${this.prefix}{u:${user}}:res`)
        .exec();
      const [pending, reservations] = (replies ?? []).map(([, value]) => value as number);
      if (pending === 0 && reservations === 0) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`ledger of ${user} did not settle in ${timeoutMs} ms`);
  }

  /** Sum of the user's transactions in Postgres, nano-USD. */
  async ledgerSum(user: string): Promise<bigint> {
    const [row] = await this.sql<{ sum: bigint }[]>`select coalesce(sum(credits_nano), 0)::bigint as sum from transactions where user_id = ${user}`;
    return row!.sum;
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill(signal);
      await once(this.process, 'exit');
    }
    return this.process.exitCode;
  }

  /** `close()` for a gateway whose Redis is gone for good: its keys went with it. */
  async closeWithoutRedis(): Promise<void> {
    await this.close(false);
  }

  async close(redisAlive = true): Promise<void> {
    await this.stop();
    if (this.ownsMock) await this.mock.close();
    if (this.ownsState && redisAlive) await deleteKeysWithPrefix(this.redis, this.prefix);
    if (this.ownsState) rmSync(journalDirOf(this.prefix), { recursive: true, force: true });
    await this.sql.end({ timeout: 5 });
    this.redis.disconnect();
    if (this.ownsState) await dropDatabase(PG_BASE, this.database);
  }
}

export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const mock = options.mock ?? (await startMockVendor({ port: 0 }));
  const suffix = randomBytes(4).toString('hex');
  const database = options.shared?.database ?? `gw_test_${process.pid}_${suffix}`;
  const prefix = options.shared?.prefix ?? `test:${suffix}:`;
  const port = options.port ?? await freePort();
  const dbUrl = new URL(PG_BASE);
  dbUrl.pathname = `/${database}`;
  const gatewayDbUrl = new URL(dbUrl);
  if (options.postgresVia) {
    gatewayDbUrl.hostname = options.postgresVia.host;
    gatewayDbUrl.port = String(options.postgresVia.port);
  }
  const configured = VENDOR_ENV_NAMES.filter((name) => options.vendors?.includes(name.toLowerCase()) ?? true);
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    HTTP_THREADS: String(options.threads ?? 1),
    DATABASE_URL: gatewayDbUrl.toString(),
    REDIS_URL: options.redisUrl ?? REDIS_URL,
    REDIS_PREFIX: prefix,
    MOCK_VENDOR: 'off',
    // Test gateways run side by side: none starts the development sign-in provider on its fixed port unless a test asks.
    DEV_IDENTITY_PROVIDER: 'off',
    LOG_LEVEL: 'warn',
    SHUTDOWN_DRAIN_MS: '10000',
    SETTLE_JOURNAL_DIR: journalDirOf(prefix),
    // Tests poll tasks every few milliseconds with one key, far past a client's pace, and longer on a
    // loaded machine: the read window is lifted unless a test sets it (window-counts tests it).
    RATE_LIMIT_READS: '1000000/10',
    ...Object.fromEntries(configured.map((name) => [`${name}_BASE_URL`, `${mock.url}/${name.toLowerCase()}/v1`])),
    // Kling's key is `<access key>:<secret key>`; the mock takes an access key as its own secret key.
    ...Object.fromEntries(configured.map((name) => [`${name}_API_KEY`, name === 'KUAISHOU' ? 'test-kuaishou-key:test-kuaishou-key' : `test-${name.toLowerCase()}-key`])),
    ...options.env,
  };
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  // A test file that ends without its teardown (tap's timeout) must not leave its gateway running,
  // holding Postgres connections that the next files then lack.
  const orphaned = () => child.kill('SIGKILL');
  process.once('exit', orphaned);
  child.once('exit', () => process.off('exit', orphaned));
  const sql = postgres(dbUrl.toString(), { max: 4, onnotice: () => {}, types: { bigint: postgres.BigInt } }) as unknown as postgres.Sql<{ bigint: bigint }>;
  const gateway = new Gateway(`http://127.0.0.1:${port}`, env, mock, database, prefix, sql, connectRedis(options.redisUrl ?? REDIS_URL), child, !options.mock, !options.shared);
  child.stdout!.on('data', (chunk: Buffer) => { gateway.output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { gateway.output += chunk.toString(); });

  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited during start-up:\n${gateway.output}`);
    try {
      const response = await fetch(`${gateway.url}/readyz`);
      if (response.status === 200) return gateway;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) {
      child.kill('SIGKILL');
      throw new Error(`gateway did not become ready:\n${gateway.output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POST JSON with an API key; returns status, headers and parsed body. */
export async function postJson(url: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: response.status, headers: response.headers, body: parsed };
}
