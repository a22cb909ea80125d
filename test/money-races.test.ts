// Money under races, through real HTTP against real gateway processes sharing one Redis and one
// Postgres: a 1,000-call burst from several keys of one user against a $5 balance, a key's
// credit_limit under 200 concurrent calls, one rate_limit_rpm enforced by two processes together,
// and a process killed (SIGKILL) in the middle of 50 streams, cleaned up by the survivor's janitor.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import {
  chargeOf, chatBody, envelopeProblems, eventually, jwtFor, leasesClosed, parseJson, postChat, reserveNano, sampleAvailable, usdString, usdToNano,
} from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';
import { assertSpentExactly, chargesOfServed, keySpendInRedis, keySpendNano, ledgerSnapshot, logMark, usageRows, watchStream } from './helpers/money-invariants.js';

// One mock vendor keeps a record of every upstream request of the file.
let mock: MockVendor;
// `main` and `peer` share one database and Redis prefix; `victim` joins them for the SIGKILL test.
// `main` is the only janitor that runs often (every second), so it is the one that must clean up.
let main: Gateway;
let peer: Gateway;
let victim: Gateway;
const HIGH_WINDOW = '100000/10';

t.before(async () => {
  mock = await startMockVendor({ port: 0, keepRequests: 5000 });
  main = await startGateway({
    mock, threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: HIGH_WINDOW, RESERVATION_JANITOR_SECONDS: '1' },
  });
  const shared = { database: main.database, prefix: main.prefix };
  [peer, victim] = await Promise.all([
    startGateway({ mock, shared, threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: HIGH_WINDOW, RESERVATION_JANITOR_SECONDS: '3600' } }),
    // Its leases' deadlines pass 2 s after their last settlement; its own janitor never runs in time.
    startGateway({
      mock, shared, threads: 2,
      env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: HIGH_WINDOW, RESERVATION_TTL_SECONDS: '2', RESERVATION_JANITOR_SECONDS: '3600' },
    }),
  ]);
});
t.teardown(async () => {
  // The gateways that share `main`'s state first; `main` drops the database and the Redis prefix.
  await Promise.all([victim?.close(), peer?.close()]);
  await main?.close();
  await mock?.close();
});

const USD = 1_000_000_000n;

/** A user with `usd` credits and `keys` API keys (their texts and ids, oldest first). */
async function userWithKeys(gateway: Gateway, user: string, usd: string, keys: number): Promise<{ token: string; keys: { key: string; id: string }[] }> {
  const token = jwtFor(gateway, user);
  if (usd !== '0') await gateway.topup(user, usd);
  const made: { key: string; id: string }[] = [];
  for (let i = 0; i < keys; i++) {
    const key = await gateway.createKey(token, { name: `key-${i}` });
    made.push({ key, id: await newestKeyId(gateway.url, token) });
  }
  return { token, keys: made };
}

t.test('1,000 concurrent calls from 5 keys of one user against $5: available never below zero, the ledger adds up', async (t) => {
  const unexpected = logMark([main]);
  const user = 'race-burst';
  const initial = 5n * USD;
  const { keys } = await userWithKeys(main, user, '5', 5);
  const marker = `burst-${randomBytes(4).toString('hex')}`;
  // n=8 choices of up to 10,000 tokens each: the worst case of one call is about $0.048, so the
  // 1,000 worst cases come to nearly ten times the balance. latency_ms keeps the first admitted
  // calls open while the burst arrives; the mock answers 4 tokens per choice, so each call costs
  // a tiny part of its reservation and later calls are admitted again as earlier ones settle.
  const maxTokens = 10_000;
  const n = 8;
  const body = chatBody(`${marker} [[mock chunks=4 latency_ms=1500]]`, { max_tokens: maxTokens, n });
  const reserve = reserveNano(body, maxTokens * n);
  t.ok(reserve * 1000n > initial * 5n, `the worst cases (${usdString(reserve * 1000n)} USD) exceed the $5 balance many times over`);
  t.equal((await main.balanceNano(user)).credits, initial, 'starts with exactly $5');

  const sampler = sampleAvailable(main, user);
  const started = Date.now();
  const results = await Promise.all(Array.from({ length: 1000 }, async (_, i) => {
    const key = keys[i % keys.length]!;
    return { keyId: key.id, ...(await postChat(main, key.key, body)) };
  }));
  const elapsedMs = Date.now() - started;
  const { min, maxHeld, samples } = await sampler.stop();

  const ok = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status === 402);
  const statuses = [...new Set(results.map((r) => r.status))].sort();
  t.comment(`1,000 calls in ${elapsedMs} ms: ${ok.length} admitted, ${refused.length} refused with 402; ${samples} samples of available, min ${min}, max held ${maxHeld}`);
  // The answers themselves, so a rare 5xx names its code and message in the failure.
  const serverErrors = [...new Set(results.filter((r) => r.status >= 500).map((r) => `${r.status} ${r.text.slice(0, 300)}`))];
  t.same(serverErrors, [], 'no 5xx');
  t.same(statuses.filter((s) => s !== 200 && s !== 402), [], `only 200 and 402 (statuses: ${statuses.join(', ')})`);
  t.ok(ok.length > 0, 'some calls were admitted');
  t.ok(refused.length > 0, 'the balance did not cover the burst: some calls were refused');
  t.ok(samples > 0, 'Redis available was sampled during the burst');
  t.ok(min >= 0n, `available (credits - held) never went below zero (min ${min})`);
  t.ok(maxHeld <= initial, `held never exceeded the credits (max ${maxHeld})`);
  const badRefusals = refused.filter((r) => envelopeProblems(parseJson(r.text), 402).length > 0 || parseJson(r.text)?.error?.code !== 'insufficient_credits');
  t.same(badRefusals.slice(0, 3).map((r) => r.text.slice(0, 300)), [], 'every 402 is the envelope with code insufficient_credits');

  // Each success: its own request id, a charge within its reservation.
  const { charges, sum } = chargesOfServed(t, ok, reserve);
  t.equal(mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker)).length, ok.length, 'only admitted calls reached the upstream');
  await assertSpentExactly(t, main, user, initial, sum, ok.length);

  const rows = await usageRows(main, user);
  const missing = [...charges.keys()].filter((id) => !rows.has(id));
  t.same(missing, [], 'each 200 has its usage transaction, under its x-request-id');
  const wrong = [...charges].filter(([id, c]) => rows.has(id) && (rows.get(id)!.chargeNano !== c.chargeNano || rows.get(id)!.keyId !== c.keyId));
  t.same(wrong.slice(0, 3).map(([id]) => id), [], "each transaction is the call's exact charge, on the key that made it");
  for (const key of keys) {
    const expected = [...charges.values()].filter((c) => c.keyId === key.id).reduce((s, c) => s + c.chargeNano, 0n);
    t.equal(await keySpendNano(main, key.id), expected, `key ${key.id.slice(0, 8)}: its Postgres spend is the sum of its calls' charges`);
  }
  t.same(unexpected(), [], "no 'unexpected error' in the gateway's log");
});

t.test('200 concurrent calls on a key whose credit_limit allows 20 never spend more than the cap', async (t) => {
  const unexpected = logMark([main]);
  const user = 'race-cap';
  const { token, keys: [capped, free] } = await userWithKeys(main, user, '5', 2);
  // latency_ms keeps every admitted call in flight upstream until all have been admitted or
  // refused: nothing settles during the burst, so exactly the 20 worst cases fit under the cap.
  // Each answer uses its whole max_tokens, so a charge is most of its reservation and the spend
  // lands near the cap.
  const body = chatBody('capped [[mock chunks=100 latency_ms=3000]]', { max_tokens: 100 });
  const reserve = reserveNano(body, 100);
  const cap = 20n * reserve;
  const capUsd = Number(cap) / 1e9;
  // The route converts the USD number with toFixed(9): exact for a cap of up to 9 decimals.
  const nine = `${cap / USD}.${(cap % USD).toString().padStart(9, '0')}`;
  t.equal(capUsd.toFixed(9), nine, `the cap ${nine} USD survives toFixed(9)`);
  const record = await updateKey(main.url, token, capped!.id, { credit_limit: capUsd });
  t.equal(record.credit_limit, capUsd, 'PUT answers the cap');
  t.equal(usdToNano(record.credit_limit), cap, 'the cap is exactly 20 worst-case reservations');
  t.equal(record.credit_used, 0, 'nothing used yet');

  const sampler = sampleAvailable(main, user);
  const started = Date.now();
  const timed = async (key: string) => {
    const r = await postChat(main, key, body);
    return { ...r, atMs: Date.now() - started };
  };
  const [cappedResults, freeResults] = await Promise.all([
    Promise.all(Array.from({ length: 200 }, () => timed(capped!.key))),
    Promise.all(Array.from({ length: 30 }, () => timed(free!.key))),
  ]);
  const { min } = await sampler.stop();

  const ok = cappedResults.filter((r) => r.status === 200);
  const refused = cappedResults.filter((r) => r.status === 402);
  const lastRefusalMs = Math.max(...refused.map((r) => r.atMs));
  const firstSuccessMs = Math.min(...ok.map((r) => r.atMs));
  t.comment(`capped key: ${ok.length} × 200, ${refused.length} × 402 (last refusal at ${lastRefusalMs} ms, first success at ${firstSuccessMs} ms); other key: ${freeResults.filter((r) => r.status === 200).length} × 200`);
  t.ok(lastRefusalMs < firstSuccessMs, 'every refusal came while the admitted calls were still in flight (the burst raced only admission)');
  t.equal(ok.length, 20, 'exactly 20 calls admitted on the capped key');
  t.equal(refused.length, 180, 'the other 180 refused with 402');
  const wrongRefusals = refused.filter((r) => envelopeProblems(parseJson(r.text), 402).length > 0 || parseJson(r.text)?.error?.code !== 'credit_limit_exceeded');
  t.same(wrongRefusals.slice(0, 3).map((r) => r.text.slice(0, 300)), [], 'every 402 is the envelope with code credit_limit_exceeded');
  t.same(freeResults.map((r) => r.status), Array(30).fill(200), "the user's second key is not limited by the first key's cap (30 calls, more than 20)");
  t.ok(min >= 0n, 'available never below zero');

  const cappedCharges = ok.reduce((s, r) => s + chargeOf(r.text), 0n);
  const freeCharges = freeResults.reduce((s, r) => s + chargeOf(r.text), 0n);
  await leasesClosed(main, user, 5_000);
  await main.ledgerSettled(user, 15_000);
  const spent = await keySpendNano(main, capped!.id);
  t.ok(spent <= cap, `the capped key's Postgres spend ${spent} <= its cap ${cap}`);
  t.equal(spent, cappedCharges, "the capped key's spend is the exact sum of its 20 charges");
  t.equal(await keySpendNano(main, free!.id), freeCharges, "the second key's spend is the sum of its own charges");
  const redisSpend = await keySpendInRedis(main, user, capped!.id);
  t.same(redisSpend, { spent: cappedCharges, held: 0n }, "Redis: the key's period spend is its charges, nothing held for it");

  const listed = await rawRequest(`${main.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } });
  const listedCapped = (listed.body as any[]).find((k) => k.id === capped!.id);
  t.equal(usdToNano(listedCapped?.credit_used), spent, "GET /api/v1/api-keys: credit_used equals the key's Postgres spend");
  t.equal(listedCapped?.credit_limit, capUsd, 'the listed cap is unchanged');

  const money = await ledgerSnapshot(main, user);
  t.equal(money.credits, 5n * USD - cappedCharges - freeCharges, 'Redis credits = $5 - every charge');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum = Redis credits');
  t.equal(money.usageTransactions, 50, 'one usage transaction per admitted call (20 + 30)');
  t.same(unexpected(), [], "no 'unexpected error' in the gateway's log");
});

t.test('two gateway processes sharing one Redis enforce one rate_limit_rpm together', async (t) => {
  const unexpected = logMark([main, peer]);
  const user = 'race-rpm';
  const { token, keys } = await userWithKeys(main, user, '5', 2);
  const { key, id } = keys[0]!;
  const warmKey = keys[1]!.key;
  const record = await updateKey(main.url, token, id, { rate_limit_rpm: 30 });
  t.equal(record.rate_limit_rpm, 30, 'PUT set rate_limit_rpm 30');
  const body = chatBody('rpm shared [[mock chunks=1]]', { max_tokens: 5 });
  // Both processes (each thread, on fresh connections) know the key and have served chat calls
  // (on the user's other key, which has no rpm) before the burst, so neither starts late: the two
  // really race for the same per-minute slots.
  let warmCharges = 0n;
  for (const gateway of [main, peer]) {
    const warm = await Promise.all(Array.from({ length: 6 }, () => rawRequest(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${key}` } })));
    t.same(warm.map((r) => r.status), Array(6).fill(200), 'the key authenticates on both processes');
    const calls = await Promise.all(Array.from({ length: 10 }, () => rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${warmKey}`, 'content-type': 'application/json' }, body,
    })));
    t.same(calls.map((r) => r.status), Array(10).fill(200), 'warm-up calls on the other key succeed');
    warmCharges += calls.reduce((sum, r) => sum + chargeOf(r.text), 0n);
  }
  // 60 calls in one burst, alternating between the two processes.
  const results = await Promise.all(Array.from({ length: 60 }, async (_, i) => {
    const gateway = i % 2 === 0 ? main : peer;
    return { via: gateway === main ? 'main' : 'peer', ...(await postChat(gateway, key, body)) };
  }));
  const ok = results.filter((r) => r.status === 200);
  const limited = results.filter((r) => r.status === 429);
  t.comment(`main: ${results.filter((r) => r.via === 'main' && r.status === 200).length} × 200, peer: ${results.filter((r) => r.via === 'peer' && r.status === 200).length} × 200`);
  t.equal(ok.length, 30, 'exactly 30 calls admitted over both processes');
  t.equal(limited.length, 30, 'the other 30 refused with 429');
  const badLimited = limited.filter((r) => {
    const body = parseJson(r.text);
    const retryAfter = Number(r.headers.get('retry-after'));
    return envelopeProblems(body, 429).length > 0 || body?.error?.code !== 'rate_limit_exceeded' || !/rate_limit_rpm of 30/.test(body?.msg ?? '')
      || !/^\d+$/.test(r.headers.get('retry-after') ?? '') || retryAfter < 1 || retryAfter > 60;
  });
  t.same(badLimited.slice(0, 3).map((r) => `${r.headers.get('retry-after')} ${r.text.slice(0, 200)}`), [],
    'every 429 is the envelope (rate_limit_exceeded, naming rate_limit_rpm 30) with a Retry-After of 1..60 s');
  // Whatever the split, the minute is used up on both: each process refuses the next call, even
  // the one that admitted fewer than 30 itself.
  for (const gateway of [main, peer]) {
    const next = await postChat(gateway, key, body);
    t.equal(next.status, 429, `after the burst, ${gateway === main ? 'main' : 'peer'} refuses the next call too`);
  }

  await leasesClosed(main, user);
  await main.ledgerSettled(user);
  const money = await ledgerSnapshot(main, user);
  t.equal(money.usageTransactions, 30 + 20, 'one usage transaction per admitted call (30, and the 20 warm-up calls)');
  t.equal(money.credits, 5n * USD - warmCharges - ok.reduce((s, r) => s + chargeOf(r.text), 0n), 'Redis credits = $5 - the 30 charges - the warm-up charges');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum = Redis credits');
  t.same(unexpected(), [], "no 'unexpected error' in either gateway's log");
});

t.test('a gateway killed (SIGKILL) in the middle of 50 streams leaves a ledger that adds up once the janitor ran', async (t) => {
  const unexpected = logMark([main, peer, victim]);
  const survivor = main;
  const user = 'race-kill';
  const initial = 5n * USD;
  const { key } = (await userWithKeys(survivor, user, '5', 1)).keys[0]!;
  const sampler = sampleAvailable(survivor, user);
  const releasedBefore = (survivor.output.match(/lease released at its deadline/g) ?? []).length;

  // 50 streams of 500 tokens, one every 20 ms (10 s each): all are mid-stream when the process dies.
  const streams = Array.from({ length: 50 }, () => watchStream(victim, key, chatBody('long stream [[mock chunks=500 delay_ms=20]]', { stream: true, max_tokens: 1000 })));
  await Promise.all(streams.map((s) => s.started));
  // Ten short calls on the same key complete and are charged before the kill.
  const short = await Promise.all(Array.from({ length: 10 }, () => postChat(victim, key, chatBody('short call [[mock chunks=3]]', { max_tokens: 20 }))));
  t.same(short.map((r) => r.status), Array(10).fill(200), 'the ten short calls succeed');
  const shortCharges = short.reduce((s, r) => s + chargeOf(r.text), 0n);
  const shortIds = short.map((r) => r.headers.get('x-request-id'));
  await eventually('the short calls to be charged in Redis', async () =>
    ((await survivor.balanceNano(user)).credits === initial - shortCharges ? true : undefined), 5_000);

  const before = await ledgerSnapshot(survivor, user);
  t.ok(before.held > 0n, `the streams' leases hold credit before the kill (${before.held})`);
  t.equal(before.held, before.openHeld, 'before the kill: held = sum of the open reservations');
  t.ok(before.credits - before.held >= 0n, 'before the kill: available not negative');

  t.equal(await victim.stop('SIGKILL'), null, 'the gateway process was killed');
  t.equal(victim.process.signalCode, 'SIGKILL');
  const outcomes = await Promise.all(streams.map((s) => s.outcome));
  t.equal(outcomes.filter((o) => o.status === 200).length, 50, 'all 50 streams had been admitted');
  t.equal(outcomes.filter((o) => o.completed).length, 0, 'no stream completed: the process died mid-stream');

  // The survivor's janitor (every second) releases the dead process's leases once their 2 s deadline passed.
  const releasedAfterMs = Date.now();
  await eventually('the janitor to release every lease of the dead process', async () => {
    const now = await ledgerSnapshot(survivor, user);
    return now.held === 0n && now.openReservations === 0 ? now : undefined;
  }, 15_000);
  t.comment(`janitor released everything ${Date.now() - releasedAfterMs} ms after the kill`);
  // The dead process's journal is replayed by the survivor, which waits for the ledger writer to confirm
  // it (up to 10 s per journal) before the last entries drain: under CI's two parallel files, more than 10 s.
  await survivor.ledgerSettled(user, 30_000);
  const { min } = await sampler.stop();

  const after = await ledgerSnapshot(survivor, user);
  t.equal(after.held, 0n, 'held back to 0');
  t.equal(after.openReservations, 0, 'the open reservations hash is empty');
  t.equal(after.deadlines, 0, 'no reservation deadline left');
  t.equal(after.held, after.openHeld, 'held = sum of the open reservations');
  t.equal(after.ledgerPending, 0, "the dead process's ledger events were drained");
  t.equal(after.credits, after.ledgerSum, 'Redis credits = sum of the Postgres transactions');
  t.equal(after.credits, initial - shortCharges, 'only the ten completed calls were charged; the cut streams never settled');
  t.equal(after.usageTransactions, 10, 'ten usage transactions');
  const rows = await usageRows(survivor, user);
  t.same([...rows.keys()].sort(), [...shortIds].sort(), 'they are the short calls, under their x-request-ids');
  t.ok(min >= 0n, `available never went below zero (min ${min})`);
  const released = (survivor.output.match(/lease released at its deadline/g) ?? []).length - releasedBefore;
  t.ok(released >= 1, `the survivor's janitor released the dead process's leases (${released} logged)`);
  t.match(await survivor.cli('ledger', 'check'), /^ledger check: ok \(\d+ users/, '`gateway ledger check` passes after the janitor ran (exit 0)');
  t.same(unexpected(), [], "no 'unexpected error' in any gateway's log");
});
