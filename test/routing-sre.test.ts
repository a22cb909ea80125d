// What an SRE and a client see of a call's attempts (issue 26, item 7; docs/routing.md "What a client
// sees", "What an SRE sees"), against a real gateway, Redis and Postgres, the mock vendor failing per
// credential: the request log's `attempts` of a call served on its second attempt (and of one whose
// every attempt failed), `x-gateway-attempts` counting the caller's own (BYOK) attempts before the
// platform's, the Idempotency-Key replay and refusal counters on /metrics, and the migration that adds
// the column (older rows count one).
import t from 'tap';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { chatBody, eventually, parseJson, postChat } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, fastUser, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { RedisKeys } from '../src/admission/keys.js';
import { defineScripts } from '../src/admission/scripts.js';
import { fingerprintOf } from '../src/routing/idempotency.js';
import { databaseBefore } from './helpers/migrations.js';
import { migrate } from '../src/store/migrate.js';

/** A model routed to two targets by priority: `sre-first` is always tried first. */
const ROUTED = 'openai/gpt-4.1';
const CHAT = '/v1/chat/completions';
const WAIT_MS = 300;
let mock: MockVendor;
let gateway: Gateway;
let users = 0;

t.before(async () => {
  mock = await startMockVendor({ port: 0 });
  const file = join(mkdtempSync(join(tmpdir(), 'routing-sre-test-')), 'routing.yaml');
  writeFileSync(file, `
models:
  ${ROUTED}:
    targets:
      - { name: sre-first, vendor: openai, api_key: sre-first-key, priority: 1 }
      - { name: sre-second, vendor: openai, api_key: sre-second-key }
`);
  gateway = await startGateway({
    mock,
    threads: 2,
    env: {
      // The first target never cools down here: every call tries it first.
      ROUTING_FILE: file, ROUTING_BREAKER_FAILURES: '1000', JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/1',
      IDEMPOTENCY_WAIT_MS: String(WAIT_MS),
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
});

async function newUser(usd = '5') {
  const user = `sre-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

t.test('the request logs written before the attempts column count one attempt', async (t) => {
  const sql = await databaseBefore(t, '0010');
  const id = randomUUID();
  await sql`insert into request_logs (id, created_at, user_id, model, endpoint, stream, status) values (${id}, now(), 'u', 'm', 'chat.completions', false, 200)`;
  t.ok((await migrate(sql)).includes('0010_request_log_attempts.sql'), 'the migration ran');
  const [row] = await sql<{ attempts: number }[]>`select attempts from request_logs where id = ${id}`;
  t.equal(row?.attempts, 1);
});

interface LogRow { attempts: number; status: number; error_code: string | null; charged: boolean }

/** The request log row of a call id, once the ledger writer has written it. */
function logRow(id: string): Promise<LogRow> {
  return eventually(`the request log of ${id}`, async () => {
    const [row] = await gateway.sql<LogRow[]>`select attempts, status, error_code, cost_nano > 0 as charged from request_logs where id = ${id}`;
    return row;
  }, 15_000);
}

/** The request log row of the user's call that ended with `errorCode` (an error answer has no x-request-id). */
function logRowOf(user: string, errorCode: string): Promise<LogRow> {
  return eventually(`the ${errorCode} request log of ${user}`, async () => {
    const [row] = await gateway.sql<LogRow[]>`select attempts, status, error_code, cost_nano > 0 as charged from request_logs where user_id = ${user} and error_code = ${errorCode}`;
    return row;
  }, 15_000);
}

const counts = (credential: string) => ({ ...mock.faultCounts(credential) });

t.test('the request log counts a call\'s attempts: 1 when the first target served, 2 when the second did', async (t) => {
  const { key } = await newUser();
  const body = JSON.stringify({ model: ROUTED, messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 });

  const first = await postChat(gateway, key, body);
  t.equal(first.status, 200, first.text);
  t.equal(first.headers.get('x-gateway-attempts'), '1');
  const firstRow = await logRow(first.headers.get('x-request-id')!);
  t.equal(firstRow.attempts, 1, 'served by the first target: one attempt');

  mock.setFaults({ 'sre-first-key': { kind: 503 } });
  const faulted = counts('sre-first-key').faulted;
  const second = await postChat(gateway, key, body);
  const streamed = await postChat(gateway, key, JSON.stringify({ model: ROUTED, stream: true, messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 }));
  mock.setFaults({});
  t.equal(second.status, 200, second.text);
  t.equal(second.headers.get('x-gateway-attempts'), '2');
  t.equal(counts('sre-first-key').faulted - faulted, 2, 'the first target failed both calls');
  const row = await logRow(second.headers.get('x-request-id')!);
  t.match(row, { attempts: 2, status: 200, error_code: null }, 'served on the second attempt: attempts 2 in its request log');
  t.equal(row.charged, true, 'and charged');
  t.equal(streamed.status, 200);
  t.equal(streamed.headers.get('x-gateway-attempts'), '2');
  t.equal((await logRow(streamed.headers.get('x-request-id')!)).attempts, 2, 'a stream too');
});

t.test('a call whose every attempt failed logs them all', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'sre-first-key': { kind: 502 }, 'sre-second-key': { kind: 502 } });
  const failed = await postChat(gateway, key, JSON.stringify({ model: ROUTED, messages: [{ role: 'user', content: 'nobody' }], max_tokens: 20 }));
  mock.setFaults({});
  t.equal(failed.status, 503, failed.text);
  t.equal(failed.headers.get('x-gateway-attempts'), '2');
  t.match(await logRowOf(user, 'upstream_unavailable'), { attempts: 2, status: 503, charged: false }, 'its request log counts both attempts');
});

/** Adds a BYOK row of `provider` openai for the user of `token`. */
async function ownKey(token: string, apiKey: string, alwaysUse = false): Promise<void> {
  const created = await fetch(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'own', api_key: apiKey, always_use: alwaysUse }),
  });
  if (created.status !== 201) throw new Error(`BYOK row: ${created.status} ${await created.text()}`);
}

const ownApiKey = () => `sk-proj-sre${randomBytes(16).toString('hex')}`;

t.test('x-gateway-attempts counts the caller\'s own attempts: own key failed, platform served = 2', async (t) => {
  const { user, key, token } = await newUser();
  const own = ownApiKey();
  await ownKey(token, own);
  mock.setFaults({ [own]: { kind: 503 } });
  const platform = counts('test-openai-key').served;
  const response = await postChat(gateway, key, chatBody('mine first'));
  mock.setFaults({});
  t.equal(response.status, 200, response.text);
  t.equal(counts(own).faulted, 1, 'the own key was tried and failed');
  t.equal(counts('test-openai-key').served, platform + 1, 'the platform credential served');
  t.equal(response.headers.get('x-gateway-attempts'), '2', 'one attempt on the own key, one on the platform');
  const row = await logRow(response.headers.get('x-request-id')!);
  t.match(row, { attempts: 2, status: 200 }, 'the served call\'s request log counts both');
  t.equal(row.charged, true, 'charged: the platform served');
  t.match(await logRowOf(user, 'byok_fallback'), { attempts: 1, status: 503, charged: false }, 'the own attempts\' row counts those only');
});

t.test('a call served by the caller\'s own key carries x-gateway-attempts: 1; always_use failing carries its count', async (t) => {
  const served = await newUser();
  const own = ownApiKey();
  await ownKey(served.token, own);
  const response = await postChat(gateway, served.key, chatBody('mine'));
  t.equal(response.status, 200, response.text);
  t.equal(counts(own).served, 1, 'the own key served');
  t.equal(response.headers.get('x-gateway-attempts'), '1');
  t.match(await logRow(response.headers.get('x-request-id')!), { attempts: 1, status: 200, charged: false });

  const only = await newUser();
  const mine = ownApiKey();
  await ownKey(only.token, mine, true);
  mock.setFaults({ [mine]: { kind: 503 } });
  const refused = await postChat(gateway, only.key, chatBody('mine only'));
  mock.setFaults({});
  t.equal(refused.status, 503, refused.text);
  t.equal(refused.headers.get('x-gateway-attempts'), '1', 'the one attempt on the own key');
});

async function scrape(): Promise<(name: string, labels: Record<string, string>) => number> {
  const samples = parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text());
  return (name, labels) => sumSamples(samples, name, labels);
}

async function post(key: string, body: string, idempotencyKey: string) {
  const response = await fetch(`${gateway.url}${CHAT}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey }, body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

t.test('Idempotency-Key repeats on /metrics: a replay, a key reused, a repeat while the first runs', async (t) => {
  const { user, key } = await newUser();
  const route = { route: CHAT };
  const replays = () => scrape().then((read) => read('gateway_idempotency_replays_total', route));
  const refusals = (code: string) => scrape().then((read) => read('gateway_idempotency_refusals_total', { ...route, code }));

  const body = chatBody(`once ${randomBytes(4).toString('hex')}`, { max_tokens: 20 });
  const idem = `sre-${randomBytes(8).toString('hex')}`;
  const before = await replays();
  const plain = await postChat(gateway, key, body);
  t.equal(plain.status, 200, 'a call without the header');
  const first = await post(key, body, idem);
  t.equal(first.status, 200, first.text);
  t.equal(first.headers.get('idempotent-replayed'), null, 'the first runs');
  t.equal(await replays(), before, 'neither a call without the header nor a first request is a replay');
  const again = await post(key, body, idem);
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'the repeat is replayed');
  t.equal(again.text, first.text);
  t.equal(await replays(), before + 1, 'one replay counted');

  const reusedBefore = await refusals('idempotency_key_reused');
  const other = await post(key, chatBody('another body', { max_tokens: 20 }), idem);
  t.equal(other.status, 422);
  t.equal(parseJson(other.text).error.code, 'idempotency_key_reused');
  t.equal(await refusals('idempotency_key_reused'), reusedBefore + 1, 'the key reused is counted by its code');

  // A claim held by a request that is still running (a gateway that died mid-request, here).
  const held = `sre-held-${randomBytes(8).toString('hex')}`;
  const record = new RedisKeys(gateway.prefix).idempotency(user, createHash('sha256').update(held).digest('hex'));
  const [code] = await defineScripts(gateway.redis).idempotency_claim(record, fingerprintOf('post', CHAT, Buffer.from(body)), 'a-dead-gateway', 60_000);
  t.equal(code, 0, 'claimed');
  const busyBefore = await refusals('idempotency_in_progress');
  const busy = await post(key, body, held);
  t.equal(busy.status, 409, busy.text);
  t.equal(parseJson(busy.text).error.code, 'idempotency_in_progress');
  t.equal(await refusals('idempotency_in_progress'), busyBefore + 1, 'the repeat still waiting is counted');
  t.equal(await replays(), before + 1, 'refusals are not replays');
});
