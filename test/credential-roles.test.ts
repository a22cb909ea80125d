// Credentials and roles (issue 24, items 6 and 7), through real HTTP: every /api/v1 route against a
// dashboard JWT, a management key and a regular key per ROUTE_CREDENTIALS; a regular key cannot reach
// the webhook signing secret, alerts or the account's transactions; management keys cannot read or
// change each other; BYOK config_json shows only allow-listed fields; the key count is capped; a key
// without stored text has a key_prefix of the spec's form.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, mintToken } from './helpers/http-tools.js';
import { ROUTE_CREDENTIALS, type CredentialKind } from '../src/auth/credential-roles.js';
import { credentialsOf } from '../src/http/router.js';

const KEY_CAP = 6;
let gateway: Gateway;

t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10', API_KEYS_PER_ACCOUNT: String(KEY_CAP) } });
});
t.teardown(() => gateway.close());

const call = async (method: string, path: string, credential: string | undefined, body?: unknown) => {
  const headers: Record<string, string> = {};
  if (credential !== undefined) headers.authorization = `Bearer ${credential}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
};

/** A management key of the account `token` names. */
const managementKey = (token: string, name = 'automation', extra: Record<string, unknown> = {}) =>
  gateway.createKey(token, { name, is_provisioning: true, ...extra });

t.test('the router refuses to register an /api/v1 route missing from the table', async (t) => {
  t.throws(() => credentialsOf('get', '/api/v1/everything'), /GET \/api\/v1\/everything has no entry in ROUTE_CREDENTIALS/);
  t.throws(() => credentialsOf('post', '/api/v1/billing/balance'), /no entry/, 'the method counts');
  t.same(credentialsOf('get', '/api/v1/webhook-secret'), ['jwt', 'management']);
  t.equal(credentialsOf('post', '/v1/chat/completions'), undefined, 'inference routes are the authenticator\'s (regular keys only)');
});

t.test('every management route answers each credential kind as the table says', async (t) => {
  // The gateway started, so every registered /api/v1 route is in the table; here every table entry
  // is shown to be a registered route (never the 404 fallback) that admits exactly its kinds.
  const { token, key: regular } = await fastUser(gateway, 'roles-walk', '1');
  const credentials: Record<CredentialKind, string> = { jwt: token, management: await managementKey(token), regular };
  const concrete = (pattern: string) => pattern.replace(':id', '00000000-0000-4000-8000-000000000000').replace('*', 'openai/gpt-4o-mini');
  t.equal(ROUTE_CREDENTIALS.size, 27, 'the table has every management route');
  for (const [route, allowed] of ROUTE_CREDENTIALS) {
    const [method, pattern] = route.split(' ') as [string, string];
    const httpMethod = method === 'DEL' ? 'DELETE' : method;
    const body = httpMethod === 'POST' || httpMethod === 'PUT' ? {} : undefined;
    for (const kind of ['jwt', 'management', 'regular'] as const) {
      const answer = await call(httpMethod, concrete(pattern), credentials[kind], body);
      t.notMatch(answer.body?.msg ?? '', /^No route for/, `${route} is a registered route`);
      if (allowed.includes(kind)) {
        t.not(answer.status, 401, `${route} admits ${kind} (${answer.status})`);
      } else {
        assertEnvelope(t, answer, 401, 'credential_not_allowed', `${route} refuses ${kind}`);
      }
    }
  }
});

t.test('a regular key cannot read or rotate the webhook secret, touch alerts or read the account\'s transactions', async (t) => {
  const { token, key } = await fastUser(gateway, 'roles-regular', '2');
  const secret = await call('GET', '/api/v1/webhook-secret', token);
  t.equal(secret.status, 200);
  assertEnvelope(t, await call('GET', '/api/v1/webhook-secret', key), 401, 'credential_not_allowed', 'read the secret');
  assertEnvelope(t, await call('POST', '/api/v1/webhook-secret/rotate', key), 401, 'credential_not_allowed', 'rotate the secret');
  t.same((await call('GET', '/api/v1/webhook-secret', token)).body, secret.body, 'the secret is unchanged');
  assertEnvelope(t, await call('POST', '/api/v1/billing/alerts', key, { threshold: 1, email: 'attacker@example.com' }), 401, 'credential_not_allowed', 'create an alert');
  assertEnvelope(t, await call('GET', '/api/v1/billing/alerts', key), 401, 'credential_not_allowed', 'list alerts');
  t.equal((await call('GET', '/api/v1/billing/alerts', token)).body.total, 0, 'no alert was made');
  assertEnvelope(t, await call('GET', '/api/v1/billing/transactions', key), 401, 'credential_not_allowed', 'transactions');
  assertEnvelope(t, await call('POST', '/api/v1/billing/coupons/redeem', key, { code: 'X' }), 401, 'credential_not_allowed', 'coupons');
  t.equal((await call('GET', '/api/v1/billing/balance', key)).status, 200, 'its balance it reads');
  t.equal((await call('GET', '/api/v1/byok', key)).status, 200, 'BYOK it manages (the spec)');
  t.equal((await call('GET', '/api/v1/models?per_page=1', key)).status, 200, 'the catalog it reads');
});

t.test('management keys see each other masked and cannot change or revoke each other; one may revoke itself', async (t) => {
  const { token } = await fastUser(gateway, 'roles-managers', '0');
  const first = await managementKey(token, 'first');
  const second = await managementKey(token, 'second', { ip_whitelist: ['127.0.0.1'] });
  const listed = (await call('GET', '/api/v1/api-keys', first)).body as Record<string, any>[];
  const secondRecord = listed.find((record) => record.name === 'second')!;
  const firstRecord = listed.find((record) => record.name === 'first')!;
  t.notOk('full_key' in secondRecord, 'another management key: no full_key');
  t.notOk('full_key' in firstRecord, 'management keys are masked to a management key, itself too');
  t.notOk(JSON.stringify(listed).includes(second.split('-').at(-1)!), 'the secret appears nowhere');
  t.match(secondRecord.key_prefix, /^sk-gw-prov-\w\.\.\.\w{4}$/);
  const viaJwt = (await call('GET', '/api/v1/api-keys', token)).body as Record<string, any>[];
  t.equal(viaJwt.find((record) => record.name === 'second')!.full_key, second, 'the dashboard still sees it');

  const strip = await call('PUT', `/api/v1/api-keys/${secondRecord.id}`, first, { ip_whitelist: [] });
  assertEnvelope(t, strip, 403, 'management_key', 'removing another management key\'s ip_whitelist');
  const selfChange = await call('PUT', `/api/v1/api-keys/${firstRecord.id}`, first, { name: 'renamed' });
  assertEnvelope(t, selfChange, 403, 'management_key', 'a management key changes no management key, itself included');
  assertEnvelope(t, await call('DELETE', `/api/v1/api-keys/${secondRecord.id}`, first), 403, 'management_key', 'revoking another');
  const after = (await call('GET', '/api/v1/api-keys', token)).body as Record<string, any>[];
  t.same(after.find((record) => record.name === 'second')!.ip_whitelist, ['127.0.0.1'], 'the whitelist stayed');
  t.equal((await call('GET', '/api/v1/api-keys', second)).status, 200, 'the other still works');

  const regular = await call('POST', '/api/v1/api-keys', first, { name: 'minted' });
  t.equal(regular.status, 201);
  t.equal((await call('PUT', `/api/v1/api-keys/${regular.body.id}`, first, { ip_whitelist: ['10.0.0.0/8'] })).status, 200, 'regular keys it changes');
  t.equal((await call('DELETE', `/api/v1/api-keys/${regular.body.id}`, first)).status, 204, 'and revokes');
  t.equal((await call('DELETE', `/api/v1/api-keys/${firstRecord.id}`, first)).status, 204, 'itself it may revoke');
  t.equal((await call('GET', '/api/v1/api-keys', first)).status, 401, 'then it is gone');
});

t.test('config_json: every value is masked except allow-listed fields, at any depth', async (t) => {
  const token = mintToken('roles-byok');
  const made = await call('POST', '/api/v1/byok', token, {
    provider: 'openai', label: 'masked', api_key: 'sk-proj-abcdefghijklmnopqrstuvwxyz',
    config_json: {
      region: 'eu', organization: 'org-1', secret_key: 'S1', key: 'S2', passwd: 'S3', authorization: 'Bearer S4', pin: 1234,
      headers: { Authorization: 'Bearer S5', 'X-Custom': 'S6' },
      service_account: { client_email: 'a@b.example', private_key: 'S7', token_uri: 'https://oauth2.example/token', extra: 'S8' },
      model_map: { small: 'gpt-4o-mini', nested: { token: 'S9' } }, none: null,
    },
  });
  t.equal(made.status, 201, made.text);
  const expected = {
    region: 'eu', organization: 'org-1', secret_key: '***', key: '***', passwd: '***', authorization: '***', pin: '***', headers: '***',
    service_account: { client_email: 'a@b.example', private_key: '***', token_uri: 'https://oauth2.example/token', extra: '***' },
    model_map: { small: 'gpt-4o-mini', nested: '***' }, none: null,
  };
  t.same(made.body.config_json, expected, 'the create answer');
  const listed = (await call('GET', '/api/v1/byok', token)).body as Record<string, any>[];
  t.same(listed[0]!.config_json, expected, 'the list');
  for (let i = 1; i <= 9; i++) t.notOk(JSON.stringify(listed).includes(`S${i}`), `secret S${i} appears nowhere`);
});

t.test('keys per account are capped (API_KEYS_PER_ACCOUNT), concurrent creates included', async (t) => {
  const token = mintToken('roles-cap');
  const answers = await Promise.all(Array.from({ length: KEY_CAP + 4 }, (_, i) => call('POST', '/api/v1/api-keys', token, { name: `k${i}` })));
  t.equal(answers.filter((answer) => answer.status === 201).length, KEY_CAP, `exactly ${KEY_CAP} created`);
  for (const refused of answers.filter((answer) => answer.status !== 201)) assertEnvelope(t, refused, 409, 'key_limit_reached');
  const keys = (await call('GET', '/api/v1/api-keys', token)).body as { id: string }[];
  t.equal(keys.length, KEY_CAP);
  t.equal((await call('DELETE', `/api/v1/api-keys/${keys[0]!.id}`, token)).status, 204);
  t.equal((await call('POST', '/api/v1/api-keys', token, { name: 'after a revoke' })).status, 201, 'a revoked key frees its place');
});

t.test('key_prefix of a key whose text was not kept: first 12 characters, ..., ****', async (t) => {
  const token = mintToken('roles-prefix');
  const key = await gateway.createKey(token, { name: 'old' });
  await gateway.sql`update api_keys set full_key_enc = null where user_id = 'roles-prefix'`;
  const [record] = (await call('GET', '/api/v1/api-keys', token)).body as Record<string, any>[];
  t.notOk('full_key' in record!, 'no full_key');
  t.equal(record!.key_prefix, `${key.slice(0, 12)}...****`, 'the spec\'s shape: the key\'s first 12 characters, an ellipsis, 4 more');
  t.equal(record!.key_prefix.length, 19);
});
