// Three gateway processes (one HTTP thread each) on one Redis Cluster of three primaries, one Postgres
// database and one mock vendor, with the load spread over all three (issue 19 item 5):
//   - one default window and one rate_limit_rpm per key, enforced by the three together (exactly the
//     limit admitted over bursts sent round-robin, 429 with Retry-After for the rest);
//   - one balance: 1,000 concurrent chat calls on $0.04 (about 300 calls' worth): no overspend, Redis
//     `available` never below zero, the ledger exact to the nano-USD against the calls' usage;
//   - a key revoked through one process refused by all three within 1 s (measured);
//   - video tasks submitted through the three, one process SIGKILLed while they run and another
//     started: every task ends once (success, one charge, one vendor submission), its callback is
//     delivered (exactly once unless it ended while the shards moved), `gateway ledger check` passes.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisCluster, type LocalCluster } from './helpers/redis-cluster.js';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { chatBody, envelopeProblems, leasesClosed, parseJson, postChat, reserveNano, sampleAvailable, usdString } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, eventually, fastUser, mintToken, newestKeyId, sleep, updateKey } from './helpers/http-tools.js';
import { assertSpentExactly, chargesOfServed, ledgerSnapshot, logMark, usageRows } from './helpers/money-invariants.js';
import { RedisKeys } from '../src/admission/keys.js';
import { preferredOwner } from '../src/tasks/shards.js';

const USD = 1_000_000_000n;
/** The default window of every key: 60 calls per 10 s. */
const WINDOW_LIMIT = 60;
const TASK_SHARDS = 16;
const TASK_LEASE_MS = 1500;
const VIDEO_MODEL = 'bytedance/seedance-1.0-pro-fast';
const REF = 'https://localhost/reference.png';
/** 5 s at 720p, 0.015 USD per second. */
const VIDEO_PRICE = 75_000_000n;

let cluster: LocalCluster;
let mock: MockVendor;
let mediaDir: string;
/** The process that made the database and the key prefix (closed last: it drops them). */
let owner: Gateway;
/** The processes serving now, in the order the calls are spread over them. */
let live: Gateway[] = [];
/** Every process started, for the teardown and the log checks. */
const all: Gateway[] = [];
const ENV: Record<string, string> = {};

async function startOne(): Promise<Gateway> {
  const gateway = await startGateway({
    redisUrl: cluster.url, mock, threads: 1, env: ENV,
    ...(owner ? { shared: { database: owner.database, prefix: owner.prefix } } : {}),
  });
  all.push(gateway);
  return gateway;
}

t.before(async () => {
  const started = Date.now();
  [cluster, mock, mediaDir] = await Promise.all([
    startRedisCluster({ primaries: 3 }),
    startMockVendor({ port: 0, keepRequests: 20_000 }),
    mkdtemp(join(tmpdir(), 'cluster-multiprocess-')),
  ]);
  Object.assign(ENV, {
    JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: `${WINDOW_LIMIT}/10`, MEDIA_DIR: mediaDir, FETCH_ALLOW_LOOPBACK: 'true',
    TASK_SHARDS: String(TASK_SHARDS), TASK_LEASE_MS: String(TASK_LEASE_MS), TASK_POLL_MS: '100', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50',
    TASK_CALLBACK_RETRY_MS: '100', TASK_CALLBACK_MAX_DELAY_MS: '200',
  });
  owner = await startOne();
  await Promise.all([startOne(), startOne()]);
  live = [...all]; // in the order they became ready: process 1, 2, 3
  t.comment(`cluster and three gateway processes ready in ${Date.now() - started} ms`);
});
t.teardown(async () => {
  // The processes sharing the owner's state first; the owner drops the database and the key prefix.
  await Promise.all(all.filter((g) => g !== owner).map((g) => g.close()));
  await owner?.close();
  await mock?.close();
  await cluster?.stop();
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
});

const label = (g: Gateway) => `process ${all.indexOf(g) + 1}`;

/** A user with `usd` credits and `keys` API keys (text and id, oldest first). */
async function userWithKeys(user: string, usd: string, keys: number): Promise<{ token: string; keys: { key: string; id: string }[] }> {
  const token = mintToken(user);
  if (usd !== '0') await owner.topup(user, usd);
  const made: { key: string; id: string }[] = [];
  for (let i = 0; i < keys; i++) {
    const gateway = live[i % live.length]!;
    const key = await gateway.createKey(token, { name: `key-${i}` });
    made.push({ key, id: await newestKeyId(gateway.url, token) });
  }
  return { token, keys: made };
}

/** `count` calls at once, call i through process i mod 3. */
function burst(key: string, body: string, count: number) {
  return Promise.all(Array.from({ length: count }, async (_, i) => {
    const via = live[i % live.length]!;
    return { via, ...(await postChat(via, key, body)) };
  }));
}

/** Problems with a 429: the envelope, its code, its message, a Retry-After of whole seconds within `maxSeconds`. */
function badLimit(r: { headers: Headers; text: string }, message: RegExp, maxSeconds: number): boolean {
  const body = parseJson(r.text);
  const retryAfter = r.headers.get('retry-after') ?? '';
  return envelopeProblems(body, 429).length > 0 || body?.error?.code !== 'rate_limit_exceeded' || !message.test(body?.msg ?? '')
    || !/^\d+$/.test(retryAfter) || Number(retryAfter) < 1 || Number(retryAfter) > maxSeconds;
}

t.test('one default window and one rate_limit_rpm per key, enforced by the three processes together', async (t) => {
  const unexpected = logMark(live);
  const user = 'mp-limits';
  const { token, keys: [windowed, perMinute, warm] } = await userWithKeys(user, '5', 3);
  // rate_limit_rpm 20: far below the default window (60 per 10 s), so the key's own limit binds.
  const RPM = 20;
  t.equal((await updateKey(live[1]!.url, token, perMinute!.id, { rate_limit_rpm: RPM })).rate_limit_rpm, RPM, 'PUT (through process 2) set rate_limit_rpm 20');
  const body = chatBody('mp limits [[mock chunks=1]]', { max_tokens: 5 });
  // Every process knows both keys (they authenticate there) and has served calls before the bursts.
  for (const gateway of live) {
    for (const { key } of [windowed!, perMinute!]) {
      const r = await fetch(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${key}` } });
      await r.arrayBuffer();
      t.equal(r.status, 200, `${label(gateway)} authenticates the key`);
    }
    const warmUp = await Promise.all(Array.from({ length: 3 }, () => postChat(gateway, warm!.key, body)));
    t.same(warmUp.map((r) => r.status), [200, 200, 200], `${label(gateway)}: warm-up calls on a third key`);
  }

  const cases = [
    { name: 'default window', key: windowed!.key, limit: WINDOW_LIMIT, first: 90, second: 30, message: /at most 60 requests per 10 seconds per API key/, maxRetry: 11 },
    { name: 'rate_limit_rpm', key: perMinute!.key, limit: RPM, first: 45, second: 15, message: /rate_limit_rpm of 20/, maxRetry: 60 },
  ];
  for (const c of cases) {
    const started = Date.now();
    // Two bursts: the first races the three processes for the slots; once the leases closed and gave
    // back the slots they did not use, the second takes what is left. Over both: exactly the limit.
    const first = await burst(c.key, body, c.first);
    const firstOk = first.filter((r) => r.status === 200).length;
    await leasesClosed(owner, user, 5_000);
    const second = await burst(c.key, body, c.second);
    const elapsed = Date.now() - started;
    const calls = [...first, ...second];
    const ok = calls.filter((r) => r.status === 200);
    const limited = calls.filter((r) => r.status === 429);
    const perProcess = live.map((g) => `${label(g)} ${ok.filter((r) => r.via === g).length}`).join(', ');
    t.comment(`${c.name}: ${firstOk} + ${ok.length - firstOk} admitted over two bursts in ${elapsed} ms (${perProcess})`);
    t.ok(elapsed < 9_000, `${c.name}: both bursts inside one window (${elapsed} ms)`);
    t.same([...new Set(calls.map((r) => r.status))].sort(), [200, 429], `${c.name}: only 200 and 429`);
    t.equal(ok.length, c.limit, `${c.name}: exactly ${c.limit} admitted over the three processes`);
    t.equal(limited.length, c.first + c.second - c.limit, `${c.name}: every other call 429`);
    const bad = limited.filter((r) => badLimit(r, c.message, c.maxRetry));
    t.same(bad.slice(0, 3).map((r) => `${r.headers.get('retry-after')} ${r.text.slice(0, 200)}`), [],
      `${c.name}: every 429 is the envelope (rate_limit_exceeded) with a Retry-After of 1..${c.maxRetry} s`);
    for (const gateway of live) t.equal((await postChat(gateway, c.key, body)).status, 429, `${c.name}: ${label(gateway)} refuses the next call too`);
  }

  await leasesClosed(owner, user, 5_000);
  await owner.ledgerSettled(user, 15_000);
  const money = await ledgerSnapshot(owner, user);
  t.equal(money.usageTransactions, 9 + WINDOW_LIMIT + RPM, 'one usage transaction per admitted call (and the 9 warm-up calls)');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum = Redis credits');
  t.equal(money.held, 0n, 'nothing held');
  t.same(unexpected(), [], "no 'unexpected error' in any process's log");
});

t.test('1,000 concurrent calls from 40 keys over three processes on a $0.04 balance: no overspend, the ledger exact', async (t) => {
  const unexpected = logMark(live);
  const user = 'mp-balance';
  const initial = 40_000_000n; // $0.04
  // 40 keys: 25 calls each, well inside each key's default window of 60.
  const { keys } = await userWithKeys(user, usdString(initial), 40);
  const marker = `mp-burst-${randomBytes(4).toString('hex')}`;
  // Each answer uses its whole max_tokens, so a call is charged most of its reservation and the
  // balance runs out for real: about 290 worst cases fit at once, about 330 charges in all.
  const maxTokens = 200;
  const body = chatBody(`${marker} [[mock chunks=${maxTokens} latency_ms=300]]`, { max_tokens: maxTokens });
  const reserve = reserveNano(body, maxTokens);
  t.ok(reserve * 1000n > initial * 3n, `the 1,000 worst cases (${usdString(reserve * 1000n)} USD) exceed the balance more than three times`);
  t.equal((await owner.balanceNano(user)).credits, initial, 'starts with exactly $0.04');

  const sampler = sampleAvailable(owner, user);
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: 1000 }, async (_, i) => {
    const key = keys[i % keys.length]!;
    const via = live[i % live.length]!;
    return { keyId: key.id, via, ...(await postChat(via, key.key, body)) };
  }));
  const elapsedMs = Date.now() - started;
  const { min, maxHeld, samples } = await sampler.stop();

  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  const statuses = [...new Set(results.map((r) => r.status))].sort();
  const perProcess = live.map((g) => `${label(g)} ${ok.filter((r) => r.via === g).length}/${refused.filter((r) => r.via === g).length}`).join(', ');
  t.comment(`1,000 calls in ${elapsedMs} ms: ${ok.length} × 200, ${refused.length} × 402 (200/402 by process: ${perProcess}); ${samples} samples of available, min ${min}, max held ${maxHeld}`);
  t.same(statuses, [200, 402], `only 200 and 402 (${statuses.join(', ')}): ${results.find((r) => r.status !== 200 && r.status !== 402)?.text.slice(0, 200) ?? ''}`);
  t.ok(live.every((g) => ok.some((r) => r.via === g)), 'each process admitted calls');
  t.ok(samples > 0, 'Redis available was sampled during the burst');
  t.ok(min >= 0n, `available (credits - held) never went below zero (min ${min})`);
  t.ok(maxHeld <= initial, `held never exceeded the credits (max ${maxHeld})`);
  const badRefusals = refused.filter((r) => envelopeProblems(parseJson(r.text), 402).length > 0 || parseJson(r.text)?.error?.code !== 'insufficient_credits');
  t.same(badRefusals.slice(0, 3).map((r) => r.text.slice(0, 300)), [], 'every 402 is the envelope with code insufficient_credits');

  const { charges, sum, minCharge } = chargesOfServed(t, ok, reserve);
  t.ok(sum <= initial, `no overspend: the charges (${sum}) do not exceed the balance (${initial})`);
  t.equal(mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker)).length, ok.length, 'only admitted calls reached the upstream');
  const money = await assertSpentExactly(t, owner, user, initial, sum, ok.length, { leasesMs: 10_000, ledgerMs: 30_000 });
  // A call is refused only when the calls in flight hold what is left, so once they settle at most
  // their unused worst cases (and less than one reservation) remain: the balance was spent down.
  const maxInFlight = initial / reserve;
  const bound = reserve + maxInFlight * (reserve - minCharge);
  t.ok(money.credits < bound, `the balance was spent down: ${money.credits} left, below ${bound} (no credit stranded in the processes' leases)`);

  const rows = await usageRows(owner, user);
  const missing = [...charges.keys()].filter((id) => !rows.has(id));
  t.same(missing.slice(0, 3), [], 'each 200 has its usage transaction, under its x-request-id');
  const wrong = [...charges].filter(([id, c]) => rows.has(id) && (rows.get(id)!.chargeNano !== c.chargeNano || rows.get(id)!.keyId !== c.keyId));
  t.same(wrong.slice(0, 3).map(([id]) => id), [], "each transaction is the call's exact charge, on the key that made it");
  t.match(await owner.cli('ledger', 'check'), /^ledger check: ok/, '`gateway ledger check` passes');
  t.same(unexpected(), [], "no 'unexpected error' in any process's log");
});

t.test('a key revoked through one process is refused by all three within 1 s', async (t) => {
  const unexpected = logMark(live);
  const user = 'mp-revoke';
  const { token, keys: [kept, doomed] } = await userWithKeys(user, '1', 2);
  const body = chatBody('mp revoke [[mock chunks=1]]', { max_tokens: 5 });
  // Each process has the key cached (it served calls with it) before it goes.
  for (const gateway of live) {
    const before = await Promise.all(Array.from({ length: 3 }, () => postChat(gateway, doomed!.key, body)));
    t.same(before.map((r) => r.status), [200, 200, 200], `${label(gateway)} serves the key before`);
  }
  const through = live[1]!;
  let stop = false;
  // Each process is asked again and again until it refuses; the time is taken from the DELETE's answer.
  let answeredAt = 0;
  const watchers = live.map(async (gateway) => {
    let lastStatus = 0;
    while (!stop) {
      const sentAt = Date.now();
      const r = await postChat(gateway, doomed!.key, body);
      lastStatus = r.status;
      if (answeredAt && sentAt >= answeredAt && r.status === 401) return { gateway, ms: Date.now() - answeredAt, text: r.text };
      if (answeredAt && r.status !== 200 && r.status !== 401) return { gateway, ms: -1, text: `${r.status} ${r.text}` };
      if (answeredAt && Date.now() - answeredAt > 5_000) return { gateway, ms: Infinity, text: `still ${lastStatus}` };
      await sleep(5);
    }
    return { gateway, ms: Infinity, text: 'stopped' };
  });
  await sleep(100);
  const deleted = await fetch(`${through.url}/api/v1/api-keys/${doomed!.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  answeredAt = Date.now();
  await deleted.arrayBuffer();
  t.equal(deleted.status, 204, `revoked through ${label(through)}`);
  const seen = await Promise.all(watchers);
  stop = true;
  t.comment(`revocation seen after: ${seen.map((s) => `${label(s.gateway)} ${s.ms} ms`).join(', ')}`);
  for (const s of seen) {
    t.ok(s.ms >= 0 && s.ms <= 1000, `${label(s.gateway)} refuses the revoked key within 1 s (${s.ms} ms)`);
    t.equal(parseJson(s.text)?.code, 401, `${label(s.gateway)}: a 401 envelope`);
  }
  for (const gateway of live) {
    t.equal((await postChat(gateway, doomed!.key, body)).status, 401, `${label(gateway)} keeps refusing it`);
    t.equal((await postChat(gateway, kept!.key, body)).status, 200, `${label(gateway)}: the user's other key still works`);
  }
  await leasesClosed(owner, user, 5_000);
  await owner.ledgerSettled(user, 15_000);
  const money = await ledgerSnapshot(owner, user);
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum = Redis credits');
  t.same(unexpected(), [], "no 'unexpected error' in any process's log");
});

interface Delivery { webhookId: string; taskId: string; status: string; atMs: number }

/** The pid in a task runtime member id (`host:pid:random`). */
const pidOf = (member: string) => Number(member.split(':').at(-2));

t.test('video tasks through three processes, one SIGKILLed and another started: each ends exactly once', async (t) => {
  const keys = new RedisKeys(owner.prefix);
  const deliveries: Delivery[] = [];
  const receiver = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => { text += chunk; });
    req.on('end', () => {
      const task = parseJson(text);
      deliveries.push({ webhookId: String(req.headers['webhook-id']), taskId: task?.id, status: task?.status, atMs: Date.now() });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  /** Owner (member id) of each shard's lease, and the live members. */
  const shardView = async () => {
    const owners = await Promise.all(Array.from({ length: TASK_SHARDS }, async (_, shard) => (await owner.redis.get(keys.taskLease(shard)))?.split('|')[0]));
    const members = await owner.redis.zrangebyscore(keys.taskMembers(), Date.now(), '+inf');
    return { owners, members };
  };
  /** Every shard owned by the member the rendezvous hash names among exactly these processes. */
  const settledOn = async (gateways: Gateway[]) => {
    const { owners, members } = await shardView();
    const pids = new Set(gateways.map((g) => g.process.pid));
    if (members.length !== gateways.length || !members.every((m) => pids.has(pidOf(m)))) return false;
    return owners.every((o, shard) => o !== undefined && o === preferredOwner(shard, members));
  };
  t.ok(await eventually(() => settledOn(live), 10_000, 50), 'each of the 16 shards is owned where the rendezvous hash puts it among the three processes');

  const users = Array.from({ length: 12 }, (_, i) => `mp-task-${i}`);
  const userKeys = await Promise.all(users.map(async (user, i) => (await fastUser(live[i % 3]!, user, '5')).key));
  const submitted: { id: string; user: string; tag: string; phase: 'before' | 'after' }[] = [];
  const submit = async (gateway: Gateway, u: number, tag: string, jobMs: number, phase: 'before' | 'after') => {
    const r = await postJson(`${gateway.v1}/videos/generations`, userKeys[u]!, {
      model: VIDEO_MODEL, prompt: `${tag} [[mock job_ms=${jobMs}]]`, image_urls: [REF], callback_url: callbackUrl,
    });
    if (r.status !== 200) throw new Error(`submit ${tag} through ${label(gateway)}: ${r.status} ${JSON.stringify(r.body)}`);
    submitted.push({ id: r.body.id, user: users[u]!, tag, phase });
  };

  // Three tasks per user, through the three processes in turn: one ends before the kill, one around
  // it (while the dead process's shards wait for their leases to expire), one after the newcomer joined.
  const JOBS = [300, 2500, 6000];
  const submitStart = Date.now();
  await Promise.all(users.flatMap((_, u) => JOBS.map((jobMs, j) => submit(live[(u + j) % 3]!, u, `mp-${u}-${j}-${randomBytes(3).toString('hex')}`, jobMs, 'before'))));
  t.comment(`${submitted.length} tasks submitted in ${Date.now() - submitStart} ms`);
  const beforeIds = submitted.map((s) => s.id);
  // Each task is at the vendor (or ended) and the first ones' callbacks arrived before the kill.
  t.ok(await eventually(async () => {
    const [row] = await owner.sql<{ n: number }[]>`select count(*)::int as n from tasks where id = any(${beforeIds}::uuid[]) and upstream_id is null`;
    return row!.n === 0;
  }, 10_000, 50), 'every task was submitted to the vendor');
  const early = new Set(submitted.filter((s) => s.tag.split('-')[2] === '0').map((s) => s.id));
  t.ok(await eventually(() => [...early].every((id) => deliveries.some((d) => d.taskId === id)), 10_000, 50), 'the short tasks ended and their callbacks arrived');
  await sleep(100); // their delivered marks are written

  // The victim: the process whose shards hold the most open tasks.
  const { owners } = await shardView();
  const open = await owner.sql<{ shard: number }[]>`select shard from tasks where status = 'pending' or callback_status = 'pending'`;
  const openPerProcess = new Map(live.map((g) => [g, open.filter((row) => pidOf(owners[row.shard] ?? '') === g.process.pid).length]));
  const victim = [...openPerProcess].sort((a, b) => b[1] - a[1])[0]![0];
  t.comment(`open tasks per process before the kill: ${[...openPerProcess].map(([g, n]) => `${label(g)} ${n}`).join(', ')}; killing ${label(victim)}`);
  t.ok(openPerProcess.get(victim)! > 0, 'the victim owns shards with open tasks');
  const unexpected = logMark(live.filter((g) => g !== victim));

  const killedAt = Date.now();
  t.equal(await victim.stop('SIGKILL'), null, 'SIGKILL');
  t.equal(victim.process.signalCode, 'SIGKILL', `${label(victim)} was killed ${killedAt - submitStart} ms after the first submission`);
  live = live.filter((g) => g !== victim);
  const newcomer = await startOne();
  const startedMs = Date.now() - killedAt;
  live.push(newcomer);
  t.ok(await eventually(() => settledOn(live), 15_000, 25), 'the shards settle on the two survivors and the newcomer');
  const settledAt = Date.now();
  t.comment(`${label(newcomer)} ready ${startedMs} ms after the kill; shards settled after ${settledAt - killedAt} ms`);

  // One more task per user, through the processes serving now.
  await Promise.all(users.map((_, u) => submit(live[u % 3]!, u, `mp-${u}-after-${randomBytes(3).toString('hex')}`, 800, 'after')));
  const ids = submitted.map((s) => s.id);

  t.ok(await eventually(async () => {
    const [row] = await owner.sql<{ n: number }[]>`select count(*)::int as n from tasks where id = any(${ids}::uuid[]) and (status = 'pending' or callback_status = 'pending')`;
    return row!.n === 0;
  }, 30_000, 100), 'every task ended and its callback was delivered');
  t.comment(`every task and callback done ${Date.now() - killedAt} ms after the kill`);

  const rows = await owner.sql<{ id: string; user_id: string; status: string; charged_nano: bigint | null; callback_status: string; ended_at: Date }[]>`
    select id, user_id, status, charged_nano, callback_status, ended_at from tasks where id = any(${ids}::uuid[])`;
  t.equal(rows.length, ids.length, `${ids.length} tasks, one row each`);
  t.same(rows.filter((row) => row.status !== 'success').map((row) => `${row.id} ${row.status}`), [], 'every task succeeded');
  t.ok(rows.every((row) => row.callback_status === 'delivered'), 'every callback delivered');
  const usage = await owner.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where id = any(${ids}::uuid[])`;
  t.equal(usage.length, ids.length, 'one transaction per task');
  t.ok(usage.every((row) => row.credits_nano === -VIDEO_PRICE), 'each the profile price, once');
  t.ok(rows.every((row) => row.charged_nano === VIDEO_PRICE), "each task's charge is the profile price");

  // The vendor got each task once: the tasks in flight at the kill were at the vendor already and
  // were polled, never submitted again, by the shard's next owner.
  const vendorSubmits = new Map<string, number>();
  for (const request of mock.requests()) {
    if (request.path !== '/bytedance/v1/contents/generations/tasks') continue; // the submit (polls are GETs of /tasks/{id})
    const tag = /(mp-\d+-[\w-]+?) \[\[/.exec(JSON.stringify(request.body ?? ''))?.[1];
    if (tag) vendorSubmits.set(tag, (vendorSubmits.get(tag) ?? 0) + 1);
  }
  t.same(submitted.filter((s) => vendorSubmits.get(s.tag) !== 1).map((s) => `${s.tag}: ${vendorSubmits.get(s.tag) ?? 0}`), [], 'each task submitted to the vendor exactly once');

  // Callbacks: each task's final object, under its one webhook-id. A delivery may repeat only when
  // the task ended while its shard moved (its owner died or handed it over mid-delivery): at least once.
  const churnFrom = killedAt - 500;
  const churnTo = settledAt + 500;
  const byTask = new Map<string, Delivery[]>();
  for (const d of deliveries) byTask.set(d.taskId, [...(byTask.get(d.taskId) ?? []), d]);
  t.same(ids.filter((id) => !byTask.has(id)), [], 'each task called back');
  t.same([...byTask.keys()].filter((id) => !ids.includes(id)), [], 'no callback for anything else');
  t.ok([...byTask].every(([id, list]) => list.every((d) => d.webhookId === `msg_${id.replaceAll('-', '')}` && d.status === 'success')),
    'each delivery carries its task\'s webhook-id and final status');
  const repeated = [...byTask].filter(([, list]) => list.length > 1);
  const repeatedOutsideChurn = repeated.filter(([, list]) => list[0]!.atMs < churnFrom || list[0]!.atMs > churnTo);
  const endedInChurn = rows.filter((row) => row.ended_at.getTime() >= churnFrom && row.ended_at.getTime() <= churnTo).length;
  t.comment(`${deliveries.length} deliveries for ${ids.length} tasks; ${endedInChurn} tasks ended while the shards moved; repeated deliveries: ${repeated.length}`);
  t.same(repeatedOutsideChurn.map(([id, list]) => `${id}: ${list.length}`), [], 'exactly one delivery for each task that did not end while the shards moved');

  // Money: each user charged exactly its four tasks, nothing held, Redis and Postgres agree.
  for (const user of users) {
    t.ok(await eventually(async () => (await owner.balanceNano(user)).held === 0n, 10_000), `${user}: the holds ended`);
    await owner.ledgerSettled(user, 15_000);
    const money = await ledgerSnapshot(owner, user);
    const tasks = rows.filter((row) => row.user_id === user).length;
    t.equal(tasks, 4, `${user}: four tasks`);
    t.same({ credits: money.credits, ledgerSum: money.ledgerSum }, { credits: 5n * USD - 4n * VIDEO_PRICE, ledgerSum: 5n * USD - 4n * VIDEO_PRICE },
      `${user}: Redis credits and the Postgres ledger both $5 - four task charges`);
  }
  t.match(await owner.cli('ledger', 'check'), /^ledger check: ok/, '`gateway ledger check` passes');
  t.same(unexpected(), [], "no 'unexpected error' in the survivors' logs");
});

t.test('`gateway ledger check` passes through every process serving now', async (t) => {
  for (const gateway of live) t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/, `${label(gateway)}'s CLI: ok`);
});
