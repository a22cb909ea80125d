// Calls that outlive the reservation TTL (issue 24, item 3): a stream running longer than
// RESERVATION_TTL_SECONDS keeps its hold while its gateway is alive (its lease's deadline is
// refreshed), so no other call is admitted against the credit it holds and no balance goes below
// zero; `gateway ledger check` passes then, and fails on a balance below zero and on a charge made
// outside a lease (a lease released under a running call, by hand here).
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser, parsePrometheus, rawRequest, sumSamples, eventually } from './helpers/http-tools.js';
import { chatBody, postChat, reserveNano, usdString } from './helpers/billing-checks.js';
import { watchStream } from './helpers/money-invariants.js';
import { RedisKeys } from '../src/admission/keys.js';
import { defineScripts, expireLease } from '../src/admission/scripts.js';
import { keyIdOfLease } from '../src/admission/admission.js';
import { checkLedger } from '../src/ledger/check.js';
import { connectRedis } from '../src/store/redis-connect.js';

const TTL_SECONDS = 2;
const JANITOR_SECONDS = 1;
let gateway: Gateway;
let keys: RedisKeys;
t.before(async () => {
  gateway = await startGateway({
    env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10', RESERVATION_TTL_SECONDS: String(TTL_SECONDS), RESERVATION_JANITOR_SECONDS: String(JANITOR_SECONDS) },
  });
  keys = new RedisKeys(gateway.prefix);
});
t.teardown(() => gateway.close());

const MAX_TOKENS = 60;
/** A stream of `tokens` chunks, `delayMs` apart; its worst case is the whole balance of the users below. */
const longBody = (delayMs: number, tokens = MAX_TOKENS) => chatBody(`long call [[mock chunks=${tokens} delay_ms=${String(delayMs).padStart(3, '0')}]]`, { stream: true, max_tokens: tokens });
/** Another call of the same worst case (same length of body): the balance covers one of the two, never both. */
const otherBody = (delayMs: number, tokens = MAX_TOKENS) => chatBody(`next call [[mock chunks=${tokens} delay_ms=${String(delayMs).padStart(3, '0')}]]`, { stream: true, max_tokens: tokens });
/**
 * Calls whose output is most of their cost: two of them cost more than one worst case whatever the
 * prompt's share (60 output tokens left the sum within a prompt's bytes of one worst case).
 */
const OUTPUT_HEAVY = 600;

async function metric(name: string): Promise<number> {
  return sumSamples(parsePrometheus((await rawRequest(`${gateway.url}/metrics`)).text), name);
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await gateway.redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** The one lease the user holds while its stream runs, and its deadline (Redis clock, ms). */
async function onlyLease(user: string): Promise<{ leaseId: string; heldNano: bigint; deadlineMs: number }> {
  const open = await gateway.redis.hgetall(keys.reservations(user));
  const ids = Object.keys(open);
  if (ids.length !== 1) throw new Error(`expected one open lease, found ${ids.length}`);
  const leaseId = ids[0]!;
  const deadline = await gateway.redis.zscore(keys.reservationDeadlines(user), leaseId);
  return { leaseId, heldNano: BigInt(open[leaseId]!), deadlineMs: Number(deadline) };
}

async function ledgerCheck(...args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    return { code: 0, stdout: await gateway.cli('ledger', 'check', ...args) };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: String(failed.stdout ?? '').trim() };
  }
}

t.test('a stream longer than the reservation TTL keeps its hold, is charged once, and no balance goes below zero', async (t) => {
  const user = 'long-stream';
  const worstNano = reserveNano(longBody(100), MAX_TOKENS);
  t.equal(reserveNano(otherBody(1), MAX_TOKENS), worstNano, 'both calls reserve the same worst case');
  const { key } = await fastUser(gateway, user, usdString(worstNano));
  const expiredBefore = await metric('gateway_reservations_expired_total');

  const stream = watchStream(gateway, key, longBody(100));
  await stream.started;
  const first = await onlyLease(user);
  t.equal(first.heldNano, worstNano, 'the stream holds its worst case');
  let running = true;
  void stream.outcome.then(() => { running = false; });
  // Past the first deadline by two janitor passes: without a refresh the janitor has released it by now.
  const passedDeadline = await eventually(async () => (await redisNowMs()) > first.deadlineMs + 2 * JANITOR_SECONDS * 1000, 15_000, 50);
  t.ok(passedDeadline, 'the Redis clock passed the deadline the lease got at admission');
  t.ok(running, 'the stream is still running');

  const now = await onlyLease(user);
  t.equal(now.leaseId, first.leaseId, 'the same lease is still open');
  t.equal(now.heldNano, worstNano, 'it still holds the worst case');
  t.ok(now.deadlineMs > first.deadlineMs, 'its deadline was pushed forward while the call runs');
  t.equal(await metric('gateway_reservations_expired_total'), expiredBefore, 'the janitor released nothing');

  const next = await postChat(gateway, key, otherBody(1));
  t.equal(next.status, 402, 'a second call is refused: the running stream still holds the credit');

  const outcome = await stream.outcome;
  t.ok(outcome.completed, 'the stream ran to its end');
  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and credits_nano < 0`;
  t.equal(rows.length, 1, 'charged once');
  const { credits, held } = await gateway.balanceNano(user);
  t.equal(held, 0n, 'nothing held after it');
  t.equal(credits, worstNano + rows[0]!.credits_nano, 'the balance is the deposit minus that charge');
  t.ok(credits >= 0n, 'the balance is not below zero');
  t.equal(await metric('gateway_settled_outside_lease_total'), 0, 'nothing charged outside a lease');
  const check = await ledgerCheck('--user', user);
  t.equal(check.code, 0, `ledger check: ${check.stdout}`);
});

t.test('ledger check fails on a charge outside a lease and on a balance below zero', async (t) => {
  const user = 'outside-lease';
  const worstNano = reserveNano(longBody(5, OUTPUT_HEAVY), OUTPUT_HEAVY);
  const { key } = await fastUser(gateway, user, usdString(worstNano));
  const stream = watchStream(gateway, key, longBody(5, OUTPUT_HEAVY));
  await stream.started;
  // What a lost lease looks like: its deadline passes (by hand) and expire.lua releases it under the running call.
  const { leaseId } = await onlyLease(user);
  const redis = defineScripts(connectRedis(gateway.env.REDIS_URL!));
  t.teardown(() => redis.disconnect());
  await redis.zadd(keys.reservationDeadlines(user), 0, leaseId);
  t.ok(await expireLease(redis, keys, user, keyIdOfLease(leaseId), leaseId), 'the lease is released');
  // Its credit is free again: the next call is admitted against it, and both are charged.
  const next = await postChat(gateway, key, otherBody(1, OUTPUT_HEAVY));
  t.equal(next.status, 200, 'a second call is admitted against the released credit');
  t.ok((await stream.outcome).completed);
  t.ok(await eventually(async () => (await metric('gateway_settled_outside_lease_total')) >= 1, 10_000), 'the stream is charged outside its lease');
  await gateway.ledgerSettled(user);
  const { credits } = await gateway.balanceNano(user);
  t.ok(credits < 0n, `the balance went below zero (${credits} nano)`);

  const check = await ledgerCheck('--user', user);
  t.equal(check.code, 1, 'ledger check fails');
  t.match(check.stdout, /balance is below zero in Redis/);
  t.match(check.stdout, /charged outside a lease/);
  const result = await checkLedger(gateway.sql, gateway.redis, keys, { userId: user, attempts: 1 });
  t.same(result.differences.map((d) => d.kind).sort(), ['negative_balance', 'outside_lease']);
});
