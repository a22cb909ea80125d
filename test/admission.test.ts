// Admission: the balance reservation under a concurrent burst (402s, never below zero, exact
// settlement), the per-key request window (429 with Retry-After, nothing reserved), and the Lua
// scripts themselves straight against Redis.
import { readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Redis } from 'ioredis';
import { startGateway, type Gateway } from './helpers/harness.js';
import {
  chatBody, costNano, envelopeProblems, moneyView, parseJson, postChat, reserveNano, sampleAvailable, usdString, usdToNano,
} from './helpers/billing-checks.js';
import { SCRIPT_KEY_COUNTS, credit, defineScripts, hydrate, type ScriptedRedis } from '../src/admission/scripts.js';
import { ScriptBatcher } from '../src/admission/script-batcher.js';
import { RedisKeys } from '../src/admission/keys.js';
import { deleteKeysWithPrefix } from '../bench/namespaces.js';

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
  const prefix = `test:lua:${randomBytes(4).toString('hex')}:`;
  const redis: ScriptedRedis = defineScripts(new Redis(REDIS_URL));
  const keys = new RedisKeys(prefix);
  const scripts = new ScriptBatcher(redis, keys);
  t.teardown(async () => {
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
  });
  const bal = async (user: string) => {
    const [credits, held, deposits] = await redis.hmget(keys.balance(user), 'credits', 'held', 'deposits');
    const big = (value: string | null | undefined) => (value == null ? null : BigInt(value));
    return { credits: big(credits), held: big(held), deposits: big(deposits) };
  };
  const admitInput = (user: string, reservationId: string, amountNano: bigint, over: Partial<{ limit: number; windowMs: number }> = {}) =>
    ({ userId: user, keyId: 'key-1', reservationId, amountNano, limit: over.limit ?? 100, windowMs: over.windowMs ?? 10_000, ttlMs: 60_000 });

  t.test('each script declares and uses exactly the KEYS count the wrapper passes', async (t) => {
    t.same(SCRIPT_KEY_COUNTS, { admit: 4, settle: 4, hydrate: 1, credit: 1 }, 'pinned KEYS counts');
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
      const used = new Set([...code.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      t.equal(Math.max(...used), count, `${name}.lua uses KEYS up to ${count} and no further`);
      t.notMatch(code, /rcall\(\s*'[A-Z]+'\s*,\s*['"]/, `${name}.lua builds no key names inside the script`);
    }
  });

  t.test('admit: not_loaded without a balance, and nothing recorded', async (t) => {
    const user = 'no-balance';
    t.same(await scripts.admit(admitInput(user, 'r1', 100n)), { kind: 'not_loaded' });
    t.equal(await redis.zcard(keys.rateWindow(user, 'key-1')), 0, 'the refused call took no window slot');
    t.equal(await redis.hlen(keys.reservations(user)), 0, 'no reservation');
    t.equal(await redis.exists(keys.balance(user)), 0, 'no balance invented');
    t.equal(await hydrate(redis, keys, user, 1000n, 1000n), 1);
    t.match(await scripts.admit(admitInput(user, 'r1', 100n)), { kind: 'admitted', available: 900 });
  });

  t.test('admit: refuses more than available, reserves exactly up to it', async (t) => {
    const user = 'tight';
    await hydrate(redis, keys, user, 1000n, 1000n);
    t.match(await scripts.admit(admitInput(user, 'a', 600n)), { kind: 'admitted', available: 400 });
    t.same(await scripts.admit(admitInput(user, 'b', 401n)), { kind: 'insufficient_credits', available: 400 });
    t.match(await scripts.admit(admitInput(user, 'c', 400n)), { kind: 'admitted', available: 0 });
    t.same(await scripts.admit(admitInput(user, 'd', 1n)), { kind: 'insufficient_credits', available: 0 });
    t.same(await bal(user), { credits: 1000n, held: 1000n, deposits: 1000n });
    t.same(await redis.hgetall(keys.reservations(user)), { a: '600', c: '400' }, 'open reservations are the held sum');
  });

  t.test('admit: the same reservation id resent (a reconnect replays in-flight commands) reserves once', async (t) => {
    const user = 'resent';
    await hydrate(redis, keys, user, 1000n, 1000n);
    t.match(await scripts.admit(admitInput(user, 'same', 300n)), { kind: 'admitted', available: 700 });
    t.same(await scripts.admit(admitInput(user, 'same', 300n)), { kind: 'admitted', available: 700 }, 'answered as admitted, nothing added');
    t.same(await bal(user), { credits: 1000n, held: 300n, deposits: 1000n }, 'held equals the one open reservation');
    t.equal(await redis.zcard(keys.rateWindow(user, 'key-1')), 1, 'one window slot');
  });

  t.test('calls made in one turn leave in one pipeline; a failing script rejects only its own caller', async (t) => {
    const user = 'batched';
    await hydrate(redis, keys, user, 1000n, 1000n);
    const pipeline = redis.pipeline.bind(redis);
    let pipelines = 0;
    redis.pipeline = ((...args: Parameters<typeof redis.pipeline>) => {
      pipelines++;
      return pipeline(...args);
    }) as typeof redis.pipeline;
    t.teardown(() => { redis.pipeline = pipeline; });
    const calls = [
      scripts.admit(admitInput(user, 'b1', 100n)),
      scripts.admit(admitInput(user, 'b2', 100n)),
      // tonumber('x') is nil in admit.lua: a Lua error for this call alone
      scripts.admit({ ...admitInput(user, 'b3', 1n), amountNano: 'x' as unknown as bigint }),
      scripts.settle({ userId: user, reservationId: 'b1', chargeNano: 40n, event: '{}' }),
    ];
    const results = await Promise.allSettled(calls);
    t.equal(pipelines, 1, 'one pipeline for the four calls');
    t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    t.same((results[3] as PromiseFulfilledResult<unknown>).value, { settled: true, chargedNano: 40n }, 'settled after its admission, in order');
    t.same(await bal(user), { credits: 960n, held: 100n, deposits: 1000n });
    t.ok(await redis.sismember(keys.ledgerDirty(), user), 'the settled user is marked for the ledger writer');
  });

  t.test('settle: twice charges once; the ledger gets one event', async (t) => {
    const user = 'settle-twice';
    await hydrate(redis, keys, user, 1000n, 1000n);
    await scripts.admit(admitInput(user, 'r', 500n));
    t.same(await scripts.settle({ userId: user, reservationId: 'r', chargeNano: 200n, event: '{}' }), { settled: true, chargedNano: 200n });
    t.same(await scripts.settle({ userId: user, reservationId: 'r', chargeNano: 200n, event: '{}' }), { settled: false, chargedNano: 0n });
    t.same(await bal(user), { credits: 800n, held: 0n, deposits: 1000n });
    t.equal(await redis.hlen(keys.reservations(user)), 0);
    t.equal(await redis.zcard(keys.reservationDeadlines(user)), 0);
    t.equal(await redis.xlen(keys.ledger(user)), 1, 'one ledger event');
    const [[, fields]] = (await redis.xrange(keys.ledger(user), '-', '+')) as [string, string[]][] as [[string, string[]]];
    t.same(fields, ['r', 'r', 'c', '200', 'e', '{}']);
  });

  t.test('settle: a charge is capped at its reservation', async (t) => {
    const user = 'settle-cap';
    await hydrate(redis, keys, user, 10_000n, 10_000n);
    await scripts.admit(admitInput(user, 'r', 300n));
    t.same(await scripts.settle({ userId: user, reservationId: 'r', chargeNano: 1000n, event: '{}' }), { settled: true, chargedNano: 300n });
    t.same(await bal(user), { credits: 9_700n, held: 0n, deposits: 10_000n });
  });

  t.test('settle: a zero charge releases the whole reservation', async (t) => {
    const user = 'settle-release';
    await hydrate(redis, keys, user, 1000n, 1000n);
    await scripts.admit(admitInput(user, 'r', 700n));
    t.same(await scripts.settle({ userId: user, reservationId: 'r', chargeNano: 0n, event: '{}' }), { settled: true, chargedNano: 0n });
    t.same(await bal(user), { credits: 1000n, held: 0n, deposits: 1000n });
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
});
