// rate_limit_rpm over HTTP: a key's own per-minute limit beside the default window, 429 with an
// accurate Retry-After, never exceeded with leases, and cleared with the key.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';

let gateway: Gateway;
// A default window far above the per-minute limits, so the key's own limit is the one that binds.
t.before(async () => { gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10' } }); });
t.teardown(() => gateway?.close());

const call = (key: string) => rawRequest(`${gateway.url}/v1/chat/completions`, {
  method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[mock chunks=1]]' }], max_tokens: 5 }),
});
async function keyWithRpm(user: string, rpm: number): Promise<{ token: string; key: string; id: string }> {
  const { token, key } = await fastUser(gateway, user, '5');
  const id = await newestKeyId(gateway.url, token);
  await updateKey(gateway.url, token, id, { rate_limit_rpm: rpm });
  return { token, key, id };
}

t.test('rate_limit_rpm 3: the 4th call in a minute gets 429 with Retry-After; another key is not affected', async (t) => {
  const { token, key, id } = await keyWithRpm('rpm-three', 3);
  for (let i = 0; i < 3; i++) t.equal((await call(key)).status, 200, `call ${i + 1} of 3`);
  const refused = await call(key);
  assertEnvelope(t, refused, 429, 'rate_limit_exceeded', 'the 4th');
  t.match(refused.body.msg, /rate_limit_rpm of 3 requests per minute/, 'the message names the per-minute limit');
  const retryAfter = Number(refused.headers['retry-after']);
  t.ok(retryAfter >= 50 && retryAfter <= 60, `Retry-After ${retryAfter} s: when the first call leaves the minute`);
  t.equal(refused.headers['x-ratelimit-limit-requests'], '3', 'the limit that refused');
  const otherKey = await gateway.createKey(token);
  t.equal((await call(otherKey)).status, 200, "the same user's other key has no such limit");

  const deleted = await rawRequest(`${gateway.url}/api/v1/api-keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  t.equal(deleted.status, 204);
  t.equal(await gateway.redis.exists(`${gateway.prefix}{u:rpm-three}:rpm:${id}`, `${gateway.prefix}{u:rpm-three}:rpmw:${id}`), 0, 'DELETE clears the per-minute window');
});

t.test('rate_limit_rpm 150 with leases: two bursts on many connections admit exactly 150', async (t) => {
  const { key } = await keyWithRpm('rpm-leased', 150);
  const burst = async (n: number) => (await Promise.all(Array.from({ length: n }, () => call(key)))).map((r) => r.status);
  const first = await burst(220);
  // Calls waiting for a lease take it in turn; they must not each open their own and strand slots.
  t.ok(first.filter((s) => s === 200).length >= 140, 'the first burst is not refused early (leases leave no slots stranded)');
  await new Promise((resolve) => setTimeout(resolve, 700)); // leases close and give back what they did not use
  const second = await burst(60);
  const all = [...first, ...second];
  t.equal(all.filter((s) => s === 200).length, 150, 'exactly the per-minute limit over both bursts');
  t.equal(all.filter((s) => s === 429).length, all.length - 150, 'every other call: 429');
});
