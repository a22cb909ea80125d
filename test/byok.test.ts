// BYOK credentials over real HTTP: create/list/update/delete with a JWT and with an API key, the
// list's order, masking (the api_key never leaves, config_json secrets are `***`, Postgres holds only
// ciphertext), every rejected input, the priority clamp, 404 without revealing, the pub/sub event,
// and the store functions the call path uses.
import t from 'tap';
import { acknowledge, connectRedis, unwrapAcknowledged } from '../src/store/redis-connect.js';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, mintToken, rawRequest, sleep } from './helpers/http-tools.js';
import { maskApiKey, maskConfig, isSecretKey, configCarriesCredential } from '../src/auth/byok-mask.js';
import { clampPriority } from '../src/http/schemas/byok.js';
import { listByok, recordByokFailure, recordByokSuccess } from '../src/store/byok.js';
import type { AnySql } from '../src/store/db.js';

const BYOK = '/api/v1/byok';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
// A base_url is resolved and must be public when it is set; the tests run offline, so public address
// literals stand in for a proxy's name (test/byok-ssrf.test.ts covers the refusals).
const PROXY_URL = 'https://1.1.1.1/v1';
const OTHER_PROXY_URL = 'https://[2606:4700:4700::1111]';
const RECORD_FIELDS = ['id', 'provider', 'label', 'api_key_prefix', 'base_url', 'config_json', 'always_use', 'disabled', 'priority', 'api_key_id',
  'last_used_at', 'last_error', 'created_at', 'updated_at'].sort();
const OPENAI_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789WXYZ';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

type Reply = { status: number; body: any; text: string };
async function call(method: string, path: string, credential?: string, body?: unknown): Promise<Reply> {
  const headers: Record<string, string> = credential === undefined ? {} : { authorization: `Bearer ${credential}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await rawRequest(`${gateway.url}${path}`, {
    method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, body: response.body, text: response.text };
}
const create = (credential: string, body: unknown) => call('POST', BYOK, credential, body);
const list = (credential: string, query = '') => call('GET', `${BYOK}${query}`, credential);
const put = (credential: string, id: string, body: unknown) => call('PUT', `${BYOK}/${id}`, credential, body);
const del = (credential: string, id: string) => call('DELETE', `${BYOK}/${id}`, credential);
async function created(credential: string, body: Record<string, unknown>): Promise<any> {
  const response = await create(credential, body);
  if (response.status !== 201) throw new Error(`create byok: ${response.status} ${response.text}`);
  return response.body;
}

t.test('pure parts: api_key prefix, secret names, config masking, the credential rule, the clamp', async (t) => {
  t.equal(maskApiKey(OPENAI_KEY), 'sk-proj...WXYZ', 'first 7, ..., last 4');
  t.equal(maskApiKey('a'.repeat(33)), 'aaaaaaa...aaaa', '33 characters: the full 11 shown (a third)');
  t.equal(maskApiKey('abcdefghijkl'), 'abc...l', '12 characters: 4 shown');
  t.equal(maskApiKey('ab'), '...', 'too short to show anything');
  for (const length of [1, 5, 9, 20, 32, 33, 100]) {
    const key = 'x'.repeat(length);
    t.ok(maskApiKey(key).replace('...', '').length <= Math.floor(length / 3), `${length}: at most a third shown`);
  }
  for (const name of ['secret', 'secretAccessKey', 'SECRETACCESSKEY', 'private_key', 'privateKey', 'api_key', 'apiKey', 'x-api-key', 'token',
    'access_token', 'password', 'credential', 'credentials', 'client_secret']) t.ok(isSecretKey(name), `${name} is secret`);
  for (const name of ['region', 'accessKeyId', 'endpoint_url', 'deployment_id', 'max_tokens', 'project_id', 'private_key_id']) t.notOk(isSecretKey(name), `${name} is not`);
  t.same(maskConfig({
    region: 'us-east-1', secretAccessKey: 'S', nested: { list: [{ token: 'T', keep: 1 }, 'plain'], Password: 'P' }, service_account: '{"private_key":"K"}', none: null, apiKey: null,
  }), {
    region: 'us-east-1', secretAccessKey: '***', nested: '***', service_account: '***', none: null, apiKey: null,
  }, 'every field outside the allow-list is masked whole');
  t.same(maskConfig({ service_account: { client_email: 'a@b', private_key: 'K' } }), { service_account: { client_email: 'a@b', private_key: '***' } },
    'a service_account object is walked');
  t.same(maskConfig({ credentials: { user: 'u', pass: 'p' } }), { credentials: '***' }, 'a secret-named object is masked whole');
  t.ok(configCarriesCredential({ service_account: { type: 'service_account' } }));
  t.ok(configCarriesCredential({ service_account: '{"type":"service_account"}' }));
  t.ok(configCarriesCredential({ private_key: 'K' }));
  t.ok(configCarriesCredential({ accessKeyId: 'A', secretAccessKey: 'S' }));
  t.notOk(configCarriesCredential({ secretAccessKey: 'S' }), 'half an access-key pair');
  t.notOk(configCarriesCredential({ service_account: '' }));
  t.notOk(configCarriesCredential({ region: 'x' }));
  t.notOk(configCarriesCredential(null));
  t.same([5000, -5000, 2.6, 2.4, 2.5, -2.5, -2.6, 1000, 999.6, -999.6].map(clampPriority), [1000, -1000, 3, 2, 3, -2, -3, 1000, 1000, -1000]);
});

t.test('create, list, update, delete with a JWT; the record everywhere; the api_key never returned and stored encrypted', async (t) => {
  const token = mintToken('byok-jwt');
  const startedAt = Date.now();
  const response = await create(token, {
    provider: 'openai', label: '  main key  ', api_key: `  ${OPENAI_KEY} `, base_url: PROXY_URL,
    config_json: { region: 'eu', secretAccessKey: 'aws-secret-value', nested: { items: [{ token: 'tok-value', name: 'n' }] } },
  });
  t.equal(response.status, 201, 'created');
  t.notOk(response.text.includes(OPENAI_KEY), 'the api_key is not in the response');
  const record = response.body;
  t.same(Object.keys(record).sort(), RECORD_FIELDS, 'exactly the record fields');
  t.match(record.id, UUID);
  t.equal(record.provider, 'openai');
  t.equal(record.label, 'main key', 'label trimmed');
  t.equal(record.api_key_prefix, 'sk-proj...WXYZ', 'masked prefix (key trimmed)');
  t.equal(record.base_url, PROXY_URL);
  t.same(record.config_json, { region: 'eu', secretAccessKey: '***', nested: '***' }, 'secrets masked: only allow-listed fields shown');
  t.equal(record.always_use, false, 'always_use defaults to false');
  t.equal(record.disabled, false);
  t.equal(record.priority, 0, 'priority defaults to 0');
  t.equal(record.last_used_at, null);
  t.equal(record.last_error, null);
  t.match(record.created_at, ISO_UTC);
  t.ok(Math.abs(Date.parse(record.created_at) - startedAt) < 10_000, 'created now');
  t.equal(record.updated_at, record.created_at, 'updated_at starts at created_at');

  const listed = await list(token);
  t.equal(listed.status, 200);
  t.same(listed.body, [record], 'GET lists the same record');
  t.notOk(listed.text.includes(OPENAI_KEY) || listed.text.includes('aws-secret-value') || listed.text.includes('tok-value'), 'no secret in the list');

  const [stored] = await gateway.sql<{ api_key_enc: Buffer; config_enc: Buffer; api_key_prefix: string }[]>`
    select api_key_enc, config_enc, api_key_prefix from byok_credentials where id = ${record.id}`;
  t.ok(stored!.api_key_enc.length > OPENAI_KEY.length, 'ciphertext stored');
  t.notOk(stored!.api_key_enc.includes(Buffer.from(OPENAI_KEY)), 'the api_key column does not hold the plaintext');
  t.notOk(stored!.api_key_enc.includes(Buffer.from('abcdefghijklmnop')), 'nor a piece of it');
  t.notOk(stored!.config_enc.includes(Buffer.from('aws-secret-value')), 'config_json stored encrypted');
  t.notOk(stored!.config_enc.includes(Buffer.from('region')), 'all of it');
  t.notOk(gateway.output.includes(OPENAI_KEY), 'the api_key was not logged');

  await sleep(20);
  const updated = await put(token, record.id, { label: 'renamed', priority: 7 });
  t.equal(updated.status, 200);
  t.same(Object.keys(updated.body).sort(), RECORD_FIELDS);
  t.equal(updated.body.label, 'renamed');
  t.equal(updated.body.priority, 7);
  for (const field of ['provider', 'api_key_prefix', 'base_url', 'config_json', 'always_use', 'disabled', 'last_used_at', 'last_error', 'created_at']) {
    t.same(updated.body[field], record[field], `${field} unchanged`);
  }
  t.ok(Date.parse(updated.body.updated_at) > Date.parse(record.updated_at), 'updated_at bumped');
  t.same((await list(token)).body, [updated.body], 'GET shows the update');

  const deleted = await del(token, record.id);
  t.equal(deleted.status, 204);
  t.equal(deleted.text, '', 'no body');
  t.same((await list(token)).body, [], 'no longer listed');
  assertEnvelope(t, await del(token, record.id), 404, 'not_found', 'deleted twice');
  assertEnvelope(t, await put(token, record.id, { label: 'x' }), 404, 'not_found', 'update after delete');
});

t.test('the same with an API key; the key and the JWT of one user see the same rows', async (t) => {
  const { token, key } = await fastUser(gateway, 'byok-key-user', '0');
  const made = await create(key, { provider: 'anthropic', label: 'claude', api_key: 'sk-ant-api03-0123456789abcdefghij' });
  t.equal(made.status, 201);
  t.equal(made.body.api_key_prefix, 'sk-ant-...ghij');
  t.same((await list(key)).body, [made.body], 'listed with the API key');
  t.same((await list(token)).body, [made.body], 'and with the JWT');
  const updated = await put(key, made.body.id, { disabled: true, always_use: true });
  t.equal(updated.status, 200);
  t.equal(updated.body.disabled, true);
  t.equal(updated.body.always_use, true);
  t.equal((await del(key, made.body.id)).status, 204);
  t.same((await list(token)).body, []);
});

t.test('provider filter and the list order: priority descending, then newest first', async (t) => {
  const token = mintToken('byok-order');
  const low = await created(token, { provider: 'openai', label: 'low', api_key: 'sk-low-0000000000000000', priority: -5 });
  const olderTie = await created(token, { provider: 'openai', label: 'older tie', api_key: 'sk-tie1-000000000000000', priority: 10 });
  const google = await created(token, { provider: 'google', label: 'gemini', api_key: 'AIzaSy-0000000000000000000', priority: 500 });
  const newerTie = await created(token, { provider: 'openai', label: 'newer tie', api_key: 'sk-tie2-000000000000000', priority: 10 });
  t.same((await list(token)).body.map((r: any) => r.label), ['gemini', 'newer tie', 'older tie', 'low'], 'every provider');
  t.same((await list(token, '?provider=openai')).body.map((r: any) => r.id), [newerTie.id, olderTie.id, low.id], 'openai only');
  t.same((await list(token, '?provider=google')).body, [google], 'google only');
  t.same((await list(token, '?provider=anthropic')).body, [], 'none of anthropic');
  for (const query of ['?provider=OpenAI', '?provider=azure', '?provider=', '?provider=openai&provider=google']) {
    const response = await list(token, query);
    assertEnvelope(t, response, 400, 'invalid_request', `filter ${query}`);
    t.equal(response.body.error?.param, 'provider', `${query}: names provider`);
  }
  t.same((await list(mintToken('byok-order-other'))).body, [], "another user sees none of these rows");
});

t.test('rotation: a new credential at equal priority lists first; then the old one is deleted', async (t) => {
  const token = mintToken('byok-rotation');
  const old = await created(token, { provider: 'anthropic', label: 'old', api_key: 'sk-ant-old-00000000000000000', priority: 3 });
  const fresh = await created(token, { provider: 'anthropic', label: 'new', api_key: 'sk-ant-new-11111111111111111', priority: 3 });
  t.same((await list(token, '?provider=anthropic')).body.map((r: any) => r.id), [fresh.id, old.id], 'the new one first');
  t.equal((await del(token, old.id)).status, 204);
  t.same((await list(token, '?provider=anthropic')).body.map((r: any) => r.id), [fresh.id], 'only the new one left');
});

t.test('priority is clamped to [-1000, 1000] and rounded, on create and on update', async (t) => {
  const token = mintToken('byok-priority');
  const base = { provider: 'openai', api_key: 'sk-priority-000000000000' };
  t.equal((await created(token, { ...base, label: 'high', priority: 5000 })).priority, 1000);
  t.equal((await created(token, { ...base, label: 'low', priority: -5000 })).priority, -1000);
  const fractional = await created(token, { ...base, label: 'fraction', priority: 2.6 });
  t.equal(fractional.priority, 3, '2.6 rounds to 3');
  t.equal((await put(token, fractional.id, { priority: 1e9 })).body.priority, 1000, 'update clamps too');
  t.equal((await put(token, fractional.id, { priority: -2.4 })).body.priority, -2);
  const huge = await create(token, '{"provider":"openai","label":"inf","api_key":"sk-x-00000000000","priority":1e400}');
  assertEnvelope(t, huge, 422, 'validation_error', 'a priority that is not finite');
  t.equal(huge.body.error?.param, 'priority');
});

t.test('credentials inside config_json: no api_key needed; the record masks them; api_key may then be cleared', async (t) => {
  const token = mintToken('byok-config-credential');
  const serviceAccount = { type: 'service_account', project_id: 'p', private_key: '-----BEGIN PRIVATE KEY-----\nSECRETPEM\n-----END PRIVATE KEY-----\n', client_email: 'x@p.iam' };
  const google = await create(token, { provider: 'google', label: 'vertex', config_json: { service_account: serviceAccount, region: 'us-central1' } });
  t.equal(google.status, 201);
  t.equal(google.body.api_key_prefix, null, 'no api_key, no prefix');
  t.same(google.body.config_json, { service_account: { ...serviceAccount, private_key: '***' }, region: 'us-central1' });
  t.notOk(google.text.includes('SECRETPEM'));
  const asText = await create(token, { provider: 'google', label: 'vertex text', config_json: { service_account: JSON.stringify(serviceAccount), region: 'global' } });
  t.equal(asText.status, 201);
  t.same(asText.body.config_json, { service_account: '***', region: 'global' }, 'a service_account string is masked whole');
  const bedrock = await create(token, { provider: 'anthropic', label: 'bedrock', config_json: { region: 'us-east-1', accessKeyId: 'AKIA123', secretAccessKey: 'aws-secret' } });
  t.equal(bedrock.status, 201);
  t.same(bedrock.body.config_json, { region: 'us-east-1', accessKeyId: 'AKIA123', secretAccessKey: '***' });

  const both = await created(token, { provider: 'anthropic', label: 'both', api_key: 'sk-ant-both-000000000000', config_json: { private_key: 'K' } });
  const cleared = await put(token, both.id, { api_key: null });
  t.equal(cleared.status, 200, 'api_key null clears it when config carries a credential');
  t.equal(cleared.body.api_key_prefix, null);
  const noCredential = await put(token, both.id, { config_json: { region: 'x' } });
  assertEnvelope(t, noCredential, 422, 'validation_error', 'config without a credential and no api_key');
  t.equal(noCredential.body.error?.param, 'api_key');
  const withKey = await put(token, both.id, { config_json: null, api_key: 'sk-ant-again-1111111111111111111111' });
  t.equal(withKey.status, 200, 'config cleared and a new key in one update');
  t.equal(withKey.body.config_json, null);
  t.equal(withKey.body.api_key_prefix, 'sk-ant-...1111');
});

t.test('update: base_url and config_json set and cleared with null; every other field kept; an empty body only bumps updated_at', async (t) => {
  const token = mintToken('byok-update');
  const row = await created(token, { provider: 'openai', label: 'u', api_key: OPENAI_KEY, always_use: true, priority: 4 });
  t.equal(row.always_use, true);
  t.equal(row.base_url, null);
  t.equal(row.config_json, null);
  const set = await put(token, row.id, { base_url: OTHER_PROXY_URL, config_json: { organization: 'org-1', api_key: 'inner' } });
  t.equal(set.body.base_url, OTHER_PROXY_URL);
  t.same(set.body.config_json, { organization: 'org-1', api_key: '***' });
  const rotated = await put(token, row.id, { api_key: 'sk-rotated-key-abcdefghijklmnopqrstuvwxyz-9876' });
  t.equal(rotated.body.api_key_prefix, 'sk-rota...9876', 'a new api_key gives a new prefix');
  t.same(rotated.body.config_json, set.body.config_json, 'config kept');
  const clear = await put(token, row.id, { base_url: null, config_json: null });
  t.equal(clear.body.base_url, null);
  t.equal(clear.body.config_json, null);
  t.equal(clear.body.always_use, true, 'always_use kept');
  t.equal(clear.body.priority, 4, 'priority kept');
  t.equal(clear.body.label, 'u');
  await sleep(10);
  const empty = await put(token, row.id, {});
  t.equal(empty.status, 200);
  t.same({ ...empty.body, updated_at: null }, { ...clear.body, updated_at: null }, 'nothing else changes');
  t.ok(Date.parse(empty.body.updated_at) > Date.parse(clear.body.updated_at));
});

t.test('422 naming the field for every bad input; nothing is stored', async (t) => {
  const token = mintToken('byok-invalid');
  const ok = { provider: 'openai', label: 'l', api_key: 'sk-valid-000000000000' };
  const cases: [string, unknown, string][] = [
    ['unknown provider', { ...ok, provider: 'azure' }, 'provider'],
    ['provider in capitals', { ...ok, provider: 'OpenAI' }, 'provider'],
    ['missing provider', { label: 'l', api_key: 'k' }, 'provider'],
    ['missing label', { provider: 'openai', api_key: 'k' }, 'label'],
    ['empty label', { ...ok, label: '' }, 'label'],
    ['blank label', { ...ok, label: '   ' }, 'label'],
    ['101-character label', { ...ok, label: 'x'.repeat(101) }, 'label'],
    ['label not a string', { ...ok, label: 5 }, 'label'],
    ['http base_url', { ...ok, base_url: 'http://api.example.com/v1' }, 'base_url'],
    ['base_url not a URL', { ...ok, base_url: 'not a url' }, 'base_url'],
    ['base_url with credentials', { ...ok, base_url: 'https://user:pass@api.example.com' }, 'base_url'],
    ['base_url not a string', { ...ok, base_url: 42 }, 'base_url'],
    ['missing api_key without a config credential', { provider: 'openai', label: 'l' }, 'api_key'],
    ['missing api_key, config without a credential', { provider: 'google', label: 'l', config_json: { region: 'x' } }, 'api_key'],
    ['empty api_key', { ...ok, api_key: '' }, 'api_key'],
    ['api_key not a string', { ...ok, api_key: 123 }, 'api_key'],
    ['api_key too long', { ...ok, api_key: 'k'.repeat(4097) }, 'api_key'],
    ['api_key with a line break', { ...ok, api_key: 'sk-x\r\nX-Injected: 1' }, 'api_key'],
    ['api_key with a tab inside', { ...ok, api_key: 'sk-x\tsk-y' }, 'api_key'],
    ['null api_key on create', { ...ok, api_key: null }, 'api_key'],
    ['config_json an array', { ...ok, config_json: [1] }, 'config_json'],
    ['config_json a string', { ...ok, config_json: '{"a":1}' }, 'config_json'],
    ['config_json over 16 KB', { ...ok, config_json: { blob: 'x'.repeat(17_000) } }, 'config_json'],
    ['always_use not a boolean', { ...ok, always_use: 'yes' }, 'always_use'],
    ['disabled not a boolean', { ...ok, disabled: 1 }, 'disabled'],
    ['priority a string', { ...ok, priority: '5' }, 'priority'],
    ['unknown field', { ...ok, colour: 'red' }, 'colour'],
  ];
  for (const [label, body, param] of cases) {
    const response = await create(token, body);
    assertEnvelope(t, response, 422, 'validation_error', label);
    t.equal(response.body.error?.param, param, `${label}: names ${param}`);
  }
  t.equal((await create(token, { ...ok, label: 'x'.repeat(100) })).status, 201, '100 characters is fine');
  t.equal((await create(token, { ...ok, label: '🔑'.repeat(100) })).status, 201, '100 characters outside the BMP too');
  assertEnvelope(t, await create(token, '{"provider":'), 400, 'invalid_json', 'malformed JSON');
  assertEnvelope(t, await create(token, '[]'), 400, 'invalid_json', 'not an object');

  const row = await created(token, { ...ok, label: 'target' });
  const updateCases: [string, unknown, string][] = [
    ['provider is fixed', { provider: 'google' }, 'provider'],
    ['empty label', { label: ' ' }, 'label'],
    ['http base_url', { base_url: 'http://x.example' }, 'base_url'],
    ['config_json an array', { config_json: [] }, 'config_json'],
    ['always_use null', { always_use: null }, 'always_use'],
    ['priority null', { priority: null }, 'priority'],
    ['api_key null without a config credential', { api_key: null }, 'api_key'],
    ['unknown field', { id: row.id }, 'id'],
  ];
  for (const [label, body, param] of updateCases) {
    const response = await put(token, row.id, body);
    assertEnvelope(t, response, 422, 'validation_error', `update: ${label}`);
    t.equal(response.body.error?.param, param, `update: ${label}: names ${param}`);
  }
  const rows = (await list(token)).body as any[];
  t.equal(rows.length, 3, 'only the valid creates are stored');
  t.same(rows.find((r) => r.id === row.id), row, 'the target is unchanged');
});

t.test("404 for another user's row and for a malformed id, never revealing; 401 without credentials", async (t) => {
  const owner = mintToken('byok-owner');
  const intruder = mintToken('byok-intruder');
  const row = await created(owner, { provider: 'openai', label: 'mine', api_key: OPENAI_KEY });
  const missing = '00000000-0000-4000-8000-000000000000';
  for (const [label, credential, id] of [['another user', intruder, row.id], ['missing id', owner, missing], ['malformed id', owner, 'not-a-uuid']] as const) {
    const updated = await put(credential, id, { label: 'stolen' });
    assertEnvelope(t, updated, 404, 'not_found', `PUT: ${label}`);
    const deleted = await del(credential, id);
    assertEnvelope(t, deleted, 404, 'not_found', `DELETE: ${label}`);
  }
  const foreign = await put(intruder, row.id, { label: 'stolen' });
  const absent = await put(intruder, missing, { label: 'stolen' });
  t.equal(foreign.body.msg.replace(row.id, 'ID'), absent.body.msg.replace(missing, 'ID'), 'the same answer as for a missing id');
  t.same((await list(owner)).body, [row], 'the row is untouched');

  for (const [method, path, body] of [['GET', BYOK, undefined], ['POST', BYOK, { provider: 'openai', label: 'l', api_key: 'k' }], ['PUT', `${BYOK}/${row.id}`, { label: 'x' }], ['DELETE', `${BYOK}/${row.id}`, undefined]] as const) {
    assertEnvelope(t, await call(method, path, undefined, body), 401, undefined, `${method} without Authorization`);
    assertEnvelope(t, await call(method, path, 'not-a-jwt', body), 401, undefined, `${method} with a bad token`);
  }
  assertEnvelope(t, await call('GET', BYOK, 'sk-gw-AAAAAAAAAAAA-' + 'a'.repeat(48)), 401, undefined, 'an unknown API key');
  t.same((await list(owner)).body, [row], 'still there');
});

t.test('every change publishes byok:<user> on the key-events channel', async (t) => {
  const subscriber = connectRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  t.teardown(() => subscriber.disconnect());
  const messages: string[] = [];
  await subscriber.subscribe(`${gateway.prefix}keys:events`);
  // A receiver of the event like the gateway's threads: it reads the event and acknowledges it.
  subscriber.on('message', (_channel: string, message: string) => {
    const { nonce, text } = unwrapAcknowledged(message);
    messages.push(text);
    if (nonce) void acknowledge(gateway.redis, `${gateway.prefix}keys:acks:${nonce}`);
  });
  const token = mintToken('byok-events');
  const row = await created(token, { provider: 'openai', label: 'e', api_key: OPENAI_KEY });
  await put(token, row.id, { disabled: true });
  await del(token, row.id);
  await put(token, row.id, { disabled: false }); // 404: nothing changed, nothing published
  const until = Date.now() + 2000;
  while (messages.length < 3 && Date.now() < until) await sleep(20);
  await sleep(100);
  t.same(messages, ['byok:byok-events', 'byok:byok-events', 'byok:byok-events'], 'create, update, delete');
});

t.test('the call-path store functions: success clears the error, failure records it truncated', async (t) => {
  const token = mintToken('byok-store');
  const sql = gateway.sql as unknown as AnySql;
  const a = await created(token, { provider: 'google', label: 'a', api_key: 'AIza-a-000000000000', priority: 1 });
  const b = await created(token, { provider: 'google', label: 'b', api_key: 'AIza-b-000000000000', priority: 1 });
  const c = await created(token, { provider: 'openai', label: 'c', api_key: 'sk-c-000000000000000', priority: 9 });
  t.same((await listByok(sql, 'byok-store')).map((r) => r.id), [c.id, b.id, a.id]);
  const googleRows = await listByok(sql, 'byok-store', 'google');
  t.same(googleRows.map((r) => r.id), [b.id, a.id]);
  t.ok(Buffer.isBuffer(googleRows[0]!.api_key_enc), 'api_key_enc is a Buffer');
  t.type(googleRows[0]!.created_at, Date);
  t.equal(googleRows[0]!.priority, 1);

  await recordByokFailure(sql, a.id, `upstream said no ${'x'.repeat(2000)}`);
  let [row] = (await list(token, '?provider=google')).body.filter((r: any) => r.id === a.id);
  t.equal(row.last_error.length, 1000, 'truncated to 1000 characters');
  t.ok(row.last_error.startsWith('upstream said no'));
  t.equal(row.last_used_at, null);
  await recordByokSuccess(sql, a.id);
  [row] = (await list(token, '?provider=google')).body.filter((r: any) => r.id === a.id);
  t.equal(row.last_error, null, 'success clears the error');
  t.match(row.last_used_at, ISO_UTC);
  t.ok(Math.abs(Date.parse(row.last_used_at) - Date.now()) < 10_000, 'last_used_at is now');
});
