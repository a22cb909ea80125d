// Management keys (`is_provisioning`, `sk-<prefix>-prov-…`) against regular keys, both directions:
// a management key manages its owner's API keys from code (as OpenRouter's provisioning keys do) and
// reads billing, BYOK and the catalog, but calls no model; a regular key calls models and is 401 on
// key management, as the spec answers an API key there.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser } from './helpers/http-tools.js';

let gateway: Gateway;
let token: string;
let regular: string;
let management: string;

t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10' } });
  ({ token, key: regular } = await fastUser(gateway, 'manager', '5'));
  management = await gateway.createKey(token, { name: 'ops automation', is_provisioning: true });
});
t.teardown(() => gateway.close());

const call = async (method: string, path: string, key: string, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
};

t.test('a management key has the prov segment and manages the owner\'s keys', async (t) => {
  t.match(management, /^sk-gw-prov-[A-Za-z0-9]{12}-[A-Za-z0-9]{48}$/);
  const listed = await call('GET', '/api/v1/api-keys', management);
  t.equal(listed.status, 200);
  t.same(listed.body.map((key: { name: string }) => key.name).sort(), ['ops automation', 'test'], "the owner's keys");
  t.ok(listed.body.some((key: { is_provisioning: boolean }) => key.is_provisioning), 'itself among them, marked');

  const created = await call('POST', '/api/v1/api-keys', management, { name: 'minted by automation', credit_limit: 1 });
  t.equal(created.status, 201);
  t.match(created.body.key, /^sk-gw-[A-Za-z0-9]{12}-/, 'a regular key');
  const minted = created.body.key as string;
  const chat = await postJson(`${gateway.v1}/chat/completions`, minted, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  t.equal(chat.status, 200, 'the minted key calls models');

  const id = created.body.id as string;
  const updated = await call('PUT', `/api/v1/api-keys/${id}`, management, { disabled: true });
  t.equal(updated.status, 200);
  t.equal(updated.body.disabled, true);
  t.equal((await call('DELETE', `/api/v1/api-keys/${id}`, management)).status, 204);

  const escalation = await call('POST', '/api/v1/api-keys', management, { name: 'another manager', is_provisioning: true });
  assertEnvelope(t, escalation, 403, 'management_key', 'a management key mints no management key');
  t.equal(escalation.body.error.param, 'is_provisioning');
});

t.test('a management key reads billing, BYOK and the catalog', async (t) => {
  t.equal((await call('GET', '/api/v1/billing/balance', management)).status, 200);
  t.equal((await call('GET', '/api/v1/billing/transactions', management)).status, 200);
  t.equal((await call('GET', '/api/v1/byok', management)).status, 200);
  t.equal((await call('GET', '/api/v1/models?per_page=1', management)).status, 200);
});

t.test('a management key calls no model: 403 management_key on every inference endpoint, nothing charged', async (t) => {
  const before = await gateway.balance(token);
  const inference: [string, string, unknown][] = [
    ['POST', '/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }],
    ['POST', '/v1/responses', { model: 'openai/gpt-4o-mini', input: 'hi' }],
    ['POST', '/v1/images/generations', { model: 'openai/gpt-image-2', prompt: 'x' }],
    ['POST', '/v1/videos/generations', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x', image_urls: ['https://localhost/a.png'] }],
    ['POST', '/v1/audio/speech', { model: 'openai/tts-1-hd', input: 'x', voice: 'alloy' }],
    ['GET', '/v1/models', undefined],
  ];
  for (const [method, path, body] of inference) {
    const answer = await call(method, path, management, body);
    assertEnvelope(t, answer, 403, 'management_key', `${method} ${path}`);
  }
  t.same(await gateway.balance(token), before, 'nothing held or charged');
});

t.test('a regular key calls models and is 401 on key management (the spec)', async (t) => {
  t.equal((await postJson(`${gateway.v1}/chat/completions`, regular, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })).status, 200);
  for (const [method, path, body] of [['GET', '/api/v1/api-keys', undefined], ['POST', '/api/v1/api-keys', { name: 'x' }], ['DELETE', '/api/v1/api-keys/00000000-0000-4000-8000-000000000000', undefined]] as const) {
    const answer = await call(method, path, regular, body);
    assertEnvelope(t, answer, 401, undefined, `${method} ${path} with a regular key`);
  }
  t.equal((await call('GET', '/api/v1/billing/balance', regular)).status, 200, 'billing takes either key');
});

t.test('a revoked or disabled management key is refused like any key', async (t) => {
  const second = await gateway.createKey(token, { name: 'short-lived manager', is_provisioning: true });
  const keys = (await call('GET', '/api/v1/api-keys', second)).body as { id: string; name: string }[];
  const id = keys.find((key) => key.name === 'short-lived manager')!.id;
  t.equal((await call('PUT', `/api/v1/api-keys/${id}`, token, { disabled: true })).status, 200);
  assertEnvelope(t, await call('GET', '/api/v1/api-keys', second), 403, 'key_disabled');
});
