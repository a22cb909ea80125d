// Admission: the balance reservation under a concurrent burst (402s, never below zero, exact
// settlement), the per-key request window (429 with Retry-After, nothing reserved), and the Lua
// scripts themselves straight against Redis.
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import {
  chatBody, costNano, envelopeProblems, leasesClosed, moneyView, parseJson, postChat, reserveNano, sampleAvailable, usdString, usdToNano,
} from './helpers/billing-checks.js';
import {
  NO_KEY_LIMITS, SCRIPT_KEY_COUNTS, credit, expireLease, hydrate, loadSpend, type AdmitInput, type KeyLimits, type AdmitResult, type SettleInput,
} from '../src/admission/scripts.js';
import { connectRedis } from '../src/store/redis-connect.js';
import { deleteKeysWithPrefix } from '../bench/namespaces.js';
import { luaTestbed } from './helpers/lua-testbed.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let burst: Gateway; // RATE_LIMIT_DEFAULT raised so the burst meets only the balance
let standard: Gateway; // the spec's default: 20 requests per 10 s per key
t.before(async () => {
  [burst, standard] = await Promise.all([startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: '1000/10' } }), startGateway()]);
});
t.teardown(async () => {
  await Promise.all([burst?.close(), standard?.close()]);
});

t.test('100 concurrent calls against a balance of exactly 10 reservations', async (t) => {
  const user = 'burst-user';
  const maxTokens = 10;
  // latency_ms keeps every admitted call open upstream until all 100 have been admitted or refused,
  // so no settlement can free room during the burst: exactly 10 fit.
  const body = chatBody('admission burst [[mock chunks=10 latency_ms=2000]]', { max_tokens: maxTokens });
  const reserve = reserveNano(body, maxTokens);
  const initial = reserve * 10n;
  const { token, key } = await burst.user(user, usdString(initial));
  t.equal((await burst.balanceNano(user)).credits, initial, 'starts with exactly 10 reservations of credit');

  const sampler = sampleAvailable(burst, user);
  const results = await Promise.all(Array.from({ length: 100 }, () => postChat(burst, key, body)));
  const { min, maxHeld, samples } = await sampler.stop();

  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  t.ok(ok.length <= 10, `at most 10 calls admitted (got ${ok.length})`);
  t.equal(ok.length, 10, 'exactly the 10 that fit were admitted (all were admitted before any settled)');
  t.equal(refused.length, 100 - ok.length, 'every other call got 402');
  t.same([...new Set(results.map((r) => r.status))].sort(), [200, 402], 'no other status');
  for (const r of refused.slice(0, 5).concat(refused.slice(-5))) {
    const problems = envelopeProblems(parseJson(r.text), 402);
    t.same(problems, [], `402 envelope {code, msg, error:{message,type,code}}: ${r.text.slice(0, 200)}`);
  }
  t.ok(refused.every((r) => envelopeProblems(parseJson(r.text), 402).length === 0), 'every 402 carries the envelope');
  t.ok(samples > 0, `Redis balance sampled during the burst (${samples} samples)`);
  t.ok(min >= 0n, `available (credits - held) in Redis never went below zero (min ${min})`);
  t.ok(maxHeld <= initial, `held never exceeded credits (max held ${maxHeld}, credits ${initial})`);

  let charges = 0n;
  for (const r of ok) {
    const completion = JSON.parse(r.text) as { usage: { prompt_tokens: number; completion_tokens: number } };
    t.equal(completion.usage.completion_tokens, maxTokens);
    const charge = costNano(completion.usage.prompt_tokens, completion.usage.completion_tokens);
    t.ok(charge <= reserve, 'a charge fits in its reservation');
    charges += charge;
  }

  await leasesClosed(burst, user);
  await burst.ledgerSettled(user);
  const money = await moneyView(burst, user);
  t.equal(money.credits, initial - charges, 'Redis credits = initial - exact sum of the successful calls');
  t.equal(money.held, 0n, 'nothing held after settlement');
  t.equal(money.openReservations, 0, 'no open reservation left');
  t.equal(money.usageTransactions, ok.length, 'one usage transaction per successful call, none for the 402s');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');

  const balance = await burst.balance(token);
  t.ok(balance.available >= 0, 'API balance: available not negative');
  t.equal(usdToNano(balance.credits), initial - charges, 'API balance: credits');
  t.equal(balance.held, 0, 'API balance: held');
  t.equal(balance.available, balance.credits, 'API balance: available = credits - held');
  t.equal(burst.mock.requests().filter((r) => JSON.stringify(r.body).includes('admission burst')).length, ok.length,
    'only admitted calls reached the upstream');
});

t.test('default window: 20 requests per 10 s per key, then 429 with Retry-After; nothing reserved', async (t) => {
  const user = 'window-user';
  const { token, key } = await standard.user(user, '5');
  const body = chatBody('window [[mock chunks=2]]', { max_tokens: 5 });
  const started = Date.now();
  const statuses: number[] = [];
  const remaining: (string | null)[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await postChat(standard, key, body);
    statuses.push(r.status);
    remaining.push(r.headers.get('x-ratelimit-remaining-requests'));
    if (i === 0) {
      t.equal(r.headers.get('x-ratelimit-limit-requests'), '20', 'the window is announced');
      t.match(r.headers.get('x-ratelimit-reset-requests'), /^(\d+(\.\d+)?)s$/, 'reset in seconds');
    }
  }
  t.same(statuses, Array(20).fill(200), 'the first 20 succeed');
  t.same(remaining, Array.from({ length: 20 }, (_, i) => String(19 - i)), 'x-ratelimit-remaining-requests counts down to 0');

  await standard.ledgerSettled(user);
  const before = await moneyView(standard, user);
  t.equal(before.usageTransactions, 20);
  const upstreamBefore = standard.mock.requests().length;

  for (let i = 21; i <= 25; i++) {
    const r = await postChat(standard, key, body);
    t.equal(r.status, 429, `request ${i} is rate limited`);
    t.same(envelopeProblems(parseJson(r.text), 429), [], `request ${i}: 429 envelope`);
    t.equal(r.headers.get('x-ratelimit-remaining-requests'), '0', `request ${i}: nothing remaining`);
    const retryAfter = r.headers.get('retry-after');
    t.match(retryAfter, /^\d+$/, `request ${i}: Retry-After is whole seconds (${retryAfter})`);
    t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 10, `request ${i}: Retry-After within 1..10 (${retryAfter})`);
    const retryAfterMs = r.headers.get('retry-after-ms');
    t.match(retryAfterMs, /^\d+$/, `request ${i}: retry-after-ms is whole milliseconds (${retryAfterMs})`);
    t.ok(Number(retryAfterMs) >= 1 && Number(retryAfterMs) <= 10_000, `request ${i}: retry-after-ms within the window`);
    t.ok(Math.abs(Number(retryAfter) - Number(retryAfterMs) / 1000) < 1, 'both headers say the same wait');
    // Nothing was reserved, not even for a moment that settles later.
    const now = await moneyView(standard, user);
    t.equal(now.held, 0n, `request ${i}: nothing held`);
    t.equal(now.openReservations, 0, `request ${i}: no reservation`);
  }
  t.ok(Date.now() - started < 10_000, 'all 25 requests fell inside one 10 s window');
  t.equal(standard.mock.requests().length, upstreamBefore, 'rate-limited requests never reached the upstream');

  await sleep(200); // a wrongly queued settlement would have reached the ledger by now
  await standard.ledgerSettled(user);
  const after = await moneyView(standard, user);
  t.same(after, before, 'credits, held, reservations and transactions unchanged by the 429s');

  const secondKey = await standard.createKey(token, { name: 'second' });
  const other = await postChat(standard, secondKey, body);
  t.equal(other.status, 200, "a second key of the same user has its own window");
  t.equal((await postChat(standard, key, body)).status, 429, 'the first key is still limited');
  await standard.ledgerSettled(user);
  t.equal((await moneyView(standard, user)).usageTransactions, 21);
});

t.test('Lua scripts against Redis', async (t) => {
  const { prefix, redis, keys, pipe, scripts } = luaTestbed(t, 'lua', REDIS_URL);
  const bal = async (user: string) => {
    const [credits, held, deposits] = await redis.hmget(keys.balance(user), 'credits', 'held', 'deposits');
    const big = (value: string | null | undefined) => (value == null ? null : BigInt(value));
    return { credits: big(credits), held: big(held), deposits: big(deposits) };
  };
  interface AdmitOver { keyId?: string; wantCreditNano?: bigint; wantSlots?: number; limit?: number; windowMs?: number; leaseLifeMs?: number; rpm?: number | null; keyLimits?: Partial<KeyLimits>; callTokens?: number }
  /** One call's admission (a one-slot lease of exactly its cost, unless `over` asks for more). */
  const admitInput = (user: string, leaseId: string, callNano: bigint, over: AdmitOver = {}): AdmitInput => ({
    userId: user, keyId: over.keyId ?? 'key-1', leaseId, callNano, wantCreditNano: over.wantCreditNano ?? callNano, wantSlots: over.wantSlots ?? 1,
    limit: over.limit ?? 100, windowMs: over.windowMs ?? 10_000, ttlMs: 60_000, leaseLifeMs: over.leaseLifeMs ?? 1000,
    keyLimits: { ...NO_KEY_LIMITS, rpm: over.rpm ?? null, ...over.keyLimits }, callTokens: over.callTokens ?? 1,
  });
  /** A lease asked for `calls` calls of `callNano` each. */
  const leaseInput = (user: string, leaseId: string, callNano: bigint, calls: number, over: AdmitOver = {}): AdmitInput =>
    admitInput(user, leaseId, callNano, { wantCreditNano: callNano * BigInt(calls), wantSlots: calls, ...over });
  interface SettleOver { keyId?: string; close?: boolean; unusedSlots?: number; releaseNano?: bigint; epoch?: string; tokens?: number; tokensFreed?: number }
  const settleInput = (user: string, leaseId: string, batch: number, calls: [string, bigint, string?][], over: SettleOver = {}): SettleInput => ({
    userId: user, keyId: over.keyId ?? 'key-1', leaseId, epoch: over.epoch ?? '0', batch, ttlMs: 60_000, close: over.close ?? false, unusedSlots: over.unusedSlots ?? 0,
    releaseNano: over.releaseNano ?? 0n, tokensFreed: over.tokensFreed ?? 0,
    calls: calls.map(([callId, chargeNano, event]) => ({ callId, chargeNano, tokens: over.tokens ?? 0, event: event ?? `{"call":"${callId}"}` })),
  });
  /** The grant of an admitted result, as plain comparable values (fails the test otherwise). */
  const grantOf = (t: Test, result: AdmitResult, label = 'admitted') => {
    t.equal(result.kind, 'admitted', label);
    if (result.kind !== 'admitted') return { creditNano: -1n, slots: -1, available: -1, remaining: -1, resetMs: -1 };
    const { creditNano, slots, available, window } = result.grant;
    return { creditNano, slots, available, remaining: window.remaining, resetMs: window.resetMs };
  };
  const used = async (user: string, keyId = 'key-1') => Number((await redis.hget(keys.rateWeights(user, keyId), '#')) ?? '0');
  const redisNowMs = async () => {
    const [s, us] = await redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const ledgerFields = async (user: string) => ((await redis.xrange(keys.ledger(user), '-', '+')) as [string, string[]][]).map(([, fields]) => fields);
  /** Everything settle.lua may touch for one user and key, to show that a call changed nothing. */
  const snapshot = async (user: string, keyId = 'key-1') => ({
    balance: await bal(user),
    reservations: await redis.hgetall(keys.reservations(user)),
    deadlines: await redis.zrange(keys.reservationDeadlines(user), 0, -1, 'WITHSCORES'),
    ledger: await ledgerFields(user),
    batches: await redis.hgetall(keys.leaseBatches(user)),
    expired: await redis.hgetall(keys.expiredLeases(user)),
    window: await redis.zrange(keys.rateWindow(user, keyId), 0, -1, 'WITHSCORES'),
    weights: await redis.hgetall(keys.rateWeights(user, keyId)),
  });

  t.test('each script declares and uses exactly the KEYS count the wrapper passes', async (t) => {
    t.same(SCRIPT_KEY_COUNTS, { admit: 11, settle: 14, count: 4, hydrate: 2, credit: 1, loadspend: 1, expire: 8, task_settle: 4, shard_claim: 2, shard_release: 1, timers_due: 2, idempotency_claim: 1, idempotency_complete: 1, idempotency_release: 1 }, 'pinned KEYS counts');
    const luaDir = new URL('../../lua/', import.meta.url);
    const files = readdirSync(luaDir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)).sort();
    t.same(files, Object.keys(SCRIPT_KEY_COUNTS).sort(), 'one count per lua/*.lua file');
    for (const [name, count] of Object.entries(SCRIPT_KEY_COUNTS)) {
      const text = readFileSync(new URL(`${name}.lua`, luaDir), 'utf8');
      const headerEnd = text.indexOf(']]');
      t.ok(text.startsWith('--[[') && headerEnd > 0, `${name}.lua starts with a header block`);
      const header = text.slice(0, headerEnd);
      const code = text.slice(headerEnd + 2);
      const documented = [...header.matchAll(/^\s*KEYS\[(\d+)\]/gm)].map((m) => Number(m[1]));
      t.same(documented, Array.from({ length: count }, (_, i) => i + 1), `${name}.lua header documents KEYS[1..${count}]`);
      const usedKeys = [...new Set([...code.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
      t.same(usedKeys, Array.from({ length: count }, (_, i) => i + 1), `${name}.lua uses KEYS[1..${count}], each of them and no further`);
      t.notMatch(code, /rcall\(\s*'[A-Z]+'\s*,\s*['"]/, `${name}.lua builds no key names inside the script`);
    }
  });

  t.test('admit: not_loaded without a balance, and nothing recorded', async (t) => {
    const user = 'no-balance';
    t.same(await scripts.admit(leaseInput(user, 'l1', 100n, 8)), { kind: 'not_loaded' });
    t.same(await scripts.admit(admitInput(user, 'l2', 100n)), { kind: 'not_loaded' }, 'a one-slot admission too');
    t.equal(await redis.exists(keys.rateWindow(user, 'key-1')), 0, 'the refused call took no window slot');
    t.equal(await redis.exists(keys.rateWeights(user, 'key-1')), 0, 'no window weight');
    t.equal(await redis.exists(keys.reservations(user)), 0, 'no reservation');
    t.equal(await redis.exists(keys.reservationDeadlines(user)), 0, 'no deadline');
    t.equal(await redis.exists(keys.balance(user)), 0, 'no balance invented');
    t.equal(await hydrate(redis, keys, user, 1000n, 1000n), 1);
    // 100 + min(700, floor(900 / 8) = 112) credit; 1 + min(7, floor(99 / 8) = 12) slots
    t.same(grantOf(t, await scripts.admit(leaseInput(user, 'l1', 100n, 8))), { creditNano: 212n, slots: 8, available: 788, remaining: 92, resetMs: 11_000 },
      'admitted once loaded');
  });

  t.test('admit: refuses more than available, reserves exactly up to it', async (t) => {
    const user = 'tight';
    await hydrate(redis, keys, user, 1000n, 1000n);
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'a', 600n))), { creditNano: 600n, slots: 1, available: 400 });
    t.same(await scripts.admit(admitInput(user, 'b', 401n)), { kind: 'insufficient_credits', available: 400 });
    t.same(await scripts.admit(leaseInput(user, 'b', 401n, 10)), { kind: 'insufficient_credits', available: 400 }, 'a lease asked for refuses the same');
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'c', 400n, 10))), { creditNano: 400n, slots: 1, available: 0 },
      "a lease asked for with exactly the call's cost available is exactly the call");
    t.same(await scripts.admit(admitInput(user, 'd', 1n)), { kind: 'insufficient_credits', available: 0 });
    t.same(await bal(user), { credits: 1000n, held: 1000n, deposits: 1000n });
    t.same(await redis.hgetall(keys.reservations(user)), { a: '600', c: '400' }, 'open reservations are the held sum');
    t.same((await redis.zrange(keys.reservationDeadlines(user), 0, -1)).sort(), ['a', 'c'], 'a deadline per reservation, none for the refused');
    t.equal(await used(user), 4, 'each refused call took one window slot (b, asked twice, once)');
  });

  t.test('admit: the same lease id resent (a reconnect replays in-flight commands) grants once', async (t) => {
    const user = 'resent';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    // 1000 + min(7000, floor(99_000 / 8)) = 8000 credit; 1 + min(7, floor(99 / 8) = 12) = 8 slots
    const first = grantOf(t, await scripts.admit(leaseInput(user, 'same', 1000n, 8)));
    t.match(first, { creditNano: 8000n, slots: 8, available: 92_000 });
    const again = grantOf(t, await scripts.admit(leaseInput(user, 'same', 1000n, 8)), 'answered as admitted');
    t.match(again, { creditNano: 8000n, slots: 8, available: 92_000 }, 'the same grant, nothing added');
    t.same(await bal(user), { credits: 100_000n, held: 8000n, deposits: 100_000n }, 'held equals the one lease');
    t.same(await redis.hgetall(keys.reservations(user)), { same: '8000' });
    t.equal(await redis.zcard(keys.reservationDeadlines(user)), 1, 'one deadline');
    t.equal(await redis.zcard(keys.rateWindow(user, 'key-1')), 1, 'one window member');
    t.equal(await used(user), 8, 'its slots counted once');
    t.equal(await redis.hget(keys.rateWeights(user, 'key-1'), 'same'), '8');
  });

  t.test('admit: grant sizes follow the 1/8 rules', async (t) => {
    interface Case { label: string; balance: bigint; cost: bigint; calls: number; wantCreditNano?: bigint; limit?: number; before?: number; credit: bigint; slots: number }
    const cases: Case[] = [
      { label: 'ample: everything wanted', balance: 1_000_000n, cost: 1000n, calls: 10, credit: 10_000n, slots: 10 },
      // 1000 + min(9000, floor(19_000 / 8) = 2375)
      { label: 'credit capped at 1/8 of the spare credit', balance: 20_000n, cost: 1000n, calls: 10, credit: 3375n, slots: 10 },
      // 1 + min(49, floor(99 / 8) = 12)
      { label: 'slots capped at 1/8 of the spare slots', balance: 1_000_000n, cost: 1000n, calls: 50, credit: 50_000n, slots: 13 },
      // a lease of 13 slots first: 1 + min(49, floor((100 - 13 - 1) / 8) = 10)
      { label: 'slots already used count', balance: 1_000_000n, cost: 1000n, calls: 50, before: 13, credit: 50_000n, slots: 11 },
      // 1000 + floor(8000 / 8) = 2000 = 2 x cost
      { label: 'credit of exactly two calls is a lease', balance: 9000n, cost: 1000n, calls: 10, credit: 2000n, slots: 10 },
      // 1000 + floor(7000 / 8) = 1875 < 2 x cost
      { label: 'credit below two calls: exactly one slot and the call', balance: 8000n, cost: 1000n, calls: 10, credit: 1000n, slots: 1 },
      // 1 + floor((9 - 1) / 8) = 2
      { label: 'limit 9: two slots', balance: 1_000_000n, cost: 1000n, calls: 10, limit: 9, credit: 10_000n, slots: 2 },
      // 1 + floor((8 - 1) / 8) = 1
      { label: 'limit 8: one slot, so exactly the call', balance: 1_000_000n, cost: 1000n, calls: 10, limit: 8, credit: 1000n, slots: 1 },
      { label: 'one call wanted: the call, whatever the credit wanted', balance: 1_000_000n, cost: 1000n, calls: 1, wantCreditNano: 10_000n, credit: 1000n, slots: 1 },
      { label: 'no extra credit wanted: the call, whatever the slots wanted', balance: 1_000_000n, cost: 1000n, calls: 10, wantCreditNano: 1000n, credit: 1000n, slots: 1 },
    ];
    for (const [i, c] of cases.entries()) {
      const user = `grant-${i}`;
      const limit = c.limit ?? 100;
      await hydrate(redis, keys, user, c.balance, c.balance);
      let heldBefore = 0n;
      if (c.before) {
        const pre = grantOf(t, await scripts.admit(leaseInput(user, 'pre', c.cost, c.before, { limit })), `${c.label}: the first lease`);
        t.equal(pre.slots, c.before, `${c.label}: the first lease holds ${c.before} slots`);
        heldBefore = pre.creditNano;
      }
      const over: AdmitOver = { limit, leaseLifeMs: 700, ...(c.wantCreditNano !== undefined ? { wantCreditNano: c.wantCreditNano } : {}) };
      const sentAt = await redisNowMs();
      const grant = grantOf(t, await scripts.admit(leaseInput(user, 'l', c.cost, c.calls, over)), c.label);
      const answeredAt = await redisNowMs();
      const usedBefore = c.before ?? 0;
      t.same({ creditNano: grant.creditNano, slots: grant.slots }, { creditNano: c.credit, slots: c.slots }, `${c.label}: credit ${c.credit}, ${c.slots} slots`);
      t.equal(grant.available, Number(c.balance - heldBefore - c.credit), `${c.label}: available after`);
      t.equal(grant.remaining, limit - usedBefore - c.slots, `${c.label}: slots left in the window`);
      t.equal((await bal(user)).held, heldBefore + c.credit, `${c.label}: held`);
      t.equal(await redis.hget(keys.reservations(user), 'l'), String(c.credit), `${c.label}: the reservation is the credit`);
      t.equal(await used(user), usedBefore + c.slots, `${c.label}: the window's weight`);
      t.equal(await redis.hget(keys.rateWeights(user, 'key-1'), 'l'), c.slots > 1 ? String(c.slots) : null, `${c.label}: a weight only above one slot`);
      // A lease of more than one slot counts in the window from the end of its life.
      const score = Number(await redis.zscore(keys.rateWindow(user, 'key-1'), 'l'));
      const life = c.slots > 1 ? 700 : 0;
      t.ok(score >= sentAt + life && score <= answeredAt + life, `${c.label}: window score at now + ${life} ms (${score - sentAt})`);
      const deadline = Number(await redis.zscore(keys.reservationDeadlines(user), 'l'));
      t.ok(deadline >= sentAt + 60_000 && deadline <= answeredAt + 60_000, `${c.label}: deadline at now + ttl`);
    }
  });

  t.test('calls made in one turn leave in one pipeline; a failing script rejects only its own caller', async (t) => {
    const user = 'batched';
    await hydrate(redis, keys, user, 1000n, 1000n);
    const exec = pipe.exec.bind(pipe);
    let pipelines = 0;
    pipe.exec = (commands) => {
      // Pipelines sending the scripts: not the ledger mark, which on a cluster leaves in one of its own
      // once they answered, nor a resend by source (EVAL) to a node that had not cached a script yet.
      if (commands.some(([name]) => name === 'EVALSHA')) pipelines++;
      return exec(commands);
    };
    t.teardown(() => { pipe.exec = exec; });
    const calls = [
      scripts.admit(admitInput(user, 'b1', 100n)),
      scripts.admit(admitInput(user, 'b2', 100n)),
      // tonumber('x') is nil in admit.lua: a Lua error for this call alone
      scripts.admit({ ...admitInput(user, 'b3', 1n), callNano: 'x' as unknown as bigint }),
      scripts.settle(settleInput(user, 'b1', 1, [['b1', 40n, '{}']], { close: true })),
    ];
    const results = await Promise.allSettled(calls);
    t.equal(pipelines, 1, 'one pipeline for the four calls');
    t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    t.same((results[3] as PromiseFulfilledResult<unknown>).value, { kind: 'applied', chargedNano: 40n }, 'settled after its admission, in order');
    t.same(await bal(user), { credits: 960n, held: 100n, deposits: 1000n });
    t.same(await redis.hgetall(keys.reservations(user)), { b2: '100' }, 'the failed call reserved nothing');
    t.equal(await used(user), 2, 'the failed call took no window slot');
    t.ok(await redis.sismember(keys.ledgerDirtyOf(user), user), 'the settled user is marked for the ledger writer');
  });

  t.test('settle: a batch charges each call (capped at what the lease holds) and appends one ledger entry per call', async (t) => {
    const user = 'settle-batch';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 }))), { creditNano: 4000n, slots: 4 });
    const before = await redisNowMs();
    t.same(await scripts.settle(settleInput(user, 'L', 1, [['c1', 300n, '{"n":1}'], ['c2', 1000n, '{"n":2}'], ['c0', 0n, '{"n":0}']])),
      { kind: 'applied', chargedNano: 1300n });
    t.same(await bal(user), { credits: 98_700n, held: 2700n, deposits: 100_000n }, 'charged; what the calls held is released');
    t.same(await redis.hgetall(keys.reservations(user)), { L: '2700' }, 'the lease holds the rest');
    t.same(await redis.hgetall(keys.leaseBatches(user)), { L: '1' }, 'batch 1 applied');
    t.ok(Number(await redis.zscore(keys.reservationDeadlines(user), 'L')) >= before + 60_000, 'an open lease gets a new deadline');
    t.same(await ledgerFields(user), [
      ['r', 'c1', 'c', '300', 'e', '{"n":1}'],
      ['r', 'c2', 'c', '1000', 'e', '{"n":2}'],
      ['r', 'c0', 'c', '0', 'e', '{"n":0}'],
    ], 'one ledger entry per call, in order');
    t.ok(await redis.sismember(keys.ledgerDirtyOf(user), user), 'the user is marked for the ledger writer');

    t.same(await scripts.settle(settleInput(user, 'L', 2, [['c3', 5000n, '{"n":3}']])), { kind: 'applied', chargedNano: 2700n },
      'a charge above what the lease holds is capped at it');
    t.same(await bal(user), { credits: 96_000n, held: 0n, deposits: 100_000n });
    t.same(await redis.hgetall(keys.reservations(user)), { L: '0' }, 'the lease is still open, empty');
    t.same((await ledgerFields(user)).at(-1), ['r', 'c3', 'c', '2700', 'e', '{"n":3}'], 'the ledger entry carries the capped charge');
    t.equal(await redis.xlen(keys.ledger(user)), 4);
  });

  t.test('settle: the same batch number resent changes nothing (resent); a resent close answers closed', async (t) => {
    const user = 'settle-resend';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 })));
    const batch1 = settleInput(user, 'L', 1, [['c1', 300n]]);
    t.same(await scripts.settle(batch1), { kind: 'applied', chargedNano: 300n });
    const after1 = await snapshot(user);
    t.same(await scripts.settle(batch1), { kind: 'resent', chargedNano: 0n }, 'batch 1 again');
    t.same(await scripts.settle(settleInput(user, 'L', 1, [['c9', 900n]], { close: true, unusedSlots: 3, releaseNano: 100n })), { kind: 'resent', chargedNano: 0n },
      'batch 1 again, whatever it carries');
    t.same(await snapshot(user), after1, 'nothing changed');

    const epoch = (await redis.hget(keys.balance(user), 'epoch'))!;
    const close = settleInput(user, 'L', 2, [['c2', 200n]], { close: true, unusedSlots: 2, epoch });
    t.same(await scripts.settle(close), { kind: 'applied', chargedNano: 200n });
    const closed = await snapshot(user);
    t.same(closed.balance, { credits: 99_500n, held: 0n, deposits: 100_000n });
    t.same(await scripts.settle(close), { kind: 'closed', chargedNano: 0n }, 'the closing batch again: the lease is no longer open');
    t.same(await snapshot(user), closed, 'nothing changed');
    t.equal(closed.ledger.length, 2, 'one ledger entry per call, none for the resends');
  });

  t.test('settle: close releases the rest and returns the unused slots to the window', async (t) => {
    const user = 'settle-close';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    grantOf(t, await scripts.admit(admitInput(user, 'O', 500n, { limit: 20 })), 'another reservation');
    // used 1: 1 + min(3, floor((20 - 1 - 1) / 8) = 2) = 3 slots; 1000 + min(3000, floor(98_500 / 8)) = 4000 credit
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 20 }))), { creditNano: 4000n, slots: 3 });
    t.equal(await used(user), 4);
    t.same(await scripts.settle(settleInput(user, 'L', 1, [['c1', 700n]], { close: true, unusedSlots: 2 })), { kind: 'applied', chargedNano: 700n });
    t.same(await bal(user), { credits: 99_300n, held: 500n, deposits: 100_000n }, 'held back to what the other reservation holds');
    t.same(await redis.hgetall(keys.reservations(user)), { O: '500' }, "the lease's reservation is gone");
    t.same(await redis.zrange(keys.reservationDeadlines(user), 0, -1), ['O'], 'and its deadline');
    t.same(await redis.hgetall(keys.leaseBatches(user)), {}, 'nothing kept per closed lease');
    t.equal(await used(user), 2, 'the two unused slots left the window');
    t.equal(await redis.hget(keys.rateWeights(user, 'key-1'), 'L'), '1', 'the lease counts its one used slot');
    // A later admit sees them free: exactly 20 - 2 more calls fit.
    let admitted = 0;
    for (let i = 0; i < 20; i++) if ((await scripts.admit(admitInput(user, `s${i}`, 1n, { limit: 20 }))).kind === 'admitted') admitted++;
    t.equal(admitted, 18, 'the window admits the returned slots');

    // A lease closed with all its slots unused (never happens from the gateway, which used the first) leaves the window entirely.
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'M', 1000n, 4, { keyId: 'key-2', limit: 20 }))), { slots: 3 });
    t.same(await scripts.settle(settleInput(user, 'M', 1, [], { keyId: 'key-2', close: true, unusedSlots: 3 })), { kind: 'applied', chargedNano: 0n });
    t.equal(await redis.zscore(keys.rateWindow(user, 'key-2'), 'M'), null, 'no window member left');
    t.same(await redis.hgetall(keys.rateWeights(user, 'key-2')), { '#': '0' }, 'no weight left');
    t.equal((await bal(user)).held, 518n, 'held: the other reservation and the 18 one-nano calls');
  });

  t.test("settle: release without close lowers held and the lease's reservation", async (t) => {
    const user = 'settle-release';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 }))), { creditNano: 4000n, slots: 4 });
    t.same(await scripts.settle(settleInput(user, 'L', 1, [], { releaseNano: 1000n })), { kind: 'applied', chargedNano: 0n });
    t.same(await bal(user), { credits: 100_000n, held: 3000n, deposits: 100_000n });
    t.same(await redis.hgetall(keys.reservations(user)), { L: '3000' });
    t.equal(await redis.exists(keys.ledger(user)), 0, 'no ledger entry without calls');
    t.same(await scripts.settle(settleInput(user, 'L', 2, [['c1', 500n]], { releaseNano: 10_000n })), { kind: 'applied', chargedNano: 500n },
      'a release above what is left frees only what is left');
    t.same(await bal(user), { credits: 99_500n, held: 0n, deposits: 100_000n });
    t.same(await redis.hgetall(keys.reservations(user)), { L: '0' }, 'still open');
    t.equal(await used(user), 4, 'a release leaves the window alone');
    t.same(await scripts.settle(settleInput(user, 'L', 3, [], { close: true, unusedSlots: 2 })), { kind: 'applied', chargedNano: 0n });
    t.same(await bal(user), { credits: 99_500n, held: 0n, deposits: 100_000n });
    t.equal(await redis.exists(keys.reservations(user)), 0, 'closed');
    t.equal(await used(user), 2);
  });

  t.test('settle: an unknown lease of the same balance epoch answers closed and changes nothing', async (t) => {
    const user = 'settle-unknown';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    grantOf(t, await scripts.admit(leaseInput(user, 'O', 1000n, 4, { limit: 1000 })));
    const before = await snapshot(user);
    const epoch = (await redis.hget(keys.balance(user), 'epoch'))!;
    t.match(epoch, /^\d{16}$/, 'hydrate set an epoch (microseconds)');
    t.same(await scripts.settle(settleInput(user, 'nope', 1, [['x', 300n]], { epoch })), { kind: 'closed', chargedNano: 0n });
    t.same(await scripts.settle(settleInput(user, 'nope', 2, [['y', 300n]], { close: true, unusedSlots: 3, releaseNano: 500n, epoch })), { kind: 'closed', chargedNano: 0n },
      'closing it too');
    t.same(await snapshot(user), before, 'balance, reservations, deadlines, ledger, batches and window unchanged');
    t.equal(before.ledger.length, 0);
  });

  t.test("settle: a lease released at its deadline (the janitor's mark) is still charged, once per batch", async (t) => {
    const user = 'settle-expired';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    grantOf(t, await scripts.admit(admitInput(user, 'O', 500n)), 'another reservation');
    await redis.hset(keys.expiredLeases(user), 'gone', '0');
    t.same(await scripts.settle(settleInput(user, 'gone', 1, [['x1', 300n, '{"late":1}']])), { kind: 'outside', chargedNano: 300n });
    t.same(await bal(user), { credits: 99_700n, held: 500n, deposits: 100_000n }, 'credits drop; held unchanged');
    t.same(await redis.hgetall(keys.reservations(user)), { O: '500' }, 'no reservation invented');
    t.same(await ledgerFields(user), [['r', 'x1', 'c', '300', 'e', '{"late":1}']], 'the ledger entry is written');
    t.same(await scripts.settle(settleInput(user, 'gone', 1, [['x1', 300n, '{"late":1}']])), { kind: 'resent', chargedNano: 0n }, 'a resend still charges once');
    t.same(await scripts.settle(settleInput(user, 'gone', 2, [['x2', 200n]], { close: true, unusedSlots: 1 })), { kind: 'outside', chargedNano: 200n });
    t.same(await bal(user), { credits: 99_500n, held: 500n, deposits: 100_000n });
    t.equal(await redis.hget(keys.expiredLeases(user), 'gone'), '2', 'the mark keeps the last batch, so a resent close charges nothing');
    t.same(await scripts.settle(settleInput(user, 'gone', 2, [['x2', 200n]], { close: true, unusedSlots: 1 })), { kind: 'resent', chargedNano: 0n });
    t.ok(Number(await redis.pttl(keys.expiredLeases(user))) > 0, 'the marks expire');
    t.equal(await redis.xlen(keys.ledger(user)), 2);
    t.equal((await bal(user)).credits, 99_500n);
  });

  t.test('settle: a lease Redis lost (the balance rebuilt since, another epoch) is charged once; without a balance, not_loaded', async (t) => {
    const user = 'settle-lost';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    const lease = grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 })));
    t.equal(lease.creditNano, 4000n);
    const admitted = await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 }));
    const epoch = admitted.kind === 'admitted' ? admitted.grant.epoch : '';
    t.equal(epoch, await redis.hget(keys.balance(user), 'epoch'), 'admit returns the balance epoch');
    await deleteKeysWithPrefix(redis, `${prefix}{u:${user}}`); // Redis loses the user's data
    const batch = settleInput(user, 'L', 1, [['c1', 700n]], { epoch });
    t.same(await scripts.settle(batch), { kind: 'not_loaded', chargedNano: 0n }, 'no balance: nothing charged, hydrate first');
    t.equal(await redis.exists(keys.balance(user)), 0, 'no balance invented');
    await sleep(2); // a new epoch
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    t.same(await scripts.settle(batch), { kind: 'outside', chargedNano: 700n }, 'charged although Redis no longer knows the lease');
    t.same(await scripts.settle(batch), { kind: 'resent', chargedNano: 0n }, 'and only once');
    t.same(await scripts.settle(settleInput(user, 'L', 2, [['c2', 300n]], { epoch, close: true, unusedSlots: 2 })), { kind: 'outside', chargedNano: 300n });
    t.same(await bal(user), { credits: 99_000n, held: 0n, deposits: 100_000n }, 'credits carry both charges; nothing held');
    t.equal(await redis.xlen(keys.ledger(user)), 2, 'both ledger entries written');
  });

  t.test('credit limit: spent + held never above the cap, 402 code with what is left, lease bounded by it, period reset', async (t) => {
    const user = 'cap';
    await hydrate(redis, keys, user, 1_000_000n, 1_000_000n);
    const cap = (capNano: bigint, periodStartMs = 1000) => ({ keyLimits: { capNano, periodStartMs }, limit: 1000 });
    t.same(await scripts.admit(admitInput(user, 'a', 100n, cap(1000n))), { kind: 'spend_not_loaded' }, 'a capped key whose spend is not loaded');
    t.equal(await redis.exists(keys.keySpend(user, 'key-1')), 0);
    t.equal(await loadSpend(redis, keys, user, 'key-1', 1000, 300n), 1, 'loaded from Postgres figures');
    t.equal(await loadSpend(redis, keys, user, 'key-1', 1000, 999n), 0, 'not twice');
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '1000', spent: '300', held: '0' });
    // left 700: 1/8 of the 600 spare is 75 extra credit, less than a second call
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'L', 100n, 8, cap(1000n)))), { creditNano: 100n, slots: 1 },
      'extra credit bounded by 1/8 of the cap left: too little for a second call, so one slot of exactly its cost');
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '1000', spent: '300', held: '100' });
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'b', 600n, cap(1000n)))), { creditNano: 600n });
    t.same(await scripts.admit(admitInput(user, 'c', 1n, cap(1000n))), { kind: 'credit_limit_reached', capLeftNano: 0 }, 'spent 300 + held 700 = cap');
    t.same(await scripts.settle(settleInput(user, 'b', 1, [['cb', 250n]], { close: true })), { kind: 'applied', chargedNano: 250n });
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '1000', spent: '550', held: '100' }, 'charge moves to spent, the rest leaves held');
    t.same(await scripts.admit(admitInput(user, 'd', 351n, cap(1000n))), { kind: 'credit_limit_reached', capLeftNano: 350 });
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'd', 350n, cap(1000n)))), { creditNano: 350n }, 'exactly what is left fits');
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'e', 1n, { limit: 1000, keyId: 'key-2' }))), { creditNano: 1n }, "another key's cap is its own");
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'f', 500n, cap(1000n, 2000)))), { creditNano: 500n }, 'a new period starts the spend at 0');
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '2000', spent: '0', held: '950' }, 'held carries over');
    t.same(await scripts.admit(admitInput(user, 'g', 51n, cap(1000n, 2000))), { kind: 'credit_limit_reached', capLeftNano: 50 });
    t.match(grantOf(t, await scripts.admit(admitInput(user, 'h', 5000n, { limit: 1000 }))), { creditNano: 5000n }, 'without a cap the key is not limited');
  });

  t.test('token budgets: a call reserves its worst-case tokens at admission and counts what it used at settlement; a spent hour or day refuses with its own Retry-After', async (t) => {
    const user = 'tokens';
    await hydrate(redis, keys, user, 1_000_000n, 1_000_000n);
    const tokenHash = (keyId = 'key-1') => redis.hgetall(keys.keyTokens(user, keyId));
    const reserved = async (keyId = 'key-1') => Object.fromEntries(Object.entries(await tokenHash(keyId)).filter(([field]) => field === 'h' || field.startsWith('l')));
    const tph = { keyLimits: { tph: 100 }, limit: 1000, callTokens: 40 };
    grantOf(t, await scripts.admit(admitInput(user, 'a', 1n, tph)));
    grantOf(t, await scripts.admit(admitInput(user, 'b', 1n, tph)), 'two worst cases of 40 fit in 100');
    t.same(await reserved(), { h: '80', la: '40', lb: '40' }, 'each lease reserves its worst case');
    t.same(await scripts.admit(admitInput(user, 'c', 1n, tph)), { kind: 'rate_limited', retryAfterMs: 1000, limit: 'tph' },
      'a third does not fit beside the two in flight (nothing used yet): retry when they settle');
    await scripts.settle(settleInput(user, 'a', 1, [['ca', 1n]], { close: true, tokens: 10 }));
    t.same(await reserved(), { h: '40', lb: '40' }, 'settling moves the call from reserved to used');
    grantOf(t, await scripts.admit(admitInput(user, 'c', 1n, tph)), '10 used + 40 reserved + 40 fits');
    await scripts.settle(settleInput(user, 'b', 1, [['cb', 1n]], { close: true, tokens: 40 }));
    await scripts.settle(settleInput(user, 'c', 1, [['cc', 1n]], { close: true, tokens: 50 }));
    t.same(await reserved(), { h: '0' }, 'nothing reserved once every call settled');
    const before = await redisNowMs();
    const refused = await scripts.admit(admitInput(user, 'd', 1n, tph));
    t.match(refused, { kind: 'rate_limited', limit: 'tph' }, '100 of 100 used: refused');
    const retryMs = refused.kind === 'rate_limited' ? refused.retryAfterMs : -1;
    const minuteLeaves = (Math.floor(before / 60_000) + 60) * 60_000 - before;
    t.ok(retryMs > 0 && Math.abs(retryMs - minuteLeaves) < 100, `Retry-After ${retryMs} ms: when this minute's bucket leaves the hour (${minuteLeaves})`);
    t.equal(await redis.hexists(keys.reservations(user), 'd'), 0, 'nothing reserved');
    t.match(await scripts.admit(admitInput(user, 'e', 1n, { ...tph, keyLimits: { tph: 140 } })), { kind: 'admitted' }, 'a budget of 140 has room for 100 used + 40');
    const tpd = await scripts.admit(admitInput(user, 'f', 1n, { ...tph, keyLimits: { tpd: 139 } }));
    t.match(tpd, { kind: 'rate_limited', limit: 'tpd' }, 'the day counts the same tokens, and what e reserves');
    const dayRetry = tpd.kind === 'rate_limited' ? tpd.retryAfterMs : -1;
    const quarterLeaves = (Math.floor(before / 900_000) + 96) * 900_000 - before;
    t.ok(Math.abs(dayRetry - quarterLeaves) < 100, `Retry-After ${dayRetry} ms: when this quarter hour leaves the day (${quarterLeaves})`);
    t.same(await scripts.admit(admitInput(user, 'f', 1n, { keyLimits: { tph: 1000, tpd: 39 }, limit: 1000, callTokens: 40 })), { kind: 'too_large', limit: 'tpd', budget: 39 },
      'a worst case above the whole budget can never be admitted');
    t.match(await scripts.admit(admitInput(user, 'g', 1n, { limit: 1000, callTokens: 40 })), { kind: 'admitted' }, 'without budgets tokens do not limit');
    t.match(await scripts.admit(admitInput(user, 'g2', 1n, { ...tph, callTokens: 0 })), { kind: 'admitted' }, 'a call that spends no tokens is not limited by them');
    t.same(await reserved(), { h: '40', le: '40' }, 'and neither reserves any');
    // Old buckets leave the window: one two hours old counts for the day but not the hour.
    const oldMinute = Math.floor(before / 60_000) - 120;
    await redis.hset(keys.keyTokens(user, 'key-2'), `m${oldMinute}`, 500, `q${Math.floor((oldMinute * 60_000) / 900_000)}`, 500);
    t.match(await scripts.admit(admitInput(user, 'h', 1n, { keyId: 'key-2', keyLimits: { tph: 100 }, limit: 1000 })), { kind: 'admitted' }, 'two hours ago is not in the hour');
    t.equal(await redis.hexists(keys.keyTokens(user, 'key-2'), `m${oldMinute}`), 0, 'and its minute bucket is dropped');
    t.match(await scripts.admit(admitInput(user, 'i', 1n, { keyId: 'key-2', keyLimits: { tpd: 100 }, limit: 1000 })), { kind: 'rate_limited', limit: 'tpd' }, 'but it is in the day');
    // A lease's extra slots: their worst-case tokens within 1/8 of the budget left (10000 - 100) / 8 / 100 = 12.
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'j', 1n, 64, { keyId: 'key-3', keyLimits: { tph: 10_000, tpd: 50_000 }, limit: 1000, callTokens: 100 }))),
      { slots: 13 }, 'lease slots bounded by the tighter token budget');
    t.same(await reserved('key-3'), { h: '1300', lj: '1300' }, 'the lease reserves the worst case of each of its slots');
    await scripts.settle(settleInput(user, 'j', 1, [['j1', 1n]], { keyId: 'key-3', tokens: 30, tokensFreed: 100 }));
    t.same(await reserved('key-3'), { h: '1200', lj: '1200' }, 'a settled call leaves the reservation');
    await scripts.settle(settleInput(user, 'j', 2, [], { keyId: 'key-3', close: true, unusedSlots: 12 }));
    t.same(await reserved('key-3'), { h: '0' }, 'closing releases the rest');
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'k', 1n, 64, { keyId: 'key-4', keyLimits: { tph: 799 }, limit: 1000, callTokens: 100 }))),
      { slots: 1 }, 'no extra slot when 1/8 of the budget left is below one call');
    await redis.zadd(keys.reservationDeadlines(user), (await redisNowMs()) - 1, 'k');
    t.equal(await expireLease(redis, keys, user, 'key-4', 'k'), 1n, 'a dead lease expires');
    t.same(await reserved('key-4'), { h: '0' }, 'and its tokens go back to the budgets');
    const creditOnly = { ...admitInput(user, 'l', 1n, { keyId: 'key-4', keyLimits: { tph: 799 }, limit: 1000, callTokens: 700 }), wantSlots: 0 };
    t.match(await scripts.admit(creditOnly), { kind: 'admitted' }, 'a credit-only admission (a BYOK fallback) is checked against the budgets');
    t.same(await reserved('key-4'), { h: '700', ll: '700' }, 'and reserves its tokens');
    t.match(await scripts.admit({ ...creditOnly, leaseId: 'm' }), { kind: 'rate_limited', limit: 'tph' }, 'so a second one does not fit');
  });

  t.test('credit only (no slots wanted): the windows are neither checked nor counted; credit and the cap still apply', async (t) => {
    const user = 'credit-only';
    await hydrate(redis, keys, user, 1000n, 1000n);
    grantOf(t, await scripts.admit(admitInput(user, 'w1', 100n, { limit: 1 })), 'the window of 1 is now full');
    t.match(await scripts.admit(admitInput(user, 'w2', 100n, { limit: 1 })), { kind: 'rate_limited' });
    const creditOnly = (leaseId: string, callNano: bigint, over: AdmitOver = {}) => ({ ...admitInput(user, leaseId, callNano, { limit: 1, ...over }), wantSlots: 0 });
    t.match(grantOf(t, await scripts.admit(creditOnly('c1', 300n))), { creditNano: 300n, slots: 0 }, 'admitted for its credit alone');
    t.equal(await used(user), 1, 'the window did not count it');
    t.same(await scripts.admit(creditOnly('c2', 601n)), { kind: 'insufficient_credits', available: 600 }, 'available still applies');
    await loadSpend(redis, keys, user, 'key-1', 1000, 0n);
    t.same(await scripts.admit(creditOnly('c3', 200n, { keyLimits: { capNano: 450n, periodStartMs: 1000 } })), { kind: 'credit_limit_reached', capLeftNano: 50 },
      'and the key\'s credit limit (its leases hold 400 of 450)');
    t.same(await scripts.settle(settleInput(user, 'c1', 1, [['x', 250n]], { close: true })), { kind: 'applied', chargedNano: 250n }, 'settles like any lease');
    t.same(await bal(user), { credits: 750n, held: 100n, deposits: 1000n });
  });

  t.test('expire: a lease past its deadline gives its credit back to the balance and the key, and is marked', async (t) => {
    const user = 'expire';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    await loadSpend(redis, keys, user, 'key-1', 1000, 0n);
    grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000, keyLimits: { capNano: 50_000n, periodStartMs: 1000 } })));
    await scripts.settle(settleInput(user, 'L', 1, [['c1', 400n]]));
    t.equal(await expireLease(redis, keys, user, 'key-1', 'L'), undefined, 'not before its deadline');
    await redis.zadd(keys.reservationDeadlines(user), (await redisNowMs()) - 1, 'L');
    t.equal(await expireLease(redis, keys, user, 'key-1', 'L'), 3600n, 'released what it still held');
    t.same(await bal(user), { credits: 99_600n, held: 0n, deposits: 100_000n });
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '1000', spent: '400', held: '0' }, "the key's held too");
    t.same(await redis.hgetall(keys.reservations(user)), {});
    t.equal(await redis.hget(keys.expiredLeases(user), 'L'), '1', 'marked with its last batch');
    t.equal(await expireLease(redis, keys, user, 'key-1', 'L'), undefined, 'not twice');
    t.same(await scripts.settle(settleInput(user, 'L', 1, [['c1', 400n]])), { kind: 'resent', chargedNano: 0n }, 'a resent batch still changes nothing');
    t.same(await scripts.settle(settleInput(user, 'L', 2, [['c2', 300n]], { close: true })), { kind: 'outside', chargedNano: 300n }, 'a late call is charged');
    t.same(await redis.hgetall(keys.keySpend(user, 'key-1')), { period: '1000', spent: '700', held: '0' }, 'and counts in the key spend');
  });

  t.test("lease slack: recorded per lease and in the balance's `slack` (part of held), kept up to date by settle, gone once retired, closed or expired", async (t) => {
    const user = 'slack';
    await hydrate(redis, keys, user, 100_000n, 100_000n);
    const slack = async () => ({ field: BigInt((await redis.hget(keys.balance(user), 'slack')) ?? '0'), leases: await redis.hgetall(keys.leaseSlack(user)) });
    grantOf(t, await scripts.admit(admitInput(user, 'one', 1000n, { limit: 1000 })), 'a one-call admission');
    t.same(await slack(), { field: 0n, leases: {} }, 'a one-call lease holds no slack');
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'L', 1000n, 4, { limit: 1000 }))), { creditNano: 4000n, slots: 4 });
    t.same(await slack(), { field: 3000n, leases: { L: '3000' } }, 'a lease of 4 calls: 3 calls of slack');
    // The lease admitted two more calls locally, and one of its three settled for 400: 2 calls in flight, 1,600 unused.
    t.same(await scripts.settle({ ...settleInput(user, 'L', 1, [['c1', 400n]]), slackNano: 1600n }), { kind: 'applied', chargedNano: 400n });
    t.same(await slack(), { field: 1600n, leases: { L: '1600' } }, 'its report: 1,600 of slack');
    t.same(await bal(user), { credits: 99_600n, held: 4600n, deposits: 100_000n }, 'held still counts the slack (1,000 + 3,600)');
    t.same(await scripts.settle(settleInput(user, 'L', 2, [])), { kind: 'applied', chargedNano: 0n }, 'a batch without a report (a replay)');
    t.same(await slack(), { field: 1600n, leases: { L: '1600' } }, 'keeps the last report');
    t.same(await scripts.settle({ ...settleInput(user, 'L', 3, [], { releaseNano: 1600n }), slackNano: 0n, retired: true }), { kind: 'applied', chargedNano: 0n },
      'retired: its unused credit released');
    t.same(await slack(), { field: 0n, leases: {} }, 'a retired lease holds no slack');
    t.same(await redis.hgetall(keys.reservations(user)), { one: '1000', L: '2000' }, 'its calls in flight are still held');
    t.same(await scripts.settle({ ...settleInput(user, 'L', 4, [['c2', 1000n], ['c3', 1000n]], { close: true }), slackNano: 0n, retired: true }), { kind: 'applied', chargedNano: 2000n });

    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'M', 1000n, 4, { limit: 1000 }))), { creditNano: 4000n });
    t.same(await scripts.settle({ ...settleInput(user, 'M', 1, [], { releaseNano: 5000n }), slackNano: 9000n }), { kind: 'applied', chargedNano: 0n },
      'a report above what the lease still holds');
    t.same(await slack(), { field: 0n, leases: { M: '0' } }, 'is capped at it');
    t.same(await scripts.settle({ ...settleInput(user, 'M', 2, [], { close: true }) }), { kind: 'applied', chargedNano: 0n });
    t.same(await slack(), { field: 0n, leases: {} }, 'a closed lease leaves');

    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'N', 1000n, 4, { limit: 1000 }))), { creditNano: 4000n });
    await redis.zadd(keys.reservationDeadlines(user), (await redisNowMs()) - 1, 'N');
    t.equal(await expireLease(redis, keys, user, 'key-1', 'N'), 4000n, 'a lease past its deadline released');
    t.same(await slack(), { field: 0n, leases: {} }, 'with its slack');
    t.same(await bal(user), { credits: 97_600n, held: 1000n, deposits: 100_000n });
  });

  t.test('recall: a refusal that the slack of leases may avert answers recalling and publishes a recall; no slack is granted while it runs', async (t) => {
    const user = 'recall';
    const subscriber = connectRedis(REDIS_URL); // on a cluster, SUBSCRIBE on any node hears every node's PUBLISH
    t.teardown(() => subscriber.disconnect());
    const messages: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => messages.push(message));
    await subscriber.subscribe(keys.leaseRecallChannel());
    const heard = async (message: string) => {
      for (let i = 0; i < 100 && !messages.includes(message); i++) await sleep(10);
      return messages.includes(message);
    };
    const recallable = (input: AdmitInput): AdmitInput => ({ ...input, recallMs: 500 });
    await hydrate(redis, keys, user, 10_000n, 10_000n);
    // 1000 + floor((10_000 - 1000) / 8) = 2125: the asking call and 1,125 of slack.
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'key-1:L', 1000n, 8, { limit: 1000 }))), { creditNano: 2125n, slots: 8 });
    t.same(await scripts.admit(admitInput(user, 'a', 8000n, { limit: 1000 })), { kind: 'insufficient_credits', available: 7875 }, 'without recallMs: refused at once');
    t.same(await scripts.admit(recallable(admitInput(user, 'a', 10_001n, { limit: 1000 }))), { kind: 'insufficient_credits', available: 7875 },
      'more than even the whole reservations of the leases with slack: refused at once');
    t.equal(await redis.exists(keys.leaseRecall(user)), 0, 'no recall');
    t.same(await scripts.admit(recallable(admitInput(user, 'a', 8000n, { limit: 1000 }))), { kind: 'recalling', refused: 'insufficient_credits', value: 7875 },
      'what the slack may cover: recalling');
    t.ok(await heard(`r${user}`), 'the recall is published');
    const pttl = await redis.pttl(keys.leaseRecall(user));
    t.ok(pttl > 0 && pttl <= 500, `the recall flag lasts recallMs (${pttl} ms left)`);
    t.same(await bal(user), { credits: 10_000n, held: 2125n, deposits: 10_000n }, 'nothing reserved');
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'key-1:M', 100n, 8, { limit: 1000 }))), { creditNano: 100n, slots: 1 },
      'while the recall runs, a lease gets no slack');
    t.same(await scripts.settle({ ...settleInput(user, 'key-1:L', 1, [], { releaseNano: 1125n }), slackNano: 0n, retired: true }), { kind: 'applied', chargedNano: 0n },
      'the lease gives its slack back');
    t.ok(await heard(`d${user}`), 'the last lease with slack gone while the recall runs: published');
    t.match(grantOf(t, await scripts.admit(recallable(admitInput(user, 'a', 8000n, { limit: 1000 })))), { creditNano: 8000n, available: 900 }, 'asked again: admitted');

    // A key's credit limit counts only the slack of that key's leases.
    const capped = 'recall-cap';
    await hydrate(redis, keys, capped, 1_000_000n, 1_000_000n);
    await loadSpend(redis, keys, capped, 'key-1', 1000, 0n);
    const cap = { keyLimits: { capNano: 10_000n, periodStartMs: 1000 }, limit: 1000 };
    t.match(grantOf(t, await scripts.admit(leaseInput(capped, 'key-1:K', 1000n, 8, cap))), { creditNano: 2125n }, "a lease of the capped key: 1/8 of the cap's spare");
    t.match(grantOf(t, await scripts.admit(leaseInput(capped, 'key-2:K', 1000n, 8, { limit: 1000, keyId: 'key-2' }))), { creditNano: 8000n }, 'a lease of another key');
    t.same(await scripts.admit(recallable(admitInput(capped, 'b', 10_001n, cap))), { kind: 'credit_limit_reached', capLeftNano: 7875 },
      "the other key's lease does not count for this key's cap");
    t.same(await scripts.admit(recallable(admitInput(capped, 'b', 8000n, cap))), { kind: 'recalling', refused: 'credit_limit_reached', value: 7875 },
      "its own lease's slack may cover it: recalling");
    t.ok(await heard(`r${capped}`), 'published');
  });

  t.test('credit: an older deposit total adds nothing', async (t) => {
    const user = 'credit-older';
    await hydrate(redis, keys, user, 1000n, 1000n);
    t.equal(await credit(redis, keys, user, 1500n), 1500n, 'a newer total adds the difference');
    t.equal(await credit(redis, keys, user, 1500n), 1500n, 'the same total again adds nothing');
    t.equal(await credit(redis, keys, user, 1200n), 1500n, 'an older total adds nothing');
    t.same(await bal(user), { credits: 1500n, held: 0n, deposits: 1500n });
  });

  t.test('credit: out-of-order totals (30 then 20) end at +30', async (t) => {
    const user = 'credit-order';
    await hydrate(redis, keys, user, 0n, 0n);
    t.equal(await credit(redis, keys, user, 30n), 30n);
    t.equal(await credit(redis, keys, user, 20n), 30n);
    t.same(await bal(user), { credits: 30n, held: 0n, deposits: 30n });
  });

  t.test('credit: undefined when no balance is loaded', async (t) => {
    t.equal(await credit(redis, keys, 'credit-none', 30n), undefined);
    t.equal(await redis.exists(keys.balance('credit-none')), 0);
  });

  t.test('hydrate: does not overwrite an existing balance', async (t) => {
    const user = 'hydrate-twice';
    t.equal(await hydrate(redis, keys, user, 1000n, 1000n), 1);
    await scripts.admit(admitInput(user, 'r', 250n));
    t.equal(await hydrate(redis, keys, user, 5n, 5n), 0);
    t.same(await bal(user), { credits: 1000n, held: 250n, deposits: 1000n }, 'credits, held and deposits kept');
  });

  t.test('rate window: Retry-After within the window, and the window slides', async (t) => {
    const user = 'window';
    await hydrate(redis, keys, user, 1_000_000n, 1_000_000n);
    const windowMs = 1000;
    t.equal((await scripts.admit(admitInput(user, 'w1', 1n, { limit: 2, windowMs }))).kind, 'admitted');
    t.equal((await scripts.admit(admitInput(user, 'w2', 1n, { limit: 2, windowMs }))).kind, 'admitted');
    const limited = await scripts.admit(admitInput(user, 'w3', 1n, { limit: 2, windowMs }));
    t.equal(limited.kind, 'rate_limited');
    const retryAfterMs = limited.kind === 'rate_limited' ? limited.retryAfterMs : -1;
    t.ok(retryAfterMs >= 1 && retryAfterMs <= windowMs, `retry-after ${retryAfterMs} ms within 1..${windowMs}`);
    t.equal((await bal(user)).held, 2n, 'the limited call reserved nothing');
    t.notOk(await redis.hexists(keys.reservations(user), 'w3'));
    t.equal((await scripts.admit(admitInput(user, 'w3', 1n, { limit: 2, windowMs: 10_000 }))).kind, 'rate_limited', 'still limited');
    await sleep(retryAfterMs + 20);
    t.equal((await scripts.admit(admitInput(user, 'w4', 1n, { limit: 2, windowMs }))).kind, 'admitted', 'admitted once Retry-After has passed');
    const other = await scripts.admit({ ...admitInput(user, 'w5', 1n, { limit: 2, windowMs }), keyId: 'key-2' });
    t.equal(other.kind, 'admitted', "another key's window is its own");
  });

  /** admit.lua refused for the rate, and Retry-After says when the member scored `score` leaves the window (Redis clock). */
  const limitedUntil = async (t: Test, input: AdmitInput, member: string, label: string) => {
    const score = Number(await redis.zscore(keys.rateWindow(input.userId, input.keyId), member));
    const before = await redisNowMs();
    const result = await scripts.admit(input);
    const after = await redisNowMs();
    const retryMs = result.kind === 'rate_limited' ? result.retryAfterMs : -1;
    t.equal(result.kind, 'rate_limited', `${label}: rate limited`);
    t.ok(retryMs >= score + input.windowMs - after && retryMs <= score + input.windowMs - before,
      `${label}: Retry-After ${retryMs} ms is when ${member} leaves (${score + input.windowMs - after}..${score + input.windowMs - before})`);
    return retryMs;
  };

  t.test('per-minute window (rate_limit_rpm): its own limit and Retry-After, lease slots bounded by it, unused slots returned', async (t) => {
    const user = 'minute-window';
    await hydrate(redis, keys, user, 1_000_000_000n, 1_000_000_000n);
    const over = { limit: 1000, rpm: 3 };
    for (let i = 0; i < 3; i++) t.equal((await scripts.admit(admitInput(user, `m${i}`, 1n, over))).kind, 'admitted', `call ${i} within 3 per minute`);
    const refused = await scripts.admit(admitInput(user, 'm3', 1n, over));
    t.match(refused, { kind: 'rate_limited', limit: 'rpm' }, 'the 4th: refused by the per-minute window');
    const retryAfterMs = refused.kind === 'rate_limited' ? refused.retryAfterMs : -1;
    t.ok(retryAfterMs > 50_000 && retryAfterMs <= 60_000, `Retry-After ${retryAfterMs} ms: when the first leaves the minute`);
    t.equal(await redis.hlen(keys.reservations(user)), 3, 'the refused call reserved nothing');
    t.match(await scripts.admit(admitInput(user, 'other', 1n, { ...over, keyId: 'key-2' })), { kind: 'admitted' }, "another key's minute is its own");
    t.match(await scripts.admit(admitInput(user, 'no-rpm', 1n, { limit: 1000 })), { kind: 'admitted' }, 'without rpm only the default window counts');
    t.equal(await redis.exists(keys.minuteWindow(user, 'key-9')), 0);
    t.match(await scripts.admit(admitInput(user, 'no-rpm-key', 1n, { limit: 1000, keyId: 'key-9' })), { kind: 'admitted' });
    t.equal(await redis.exists(keys.minuteWindow(user, 'key-9'), keys.minuteWeights(user, 'key-9')), 0, 'no per-minute keys for a key without rpm');

    const zero = await scripts.admit(admitInput(user, 'z', 1n, { limit: 1000, rpm: 0, keyId: 'key-0' }));
    t.match(zero, { kind: 'rate_limited', limit: 'rpm' }, 'rpm 0 admits nothing');

    // Spare per-minute slots 1 + floor((41 - 0 - 1) / 8) = 6, below the default window's 1 + floor(999 / 8).
    const grant = await scripts.admit(leaseInput(user, 'L', 1n, 50, { limit: 1000, rpm: 41, keyId: 'key-3' }));
    t.match(grantOf(t, grant), { slots: 6 }, 'the lease is bounded by the per-minute window');
    t.equal(Number(await redis.hget(keys.minuteWeights(user, 'key-3'), '#')), 6, 'the minute counts the 6 slots');
    await scripts.settle(settleInput(user, 'L', 1, [['c1', 1n]], { keyId: 'key-3', close: true, unusedSlots: 5 }));
    t.equal(Number(await redis.hget(keys.minuteWeights(user, 'key-3'), '#')), 1, 'closing returns the 5 unused slots to the minute');
    t.equal(Number(await redis.hget(keys.rateWeights(user, 'key-3'), '#')), 1, 'and to the default window');
  });

  t.test('weighted window: a lease of k slots counts k from the end of its life, and Retry-After points at when it leaves', async (t) => {
    const user = 'window-weights';
    await hydrate(redis, keys, user, 1_000_000_000n, 1_000_000_000n);
    const over = { limit: 9, windowMs: 1000, leaseLifeMs: 600 };
    const fill = async (tag: string, n: number) => {
      let admitted = 0;
      for (let i = 0; i < n; i++) if ((await scripts.admit(admitInput(user, `${tag}${i}`, 1n, over))).kind === 'admitted') admitted++;
      return admitted;
    };
    // 1 + floor((9 - 1) / 8) = 2 slots, scored at now + 600 ms: they count until now + 1600 ms.
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'A', 1n, 9, over))), { slots: 2 });
    const leaseLeavesAt = Number(await redis.zscore(keys.rateWindow(user, 'key-1'), 'A')) + over.windowMs;
    t.equal(await fill('s', 7), 7, 'a lease of 2 slots leaves 7 of 9');
    const first = await limitedUntil(t, admitInput(user, 'x1', 1n, over), 's0', 'full');
    await sleep(first + 60);
    t.ok(await redisNowMs() < leaseLeavesAt - 100, 'the one-slot members left; the lease has not');
    t.equal(await fill('t', 7), 7, 'again 7 fit beside the lease');
    t.equal(await used(user), 9, 'the lease still counts 2');
    t.same((await redis.zrange(keys.rateWindow(user, 'key-1'), 0, -1)).sort(), ['A', ...Array.from({ length: 7 }, (_, i) => `t${i}`)].sort(),
      'the window holds the lease and the new members');
    const second = await limitedUntil(t, admitInput(user, 'x2', 1n, over), 'A', 'full again: the lease is now the oldest');
    await sleep(second + 20);
    t.equal(await fill('u', 3), 2, 'its 2 slots are free once it left, and no more');
  });

  t.test('weighted window: with more weight in the window than the limit, Retry-After waits for enough weight to leave', async (t) => {
    // The limit lowered below what is in the window (a key's limit changed): e.g. used 5, limit 2: 4 must leave.
    const user = 'window-excess';
    await hydrate(redis, keys, user, 1_000_000_000n, 1_000_000_000n);
    const over = { windowMs: 5000, leaseLifeMs: 0, limit: 20 };
    grantOf(t, await scripts.admit(admitInput(user, 'S1', 1n, over)));
    await sleep(50);
    // used 1: 1 + floor((20 - 1 - 1) / 8) = 3 slots
    t.match(grantOf(t, await scripts.admit(leaseInput(user, 'A', 1n, 20, over))), { slots: 3 });
    await sleep(50);
    grantOf(t, await scripts.admit(admitInput(user, 'B', 1n, over)));
    t.equal(await used(user), 5, 'S1 (1), A (3), B (1)');
    await limitedUntil(t, admitInput(user, 'x5', 1n, { ...over, limit: 5 }), 'S1', 'limit 5: one slot must leave: the first member');
    await limitedUntil(t, admitInput(user, 'x3', 1n, { ...over, limit: 3 }), 'A', 'limit 3: three must leave: the first member and the lease of 3');
    await limitedUntil(t, admitInput(user, 'x2', 1n, { ...over, limit: 2 }), 'A', 'limit 2: four must leave: still the lease');
    await limitedUntil(t, admitInput(user, 'x1', 1n, { ...over, limit: 1 }), 'B', 'limit 1: all five: the last member');
    t.equal(await used(user), 5, 'nothing added by the refused');
  });
});
