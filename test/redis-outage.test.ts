// A Redis outage: the gateway reaches Redis through a TCP proxy the test cuts. A call that needs a
// new admission is refused at once with 503 (nothing reserved, no hang); a stream admitted before the
// cut finishes and its settlement waits and is resent until Redis is back; afterwards every call
// served is charged exactly once and the ledger adds up. Leases are off (one admit.lua per call), so
// every call during the outage needs Redis.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { TEST_JWT_SECRET, fastUser } from './helpers/http-tools.js';
import { eventually, leasesClosed } from './helpers/billing-checks.js';
import { checkLedger } from '../src/ledger/check.js';
import { RedisKeys } from '../src/admission/keys.js';

const REDIS = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
let proxy: TcpProxy;
let gateway: Gateway;
t.before(async () => {
  proxy = await TcpProxy.start({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10', ADMISSION_LEASE_CALLS: '1', REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
});
t.teardown(async () => {
  proxy.restore();
  await gateway.close();
  await proxy.close();
});

const USER = 'redis-outage';
const chat = (key: string, content: string, extra: Record<string, unknown> = {}) =>
  postJson(`${gateway.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 16, ...extra });

t.test('a Redis outage refuses new admissions with 503 and loses no charge', async (t) => {
  const { key } = await fastUser(gateway, USER, '5');
  const keys = new RedisKeys(gateway.prefix);
  const served: string[] = [];
  for (let i = 0; i < 3; i++) {
    const response = await chat(key, 'before');
    t.equal(response.status, 200, 'before the outage');
    served.push(response.headers.get('x-request-id')!);
  }
  t.ok(proxy.connections > 0, 'the gateway reaches Redis through the proxy');
  await leasesClosed(gateway, USER);

  // A slow stream admitted before the cut: it finishes during the outage; its settlement cannot leave yet.
  const slow = chat(key, 'slow [[mock chunks=6 delay_ms=150]]', { stream: true });
  await eventually('the slow stream to be admitted', async () =>
    ((await gateway.redis.hlen(keys.reservations(USER))) > 0 ? true : undefined));
  proxy.cut();

  const refused = [];
  for (let i = 0; i < 3; i++) {
    const started = Date.now();
    const response = await chat(key, `during ${i}`);
    refused.push(response);
    t.equal(response.status, 503, `a call during the outage is refused (${JSON.stringify(response.body)})`);
    t.ok(Date.now() - started < 5_000, 'at once, not after a hang');
  }
  t.equal(refused[0]!.body.error?.code, 'admission_unavailable');
  t.equal(refused[0]!.headers.get('retry-after'), '1', 'with Retry-After');

  const finished = await slow;
  t.equal(finished.status, 200, 'the stream admitted before the cut finished');
  t.match(String(finished.body), /data: \[DONE\]/);
  served.push(finished.headers.get('x-request-id')!);
  await new Promise((resolve) => setTimeout(resolve, 500)); // its settlement is retried meanwhile

  proxy.restore();
  const after = await eventually('a call to be served again', async () => {
    const response = await chat(key, 'after');
    return response.status === 200 ? response : undefined;
  }, 15_000);
  served.push(after.headers.get('x-request-id')!);

  await leasesClosed(gateway, USER, 15_000);
  await gateway.ledgerSettled(USER, 30_000);
  const { credits, held } = await gateway.balanceNano(USER);
  t.equal(held, 0n, 'nothing held');
  t.equal(await gateway.ledgerSum(USER), credits, 'the Postgres ledger sum equals the Redis credits exactly');
  const rows = await gateway.sql<{ id: string; n: bigint }[]>`
    select id, count(*)::bigint as n from transactions where user_id = ${USER} and payment_method = 'usage' group by id`;
  t.same(new Map(rows.map((row) => [row.id, row.n])), new Map(served.map((id) => [id, 1n])), 'every served call has exactly one usage transaction; the refused ones none');
  t.same((await checkLedger(gateway.sql, gateway.redis, keys, { userId: USER })).differences, [], 'the ledger check agrees');
});
