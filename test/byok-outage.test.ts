// BYOK rows through a Postgres outage (a TCP proxy the test cuts): the rows a thread read last stay
// in force once their cache entry is due, so calls go on; a user whose rows were never read gets a
// retryable 503, never a 500 and never a wait without end.
import t from 'tap';
import { postgresAddress, startGateway, type Gateway } from './helpers/harness.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { TEST_JWT_SECRET, mintToken, rawRequest, sleep } from './helpers/http-tools.js';
import { connect, type Sql } from '../src/store/db.js';
import { ApiError } from '../src/http/errors.js';
import { ByokCredentials } from '../src/providers/byok-credentials.js';
import { SealedBox } from '../src/auth/sealed-box.js';
import { loadConfig } from '../src/config.js';
import type { ServiceAccountTokens } from '../src/providers/cloud/google-token.js';

const CACHE_MS = 100;
let gateway: Gateway;
let proxy: TcpProxy;
let sql: Sql;
t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } });
  proxy = await TcpProxy.start(postgresAddress());
  sql = connect(`postgres://postgres@127.0.0.1:${proxy.port}/${gateway.database}`, 2);
});
t.teardown(async () => {
  proxy.restore();
  await sql.end({ timeout: 1 });
  await proxy.close();
  await gateway.close();
});

t.test('rows read before the outage stay in force; a user never read gets 503 byok_lookup_unavailable', async (t) => {
  const token = mintToken('byok-outage-user');
  const created = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'own', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789WXYZ' }),
  });
  t.equal(created.status, 201, 'a row to read');
  // Vertex rows need service-account tokens; these users have none.
  const credentials = new ByokCredentials(sql, new SealedBox(loadConfig(gateway.env).keySecret), { openai: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: '' } }, {} as ServiceAccountTokens, { cacheMs: CACHE_MS });
  const before = await credentials.forCall('byok-outage-user', 'any-key', 'openai');
  t.equal(before.candidates.length, 1, 'one row while Postgres answers');
  t.equal((await credentials.forCall('byok-outage-none', 'any-key', 'openai')).candidates.length, 0, 'none for a user without rows');

  await sleep(CACHE_MS * 2);
  proxy.cut();
  const started = Date.now();
  const during = await credentials.forCall('byok-outage-user', 'any-key', 'openai');
  t.same(during.candidates.map((candidate) => candidate.label), ['own'], 'the rows read last, once their entry is due and Postgres is away');
  t.equal((await credentials.forCall('byok-outage-none', 'any-key', 'openai')).candidates.length, 0, 'and no rows for the user who had none');
  const unknown = await Promise.resolve(credentials.forCall('byok-outage-stranger', 'any-key', 'openai')).then(() => undefined, (error: unknown) => error);
  t.ok(unknown instanceof ApiError, 'a user never read here is refused');
  t.match(unknown, { status: 503, code: 'byok_lookup_unavailable', headers: { 'retry-after': '1' } });
  t.ok(Date.now() - started < 10_000, `within the lookup timeout, not at Postgres's pace (${Date.now() - started} ms)`);

  proxy.restore();
  await sleep(CACHE_MS * 2);
  let after;
  for (let i = 0; i < 50 && !after; i++) {
    after = await Promise.resolve(credentials.forCall('byok-outage-stranger', 'any-key', 'openai')).catch(() => undefined);
    if (!after) await sleep(200);
  }
  t.equal(after?.candidates.length, 0, 'read again once Postgres is back');
});
