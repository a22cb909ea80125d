// The per-user actors under load and faults, against the real Redis, Postgres and the mock vendor:
// 200 tasks from 20 users with at least 100 running at once, each ending exactly once; one user's
// tasks start in submission order while another user's run alongside; a Redis FLUSHALL (on a Redis of
// this test's own) with tasks pending; two gateway processes, one SIGKILLed with tasks in flight.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { freePort, keysMatching, postJson, startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser, sleep } from './helpers/http-tools.js';

const REF = 'https://localhost/reference.png';
const MODEL = 'bytedance/seedance-1.0-pro-fast';
/** 5 s at 720p, 0.015 USD per second. */
const PRICE_NANO = 75_000_000n;

let mediaDir: string;
let mock: MockVendor;

const taskEnv = (extra: Record<string, string> = {}) => ({
  JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true',
  TASK_POLL_MS: '100', TASK_TIMER_TICK_MS: '50', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500', TASK_SHARDS: '8', ...extra,
});

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'task-actors-'));
  mock = await startMockVendor({ port: 0, keepRequests: 0 });
});
t.teardown(async () => {
  await mock.close();
  await rm(mediaDir, { recursive: true, force: true });
});

const submit = (gateway: Gateway, key: string, tag: string, jobMs: number) =>
  postJson(`${gateway.v1}/videos/generations`, key, { model: MODEL, prompt: `${tag} [[mock job_ms=${jobMs}]]`, image_urls: [REF] });

/** Every task of these users ended; returns the rows. */
async function allEnded(gateway: Gateway, users: string[], timeoutMs: number) {
  const ok = await eventually(async () => {
    const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = any(${users}) and status = 'pending'`;
    return row!.n === 0;
  }, timeoutMs, 100);
  if (!ok) throw new Error('tasks still pending');
  return gateway.sql<{ id: string; user_id: string; status: string; charged_nano: bigint | null }[]>`
    select id, user_id, status, charged_nano from tasks where user_id = any(${users})`;
}

/** Each ended task: success with exactly one usage transaction of its charge, or failure with none. */
async function endedOnce(t: Test, gateway: Gateway, rows: { id: string; status: string; charged_nano: bigint | null }[]) {
  const usage = await gateway.sql<{ id: string; credits_nano: bigint }[]>`
    select id, credits_nano from transactions where id = any(${rows.map((row) => row.id)}::uuid[])`;
  const byId = new Map(usage.map((row) => [row.id, row.credits_nano]));
  t.equal(usage.length, rows.filter((row) => row.status === 'success').length, 'one transaction per successful task, none for a failed one');
  t.ok(rows.every((row) => row.status !== 'success' || byId.get(row.id) === -(row.charged_nano ?? 0n)), 'each transaction is its task charge');
}

t.test('200 tasks from 20 users: at least 100 running at once, each ending exactly once', async (t) => {
  const gateway = await startGateway({ mock, env: taskEnv({ TASK_USER_CONCURRENCY: '10', TASK_POLL_MS: '700' }) });
  t.teardown(() => gateway.close());
  const users = Array.from({ length: 20 }, (_, i) => `load-user-${i}`);
  const keys = await Promise.all(users.map(async (user) => (await fastUser(gateway, user, '5')).key));
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where status = 'pending' and upstream_id is not null`;
      peak = Math.max(peak, row!.n);
      await sleep(50);
    }
  })();
  const submitted = await Promise.all(keys.map(async (key, u) => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await submit(gateway, key, `u${u}-t${i}`, 4000)).status);
    return statuses;
  }));
  t.ok(submitted.flat().every((status) => status === 200), 'all 200 accepted');
  const rows = await allEnded(gateway, users, 90_000);
  sampling = false;
  await sampler;
  t.equal(rows.length, 200);
  t.ok(rows.every((row) => row.status === 'success'), 'all succeeded');
  t.ok(peak >= 100, `at least 100 tasks running at the vendor at once (peak ${peak})`);
  await endedOnce(t, gateway, rows);
  for (const user of users) {
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    const { credits, held } = await gateway.balanceNano(user);
    t.same({ credits, held }, { credits: 5_000_000_000n - 10n * PRICE_NANO, held: 0n }, `${user}: ten charges, nothing held`);
  }
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});

t.test("one user's tasks start in submission order while another user's run alongside", async (t) => {
  const gateway = await startGateway({ mock, env: taskEnv({ TASK_USER_CONCURRENCY: '2' }) });
  t.teardown(() => gateway.close());
  const a = await fastUser(gateway, 'order-a', '5');
  const b = await fastUser(gateway, 'order-b', '5');
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await submit(gateway, a.key, `a${i}`, 300)).body.id);
  const other = (await submit(gateway, b.key, 'b0', 300)).body.id;
  await allEnded(gateway, ['order-a', 'order-b'], 30_000);
  const started = await gateway.sql<{ id: string; started_at: Date }[]>`select id, started_at from tasks where user_id = 'order-a' order by started_at, id`;
  t.same(started.map((row) => row.id), ids, "user a's tasks started in the order they were submitted");
  const [bRow] = await gateway.sql<{ started_at: Date }[]>`select started_at from tasks where id = ${other}`;
  const lastOfA = started[started.length - 1]!.started_at;
  t.ok(bRow!.started_at < lastOfA, "user b's task started before user a's queue had drained (a's slots do not block b)");
  const [concurrency] = await gateway.sql<{ peak: number }[]>`
    select max(c)::int as peak from (
      select (select count(*) from tasks o where o.user_id = 'order-a' and o.started_at <= s.started_at and o.ended_at > s.started_at) as c
      from tasks s where s.user_id = 'order-a') x`;
  t.ok(concurrency!.peak <= 2, `at most TASK_USER_CONCURRENCY (2) of a's tasks ran at once (saw ${concurrency!.peak})`);
});

/** A Redis server of this test's own on a spare port: FLUSHALL must not touch the shared one. */
async function ownRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  await eventually(async () => { try { await probe.connect().catch(() => {}); return (await probe.ping()) === 'PONG'; } catch { return false; } }, 10_000, 100);
  probe.disconnect();
  return { url, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

t.test('Redis FLUSHALL with tasks pending: every task still ends once and held is right', async (t) => {
  const redisServer = await ownRedis();
  t.teardown(() => redisServer.stop());
  const gateway = await startGateway({ mock, env: taskEnv({ REDIS_URL: redisServer.url }) });
  t.teardown(() => gateway.close());
  const redis = new Redis(redisServer.url);
  t.teardown(() => redis.disconnect());
  const users = ['flush-a', 'flush-b', 'flush-c'];
  const keys = await Promise.all(users.map(async (user) => (await fastUser(gateway, user, '5')).key));
  for (const key of keys) for (let i = 0; i < 4; i++) t.equal((await submit(gateway, key, `f${i}`, 1500)).status, 200);
  await sleep(400);
  await redis.flushall();
  // Traffic after the loss: a balance read (it rebuilds the balance with the pending tasks' holds) and a new task.
  const read = await fetch(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${keys[0]}` } });
  const during = await read.json() as { held: number };
  t.equal(during.held, 0.3, 'after the loss, held is rebuilt from the four pending tasks (4 x 0.075)');
  t.equal((await submit(gateway, keys[1]!, 'after-flush', 200)).status, 200);
  const rows = await allEnded(gateway, users, 30_000);
  t.equal(rows.length, 13);
  t.ok(rows.every((row) => row.status === 'success'), 'all succeeded');
  await endedOnce(t, gateway, rows);
  for (const user of users) {
    const expected = 5_000_000_000n - BigInt(rows.filter((row) => row.user_id === user).length) * PRICE_NANO;
    const response = await fetch(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${keys[users.indexOf(user)]}` } });
    await eventually(async () => (await redis.hget(`${gateway.prefix}{u:${user}}:bal`, 'held')) === '0');
    const [credits, held] = await redis.hmget(`${gateway.prefix}{u:${user}}:bal`, 'credits', 'held');
    t.same({ credits: BigInt(credits!), held: BigInt(held!) }, { credits: expected, held: 0n }, `${user}: every task charged once, nothing held`);
    await response.body?.cancel();
  }
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});

t.test('two processes, one SIGKILLed with tasks in flight: the other takes its shards over and every task ends once', async (t) => {
  const first = await startGateway({ mock, env: taskEnv() });
  const second = await startGateway({ mock, env: taskEnv(), shared: { database: first.database, prefix: first.prefix } });
  t.teardown(async () => {
    await second.close();
    await first.close();
  });
  const users = Array.from({ length: 12 }, (_, i) => `kill-user-${i}`);
  const keys = await Promise.all(users.map(async (user) => (await fastUser(first, user, '5')).key));
  // Both processes own shards by now (each claims its share within a lease round).
  await eventually(async () => (await keysMatching(first.redis, `${first.prefix}{ts:*}:lease`)).length === 8, 10_000);
  for (const [i, key] of keys.entries()) for (let j = 0; j < 3; j++) t.equal((await submit(i % 2 ? second : first, key, `k${j}`, 2000)).status, 200);
  await sleep(600);
  const owners = new Set(await Promise.all((await keysMatching(first.redis, `${first.prefix}{ts:*}:lease`)).map(async (key) => (await first.redis.get(key))!.split('|')[0])));
  t.equal(owners.size, 2, 'both processes owned shards when one was killed');
  await first.stop('SIGKILL');
  const rows = await allEnded(second, users, 60_000);
  t.equal(rows.length, 36);
  t.ok(rows.every((row) => row.status === 'success'), 'all succeeded');
  await endedOnce(t, second, rows);
  for (const user of users) {
    await eventually(async () => (await second.balanceNano(user)).held === 0n, 10_000);
    t.equal((await second.balanceNano(user)).credits, 5_000_000_000n - 3n * PRICE_NANO, `${user}: three charges`);
  }
  t.match(await second.cli('ledger', 'check'), /^ledger check: ok/);
});
