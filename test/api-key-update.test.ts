// PUT /api/v1/api-keys/{id}: any subset of the update fields, the masked record back, 422 for every bad
// field, 404 for a key the caller does not own, 401 without a JWT, and `disabled`/`expires_at` in force
// on the next request on every thread.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest } from './helpers/http-tools.js';

const KEYS = '/api/v1/api-keys';
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

const put = async (id: string, credential: string | undefined, body: unknown): Promise<{ status: number; body: any }> => {
  const response = await rawRequest(`${gateway.url}${KEYS}/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...(credential === undefined ? {} : { authorization: `Bearer ${credential}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: response.body };
};
const listed = async (token: string, id: string) => {
  const response = await rawRequest(`${gateway.url}${KEYS}`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as any[]).find((record) => record.id === id);
};
/** A chat call on a fresh connection, so calls land on both HTTP threads. */
const chat = async (key: string) => (await rawRequest(`${gateway.url}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[mock chunks=1]]' }] }),
})).status;

async function keyOf(user: string): Promise<{ token: string; key: string; id: string }> {
  const { token, key } = await fastUser(gateway, user, '5');
  return { token, key, id: await newestKeyId(gateway.url, token) };
}

t.test('a subset of fields changes only those; the answer is the full masked record, as GET lists it', async (t) => {
  const { token, id } = await keyOf('update-subset');
  const before = await listed(token, id);
  const response = await put(id, token, { name: '  renamed  ', rate_limit_rpm: 60, ip_whitelist: ['10.0.0.0/8', '192.168.1.7'] });
  t.equal(response.status, 200);
  t.same(Object.keys(response.body).sort(), Object.keys(before).sort(), 'the masked record, every field');
  t.equal(response.body.name, 'renamed', 'name trimmed');
  t.equal(response.body.rate_limit_rpm, 60);
  t.same(response.body.ip_whitelist, ['10.0.0.0/8', '192.168.1.7']);
  for (const field of ['key_prefix', 'full_key', 'rate_limit_tph', 'rate_limit_tpd', 'disabled', 'credit_limit', 'credit_reset_interval', 'expires_at', 'created_at', 'is_provisioning']) {
    t.same(response.body[field], before[field], `${field} unchanged`);
  }
  t.same(await listed(token, id), response.body, 'GET shows the same record');

  const cleared = await put(id, token, { rate_limit_rpm: null, ip_whitelist: [] });
  t.equal(cleared.body.rate_limit_rpm, null, 'null clears a limit');
  t.same(cleared.body.ip_whitelist, [], 'an empty list lifts the restriction');
  t.equal(cleared.body.name, 'renamed', 'name kept');
  const same = await put(id, token, {});
  t.equal(same.status, 200, 'an empty body changes nothing');
  t.same(same.body, cleared.body);
});

t.test('credit limit: setting it starts a spend period, the interval can change, null removes both', async (t) => {
  const { token, id } = await keyOf('update-credit');
  const startedAt = Date.now();
  const limited = await put(id, token, { credit_limit: 2.5, credit_reset_interval: 'weekly' });
  t.equal(limited.body.credit_limit, 2.5);
  t.equal(limited.body.credit_reset_interval, 'weekly');
  t.match(limited.body.credit_period_start, ISO_UTC);
  t.ok(Date.parse(limited.body.credit_period_start) >= startedAt - 2000, 'the period starts now');
  t.equal(limited.body.credit_used, 0);
  const renamed = await put(id, token, { name: 'only the name' });
  t.equal(renamed.body.credit_period_start, limited.body.credit_period_start, 'other changes keep the period');
  const unlimited = await put(id, token, { credit_limit: null });
  t.equal(unlimited.body.credit_limit, null);
  t.equal(unlimited.body.credit_period_start, null, 'no period without a limit');
  t.equal(unlimited.body.credit_reset_interval, 'weekly', 'the interval is left as it was');
});

t.test('disabled and expires_at apply to the next inference request on every thread; re-enabling works', async (t) => {
  const { token, key, id } = await keyOf('update-disable');
  for (let i = 0; i < 4; i++) t.equal(await chat(key), 200, `works before (call ${i})`);
  t.equal((await put(id, token, { disabled: true })).body.disabled, true);
  for (let i = 0; i < 4; i++) t.equal(await chat(key), 403, `disabled: 403 at once (call ${i})`);
  t.equal((await put(id, token, { disabled: false })).body.disabled, false);
  for (let i = 0; i < 4; i++) t.equal(await chat(key), 200, `enabled again (call ${i})`);
  const past = new Date(Date.now() - 60_000).toISOString();
  t.equal((await put(id, token, { expires_at: past })).body.expires_at, past);
  for (let i = 0; i < 4; i++) t.equal(await chat(key), 403, `expired: 403 (call ${i})`);
  t.equal((await put(id, token, { expires_at: null })).body.expires_at, null, 'null removes the expiry');
  t.equal(await chat(key), 200, 'works again');
});

t.test('422 for every bad field, naming it; nothing changes', async (t) => {
  const { token, id } = await keyOf('update-invalid');
  const before = await listed(token, id);
  const cases: [string, unknown, string][] = [
    ['empty name', { name: '   ' }, 'name'],
    ['name not a string', { name: 5 }, 'name'],
    ['11 whitelist entries', { ip_whitelist: Array.from({ length: 11 }, (_, i) => `10.0.0.${i}`) }, 'ip_whitelist'],
    ['an entry that is not IPv4 or CIDR', { ip_whitelist: ['10.0.0.1', '10.0.0.0/33'] }, 'ip_whitelist[1]'],
    ['an IPv6 entry', { ip_whitelist: ['::1'] }, 'ip_whitelist[0]'],
    ['negative rpm', { rate_limit_rpm: -1 }, 'rate_limit_rpm'],
    ['fractional tph', { rate_limit_tph: 1.5 }, 'rate_limit_tph'],
    ['negative tpd', { rate_limit_tpd: -10 }, 'rate_limit_tpd'],
    ['rpm beyond its column (was a 500)', { rate_limit_rpm: 1e10 }, 'rate_limit_rpm'],
    ['tph beyond exact counting', { rate_limit_tph: 1e17 }, 'rate_limit_tph'],
    ['disabled not a boolean', { disabled: 'yes' }, 'disabled'],
    ['negative credit limit', { credit_limit: -1 }, 'credit_limit'],
    ['unknown interval', { credit_reset_interval: 'hourly' }, 'credit_reset_interval'],
    ['bad expires_at', { expires_at: 'tomorrow' }, 'expires_at'],
    ['is_provisioning is fixed at creation', { is_provisioning: true }, 'is_provisioning'],
    ['unknown field', { colour: 'red' }, 'colour'],
  ];
  for (const [label, body, param] of cases) {
    const response = await put(id, token, body);
    assertEnvelope(t, response, 422, undefined, label);
    t.equal(response.body.error?.param, param, `${label}: names ${param}`);
  }
  assertEnvelope(t, await put(id, token, '{"name":'), 400, undefined, 'malformed JSON');
  assertEnvelope(t, await put(id, token, '[1]'), 400, undefined, 'not an object');
  t.same(await listed(token, id), before, 'the key is unchanged');
});

t.test('404 for a key the caller does not own (never revealing it), a revoked key, or a malformed id; 401 without a JWT', async (t) => {
  const owner = await keyOf('update-owner');
  const other = await keyOf('update-other');
  const ownName = (await listed(owner.token, owner.id)).name;
  assertEnvelope(t, await put(owner.id, other.token, { name: 'stolen' }), 404, undefined, "another user's key");
  const missing = await put('00000000-0000-4000-8000-000000000000', other.token, { name: 'x' });
  assertEnvelope(t, missing, 404, undefined, 'no such key');
  t.equal((await listed(owner.token, owner.id)).name, ownName, "the owner's key is untouched");
  assertEnvelope(t, await put('not-a-uuid', owner.token, { name: 'x' }), 404, undefined, 'malformed id');
  assertEnvelope(t, await put(owner.id, owner.key, { name: 'x' }), 401, undefined, 'an API key instead of a JWT');
  assertEnvelope(t, await put(owner.id, undefined, { name: 'x' }), 401, undefined, 'no Authorization');
  const created = await postJson(`${gateway.url}${KEYS}`, owner.token, { name: 'to revoke' });
  await rawRequest(`${gateway.url}${KEYS}/${created.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner.token}` } });
  assertEnvelope(t, await put(created.body.id, owner.token, { name: 'back' }), 404, undefined, 'a revoked key');
});
