// The routing layer against a real gateway, Redis and Postgres, the mock vendor playing faults per
// credential: a key pool, a model served by two deployments, retries before the first byte only,
// breakers that cool a failing target down and probe it again, and money charged once per call.
import t from 'tap';
import { many } from './helpers/http-tools.js';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { chargeOf, chatBody, eventually, leasesClosed, parseJson, postChat, sampleAvailable, sseData, usdToNano } from './helpers/billing-checks.js';

const COOLDOWN_MS = 1000;
const CLAUDE = 'anthropic/claude-haiku-4-5';
const SLOW = 'openai/gpt-4.1';
let mock: MockVendor;
let gateway: Gateway;
/** The key whose calls close breakers between tests (its own user: the tests' money stays theirs). */
let healer: string | undefined;

t.before(async () => {
  mock = await startMockVendor({ port: 0 });
  const dir = mkdtempSync(join(tmpdir(), 'routing-test-'));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, `
vendors:
  openai:
    targets:
      - { name: pool-a, api_key_env: POOL_A_KEY, base_url: ${mock.url}/openai/v1 }
      - { name: pool-b, api_key: pool-b-key, base_url: ${mock.url}/openai/v1 }
models:
  ${CLAUDE}:
    targets:
      - { name: claude-first, vendor: anthropic, api_key: claude-first-key, priority: 1 }
      - { name: claude-second, vendor: anthropic, api_key: claude-second-key }
  ${SLOW}:
    targets:
      - { name: slow-first, vendor: openai, api_key: slow-first-key, priority: 1, head_timeout_ms: 300 }
      - { name: slow-second, vendor: openai, api_key: slow-second-key }
`);
  gateway = await startGateway({
    mock,
    threads: 2,
    env: {
      ROUTING_FILE: file, POOL_A_KEY: 'pool-a-key', ROUTING_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS), ROUTING_BREAKER_FAILURES: '3',
      RATE_LIMIT_DEFAULT: '1000000/1', LOG_LEVEL: 'info',
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
});

const counts = (credential: string) => ({ ...mock.faultCounts(credential) });
async function metric(pattern: RegExp): Promise<number | undefined> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const line = text.split('\n').find((l) => pattern.test(l));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

/** Heals every credential and waits for every breaker to close again (a probe once each is due). */
async function heal(): Promise<void> {
  const key = (healer ??= (await gateway.user('routing-healer', '5')).key);
  mock.setFaults({});
  await eventually('every breaker to close', async () => {
    await many(4, 2, () => postChat(gateway, key, chatBody('heal')));
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const states = text.split('\n').filter((l) => l.startsWith('gateway_routing_breaker_state{'));
    return states.length > 0 && states.every((l) => l.endsWith(' 0')) ? true : undefined;
  }, 15_000);
}

t.test('a pool where one key answers 429 every time: every call served by the other, the first cooled down', async (t) => {
  const { key } = await gateway.user('routing-429', '5');
  mock.setFaults({ 'pool-a-key': { kind: 429, retryAfterSeconds: 5 } });
  const before = { a: counts('pool-a-key'), b: counts('pool-b-key') };
  const results = await many(40, 4, () => postChat(gateway, key, chatBody('hello')));
  t.same(results.map((r) => r.status), results.map(() => 200), 'every call answered 200');
  const attempts = results.map((r) => Number(r.headers.get('x-gateway-attempts')));
  t.ok(attempts.every((n) => n === 1 || n === 2), `one or two attempts each (${attempts.join(',')})`);
  const a = counts('pool-a-key');
  const b = counts('pool-b-key');
  t.equal(b.served - before.b.served, 40, 'the healthy key served every call');
  t.equal(a.served - before.a.served, 0);
  const hits = a.faulted - before.a.faulted;
  t.ok(hits >= 1 && hits <= 4, `the failing key got the calls in flight when it first answered 429, then none (${hits})`);
  t.equal(attempts.filter((n) => n === 2).length, hits, 'each 429 cost its call one more attempt');
  t.equal(await metric(/^gateway_routing_breaker_state\{target="pool-a"\}/), 2, 'its breaker is open');
  t.ok((await metric(/^gateway_routing_attempts_total\{target="pool-a",outcome="failed"\}/))! >= 1);
  t.match(gateway.output, /upstream attempt failed.*pool-a/, 'a log line names the target');
  t.notMatch(gateway.output, /pool-a-key|pool-b-key/, 'never a credential in the logs');
});

t.test('a breaker opened by consecutive failures is probed once after its cooldown and closes', async (t) => {
  const { key } = await gateway.user('routing-probe', '5');
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 503 } });
  await many(30, 2, () => postChat(gateway, key, chatBody('fail')));
  t.equal(await metric(/^gateway_routing_breaker_state\{target="pool-a"\}/), 2, 'open after 3 failures in a row');
  const cooled = counts('pool-a-key');
  const during = await many(20, 2, () => postChat(gateway, key, chatBody('cooled')));
  t.ok(during.every((r) => r.status === 200 && r.headers.get('x-gateway-attempts') === '1'), 'served by the other at once');
  t.equal(counts('pool-a-key').faulted, cooled.faulted, 'the cooled-down key gets no call');
  mock.setFaults({});
  await new Promise((r) => setTimeout(r, COOLDOWN_MS + 50));
  t.equal(await metric(/^gateway_routing_breaker_state\{target="pool-a"\}/), 1, 'half-open once due');
  const served = counts('pool-a-key').served;
  await eventually('the probe to serve', async () => {
    await postChat(gateway, key, chatBody('probe'));
    return counts('pool-a-key').served > served ? true : undefined;
  });
  t.equal(await metric(/^gateway_routing_breaker_state\{target="pool-a"\}/), 0, 'closed by the successful probe');
  t.ok((await metric(/^gateway_routing_breaker_transitions_total\{target="pool-a",state="half_open"\}/))! >= 1);
});

t.test('one target failing 30 % of the time: at least 99.9 % of 2,000 calls served, each charged once', async (t) => {
  const user = 'routing-thirty';
  const { key } = await gateway.user(user, '2');
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 503, rate: 0.3 } });
  const results = await many(2000, 16, () => postChat(gateway, key, chatBody('small')));
  mock.setFaults({});
  const ok = results.filter((r) => r.status === 200);
  t.ok(ok.length >= 1998, `${ok.length} of 2000 served`);
  t.ok(results.some((r) => r.headers.get('x-gateway-attempts') === '2'), 'some took a second attempt');
  const charged = ok.reduce((sum, r) => sum + chargeOf(r.text), 0n);
  await gateway.ledgerSettled(user, 30_000);
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(money.usageTransactions, ok.length, 'one charge per served call, none for failed attempts');
  t.equal(usdToNano(2) - money.ledgerSum, charged, 'the ledger holds exactly the charges of the answers');
  t.equal(money.credits, money.ledgerSum, 'Redis and the ledger agree');
  t.ok(money.credits >= 0n);
  const check = await gateway.cli('ledger', 'check');
  t.match(check, /^ledger check: ok /, 'gateway ledger check passes (cli throws on a non-zero exit)');
});

t.test('a small balance spent through a pool with a target failing 30 % of the time: no overspend, no double charge', async (t) => {
  const user = 'routing-small';
  const { key } = await gateway.user(user, '0.001');
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 503, rate: 0.3 } });
  const sampler = sampleAvailable(gateway, user);
  const results = await many(200, 16, () => postChat(gateway, key, chatBody('small', { max_tokens: 50 })));
  const seen = await sampler.stop();
  mock.setFaults({});
  const ok = results.filter((r) => r.status === 200);
  t.ok(ok.length > 0 && ok.length < 200, `the balance ran out part way (${ok.length} served)`);
  t.same([...new Set(results.filter((r) => r.status !== 200).map((r) => r.status))], [402], 'the others were refused for credit, not failed upstream');
  t.ok(seen.min >= 0n, `the available balance never went below zero (${seen.min} over ${seen.samples} samples)`);
  const charged = ok.reduce((sum, r) => sum + chargeOf(r.text), 0n);
  await gateway.ledgerSettled(user, 30_000);
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(money.usageTransactions, ok.length, 'one charge per served call');
  t.equal(usdToNano(0.001) - money.ledgerSum, charged, 'exactly the charges of the answers');
  t.ok(money.credits >= 0n);
});

t.test('a stream that fails after its first chunk is not retried', async (t) => {
  const { key } = await gateway.user('routing-cut', '5');
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 'cut', afterChunks: 1 }, 'pool-b-key': { kind: 'cut', afterChunks: 1 } });
  const before = counts('pool-a-key').faulted + counts('pool-b-key').faulted;
  const response = await postChat(gateway, key, chatBody('tell me a long story', { stream: true }));
  mock.setFaults({});
  t.equal(response.status, 200, 'the stream had begun');
  t.equal(response.headers.get('x-gateway-attempts'), '1');
  const events = sseData(response.text);
  t.ok(events.length >= 2, 'the first chunk reached the client');
  t.match(events.at(-1), /upstream_stream_broken/, 'then the stream error event');
  t.equal(counts('pool-a-key').faulted + counts('pool-b-key').faulted - before, 1, 'one attempt only');
});

t.test('an Anthropic model served by its second deployment when the first answers 529', async (t) => {
  const { key } = await gateway.user('routing-529', '5');
  mock.setFaults({ 'claude-first-key': { kind: 529 } });
  const second = counts('claude-second-key').served;
  const response = await postChat(gateway, key, JSON.stringify({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] }));
  t.equal(response.status, 200, response.text);
  t.equal(response.headers.get('x-gateway-attempts'), '2');
  t.equal(parseJson(response.text).model, CLAUDE);
  t.equal(counts('claude-first-key').faulted >= 1, true);
  t.equal(counts('claude-second-key').served, second + 1, 'the second deployment served');
  mock.setFaults({});
});

t.test('the Responses endpoint takes the same attempts', async (t) => {
  const { key } = await gateway.user('routing-responses', '5');
  mock.setFaults({ 'claude-first-key': { kind: 503 } });
  const second = counts('claude-second-key').served;
  const response = await fetch(`${gateway.v1}/responses`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: CLAUDE, input: 'hi' }),
  });
  mock.setFaults({});
  const text = await response.text();
  t.equal(response.status, 200, text);
  t.equal(response.headers.get('x-gateway-attempts'), '2');
  t.equal(parseJson(text).object, 'response');
  t.equal(counts('claude-second-key').served, second + 1);
});

t.test('a target that sends no response head within its head_timeout_ms is left for the next', async (t) => {
  const { key } = await gateway.user('routing-hang', '5');
  mock.setFaults({ 'slow-first-key': { kind: 'hang' } });
  const second = counts('slow-second-key').served;
  for (const stream of [false, true]) {
    const response = await postChat(gateway, key, JSON.stringify({ model: SLOW, stream, messages: [{ role: 'user', content: 'hi' }] }));
    t.equal(response.status, 200, response.text.slice(0, 300));
    t.equal(response.headers.get('x-gateway-attempts'), '2', `stream ${stream}: the second attempt served`);
  }
  mock.setFaults({});
  t.equal(counts('slow-first-key').faulted, 2, 'the first target got both calls and never answered');
  t.equal(counts('slow-second-key').served, second + 2);
  t.match(gateway.output, /upstream attempt failed.*slow-first.*no response head within 300 ms/);
});

t.test('a non-retryable answer is returned at once', async (t) => {
  const { key } = await gateway.user('routing-400', '5');
  mock.setFaults({ 'claude-first-key': { kind: 400 } });
  const second = counts('claude-second-key');
  const response = await postChat(gateway, key, JSON.stringify({ model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] }));
  mock.setFaults({});
  t.equal(response.status, 400, response.text);
  t.equal(response.headers.get('x-gateway-attempts'), '1');
  t.same(counts('claude-second-key'), second, 'no other target tried');
});

t.test('BYOK with always_use does not fall back to the platform targets', async (t) => {
  const { key, token } = await gateway.user('routing-byok', '5');
  await heal();
  const own = 'sk-proj-routingbyokabcdefghijklmnopqrstuvwxyz0123';
  const created = await fetch(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'own', api_key: own, always_use: true }),
  });
  t.equal(created.status, 201, await created.text());
  mock.setFaults({ [own]: { kind: 503 } });
  const pool = counts('pool-a-key').served + counts('pool-b-key').served;
  const response = await postChat(gateway, key, chatBody('mine only'));
  mock.setFaults({});
  t.equal(response.status, 503, response.text);
  t.equal(counts(own).faulted, 1, 'the own key was tried');
  t.equal(counts('pool-a-key').served + counts('pool-b-key').served, pool, 'no platform target was');
});

t.test('every target failing: 503 naming the last upstream error; all rate limited: the last 429 with its Retry-After', async (t) => {
  const { key } = await gateway.user('routing-all', '5');
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 502 }, 'pool-b-key': { kind: 502 } });
  const failed = await postChat(gateway, key, chatBody('nobody'));
  t.equal(failed.status, 503, failed.text);
  t.equal(failed.headers.get('x-gateway-attempts'), '2');
  const body = parseJson(failed.text);
  t.equal(body.error.code, 'upstream_unavailable');
  t.match(body.msg, /after 2 attempts.*502/);
  await heal();
  mock.setFaults({ 'pool-a-key': { kind: 429, retryAfterSeconds: 7 }, 'pool-b-key': { kind: 429, retryAfterSeconds: 7 } });
  const limited = await postChat(gateway, key, chatBody('nobody'));
  mock.setFaults({});
  t.equal(limited.status, 429, limited.text);
  t.equal(limited.headers.get('retry-after'), '7');
  t.equal(limited.headers.get('x-gateway-attempts'), '2');
  const next = await postChat(gateway, key, chatBody('both cooled down'));
  t.equal(next.status, 200, 'never refused only because every breaker is open: the one due soonest is tried');
});
