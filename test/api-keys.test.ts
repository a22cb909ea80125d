// API key management (JWT only): create, validation (422), masked list, revoke (immediate, clears the
// rate-limit window), plus the billing endpoints' credentials and transaction pagination.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, forgeJwt, mintToken, rawRequest, sleep } from './helpers/http-tools.js';

const KEY_FORMAT = /^sk-gw-[A-Za-z0-9]{12}-[A-Za-z0-9]{48}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const MASKED_FIELDS = ['id', 'name', 'key_prefix', 'full_key', 'ip_whitelist', 'rate_limit_rpm', 'rate_limit_tph', 'rate_limit_tpd', 'is_provisioning',
  'disabled', 'created_by', 'created_at', 'credit_limit', 'credit_reset_interval', 'credit_used', 'credit_period_start', 'expires_at'];

let gateway: Gateway;
// Two HTTP threads: a revoked key must stop working on every thread at once, not only where it was deleted.
t.before(async () => { gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

const KEYS = '/api/v1/api-keys';
const auth = (credential: string) => ({ authorization: `Bearer ${credential}` });
const createKey = (credential: string, body: unknown) => postJson(`${gateway.url}${KEYS}`, credential, body);
async function get(path: string, credential?: string): Promise<{ status: number; body: any }> {
  const response = await rawRequest(`${gateway.url}${path}`, { headers: credential === undefined ? {} : auth(credential) });
  return { status: response.status, body: response.body };
}
const del = (path: string, credential: string) => rawRequest(`${gateway.url}${path}`, { method: 'DELETE', headers: auth(credential) });
/** A chat call on a fresh connection (so calls spread over both threads). */
const chatWith = (key: string, text = 'hi [[mock chunks=1]]') => rawRequest(`${gateway.url}/v1/chat/completions`, {
  method: 'POST', headers: { ...auth(key), 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: text }] }),
});

t.test('POST /api/v1/api-keys with a JWT returns 201 {id, name, key, created_at} in the spec key format', async (t) => {
  const token = await gateway.token('creator');
  const startedAt = Date.now();
  const response = await createKey(token, { name: 'my first key' });
  t.equal(response.status, 201);
  t.same(Object.keys(response.body).sort(), ['created_at', 'id', 'key', 'name'], 'exactly the create-response fields');
  t.match(response.body.id, UUID, 'id is a UUID');
  t.equal(response.body.name, 'my first key');
  t.match(response.body.key, KEY_FORMAT, 'key is sk-gw-<12 alnum>-<48 alnum>');
  t.match(response.body.created_at, ISO_UTC, 'created_at is ISO 8601 UTC');
  t.ok(Math.abs(Date.parse(response.body.created_at) - startedAt) < 10_000, 'created_at is now');
  const second = await createKey(token, { name: 'another' });
  t.not(second.body.key, response.body.key, 'every key is new');
  t.not(second.body.key.split('-')[2], response.body.key.split('-')[2], 'public ids differ');
});

t.test('key management refuses anything but a valid dashboard JWT', async (t) => {
  const { token, key } = await fastUser(gateway, 'jwt-checks', '1');
  assertEnvelope(t, await createKey(key, { name: 'with an api key' }), 401, undefined, 'POST with an API key');
  assertEnvelope(t, await get(KEYS, key), 401, undefined, 'GET with an API key');
  const ownId = (await get(KEYS, token)).body[0].id as string;
  assertEnvelope(t, await del(`${KEYS}/${ownId}`, key), 401, undefined, 'DELETE with an API key');
  t.equal((await chatWith(key)).status, 200, 'the key was not revoked by that attempt');
  assertEnvelope(t, await get(KEYS), 401, undefined, 'GET without Authorization');
  assertEnvelope(t, await rawRequest(`${gateway.url}${KEYS}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"x"}' }), 401, undefined, 'POST without Authorization');

  const now = Math.floor(Date.now() / 1000);
  const foreign = forgeJwt('some-other-secret-that-is-long-enough-123', { sub: 'jwt-checks', exp: now + 3600, iat: now });
  assertEnvelope(t, await createKey(foreign, { name: 'forged' }), 401, undefined, 'JWT signed with another secret');
  assertEnvelope(t, await get(KEYS, foreign), 401, undefined, 'GET with a forged JWT');
  const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ sub: 'jwt-checks', exp: now + 3600 })).toString('base64url');
  assertEnvelope(t, await createKey(`${header}.${payload}.`, { name: 'unsigned' }), 401, undefined, 'alg none');
  assertEnvelope(t, await createKey('not.a.jwt', { name: 'garbage' }), 401, undefined, 'garbage token');

  assertEnvelope(t, await createKey(mintToken('jwt-checks', -60), { name: 'expired' }), 401, undefined, 'a JWT that expired a minute ago');
  const shortLived = await gateway.token('jwt-checks', '1s');
  await sleep(2100);
  assertEnvelope(t, await createKey(shortLived, { name: 'too late' }), 401, undefined, 'expired JWT');
  assertEnvelope(t, await get(KEYS, shortLived), 401, undefined, 'GET with an expired JWT');
  const names = (await get(KEYS, token)).body.map((record: { name: string }) => record.name);
  t.same(names, ['test'], 'none of the refused requests created a key');
});

t.test('create-body validation is 422 naming the field', async (t) => {
  const token = mintToken('validator');
  const ips = (n: number) => Array.from({ length: n }, (_, i) => `10.0.${i}.0/24`);
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['empty name', { name: '' }, /^name$/],
    ['blank name', { name: '   ' }, /^name$/],
    ['11 ip_whitelist entries', { name: 'k', ip_whitelist: ips(11) }, /^ip_whitelist$/],
    ['a hostname in ip_whitelist', { name: 'k', ip_whitelist: ['example.com'] }, /^ip_whitelist/],
    ['an IPv6 address in ip_whitelist', { name: 'k', ip_whitelist: ['::1'] }, /^ip_whitelist/],
    ['an out-of-range octet', { name: 'k', ip_whitelist: ['10.0.0.1', '256.1.1.1'] }, /^ip_whitelist/],
    ['a /33 prefix', { name: 'k', ip_whitelist: ['10.0.0.0/33'] }, /^ip_whitelist/],
    ['negative rate_limit_rpm', { name: 'k', rate_limit_rpm: -1 }, /^rate_limit_rpm$/],
    ['negative rate_limit_tph', { name: 'k', rate_limit_tph: -5 }, /^rate_limit_tph$/],
    ['negative rate_limit_tpd', { name: 'k', rate_limit_tpd: -5 }, /^rate_limit_tpd$/],
  ];
  for (const [label, body, param] of cases) {
    const response = await createKey(token, body);
    assertEnvelope(t, response, 422, undefined, label);
    t.match(response.body?.error?.param, param, `${label}: param names the field`);
  }
  t.same((await get(KEYS, token)).body, [], 'no key was created by an invalid body');
  const ten = await createKey(token, { name: 'ten ips', ip_whitelist: ips(10), rate_limit_rpm: 0 });
  t.equal(ten.status, 201, 'exactly 10 entries (and a zero limit) are accepted');
});

t.test('GET lists the caller\'s masked records, newest first, with every field of the spec', async (t) => {
  const alice = await fastUser(gateway, 'lister-alice', '0'); // key 'test'
  const bob = await fastUser(gateway, 'lister-bob', '0');
  const plain = await createKey(alice.token, { name: 'plain' });
  const limited = await createKey(alice.token, {
    name: 'limited', ip_whitelist: ['203.0.113.7', '10.0.0.0/8'], rate_limit_rpm: 100, rate_limit_tph: 50_000, rate_limit_tpd: 1_000_000,
    credit_limit: 5, credit_reset_interval: 'daily', expires_at: '2099-01-01T00:00:00Z',
  });
  t.equal(limited.status, 201);

  const list = await get(KEYS, alice.token);
  t.equal(list.status, 200);
  t.ok(Array.isArray(list.body), 'a JSON array');
  t.same(list.body.map((r: { name: string }) => r.name), ['limited', 'plain', 'test'], 'newest first');
  t.same(list.body.map((r: { full_key: string }) => r.full_key), [limited.body.key, plain.body.key, alice.key], 'full_key is the created key');
  t.notOk(list.body.some((r: { full_key: string }) => r.full_key === bob.key), "another user's key is not listed");
  const created = Date.parse(list.body[2].created_at);
  for (const record of list.body as Record<string, any>[]) {
    for (const field of MASKED_FIELDS) t.ok(field in record, `${record.name}: field ${field} present`);
    t.equal(record.key_prefix, `${record.full_key.slice(0, 12)}...${record.full_key.slice(-4)}`, `${record.name}: key_prefix is first 12 + ... + last 4`);
    t.not(record.key_prefix, record.full_key, 'key_prefix is masked');
    t.notOk(record.key_prefix.includes(record.full_key.split('-')[3]), 'key_prefix does not contain the secret');
    t.match(record.id, UUID);
    t.match(record.created_at, ISO_UTC);
    t.ok(Date.parse(record.created_at) >= created, 'created_at is consistent');
    t.equal(record.is_provisioning, false);
    t.equal(record.disabled, false);
    t.equal(record.created_by, null);
    t.type(record.credit_used, 'number');
  }
  const [lim, pl] = list.body as Record<string, any>[];
  t.same(lim!.ip_whitelist, ['203.0.113.7', '10.0.0.0/8']);
  t.equal(lim!.rate_limit_rpm, 100);
  t.equal(lim!.rate_limit_tph, 50_000);
  t.equal(lim!.rate_limit_tpd, 1_000_000);
  t.equal(lim!.credit_limit, 5);
  t.equal(lim!.credit_reset_interval, 'daily');
  t.equal(lim!.credit_used, 0);
  t.match(lim!.credit_period_start, ISO_UTC, 'a limited key has a period start');
  t.equal(Date.parse(lim!.expires_at), Date.parse('2099-01-01T00:00:00Z'));
  t.same(pl!.ip_whitelist, [], 'no restriction is an empty list');
  t.equal(pl!.rate_limit_rpm, null);
  t.equal(pl!.rate_limit_tph, null);
  t.equal(pl!.rate_limit_tpd, null);
  t.equal(pl!.credit_limit, null);
  t.equal(pl!.credit_reset_interval, 'none');
  t.equal(pl!.credit_period_start, null, 'no limit, no period start');
  t.equal(pl!.expires_at, null);

  const bobs = await get(KEYS, bob.token);
  t.same(bobs.body.map((r: { full_key: string }) => r.full_key), [bob.key], 'bob sees only his own key');
});

t.test('DELETE: another user\'s key is 404 and keeps working; own key is 204, then 401 at once everywhere', async (t) => {
  const owner = await fastUser(gateway, 'revoke-owner', '2');
  const other = await fastUser(gateway, 'revoke-other', '1');
  const ownerKeys = (await get(KEYS, owner.token)).body as { id: string; full_key: string }[];
  const otherId = ((await get(KEYS, other.token)).body as { id: string }[])[0]!.id;
  const keyId = ownerKeys[0]!.id;
  t.equal(ownerKeys[0]!.full_key, owner.key);

  const stolen = await del(`${KEYS}/${otherId}`, owner.token);
  assertEnvelope(t, stolen, 404, undefined, "another user's key id");
  t.equal((await chatWith(other.key)).status, 200, "the other user's key still works");
  t.equal((await get(KEYS, other.token)).body.length, 1, "the other user's key is still listed");
  assertEnvelope(t, await del(`${KEYS}/not-a-uuid`, owner.token), 404, undefined, 'a non-UUID id');
  assertEnvelope(t, await del(`${KEYS}/%E0%A4%A`, owner.token), 404, undefined, 'a malformed percent-escape is a 404, not a crash');
  t.equal((await fetch(`${gateway.url}/healthz`)).status, 200, 'still serving');
  assertEnvelope(t, await del(`${KEYS}/00000000-0000-4000-8000-000000000000`, owner.token), 404, undefined, 'an unknown UUID');

  // Use the key on many fresh connections so both threads have it cached, and fill its rate window.
  const warm = await Promise.all(Array.from({ length: 8 }, () => chatWith(owner.key)));
  t.same(warm.map((r) => r.status), Array(8).fill(200), 'the key works before revocation');
  const windowKey = `${gateway.prefix}{u:revoke-owner}:rl:${keyId}`;
  const weightsKey = `${gateway.prefix}{u:revoke-owner}:rlw:${keyId}`;
  t.ok(await gateway.redis.exists(windowKey), 'the key has a rate-limit window in Redis');
  t.ok(await gateway.redis.exists(weightsKey), 'and its weights');

  const revoked = await del(`${KEYS}/${keyId}`, owner.token);
  t.equal(revoked.status, 204);
  t.equal(revoked.text, '', '204 has no body');
  const after = await Promise.all(Array.from({ length: 8 }, () => chatWith(owner.key)));
  t.same(after.map((r) => r.status), Array(8).fill(401), 'the revoked key is refused at once on every thread');
  for (const response of after) t.match(response.body?.msg, /not permitted/i);
  t.equal(await gateway.redis.exists(windowKey, weightsKey), 0, 'the rate-limit window of the deleted key is cleared, weights too');

  const list = (await get(KEYS, owner.token)).body as { id: string }[];
  t.notOk(list.some((r) => r.id === keyId), 'the list no longer shows it');
  assertEnvelope(t, await del(`${KEYS}/${keyId}`, owner.token), 404, undefined, 'deleting it again');
  assertEnvelope(t, await get('/api/v1/billing/balance', owner.key), 401, undefined, 'billing refuses the revoked key too');
});

t.test('billing: balance takes a JWT or any key, transactions a JWT or a management key; transactions paginate', async (t) => {
  const user = 'pager';
  const { token, key } = await fastUser(gateway, user, '1');
  await gateway.topup(user, '2');
  await gateway.topup(user, '3');

  const byJwt = await get('/api/v1/billing/balance', token);
  const byKey = await get('/api/v1/billing/balance', key);
  t.equal(byJwt.status, 200);
  t.equal(byKey.status, 200);
  t.same(byJwt.body, { credits: 6, held: 0, available: 6, currency: 'USD' });
  t.same(byKey.body, byJwt.body, 'same balance by API key');
  assertEnvelope(t, await get('/api/v1/billing/balance'), 401, undefined, 'balance without credentials');

  const all = await get('/api/v1/billing/transactions', token);
  t.equal(all.status, 200);
  t.same(Object.keys(all.body).sort(), ['data', 'page', 'per_page', 'total'], 'the envelope');
  t.equal(all.body.total, 3);
  t.equal(all.body.page, 1);
  t.equal(all.body.per_page, 20);
  t.same(all.body.data.map((row: { credits: number }) => row.credits), [3, 2, 1], 'newest first');
  for (const row of all.body.data as Record<string, unknown>[]) {
    t.same(Object.keys(row).sort(), ['amount', 'created_at', 'credits', 'id', 'payment_method', 'status'], 'transaction fields');
    t.equal(row.payment_method, 'test-processor');
    t.equal(row.status, 'completed');
    t.equal(row.amount, row.credits);
    t.match(row.created_at as string, ISO_UTC);
  }
  const management = await gateway.createKey(token, { name: 'automation', is_provisioning: true });
  const allByKey = await get('/api/v1/billing/transactions', management);
  t.equal(allByKey.status, 200);
  t.same(allByKey.body, all.body, 'same transactions by management key');
  // Transactions are the whole account's: a regular key reads its balance only (docs/api.md "Credentials and roles").
  assertEnvelope(t, await get('/api/v1/billing/transactions', key), 401, 'credential_not_allowed', 'transactions refuse a regular key');

  const second = await get('/api/v1/billing/transactions?per_page=1&page=2', token);
  t.equal(second.status, 200);
  t.equal(second.body.total, 3);
  t.equal(second.body.page, 2);
  t.equal(second.body.per_page, 1);
  t.equal(second.body.data.length, 1);
  t.equal(second.body.data[0].credits, 2, 'page 2 of 1 per page is the second newest');
  t.equal(second.body.data[0].id, all.body.data[1].id);
  const beyond = await get('/api/v1/billing/transactions?per_page=2&page=3', token);
  t.equal(beyond.status, 200);
  t.same(beyond.body.data, [], 'a page past the end is empty');
  t.equal(beyond.body.total, 3);

  const bad: [string, string][] = [
    ['page=0', 'page'], ['per_page=0', 'per_page'], ['per_page=1000', 'per_page'], ['page=abc', 'page'],
    ['page=-1', 'page'], ['per_page=1.5', 'per_page'], ['page=1&per_page=abc', 'per_page'],
  ];
  for (const [query, param] of bad) {
    const response = await get(`/api/v1/billing/transactions?${query}`, token);
    assertEnvelope(t, response, 400, undefined, query);
    t.equal(response.body?.error?.param, param, `${query}: param names ${param}`);
  }
});
