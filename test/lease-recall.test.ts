// No false 402 near the end of a balance or of a key's credit_limit, and `held` as the spec defines
// it. Two gateway processes of three HTTP threads each share one Redis and one Postgres; many clients
// spend a balance (then a key's credit_limit) down to its last call over fresh connections, so every
// thread of both processes holds admission leases. A call whose credit another thread's lease still
// held must be admitted after that lease is recalled, never refused.
//
// Image calls make the arithmetic exact: a call of `gpt-image-2` at a named size and quality reserves
// exactly the per-image price and is charged exactly that, so the credit left after k admitted calls
// is B - k * c whatever the order, and a refusal is right only when fewer than one call's price is
// left of everything not already admitted. Hence, with no false refusal:
//   - exactly floor(B / c) calls succeed; and
//   - no call succeeds that was sent after some call was refused (once one call is truly refused,
//     no credit ever comes back: every admitted call is charged its whole reservation).
// A refusal while another lease held the credit shows as a later success from that lease's credit
// (or, if every client was refused that way, as fewer successes).
import t, { type Test } from 'tap';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { chatBody, costNano, eventually, jwtFor, leasesClosed, parseJson, reserveNano, sampleAvailable, usdString, usdToNano } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, newestKeyId, parsePrometheus, rawRequest, sumSamples, updateKey } from './helpers/http-tools.js';
import { keySpendInRedis, keySpendNano, ledgerSnapshot, logMark } from './helpers/money-invariants.js';

let mock: MockVendor;
let main: Gateway;
let peer: Gateway;

const ENV = { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000000/10', MEDIA_STORAGE: 'off' };

t.before(async () => {
  mock = await startMockVendor({ port: 0, keepRequests: 0 });
  // Three threads each: every refusal path crosses threads and processes, within a Postgres of 100 connections shared with another test file.
  main = await startGateway({ mock, threads: 3, env: ENV });
  peer = await startGateway({ mock, threads: 3, shared: { database: main.database, prefix: main.prefix }, env: ENV });
  // Every thread of both processes has served image calls before the races (nothing is loaded in them).
  const token = jwtFor(main, 'recall-warm-up');
  await main.topup('recall-warm-up', '10');
  const key = await main.createKey(token, { name: 'warm-up' });
  const warm = await spendDown([main, peer], [key], 16, 8, 1);
  if (warm.some((c) => c.status !== 200)) throw new Error(`warm-up call failed: ${warm.find((c) => c.status !== 200)?.text}`);
});
t.teardown(async () => {
  await peer?.close();
  await main?.close();
  await mock?.close();
});

/** One image at a named size and quality: reserved and charged exactly 0.006 USD. */
const IMAGE = JSON.stringify({ model: 'openai/gpt-image-2', prompt: 'the last call', size: '1024x1024', quality: 'low' });
const PRICE = 6_000_000n;

interface Call {
  worker: number;
  via: string;
  status: number;
  text: string;
  sentAt: number;
  doneAt: number;
}

/** Refusals each client takes before it stops: a client refused falsely tries again at once, and is then admitted. */
const REFUSALS_EACH = 3;

/**
 * `workers` clients, spread over `gateways` in turn, each calling one image after another on fresh
 * connections (so each call may land on any HTTP thread), until its REFUSALS_EACH-th refusal.
 */
async function spendDown(gateways: Gateway[], keys: string[], workers: number, maxCallsEach: number, refusalsEach = REFUSALS_EACH): Promise<Call[]> {
  const calls: Call[] = [];
  await Promise.all(Array.from({ length: workers }, async (_, worker) => {
    const gateway = gateways[worker % gateways.length]!;
    const key = keys[Math.floor(worker / gateways.length) % keys.length]!;
    let refusals = 0;
    for (let i = 0; i < maxCallsEach; i++) {
      const sentAt = performance.now();
      const r = await rawRequest(`${gateway.v1}/images/generations`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: IMAGE,
      });
      calls.push({ worker, via: gateway === main ? 'main' : 'peer', status: r.status, text: r.text, sentAt, doneAt: performance.now() });
      if (r.status !== 200 && ++refusals === refusalsEach) return;
    }
  }));
  return calls;
}

async function metric(gateway: Gateway, name: string): Promise<number> {
  return sumSamples(parsePrometheus((await rawRequest(`${gateway.url}/metrics`)).text), name);
}

/** The checks every spend-down shares; returns the successes. */
function noFalseRefusal(t: Test, calls: Call[], expected: number, workers: number, code: string, refusalsEach = REFUSALS_EACH): Call[] {
  const ok = calls.filter((c) => c.status === 200);
  const refused = calls.filter((c) => c.status === 402);
  const statuses = [...new Set(calls.map((c) => c.status))].sort();
  t.same(statuses, [200, 402], `only 200 and 402 (${statuses.join(', ')}): ${calls.find((c) => c.status !== 200 && c.status !== 402)?.text.slice(0, 200) ?? ''}`);
  t.equal(refused.length, workers * refusalsEach, `every client ran until its refusal number ${refusalsEach}`);
  const wrong = refused.filter((c) => parseJson(c.text)?.error?.code !== code);
  t.same(wrong.slice(0, 3).map((c) => c.text.slice(0, 300)), [], `every 402 is ${code}`);
  t.equal(ok.length, expected, `exactly floor(credit / price) = ${expected} calls succeeded`);
  const firstRefusal = Math.min(...refused.map((c) => c.doneAt));
  const late = ok.filter((c) => c.sentAt > firstRefusal);
  t.same(late.map((c) => `${c.via} worker ${c.worker}: sent ${(c.sentAt - firstRefusal).toFixed(1)} ms after the first 402`), [],
    'no call succeeded that was sent after a refusal: every refusal came when less than one call was left');
  const byProcess = (via: string) => ok.filter((c) => c.via === via).length;
  if (new Set(calls.map((c) => c.via)).size > 1) t.ok(byProcess('main') > 0 && byProcess('peer') > 0, `both processes served calls (main ${byProcess('main')}, peer ${byProcess('peer')})`);
  const slowest = (list: Call[]) => Math.max(...list.map((c) => c.doneAt - c.sentAt)).toFixed(1);
  t.comment(`${ok.length} × 200 and ${refused.length} × 402; the last refusal ${(Math.max(...refused.map((c) => c.doneAt)) - firstRefusal).toFixed(1)} ms after the first; ` +
    `slowest 200 ${slowest(ok)} ms, slowest 402 ${slowest(refused)} ms`);
  return ok;
}

t.test('a balance spent to its last call by 32 clients on 6 HTTP threads of 2 processes: no false 402, no overspend', async (t) => {
  const unexpected = logMark([main, peer]);
  const user = 'recall-balance';
  const calls = 400;
  const initial = PRICE * BigInt(calls) + PRICE / 2n;
  const token = jwtFor(main, user);
  await main.topup(user, usdString(initial));
  // Two keys: leases are per key and thread, so a call may need credit another key's lease holds.
  const keys = [await main.createKey(token, { name: 'a' }), await main.createKey(token, { name: 'b' })];
  const leasesBefore = await Promise.all([main, peer].map(async (g) => ({
    count: await metric(g, 'gateway_admission_lease_slots_count'), slots: await metric(g, 'gateway_admission_lease_slots_sum'),
  })));

  const sampler = sampleAvailable(main, user);
  const results = await spendDown([main, peer], keys, 32, calls + 10);
  const { min, samples } = await sampler.stop();
  noFalseRefusal(t, results, calls, 32, 'insufficient_credits');
  t.ok(samples > 0 && min >= 0n, `available (credits - held) never below zero (min ${min}, ${samples} samples)`);
  for (const [i, g] of [main, peer].entries()) {
    const count = (await metric(g, 'gateway_admission_lease_slots_count')) - leasesBefore[i]!.count;
    const slots = (await metric(g, 'gateway_admission_lease_slots_sum')) - leasesBefore[i]!.slots;
    t.ok(slots > count, `${i === 0 ? 'main' : 'peer'}: leases of more than one call were granted (${count} leases, ${slots} slots)`);
  }

  await leasesClosed(main, user, 5_000);
  await main.ledgerSettled(user, 15_000);
  const money = await ledgerSnapshot(main, user);
  t.equal(money.credits, initial - PRICE * BigInt(calls), 'Redis credits: exactly the calls\' prices spent; less than one call is left');
  t.ok(money.credits < PRICE, 'less than one call is left');
  t.equal(money.held, 0n, 'nothing held');
  t.equal(money.usageTransactions, calls, 'one usage transaction per call');
  t.equal(money.ledgerSum, money.credits, 'the Postgres ledger adds up to the Redis credits');
  t.match(await main.cli('ledger', 'check'), /^ledger check: ok/, '`gateway ledger check` is clean');
  const balance = await main.balance(token);
  t.equal(usdToNano(balance.available), initial - PRICE * BigInt(calls), 'balance API: available is what is left');
  t.same(unexpected(), [], "no 'unexpected error' in either gateway's log");
});

t.test("a key's credit_limit spent to its last call by 32 clients on 6 HTTP threads of 2 processes: no false 402, never above the cap", async (t) => {
  const unexpected = logMark([main, peer]);
  const user = 'recall-cap';
  const calls = 300;
  const initial = 10_000_000_000n;
  const cap = PRICE * BigInt(calls) + PRICE / 2n;
  const token = jwtFor(main, user);
  await main.topup(user, usdString(initial));
  const key = await main.createKey(token, { name: 'capped' });
  const keyId = await newestKeyId(main.url, token);
  const record = await updateKey(main.url, token, keyId, { credit_limit: Number(cap) / 1e9 });
  t.equal(usdToNano(record.credit_limit), cap, `the cap is ${calls} and a half calls`);

  const sampler = sampleAvailable(main, user);
  const results = await spendDown([main, peer], [key], 32, calls + 10);
  const { min } = await sampler.stop();
  noFalseRefusal(t, results, calls, 32, 'credit_limit_exceeded');
  t.ok(min >= 0n, 'available never below zero');

  await leasesClosed(main, user, 5_000);
  await main.ledgerSettled(user, 15_000);
  const spent = await keySpendNano(main, keyId);
  t.equal(spent, PRICE * BigInt(calls), "the key's Postgres spend is exactly the calls' prices");
  t.ok(spent <= cap && cap - spent < PRICE, 'within the cap, with less than one call left under it');
  t.same(await keySpendInRedis(main, user, keyId), { spent, held: 0n }, "Redis: the key's spend, nothing held for it");
  const money = await ledgerSnapshot(main, user);
  t.equal(money.credits, initial - spent, 'Redis credits: the balance less the spend');
  t.equal(money.ledgerSum, money.credits, 'the Postgres ledger adds up to the Redis credits');
  t.match(await main.cli('ledger', 'check'), /^ledger check: ok/, '`gateway ledger check` is clean');
  t.same(unexpected(), [], "no 'unexpected error' in either gateway's log");
});

/** POST a body over `agent` (keep-alive: the calls stay on one connection, so on one HTTP thread). */
function post(agent: http.Agent, gateway: Gateway, key: string, body: string, path = '/chat/completions'): Promise<{ status: number; text: string; port: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gateway.v1}${path}`, {
      method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    }, (res) => {
      const port = (res.socket as Socket).localPort ?? -1;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => { text += part; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, port }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

for (const limit of ['balance', 'credit_limit'] as const) {
  t.test(`the ${limit}'s last calls on one process are admitted with credit a lease of the other process held`, async (t) => {
    const user = `recall-lease-${limit}`;
    const calls = 60;
    const credit = PRICE * BigInt(calls) + PRICE / 2n;
    const token = jwtFor(main, user);
    await main.topup(user, usdString(limit === 'balance' ? credit : 10_000_000_000n));
    const key = await main.createKey(token, { name: 'lease' });
    if (limit === 'credit_limit') await updateKey(main.url, token, await newestKeyId(main.url, token), { credit_limit: Number(credit) / 1e9 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    // Every thread of `peer` knows the key before the race (no Postgres lookup in it).
    await Promise.all(Array.from({ length: 16 }, () => rawRequest(`${peer.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${key}` } })));

    // 16 calls one after another on one connection to `main`: its thread's leases grow (1, 2, 4, 8
    // calls, then one bounded by 1/8 of what is left), and the last one has admitted one call: it
    // holds the credit of several more (checked below) for calls that `main` will not be sent.
    const first = 16;
    for (let i = 0; i < first; i++) {
      const r = await post(agent, main, key, IMAGE, '/images/generations');
      if (r.status !== 200) t.fail(`call ${i}: ${r.status} ${r.text.slice(0, 200)}`);
    }
    const spent = PRICE * BigInt(first);
    await eventually('the first calls to be charged in Redis', async () =>
      ((await main.balanceNano(user)).credits === (limit === 'balance' ? credit : 10_000_000_000n) - spent ? true : undefined), 2_000);
    const heldByLease = (await main.balanceNano(user)).held;
    t.ok(heldByLease >= 2n * PRICE, `with no call in flight, a lease of main holds the credit of ${Number(heldByLease) / Number(PRICE)} calls`);

    // Right away (the lease is not idle yet), 16 clients spend the rest on `peer`, each until refused.
    const started = performance.now();
    const results = await spendDown([peer], [key], 16, calls, 1);
    t.comment(`peer spent the rest in ${(performance.now() - started).toFixed(0)} ms`);
    noFalseRefusal(t, results, calls - first, 16, limit === 'balance' ? 'insufficient_credits' : 'credit_limit_exceeded', 1);
    await leasesClosed(main, user, 5_000);
    await main.ledgerSettled(user, 15_000);
    const money = await ledgerSnapshot(main, user);
    t.equal(money.usageTransactions, calls, `${calls} calls charged in all`);
    t.equal(money.ledgerSum, money.credits, 'the Postgres ledger adds up to the Redis credits');
  });
}

const chargeOf = (text: string) => {
  const { usage } = JSON.parse(text) as { usage: { prompt_tokens: number; completion_tokens: number } };
  return costNano(usage.prompt_tokens, usage.completion_tokens);
};

t.test('the balance API: held is the reservations of calls in flight, never a lease\'s unused credit; available = credits - held', async (t) => {
  const user = 'recall-held';
  const initial = 5_000_000_000n;
  const token = jwtFor(main, user);
  await main.topup(user, usdString(initial));
  const key = await main.createKey(token, { name: 'held' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const other = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => { agent.destroy(); other.destroy(); });
  const rawMoney = async () => {
    const [held, slack] = await main.redis.hmget(`${main.prefix}{u:${user}}:bal`, 'held', 'slack');
    return { held: BigInt(held ?? '0'), slack: BigInt(slack ?? '0') };
  };

  // 40 calls one after another on one connection: its thread's leases grow (1, 2, 4, ... calls), and
  // the last one still holds credit for calls not made yet.
  const body = chatBody('held [[mock chunks=2]]', { max_tokens: 5 });
  let charges = 0n;
  for (let i = 0; i < 40; i++) {
    const r = await post(agent, main, key, body);
    if (r.status !== 200) t.fail(`call ${i}: ${r.status} ${r.text.slice(0, 200)}`);
    else charges += chargeOf(r.text);
  }
  await eventually('every charge to reach Redis', async () => ((await main.balanceNano(user)).credits === initial - charges ? true : undefined), 2_000);
  // The API first, then Redis: credit a lease holds in Redis then was held when the API answered.
  const idle = await main.balance(token);
  const idleRaw = await rawMoney();
  t.ok(idleRaw.held > 0n, `a lease still holds unused credit (${idleRaw.held} nano-USD in Redis, ${idleRaw.slack} of it counted as slack)`);
  t.equal(idleRaw.slack, idleRaw.held, 'Redis: all of it is slack (no call in flight)');
  t.equal(idle.held, 0, 'the API: nothing held (no call in flight)');
  t.equal(usdToNano(idle.credits), initial - charges, 'the API: credits');
  t.equal(idle.available, idle.credits, 'the API: available = credits - held');

  // A slow call in flight: held is exactly its reservation.
  const slowBody = chatBody('held slow [[mock chunks=3 latency_ms=1500]]', { max_tokens: 50 });
  const slowReserve = reserveNano(slowBody, 50);
  const slow = post(other, main, key, slowBody);
  let during: Awaited<ReturnType<Gateway['balance']>> | undefined;
  await eventually('the slow call to be held', async () => {
    during = await main.balance(token);
    return usdToNano(during.held) === slowReserve ? true : undefined;
  }, 1_000);
  const duringRaw = await rawMoney();
  t.ok(duringRaw.held > slowReserve, `Redis holds more than the call in flight (${duringRaw.held} > ${slowReserve}): lease slack`);
  t.equal(usdToNano(during!.held), slowReserve, 'the API: held is exactly the reservation of the call in flight');
  t.equal(usdToNano(during!.available), usdToNano(during!.credits) - slowReserve, 'the API: available = credits - held');

  const done = await slow;
  t.equal(done.status, 200, 'the slow call succeeds');
  charges += chargeOf(done.text);
  await leasesClosed(main, user);
  const after = await main.balance(token);
  t.equal(after.held, 0, 'once the leases closed: nothing held');
  t.equal(usdToNano(after.credits), initial - charges, 'credits: every charge');
  const raw = await rawMoney();
  t.same(raw, { held: 0n, slack: 0n }, 'Redis: nothing held, no slack');
});
