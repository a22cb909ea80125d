// Guessing API keys (issue 24, item 14), through real HTTP: a flood of random keys does not evict a live
// cached key (the key cache is least-recently-used, unknown ids live apart), and a source address past
// its failed-authentication budget gets 429 with Retry-After without reaching Postgres. Postgres
// lookups are counted with the gateway's own gateway_auth_key_lookups_total.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { randomBase62 } from '../src/auth/api-key-format.js';

const randomKey = () => `sk-gw-${randomBase62(12)}-${randomBase62(48)}`;

async function lookups(gateway: Gateway, result: 'found' | 'unknown'): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  return sumSamples(parsePrometheus(text), 'gateway_auth_key_lookups_total', { result });
}

const models = (gateway: Gateway, key: string, headers: Record<string, string> = {}) =>
  fetch(`${gateway.v1}/models`, { headers: { authorization: `Bearer ${key}`, ...headers } }).then(async (response) => ({
    status: response.status, headers: response.headers, body: await response.json() as any,
  }));

/** Sends `count` GET /v1/models requests with fresh random keys, `parallel` at a time; resolves with how many were 401. */
async function floodRandomKeys(gateway: Gateway, count: number, parallel = 32): Promise<number> {
  let next = 0;
  let unauthorized = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      const response = await fetch(`${gateway.v1}/models`, { headers: { authorization: `Bearer ${randomKey()}` } });
      await response.arrayBuffer();
      if (response.status === 401) unauthorized++;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return unauthorized;
}

t.test('a flood of random keys (ten times the key cache) does not evict a live cached key', async (t) => {
  // The cache is cut to its least (AUTH_KEY_CACHE_ENTRIES=100) so that ten times it takes seconds: the
  // default 100,000 is the same code at another size (100,000 lookups take minutes on a test machine).
  // The budget is off here so that every random key reaches the cache; the next test covers the budget.
  const capacity = 100;
  const gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, AUTH_FAILURE_BUDGET: '0', AUTH_KEY_CACHE_ENTRIES: String(capacity), RATE_LIMIT_DEFAULT: '1000/10' } });
  t.teardown(() => gateway.close());
  const { key } = await fastUser(gateway, 'flood-victim', '0');
  t.equal((await models(gateway, key)).status, 200);
  const found = await lookups(gateway, 'found');
  t.equal(found, 1, 'the live key was read from Postgres once');
  const unknown = randomKey();
  for (let i = 0; i < 10; i++) t.equal((await models(gateway, unknown)).status, 401);
  t.equal(await lookups(gateway, 'unknown'), 1, 'an unknown id is remembered: one lookup for ten tries');

  // The live key is used between rounds, as a live application would (well inside its 30 s cache life).
  const rounds = 5;
  for (let round = 1; round <= rounds; round++) {
    t.equal(await floodRandomKeys(gateway, 2 * capacity), 2 * capacity, `round ${round}: every random key is 401`);
    t.equal((await models(gateway, key)).status, 200, `round ${round}: the live key still works`);
  }
  t.equal(await lookups(gateway, 'unknown'), 1 + rounds * 2 * capacity, 'each random id cost one lookup');
  t.equal(await lookups(gateway, 'found'), found, 'the live key never left the cache: no new lookup');
});

t.test('a source past its failure budget gets 429 with Retry-After before any Postgres lookup; TRUSTED_PROXIES decides the source', async (t) => {
  const budget = 5;
  const gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, AUTH_FAILURE_BUDGET: String(budget), AUTH_FAILURE_WINDOW_SECONDS: '600', TRUSTED_PROXIES: '127.0.0.1' } });
  t.teardown(() => gateway.close());
  const { key } = await fastUser(gateway, 'budget-user', '0');
  const { key: uncached } = await fastUser(gateway, 'budget-other', '0');
  const attacker = { 'x-forwarded-for': '203.0.113.7' };

  for (let i = 0; i < budget; i++) assertEnvelope(t, await models(gateway, randomKey(), attacker), 401, 'invalid_api_key', `failure ${i + 1}`);
  t.equal(await lookups(gateway, 'unknown'), budget, 'each failure so far cost one lookup');
  const refused = await models(gateway, randomKey(), attacker);
  assertEnvelope(t, refused, 429, 'too_many_failures', 'past the budget');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.ok(retryAfter > 0 && retryAfter <= 600, `Retry-After is the rest of the window (${retryAfter} s)`);
  for (let i = 0; i < 20; i++) t.equal((await models(gateway, randomKey(), attacker)).status, 429);
  assertEnvelope(t, await models(gateway, uncached, attacker), 429, 'too_many_failures', 'an uncached valid key from that source waits too');
  t.equal(await lookups(gateway, 'unknown'), budget, 'nothing past the budget reached Postgres');
  const wrongSecret = `${key.slice(0, -48)}${randomBase62(48)}`;
  assertEnvelope(t, await models(gateway, wrongSecret, attacker), 429, 'too_many_failures', 'a wrong secret for a known id too');

  t.equal((await models(gateway, key)).status, 200, 'another source (the proxy\'s own address) is not affected');
  t.equal((await models(gateway, randomKey(), { 'x-forwarded-for': '198.51.100.9' })).status, 401, 'nor another forwarded client');
});
