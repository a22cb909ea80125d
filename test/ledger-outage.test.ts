// A Postgres outage loses no charge: the gateway reaches Postgres through a TCP proxy the test cuts.
// Calls keep working (admission and settlement live in Redis), their ledger events wait in the users'
// streams, and once Postgres is back the writer commits each exactly once and the ledger adds up.
import t from 'tap';
import { startGateway, postJson, postgresAddress, type Gateway } from './helpers/harness.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { TEST_JWT_SECRET, fastUser } from './helpers/http-tools.js';
import { eventually, leasesClosed } from './helpers/billing-checks.js';
import { checkLedger } from '../src/ledger/check.js';
import { RedisKeys } from '../src/admission/keys.js';

let proxy: TcpProxy;
let gateway: Gateway;
t.before(async () => {
  proxy = await TcpProxy.start(postgresAddress());
  gateway = await startGateway({ postgresVia: { host: '127.0.0.1', port: proxy.port }, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10' } });
});
t.teardown(async () => {
  proxy.restore();
  await gateway.close();
  await proxy.close();
});

const USER = 'outage';

/** `count` chat calls (every other one streaming); returns each call's x-request-id. */
async function calls(key: string, count: number): Promise<string[]> {
  const responses = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const stream = i % 2 === 1;
    const response = await postJson(`${gateway.v1}/chat/completions`, key, {
      model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16, ...(stream ? { stream: true } : {}),
    });
    if (response.status !== 200) throw new Error(`call ${i}: ${response.status} ${JSON.stringify(response.body)}`);
    if (stream && !String(response.body).includes('data: [DONE]')) throw new Error(`call ${i}: stream did not finish`);
    return response.headers.get('x-request-id') ?? '';
  }));
  return responses;
}

async function readyz(): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: await response.json() };
}

t.test('a Postgres outage delays the ledger and loses no charge', async (t) => {
  const { key } = await fastUser(gateway, USER, '5');
  const keys = new RedisKeys(gateway.prefix);
  const before = await calls(key, 6);
  await gateway.ledgerSettled(USER);
  t.equal(proxy.connections > 0, true, 'the gateway reaches Postgres through the proxy');

  proxy.cut();
  const notReady = await eventually('readyz to report Postgres down', async () => {
    const answer = await readyz();
    return answer.status === 503 ? answer : undefined;
  });
  t.equal(notReady.body.status, 'not ready', '/readyz answers 503 "not ready" during the outage (within its 2 s check timeout)');
  t.equal(notReady.body.checks.redis, 'ok', 'Redis is fine');
  t.not(notReady.body.checks.postgres, 'ok', `the Postgres check carries the error (${notReady.body.checks.postgres})`);

  const during = await calls(key, 12);
  t.equal(during.length, 12, 'every call during the outage succeeded');
  const view = await leasesClosed(gateway, USER);
  // Let the writer try (and fail) at least once, so "nothing in Postgres" is not just "not yet tried".
  await eventually('a failed ledger drain', () => (/ledger drain failed/.test(gateway.output) ? true : undefined), 10_000);

  const stream = await gateway.redis.xrange(keys.ledger(USER), '-', '+');
  const streamIds = stream.map(([, fields]) => fields[fields.indexOf('r') + 1]);
  t.same([...streamIds].sort(), [...during].sort(), 'the stream holds exactly the outage calls');
  const pending = stream.reduce((sum, [, fields]) => sum + BigInt(fields[fields.indexOf('c') + 1]!), 0n);
  t.ok(pending > 0n, 'and their charges');
  const [{ n: inPostgres } = { n: -1n }] = await gateway.sql<{ n: bigint }[]>`select count(*)::bigint as n from transactions where id = any(${gateway.sql.array(during)}::uuid[])`;
  t.equal(inPostgres, 0n, 'no charge of the outage is in Postgres yet');
  t.equal(view.credits, (await gateway.ledgerSum(USER)) - pending, 'Redis credits = Postgres sum - pending charges');
  t.same((await checkLedger(gateway.sql, gateway.redis, keys, { userId: USER })).differences, [], 'the ledger check agrees during the outage');
  t.ok(proxy.refused > 0, 'the gateway kept trying Postgres');

  // The driver reconnects with a back-off that grows with each refused attempt (up to 20 s).
  proxy.restore();
  await gateway.ledgerSettled(USER, 45_000);
  await eventually('readyz to be ready again', async () => ((await readyz()).status === 200 ? true : undefined), 45_000);

  const { credits, held } = await gateway.balanceNano(USER);
  t.equal(held, 0n, 'nothing held');
  t.equal(await gateway.ledgerSum(USER), credits, 'the Postgres ledger sum equals the Redis credits exactly');
  const all = [...before, ...during];
  t.equal(new Set(all).size, all.length, 'every call has its own id');
  const rows = await gateway.sql<{ id: string; n: bigint }[]>`
    select id, count(*)::bigint as n from transactions where user_id = ${USER} and payment_method = 'usage' group by id`;
  t.same(new Map(rows.map((row) => [row.id, row.n])), new Map(all.map((id) => [id, 1n])), 'every call has exactly one usage transaction, and nothing else is charged');
  const logs = await gateway.sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs where id = any(${gateway.sql.array(all)}::uuid[])`;
  t.equal(logs[0]!.n, BigInt(all.length), 'and one request log');
  t.same((await checkLedger(gateway.sql, gateway.redis, keys)).differences, [], 'the ledger check agrees after it');
  const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
  t.match(metrics, /^gateway_ledger_write_errors_total [1-9]\d*$/m, 'the failed drains are counted');
});
