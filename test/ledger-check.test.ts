// `gateway ledger check` against a real gateway: agrees after real traffic (and during it), counts
// charges still pending in the ledger stream, and names every kind of difference with exit code 1.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser, newestKeyId, updateKey } from './helpers/http-tools.js';
import { usdString } from './helpers/billing-checks.js';
import { checkLedger } from '../src/ledger/check.js';
import { RedisKeys } from '../src/admission/keys.js';
import type { LedgerEvent } from '../src/ledger/event.js';

let gateway: Gateway;
t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10' } });
});
t.teardown(() => gateway.close());

const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };
const bal = (user: string) => `${gateway.prefix}{u:${user}}:bal`;

/** Runs `gateway ledger check ...`; `gateway.cli` throws on a non-zero exit, so the code comes from the error. */
async function ledgerCheck(...args: string[]): Promise<{ code: number; stdout: string; lines: string[] }> {
  let code = 0;
  let stdout: string;
  try {
    stdout = await gateway.cli('ledger', 'check', ...args);
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    code = failed.code;
    stdout = String(failed.stdout ?? '').trim();
    if (code !== 1) throw new Error(`ledger check exited ${code}: ${failed.stderr}`);
  }
  return { code, stdout, lines: stdout.split('\n').filter((line) => line !== '') };
}

async function chat(key: string, count: number): Promise<void> {
  const responses = await Promise.all(Array.from({ length: count }, () => postJson(`${gateway.v1}/chat/completions`, key, CHAT)));
  for (const response of responses) if (response.status !== 200) throw new Error(`chat: ${response.status} ${JSON.stringify(response.body)}`);
}

let alice: { token: string; key: string };
let bob: { token: string; key: string };

t.test('after real calls the ledger checks out', async (t) => {
  alice = await fastUser(gateway, 'alice', '1');
  bob = await fastUser(gateway, 'bob', '2');
  await chat(alice.key, 3);
  await chat(bob.key, 2);
  await gateway.ledgerSettled('alice');
  await gateway.ledgerSettled('bob');
  const result = await ledgerCheck();
  t.equal(result.code, 0);
  t.same(result.lines, ['ledger check: ok (2 users, 0 keys with a credit limit)']);
  const json = await ledgerCheck('--json');
  t.same(json.lines.map((line) => JSON.parse(line)), [{ kind: 'ok', users: 2, limited_keys: 0 }]);
});

t.test('a charge still pending in the ledger stream is counted', async (t) => {
  // What settle.lua does for a call the writer has not drained yet: credits down, an entry on the stream.
  const keyId = await newestKeyId(gateway.url, alice.token);
  const id = randomUUID();
  const event: LedgerEvent = {
    keyId, model: 'openai/gpt-4o-mini', endpoint: '/v1/chat/completions', stream: false, status: 200, errorCode: null,
    promptTokens: 1, completionTokens: 1, cachedTokens: 0, reasoningTokens: 0, reservedNano: '5000', startedAtMs: Date.now(), durationMs: 1, ttfbMs: 1, clientAborted: false,
  };
  await gateway.redis.multi()
    .hincrby(bal('alice'), 'credits', -750)
    .xadd(`${gateway.prefix}{u:alice}:ledger`, '*', 'r', id, 'c', '750', 'e', JSON.stringify(event))
    .exec();
  t.equal((await ledgerCheck()).code, 0, 'pending: Redis credits = Postgres sum - pending charges');
  // The writer drains it (the dirty set tells it where): still consistent, now from Postgres alone.
  await gateway.redis.sadd(new RedisKeys(gateway.prefix).ledgerDirtyOf('alice'), 'alice');
  await gateway.ledgerSettled('alice');
  const [row] = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where id = ${id}`;
  t.equal(row?.credits_nano, -750n, 'the writer committed it');
  t.equal((await ledgerCheck()).code, 0, 'drained: still consistent');
});

t.test('checks out while calls are in flight', async (t) => {
  const keys = new RedisKeys(gateway.prefix);
  const traffic = chat(alice.key, 40);
  const results = [];
  for (let i = 0; i < 5; i++) {
    results.push(await checkLedger(gateway.sql, gateway.redis, keys, { userId: 'alice', retryDelayMs: 100 }));
  }
  await traffic;
  for (const result of results) t.same(result.differences, [], 'no difference during traffic');
  await gateway.ledgerSettled('alice');
  t.same((await checkLedger(gateway.sql, gateway.redis, keys)).differences, [], 'none after it');
});

t.test('Redis credits that differ from the ledger are reported with both figures', async (t) => {
  const { credits } = await gateway.balanceNano('alice');
  const sum = await gateway.ledgerSum('alice');
  t.equal(credits, sum, 'settled: Redis credits equal the Postgres sum');
  await gateway.redis.hincrby(bal('alice'), 'credits', 1234);
  const result = await ledgerCheck();
  t.equal(result.code, 1, 'exit code 1');
  t.equal(result.lines.length, 1, 'one line per difference');
  const money = (nano: bigint) => `${usdString(nano)} USD (${nano} nano)`;
  t.equal(result.lines[0], `ledger check: user alice: credits: Redis has ${money(credits + 1234n)}, expected ${money(sum)} ` +
    `(Postgres ${money(sum)} minus 0 USD (0 nano) pending in the ledger stream); off by 0.000001234 USD (1234 nano)`,
  'names the user, what differs, and the figures in USD and nano');

  const json = await ledgerCheck('--json');
  t.equal(json.code, 1);
  t.same(json.lines.map((l) => JSON.parse(l)), [{
    kind: 'credits', user_id: 'alice', expected_nano: String(sum), actual_nano: String(credits + 1234n), postgres_nano: String(sum), pending_nano: '0',
  }]);

  const onlyBob = await ledgerCheck('--user', 'bob');
  t.equal(onlyBob.code, 0, '--user checks only that user');
  t.same(onlyBob.lines, ['ledger check: ok (1 user, 0 keys with a credit limit)']);

  await gateway.redis.hincrby(bal('alice'), 'credits', -1234);
  t.equal((await ledgerCheck()).code, 0, 'restored: ok again');
});

t.test('held that differs from the open reservations, or is negative, is reported', async (t) => {
  await gateway.redis.hincrby(bal('bob'), 'held', 777);
  const result = await ledgerCheck();
  t.equal(result.code, 1);
  t.same(result.lines, ['ledger check: user bob: held: Redis has 0.000000777 USD (777 nano), expected 0 USD (0 nano) (sum of 0 open reservations); off by 0.000000777 USD (777 nano)']);
  await gateway.redis.hincrby(bal('bob'), 'held', -777);

  // A reservation and held agree, but both are negative.
  const keys = new RedisKeys(gateway.prefix);
  await gateway.redis.multi().hset(keys.reservations('bob'), 'bogus-lease', '-5').hincrby(bal('bob'), 'held', -5).exec();
  const negative = await checkLedger(gateway.sql, gateway.redis, keys, { userId: 'bob', attempts: 1 });
  t.same(negative.differences.map((d) => [d.kind, d.kind === 'negative_held' ? d.what : '']), [
    ['negative_held', 'open reservation bogus-lease'], ['negative_held', 'held'],
  ]);
  await gateway.redis.multi().hdel(keys.reservations('bob'), 'bogus-lease').hincrby(bal('bob'), 'held', 5).exec();
  t.equal((await ledgerCheck()).code, 0, 'restored: ok again');
});

t.test("a key's period spend above its credit limit is reported", async (t) => {
  const keyId = await newestKeyId(gateway.url, bob.token);
  const record = await updateKey(gateway.url, bob.token, keyId, { credit_limit: 0.000001 });
  t.equal(record.credit_limit, 0.000001, 'limit of 1000 nano-USD set');
  t.same((await ledgerCheck()).lines, ['ledger check: ok (2 users, 1 key with a credit limit)'], 'within its limit');

  // A usage charge of 5000 nano-USD in this period, in Postgres and (as the writer would leave it) in Redis.
  const id = randomUUID();
  await gateway.sql`insert into transactions (id, user_id, credits_nano, payment_method, api_key_id, model)
                    values (${id}, 'bob', -5000, 'usage', ${keyId}, 'openai/gpt-4o-mini')`;
  await gateway.redis.hincrby(bal('bob'), 'credits', -5000);
  const result = await ledgerCheck();
  t.equal(result.code, 1);
  t.equal(result.lines.length, 1, 'only the key spend differs');
  t.match(result.lines[0] ?? '', new RegExp(`^ledger check: user bob: key ${keyId}: spend since \\S+Z is 0\\.000005 USD \\(5000 nano\\), ` +
    'above its credit limit 0\\.000001 USD \\(1000 nano\\) by 0\\.000004 USD \\(4000 nano\\)$'));

  await gateway.sql`delete from transactions where id = ${id}`;
  await gateway.redis.hincrby(bal('bob'), 'credits', 5000);
  t.equal((await ledgerCheck()).code, 0, 'restored: ok again');
});

t.test('a deposit committed in Postgres but not applied in Redis is reported', async (t) => {
  const { credits } = await gateway.balanceNano('bob');
  const id = randomUUID();
  await gateway.sql`insert into transactions (id, user_id, credits_nano, payment_method) values (${id}, 'bob', 2500000000, 'test-processor')`;
  const result = await ledgerCheck();
  t.equal(result.code, 1);
  t.equal(result.lines.length, 2, 'credits and deposits both differ');
  t.ok(result.lines.some((line) => line.startsWith(`ledger check: user bob: credits: Redis has ${usdString(credits)} USD (${credits} nano), expected ${usdString(credits + 2_500_000_000n)} USD`) &&
    line.endsWith('off by -2.5 USD (-2500000000 nano)')), 'credits short by the deposit');
  t.ok(result.lines.some((line) => line.startsWith('ledger check: user bob: deposits: Redis has 2 USD (2000000000 nano), expected 4.5 USD (4500000000 nano)') &&
    line.endsWith('a deposit committed in Postgres is not applied in Redis')), 'deposits name the missing deposit');

  // Applying it (what the top-up path does after its commit) brings Redis in line.
  await gateway.cli('topup', '--user', 'bob', '--amount', '0.5', '--method', 'test-processor');
  t.equal((await gateway.balanceNano('bob')).credits, credits + 3_000_000_000n, 'the next top-up applies both by total');
  t.equal((await ledgerCheck()).code, 0, 'ok again');
});

t.test('a user whose balance is not in Redis is fine (it loads from Postgres on first use)', async (t) => {
  await gateway.sql`insert into accounts (id) values ('carol')`;
  await gateway.sql`insert into transactions (id, user_id, credits_nano, payment_method) values (${randomUUID()}, 'carol', 1000, 'test-processor')`;
  t.same((await ledgerCheck()).lines, ['ledger check: ok (3 users, 1 key with a credit limit)']);
});
