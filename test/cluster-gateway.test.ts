// The gateway on a Redis Cluster of three primaries (REDIS_URL = redis-cluster://...): chat calls
// (streamed and not) charged to the nano-dollar, a revoked key refused at once on every thread (over
// pub/sub on a cluster), a video task run by the shard actors, `gateway ledger check` clean, the ledger
// gauges over every primary, and where the keys landed: a user's in one slot, the task shards on every primary.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisCluster, type LocalCluster } from './helpers/redis-cluster.js';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';
import { MODEL, costNano, leasesClosed, parseJson, sseData } from './helpers/billing-checks.js';
import { keySlot } from '../src/store/cluster-slot.js';
import { primaries, scanKeys } from '../src/store/redis-connect.js';
import { RedisKeys } from '../src/admission/keys.js';
import { dirtyMarks } from '../src/ledger/dirty-set.js';
import { createLedgerLagMetrics } from '../src/metrics.js';
import { Registry } from 'prom-client';
import type { Cluster } from 'ioredis';

const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));
const TASK_SHARDS = 16;

let cluster: LocalCluster;
let gateway: Gateway;
let mediaDir: string;
/** The primary serving a key's slot, as the test's own cluster client sees it. */
const primaryOf = (key: string) => (gateway.redis as Cluster).slots[keySlot(key)]?.[0];

t.before(async () => {
  cluster = await startRedisCluster();
  mediaDir = await mkdtemp(join(tmpdir(), 'cluster-test-'));
  // Two HTTP threads: a revocation must reach the thread that did not handle it, over pub/sub.
  gateway = await startGateway({
    redisUrl: cluster.url,
    threads: 2,
    env: {
      JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10', MEDIA_DIR: mediaDir, FETCH_ALLOW_LOOPBACK: 'true',
      TASK_SHARDS: String(TASK_SHARDS), TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500',
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await cluster?.stop();
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
});

/** One chat call; returns its status and what its usage costs at list price. */
async function chat(key: string, stream: boolean): Promise<{ status: number; chargeNano: bigint }> {
  const body = JSON.stringify({
    model: MODEL, messages: [{ role: 'user', content: 'hello cluster [[mock chunks=3]]' }], max_tokens: 20,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body,
  });
  const text = await response.text();
  if (response.status !== 200) return { status: response.status, chargeNano: 0n };
  const usage = stream
    ? sseData(text).filter((d) => d !== '[DONE]').map(parseJson).find((chunk) => chunk.usage)?.usage
    : parseJson(text).usage;
  if (!usage) throw new Error(`no usage in ${text}`);
  return { status: 200, chargeNano: costNano(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0) };
}

t.test('chat calls, streamed and not, are charged exactly; Redis and Postgres agree', async (t) => {
  // Users on different primaries at once: the ledger writer's and confirmer's passes span nodes.
  const users = ['cluster-chat-1', 'cluster-chat-2', 'cluster-chat-3', 'cluster-chat-4'];
  await gateway.redis.ping(); // the test's client knows the slot map once it answered
  t.ok(new Set(users.map((user) => primaryOf(`{u:${user}}`))).size >= 2, 'the users are on more than one primary');
  await Promise.all(users.map(async (user) => {
    const { key } = await fastUser(gateway, user, '5');
    let charged = 0n;
    for (let i = 0; i < 8; i++) {
      const call = await chat(key, i % 2 === 1);
      t.equal(call.status, 200, `${user}: call ${i} (${i % 2 ? 'streamed' : 'not streamed'})`);
      charged += call.chargeNano;
    }
    t.ok(charged > 0n, `${user}: the calls cost something`);
    const view = await leasesClosed(gateway, user, 5_000);
    await gateway.ledgerSettled(user);
    t.equal(view.held, 0n, `${user}: nothing held once the leases closed`);
    t.equal(view.credits, NANO('5') - charged, `${user}: Redis credits moved by the charges only`);
    t.equal(await gateway.ledgerSum(user), NANO('5') - charged, `${user}: the Postgres ledger says the same`);
    const [usage] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from transactions where user_id = ${user} and payment_method = 'usage'`;
    t.equal(usage!.n, 8, `${user}: one usage transaction per call`);
  }));
});

t.test('a revoked key is refused at once on every thread', async (t) => {
  const { token, key } = await fastUser(gateway, 'cluster-revoke', '1');
  const other = await gateway.createKey(token);
  // Both threads have the key cached before it goes.
  for (let i = 0; i < 8; i++) t.equal((await chat(other, false)).status, 200, `call ${i} before`);
  const { id } = (await (await fetch(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } })).json() as { id: string }[])[0]!; // newest first
  const deleted = await fetch(`${gateway.url}/api/v1/api-keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  t.equal(deleted.status, 204, 'revoked');
  const after = await Promise.all(Array.from({ length: 8 }, () => chat(other, false)));
  t.same(after.map((call) => call.status), Array(8).fill(401), 'refused on every thread');
  t.equal((await chat(key, false)).status, 200, 'the user\'s other key still works');
});

t.test('a video task runs to success on the shard actors and is charged once', async (t) => {
  const user = 'cluster-video';
  const { key } = await fastUser(gateway, user, '10');
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, {
    model: 'bytedance/seedance-1.0-pro-fast', prompt: 'waves roll in [[mock job_ms=150]]', image_urls: ['https://localhost/reference.png'],
  });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  let task: { status: string; data?: { url: string }[] } = submitted.body;
  t.ok(await eventually(async () => {
    task = await (await fetch(`${gateway.v1}/videos/generations/${submitted.body.id}`, { headers: { authorization: `Bearer ${key}` } })).json() as typeof task;
    return task.status !== 'pending';
  }, 20_000, 30), 'the task ended');
  t.equal(task.status, 'success', JSON.stringify(task));
  t.ok(task.data?.[0]?.url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
  t.ok(await eventually(async () => (await gateway.balanceNano(user)).held === 0n), 'the hold ended');
  const usage = await gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.same(usage.map((row) => [row.id, row.credits_nano]), [[submitted.body.id, -NANO('0.075')]], 'one charge at the profile price');
  t.equal((await gateway.balanceNano(user)).credits, NANO('10') - NANO('0.075'), 'Redis agrees');
});

t.test('`gateway ledger check` passes', async (t) => {
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});

t.test('a user\'s keys share one slot; the task shards are spread over every primary', async (t) => {
  const nodes = await primaries(gateway.redis);
  t.equal(nodes.length, 3, 'three primaries');
  const userKeys: string[] = [];
  for await (const found of scanKeys(gateway.redis, `${gateway.prefix}{u:cluster-chat-1}*`)) userKeys.push(...found);
  t.ok(userKeys.length >= 2, `the user has keys in Redis (${userKeys.join(', ')})`);
  const slots = new Set(userKeys.map(keySlot));
  t.equal(slots.size, 1, 'all in one slot');
  const [slot] = slots;
  t.equal(await gateway.redis.cluster('KEYSLOT', userKeys[0]!), slot, 'the slot Redis computes too');

  // Each shard's stream (made when its lease was first taken) lives on the node serving its slot.
  const shardsOn = new Map<string, number>();
  for (const node of nodes) {
    const address = `${node.options.host}:${node.options.port}`;
    let shards = 0;
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', `${gateway.prefix}{ts:*}:stream`, 'COUNT', 1000);
      cursor = next;
      shards += found.length;
    } while (cursor !== '0');
    shardsOn.set(address, shards);
  }
  t.equal([...shardsOn.values()].reduce((a, b) => a + b, 0), TASK_SHARDS, `every shard's stream exists (${JSON.stringify([...shardsOn])})`);
  t.ok([...shardsOn.values()].every((count) => count > 0), 'each primary serves some shards');
});

t.test('the ledger lag gauges read users on every primary', async (t) => {
  // On a key prefix of its own, which no ledger writer drains.
  const keys = new RedisKeys(`${gateway.prefix}lag:`);
  const users = Array.from({ length: 12 }, (_, i) => `lag-${i}`);
  t.equal(new Set(users.map((user) => primaryOf(keys.ledger(user)))).size, 3, 'the users are on every primary');
  const registry = new Registry();
  createLedgerLagMetrics(registry, gateway.redis, keys, 2000);
  const [seconds] = await gateway.redis.time();
  await Promise.all(users.map((user, i) => gateway.redis.xadd(keys.ledger(user), `${(Number(seconds) - 30 - i) * 1000}-0`, 'r', 'x', 'c', '0', 'e', '{}')));
  await Promise.all([...dirtyMarks(keys, users)].map(([key, marked]) => gateway.redis.sadd(key, ...marked)));
  const metrics = await registry.getMetricsAsJSON();
  const value = (name: string) => metrics.find((metric) => metric.name === name)?.values[0]?.value;
  t.equal(value('gateway_ledger_pending_users'), users.length, 'every user counted');
  const lag = value('gateway_ledger_lag_seconds')!;
  t.ok(lag >= 40.5 && lag < 50, `the oldest event of them all (${lag} s)`);
});

t.test('no background loop failed (ledger writer, janitors, shard leases, readers)', async (t) => {
  // Their failures are logged and retried, so nothing else would show them.
  const problems = gateway.output.split('\n').filter((line) => /"level":"error"|"level":"warn".*(failed|lost)/.test(line));
  t.same(problems, [], 'no failure logged');
});
