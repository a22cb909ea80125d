// A BYOK row made with a regular API key serves that key's calls only: one leaked key cannot route the
// account's other keys' prompts to a credential (or a host) of its choosing. It may change only the rows
// it made; a dashboard session or a management key manages every row, and its rows serve every key.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

function byok(credential: string, method: string, path = '', body?: Record<string, unknown>) {
  return rawRequest(`${gateway.url}/api/v1/byok${path}`, {
    method, headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

/** The Authorization header the upstream saw for one chat call of `key`. */
async function upstreamAuthorization(key: string): Promise<string[]> {
  const before = gateway.mock.requests().length;
  const response = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a confidential prompt' }], max_tokens: 5 }),
  });
  if (response.status !== 200) throw new Error(`chat: ${response.status} ${response.text}`);
  return gateway.mock.requests().slice(before).map((record) => record.authorization ?? '');
}

t.test("a regular key's row serves only that key; the account's rows serve every key", async (t) => {
  const user = 'byok-scope';
  const { token, key: first } = await fastUser(gateway, user, '1');
  const firstId = await newestKeyId(gateway.url, token);
  const second = await gateway.createKey(token);

  const made = await byok(first, 'POST', '', { provider: 'openai', label: 'first only', api_key: 'sk-first-key-own-0001', always_use: true });
  t.equal(made.status, 201, 'a regular key may add a BYOK row (the spec allows it)');
  t.equal(made.body.api_key_id, firstId, 'the row names the key it serves');

  t.same(await upstreamAuthorization(first), ['Bearer sk-first-key-own-0001'], 'the key that made the row calls through it');
  t.same(await upstreamAuthorization(second), ['Bearer test-openai-key'], "another key of the account never does, nor is bound by its always_use");

  const listed = await byok(second, 'GET');
  t.same(listed.body, [], "the other key does not see it");
  const sessionList = await byok(token, 'GET');
  t.equal(sessionList.body.length, 1, 'the dashboard session sees every row');

  const shared = await byok(token, 'POST', '', { provider: 'openai', label: 'account', api_key: 'sk-account-row-0002', priority: -5 });
  t.equal(shared.body.api_key_id, null, "a session's row serves the account");
  t.same(await upstreamAuthorization(second), ['Bearer sk-account-row-0002'], "the account's row serves every key");
  t.same(await upstreamAuthorization(first), ['Bearer sk-first-key-own-0001'], 'higher priority first, as always');
});

t.test('a regular key changes and deletes only the rows it made', async (t) => {
  const user = 'byok-scope-change';
  const { token, key: first } = await fastUser(gateway, user, '1');
  const second = await gateway.createKey(token);
  const own = (await byok(first, 'POST', '', { provider: 'openai', label: 'own', api_key: 'sk-own-0003' })).body;
  const account = (await byok(token, 'POST', '', { provider: 'openai', label: 'account', api_key: 'sk-acct-0004' })).body;

  const foreign = await byok(second, 'PUT', `/${own.id}`, { base_url: 'https://1.1.1.1/v1' });
  assertEnvelope(t, foreign, 404, 'not_found', "another key's row does not exist for this key");
  const accountRow = await byok(first, 'PUT', `/${account.id}`, { base_url: 'https://1.1.1.1/v1' });
  assertEnvelope(t, accountRow, 403, 'byok_row_of_account', "an account row is the session's to change");
  assertEnvelope(t, await byok(first, 'DELETE', `/${account.id}`), 403, 'byok_row_of_account');
  assertEnvelope(t, await byok(second, 'DELETE', `/${own.id}`), 404, 'not_found');

  const renamed = await byok(first, 'PUT', `/${own.id}`, { label: 'renamed' });
  t.equal(renamed.status, 200, 'its own row it may change');
  t.equal(renamed.body.label, 'renamed');
  t.equal((await byok(token, 'PUT', `/${own.id}`, { disabled: true })).status, 200, 'the session may change any row');
  t.equal((await byok(first, 'DELETE', `/${own.id}`)).status, 204, 'and the key may delete its own');
  t.equal((await byok(token, 'DELETE', `/${account.id}`)).status, 204, 'the session deletes the account row');
});
