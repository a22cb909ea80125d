// ip_whitelist: the address ranges (pure), the client address behind trusted proxies (pure), and over
// HTTP: 403 outside the whitelist on inference and billing, a forged X-Forwarded-For ignored unless the
// peer is a trusted proxy, and a PUT of the whitelist in force on the next request.
import t, { type Test } from 'tap';
import { IpRanges, clientAddress, isIpv4OrCidr } from '../src/auth/ip-ranges.js';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';

t.test('IpRanges: addresses, CIDRs, edges, IPv4-mapped IPv6, and nothing else', async (t) => {
  const ranges = new IpRanges(['10.0.0.0/8', '192.168.1.7', '172.16.0.0/12', '0.0.0.0/32']);
  for (const inside of ['10.0.0.0', '10.255.255.255', '192.168.1.7', '172.31.255.255', '::ffff:10.1.2.3', '0.0.0.0']) t.ok(ranges.contains(inside), `${inside} inside`);
  for (const outside of ['11.0.0.0', '9.255.255.255', '192.168.1.8', '172.32.0.0', '::1', 'fe80::1', '', 'localhost', '10.0.0', '10.0.0.256']) t.notOk(ranges.contains(outside), `${JSON.stringify(outside)} outside`);
  t.ok(new IpRanges(['0.0.0.0/0']).contains('203.0.113.9'), '/0 holds every IPv4 address');
  t.notOk(new IpRanges(['0.0.0.0/0']).contains('2001:db8::1'), 'but no IPv6 address');
  t.ok(new IpRanges([]).empty);
  t.throws(() => new IpRanges(['10.0.0.0/33']), 'a bad entry is refused when compiled');
  for (const bad of ['10.0.0.0/33', '10.0.0/8', '1.2.3.4/8/1', '01.2.3.4', '::1', '10.0.0.0/', '']) t.notOk(isIpv4OrCidr(bad), `${JSON.stringify(bad)} is not IPv4 or CIDR`);
});

t.test('clientAddress: the peer, unless it is a trusted proxy; then the nearest untrusted hop', async (t) => {
  const proxies = new IpRanges(['127.0.0.1', '10.0.0.0/8']);
  t.equal(clientAddress('203.0.113.5', '1.2.3.4', proxies), '203.0.113.5', 'an untrusted peer: X-Forwarded-For ignored');
  t.equal(clientAddress('127.0.0.1', '', proxies), '127.0.0.1', 'a proxy without the header');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7', proxies), '198.51.100.7');
  t.equal(clientAddress('::ffff:127.0.0.1', '1.1.1.1, 198.51.100.7, 10.2.3.4', proxies), '198.51.100.7', 'forged left entries do not count');
  t.equal(clientAddress('127.0.0.1', '10.0.0.9, 10.1.1.1', proxies), '10.0.0.9', 'only proxies: the leftmost');
  t.equal(clientAddress('127.0.0.1', '198.51.100.7', new IpRanges([])), '127.0.0.1', 'no trusted proxies: always the peer');
});

async function gatewayWith(t: Test, trustedProxies: string): Promise<Gateway> {
  const gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, TRUSTED_PROXIES: trustedProxies } });
  t.teardown(() => gateway.close());
  return gateway;
}

const call = (gateway: Gateway, key: string, forwardedFor?: string) => rawRequest(`${gateway.url}/v1/chat/completions`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
  body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[mock chunks=1]]' }] }),
});
const balance = (gateway: Gateway, key: string, forwardedFor?: string) => rawRequest(`${gateway.url}/api/v1/billing/balance`, {
  headers: { authorization: `Bearer ${key}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
});
async function whitelist(gateway: Gateway, token: string, entries: string[]): Promise<void> {
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { ip_whitelist: entries });
}

t.test('without trusted proxies: the socket address decides, a forged X-Forwarded-For changes nothing', async (t) => {
  const gateway = await gatewayWith(t, '');
  const { token, key } = await fastUser(gateway, 'ip-direct', '2');
  t.equal((await call(gateway, key)).status, 200, 'no whitelist: any address');
  await whitelist(gateway, token, ['10.0.0.0/8']);
  for (let i = 0; i < 4; i++) {
    const refused = await call(gateway, key, '10.1.2.3');
    assertEnvelope(t, refused, 403, 'ip_not_allowed', `127.0.0.1 is outside 10.0.0.0/8 (call ${i}, forged header ignored)`);
  }
  assertEnvelope(t, await balance(gateway, key), 403, 'ip_not_allowed', 'billing with the key is refused too');
  t.equal((await balance(gateway, token)).status, 200, 'the dashboard JWT is not an API key: no whitelist');
  await whitelist(gateway, token, ['10.0.0.0/8', '127.0.0.1']);
  for (let i = 0; i < 4; i++) t.equal((await call(gateway, key)).status, 200, `127.0.0.1 added: allowed at once (call ${i})`);
  await whitelist(gateway, token, []);
  t.equal((await call(gateway, key)).status, 200, 'an empty whitelist lifts the restriction');
});

t.test('behind a trusted proxy: X-Forwarded-For names the client', async (t) => {
  const gateway = await gatewayWith(t, '127.0.0.1');
  const { token, key } = await fastUser(gateway, 'ip-proxied', '2');
  await whitelist(gateway, token, ['198.51.100.0/24']);
  t.equal((await call(gateway, key, '198.51.100.7')).status, 200, 'the forwarded client is inside');
  t.equal((await balance(gateway, key, '203.0.113.1, 198.51.100.7')).status, 200, 'the nearest untrusted hop counts, not the leftmost');
  assertEnvelope(t, await call(gateway, key, '203.0.113.9'), 403, 'ip_not_allowed', 'a forwarded client outside');
  assertEnvelope(t, await call(gateway, key, '198.51.100.7, 203.0.113.9'), 403, 'ip_not_allowed', 'a left entry inside does not help');
  assertEnvelope(t, await call(gateway, key), 403, 'ip_not_allowed', 'no header: the proxy itself is the client');
});
