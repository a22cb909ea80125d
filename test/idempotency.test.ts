// Idempotency-Key on the paid POSTs (issue 26, item 5; docs/routing.md "Idempotency-Key"), over real
// HTTP against a gateway process with real Redis and Postgres and the mock vendor: a key sent 20 times
// at once runs the call once and charges once; a repeat is replayed and marked, never charged; another
// body with the key is 422; a bad key is 400; streams replay their bytes, and one too large to keep is
// 409; a task submit repeated is the same task; a refusal before admission is not kept; users' keys are
// apart; a claim left by a dead gateway lapses; the kept answers survive a restart.
import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import t, { type Test } from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { chargeOf, chatBody, parseJson } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, eventually, fastUser, sseEvents } from './helpers/http-tools.js';
import { ledgerSnapshot, usageRows } from './helpers/money-invariants.js';
import { ledgerCleanOnceTasksEnd } from './helpers/task-checks.js';
import { RedisKeys } from '../src/admission/keys.js';
import { defineScripts } from '../src/admission/scripts.js';
import { fingerprintOf } from '../src/routing/idempotency.js';

let gateway: Gateway;
let restarted: Gateway | undefined;
let users = 0;
const USD = 1_000_000_000n;
/** Small enough that a long stream does not fit, large enough for a chat answer and a task. */
const MAX_ENTRY_BYTES = 8192;
const WAIT_MS = 5000;
const ENV = {
  JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '5000/10', IDEMPOTENCY_MAX_ENTRY_BYTES: String(MAX_ENTRY_BYTES), IDEMPOTENCY_WAIT_MS: String(WAIT_MS),
  TASK_POLL_MS: '30', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50',
};

t.before(async () => {
  gateway = await startGateway({ env: ENV });
});
t.teardown(async () => {
  // The restarted process shares the first one's database and prefix; the first one drops them.
  await restarted?.close();
  await gateway?.close();
});

async function newUser(usd = '10') {
  const user = `idem-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

const newKey = () => `idem-${randomBytes(8).toString('hex')}`;

interface Answer { status: number; headers: Headers; text: string }

async function post(target: Gateway, path: string, key: string, body: string, idempotencyKey?: string): Promise<Answer> {
  const response = await fetch(`${target.v1}/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }) },
    body,
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const replayed = (answer: Answer) => answer.headers.get('idempotent-replayed') === 'true';
const upstreamCalls = (target: Gateway, marker: string) => target.mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker)).length;

/** The user's usage transactions once the ledger drained, and that the balance is the deposit less them exactly. */
async function charges(t: Test, target: Gateway, user: string, depositNano: bigint): Promise<bigint[]> {
  await target.ledgerSettled(user);
  const rows = [...(await usageRows(target, user)).values()].map((row) => row.chargeNano);
  const snapshot = await ledgerSnapshot(target, user);
  t.equal(snapshot.credits, depositNano - rows.reduce((sum, charge) => sum + charge, 0n), 'the balance is the deposit less the charges, exactly');
  t.equal(snapshot.held, 0n, 'nothing held');
  return rows;
}

t.test('one key sent 20 times at once: the upstream sees one call, every answer is the same, 19 are replays, one charge', async (t) => {
  const { user, key } = await newUser('10');
  const marker = `burst-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=4 latency_ms=400]]`, { max_tokens: 50 });
  const idem = newKey();
  const answers = await Promise.all(Array.from({ length: 20 }, () => post(gateway, 'chat/completions', key, body, idem)));
  t.same(answers.map((a) => a.status), Array(20).fill(200), 'all 200');
  t.equal(upstreamCalls(gateway, marker), 1, 'the upstream saw one call');
  t.equal(new Set(answers.map((a) => a.text)).size, 1, 'every body is the same');
  t.equal(new Set(answers.map((a) => a.headers.get('x-request-id'))).size, 1, 'one request id');
  t.equal(answers.filter(replayed).length, 19, '19 replays');
  const [first] = answers.filter((a) => !replayed(a));
  t.equal(first?.headers.get('content-type'), answers.find(replayed)?.headers.get('content-type'), 'the content type is replayed');
  const rows = await charges(t, gateway, user, 10n * USD);
  t.same(rows, [chargeOf(first!.text)], 'one charge, at the answer\'s usage');
});

t.test('a sequential repeat is replayed and not charged; another body with the key is 422; bad keys are 400', async (t) => {
  const { user, key } = await newUser('10');
  const marker = `seq-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=3]]`, { max_tokens: 20 });
  const idem = newKey();
  const first = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(first.status, 200);
  t.notOk(replayed(first), 'the first answer is not a replay');
  const again = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(again.status, 200);
  t.ok(replayed(again), 'the repeat says it is a replay');
  t.equal(again.text, first.text, 'the same body');
  t.equal(again.headers.get('x-request-id'), first.headers.get('x-request-id'), 'the same request id');
  t.equal(again.headers.get('x-ratelimit-remaining-requests'), null, 'no rate-window figures: the replay took no place in the window');
  t.equal(again.headers.get('x-should-retry'), null, 'a replayed success says nothing about retrying');
  t.equal(upstreamCalls(gateway, marker), 1, 'one upstream call');

  const other = await post(gateway, 'chat/completions', key, chatBody(`${marker} something else`, { max_tokens: 20 }), idem);
  t.equal(other.status, 422);
  t.match(parseJson(other.text), { code: 422, error: { code: 'idempotency_key_reused', param: 'Idempotency-Key' } });
  const otherPath = await post(gateway, 'responses', key, JSON.stringify({ model: 'openai/gpt-4o-mini', input: 'x' }), idem);
  t.equal(otherPath.status, 422, 'the key on another endpoint is another request too');

  const long = await post(gateway, 'chat/completions', key, body, 'k'.repeat(256));
  t.equal(long.status, 400);
  t.match(parseJson(long.text), { code: 400, error: { code: 'invalid_idempotency_key', param: 'Idempotency-Key' } });
  t.match(parseJson(long.text).msg, /256 characters/);
  t.equal((await post(gateway, 'chat/completions', key, body, 'k'.repeat(255))).status, 200, '255 characters are allowed');

  t.equal((await charges(t, gateway, user, 10n * USD)).length, 2, 'charged once per request that ran: the first and the 255-character key');
});

/** A raw HTTP/1.1 request, for a header value fetch would refuse to send. */
function rawPost(url: string, key: string, idempotencyKey: string, body: string): Promise<{ status: number; text: string }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(Buffer.from(`POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\n`
        + `idempotency-key: ${idempotencyKey}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`, 'latin1'));
    });
    let received = '';
    socket.on('data', (chunk) => { received += chunk.toString('utf8'); });
    socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(received)?.[1] ?? 0), text: received.slice(received.indexOf('\r\n\r\n') + 4) }));
    socket.on('error', reject);
  });
}

t.test('a key with a control character is 400 naming the header', async (t) => {
  const { key } = await newUser('1');
  // A tab and DEL are legal in an HTTP header value (uWS drops a connection sending other control bytes); C1 controls arrive as UTF-8.
  for (const [name, value] of [['a tab', 'abc\tdef'], ['DEL', 'abc\x7fdef'], ['U+0085', Buffer.from('abc\u0085def', 'utf8').toString('latin1')]] as const) {
    const answer = await rawPost(`${gateway.v1}/chat/completions`, key, value, chatBody('hi', { max_tokens: 5 }));
    t.equal(answer.status, 400, name);
    t.match(parseJson(answer.text), { code: 400, error: { code: 'invalid_idempotency_key', param: 'Idempotency-Key' } }, name);
  }
});

t.test('a stream is replayed as its recorded bytes; one larger than the bound is 409 on repeat, never run twice', async (t) => {
  const { user, key } = await newUser('10');
  const marker = `stream-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=5]]`, { max_tokens: 20, stream: true, stream_options: { include_usage: true } });
  const idem = newKey();
  const first = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(first.status, 200);
  t.match(first.headers.get('content-type'), /^text\/event-stream/);
  t.ok(sseEvents(first.text).includes('[DONE]'), 'the first stream ended');
  const again = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(again.status, 200);
  t.ok(replayed(again), 'marked as a replay');
  t.match(again.headers.get('content-type'), /^text\/event-stream/, 'as an event stream');
  t.equal(again.text, first.text, 'the same bytes');
  t.equal(upstreamCalls(gateway, marker), 1, 'one upstream call');

  const bigMarker = `big-${randomBytes(4).toString('hex')}`;
  const bigBody = chatBody(`${bigMarker} [[mock chunks=400]]`, { max_tokens: 1000, stream: true });
  const bigKey = newKey();
  const big = await post(gateway, 'chat/completions', key, bigBody, bigKey);
  t.equal(big.status, 200);
  t.ok(Buffer.byteLength(big.text) > MAX_ENTRY_BYTES, `the stream (${Buffer.byteLength(big.text)} bytes) is larger than the bound`);
  const bigAgain = await post(gateway, 'chat/completions', key, bigBody, bigKey);
  t.equal(bigAgain.status, 409);
  t.match(parseJson(bigAgain.text), { code: 409, error: { code: 'idempotency_replay_too_large', param: 'Idempotency-Key' } });
  t.equal(bigAgain.headers.get('x-should-retry'), 'false');
  t.equal(upstreamCalls(gateway, bigMarker), 1, 'not run again');
  t.equal((await charges(t, gateway, user, 10n * USD)).length, 2, 'one charge per stream');
});

t.test('an upstream failure is kept: its repeat is the same answer, the upstream is not called again', async (t) => {
  const { key } = await newUser('1');
  const marker = `fail-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock fail=400]]`, { max_tokens: 5 });
  const idem = newKey();
  const first = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(first.status, 400);
  const again = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(again.status, 400);
  t.ok(replayed(again));
  t.equal(again.text, first.text);
  t.equal(again.headers.get('x-should-retry'), 'false', 'a replayed failure tells SDKs not to retry it');
  t.equal(upstreamCalls(gateway, marker), 1);
});

t.test('a task submit repeated returns the same task, held and charged once', async (t) => {
  const { user, key } = await newUser('10');
  const body = JSON.stringify({ model: 'minimax/speech-2.6-hd', input: `hello there [[mock job_ms=200]] ${randomBytes(4).toString('hex')}` });
  const idem = newKey();
  const first = await post(gateway, 'audio/speech', key, body, idem);
  t.equal(first.status, 200, first.text);
  const again = await post(gateway, 'audio/speech', key, body, idem);
  t.equal(again.status, 200);
  t.ok(replayed(again));
  const id = parseJson(first.text).id;
  t.equal(parseJson(again.text).id, id, 'the same task id');
  t.equal(again.headers.get('x-request-id'), id);
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 1, 'one task');
  await ledgerCleanOnceTasksEnd(t, gateway);
  t.equal((await charges(t, gateway, user, 10n * USD)).length, 1, 'one charge');
});

t.test('a refusal before admission is not kept: after a top-up the same key runs', async (t) => {
  const { user, key } = await newUser('0');
  const marker = `broke-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=2]]`, { max_tokens: 10 });
  const idem = newKey();
  const refused = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(refused.status, 402);
  await gateway.topup(user, '1');
  const served = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(served.status, 200, served.text);
  t.notOk(replayed(served), 'it ran, it was not replayed');
  t.equal(upstreamCalls(gateway, marker), 1);
  const again = await post(gateway, 'chat/completions', key, body, idem);
  t.ok(replayed(again), 'now it is kept');
  t.equal((await charges(t, gateway, user, USD)).length, 1);
});

t.test("another user's same Idempotency-Key value is independent", async (t) => {
  const a = await newUser('1');
  const b = await newUser('1');
  const marker = `users-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=2]]`, { max_tokens: 10 });
  const idem = newKey();
  const first = await post(gateway, 'chat/completions', a.key, body, idem);
  const second = await post(gateway, 'chat/completions', b.key, body, idem);
  t.equal(first.status, 200);
  t.equal(second.status, 200);
  t.notOk(replayed(second), "the second user's request ran");
  t.not(second.headers.get('x-request-id'), first.headers.get('x-request-id'));
  t.equal(upstreamCalls(gateway, marker), 2);
  t.equal((await charges(t, gateway, a.user, USD)).length, 1);
  t.equal((await charges(t, gateway, b.user, USD)).length, 1);
});

/** A claim on `idem` held by a gateway that died mid-request, lapsing after `lifeMs`. */
async function deadClaim(user: string, idem: string, path: string, body: string, lifeMs: number): Promise<void> {
  const record = new RedisKeys(gateway.prefix).idempotency(user, createHash('sha256').update(idem).digest('hex'));
  const redis = defineScripts(gateway.redis);
  const [code] = await redis.idempotency_claim(record, fingerprintOf('post', path, Buffer.from(body)), 'a-dead-gateway', lifeMs);
  if (code !== 0) throw new Error(`claim refused: ${code}`);
}

t.test('a repeat waits for a running first request, then is 409 with Retry-After; a dead claim lapses and the key runs', async (t) => {
  const { user, key } = await newUser('1');
  const body = chatBody(`waiting [[mock chunks=2]] ${randomBytes(4).toString('hex')}`, { max_tokens: 10 });
  const held = newKey();
  await deadClaim(user, held, '/v1/chat/completions', body, 60_000);
  const busy = await post(gateway, 'chat/completions', key, body, held);
  t.equal(busy.status, 409);
  t.match(parseJson(busy.text), { code: 409, error: { code: 'idempotency_in_progress', param: 'Idempotency-Key' } });
  t.equal(busy.headers.get('retry-after'), '1');

  const lapsing = newKey();
  await deadClaim(user, lapsing, '/v1/chat/completions', body, 500);
  const served = await post(gateway, 'chat/completions', key, body, lapsing);
  t.equal(served.status, 200, 'served once the dead claim lapsed, within the wait');
  t.notOk(replayed(served));
  t.equal((await charges(t, gateway, user, USD)).length, 1);
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});

t.test('kept answers survive a gateway restart', async (t) => {
  const { key } = await newUser('1');
  const marker = `restart-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`${marker} [[mock chunks=2]]`, { max_tokens: 10 });
  const idem = newKey();
  const first = await post(gateway, 'chat/completions', key, body, idem);
  t.equal(first.status, 200);
  t.ok(await eventually(async () => replayed(await post(gateway, 'chat/completions', key, body, idem))), 'kept before the restart');
  await gateway.stop();
  restarted = await startGateway({ mock: gateway.mock, shared: { database: gateway.database, prefix: gateway.prefix }, env: ENV });
  const again = await post(restarted, 'chat/completions', key, body, idem);
  t.equal(again.status, 200);
  t.ok(replayed(again), 'replayed by the new process');
  t.equal(again.text, first.text);
  t.equal(upstreamCalls(gateway, marker), 1);
});
