// Every request made with an API key counts in one of its key's windows whatever its answer (issue
// 24, item 8). Calls that run a model: refusals for credit (402 insufficient_credits) or for the key's
// credit limit (402 credit_limit_exceeded) take their slot, so the 21st request in 10 s is 429
// whatever the earlier answers were; a request answered before admission (a malformed body, a
// replayed Idempotency-Key) is counted afterwards with one cheap call (Admission.countRequest,
// count.lua), which admission then sees. Every other request is counted before its work: writes
// (task cancels, BYOK rows, key management, with a regular or a management key) in the default
// window, so past it they get 429 without doing anything (a BYOK row's host is not even resolved);
// reads (GET) in a read window of their own (RATE_LIMIT_READS), which a full default window does not
// touch. Requests made with a dashboard JWT count in neither. Video and audio submits resolve the hosts
// of their callback_url and image URLs only once admitted: a full window (or no money) refuses them first.
import t from 'tap';
import type { Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, mintToken, newestKeyId, rawRequest, updateKey, type RawResponse } from './helpers/http-tools.js';
import { NO_KEY_LIMITS } from '../src/admission/scripts.js';
import { luaTestbed } from './helpers/lua-testbed.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };

let gateway: Gateway;
/** Lowered windows: 5 writes and 8 reads per 10 s per key. */
let low: Gateway;
const LOW_WRITES = 5;
const LOW_READS = 8;
t.before(async () => {
  // The default window: 20 requests per 10 s per key.
  [gateway, low] = await Promise.all([
    startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } }),
    startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: `${LOW_WRITES}/10`, RATE_LIMIT_READS: `${LOW_READS}/10` } }),
  ]);
});
t.teardown(() => Promise.all([gateway.close(), low.close()]));

/** `count` requests one after another; their statuses and error codes. */
async function burst(key: string, count: number): Promise<string[]> {
  const answers: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
    answers.push(`${response.status} ${response.body?.error?.code ?? ''}`.trim());
  }
  return answers;
}

t.test('a $0 account: 20 answers of 402, then 429, whatever the earlier answers were', async (t) => {
  const { key } = await fastUser(gateway, 'zero', '0');
  const answers = await burst(key, 25);
  t.same(answers, [...Array(20).fill('402 insufficient_credits'), ...Array(5).fill('429 rate_limit_exceeded')]);
});

t.test("refusals for the key's credit limit count the same", async (t) => {
  const { key, token } = await fastUser(gateway, 'capped', '1');
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { credit_limit: 0.000001 });
  const answers = await burst(key, 22);
  t.same(answers, [...Array(20).fill('402 credit_limit_exceeded'), ...Array(2).fill('429 rate_limit_exceeded')]);
});

t.test('requests refused before admission (a malformed body, an unknown model) take their slot too', async (t) => {
  const { key } = await fastUser(gateway, 'malformed', '1');
  const answers: string[] = [];
  for (let i = 0; i < 20; i++) {
    const body = i % 2 === 0 ? { ...CHAT, max_tokens: -1 } : { ...CHAT, model: 'nobody/no-such-model' };
    const response = await postJson(`${gateway.v1}/chat/completions`, key, body);
    answers.push(String(response.status));
  }
  t.same(answers, Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? '400' : '404')), 'twenty refusals');
  // The counts leave with the thread's next batch of scripts: the request after them may go out in
  // that batch, ahead of the last count; the one after it cannot. Uncounted, both would be served.
  let next = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
  if (next.status === 200) next = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
  t.equal(next.status, 429, 'a valid request is refused by the window they filled');
  t.equal(next.body.error.code, 'rate_limit_exceeded');
});

t.test('count.lua: a request counted before admission takes its slot in the window admit.lua checks', async (t) => {
  const { redis, keys, scripts } = luaTestbed(t, 'counts', REDIS_URL);
  await redis.hset(keys.balance('u'), 'credits', '1000', 'held', '0', 'deposits', '1000', 'epoch', '1');
  const admit = (leaseId: string) => scripts.admit({
    userId: 'u', keyId: 'k', leaseId, callNano: 1n, wantCreditNano: 1n, wantSlots: 1, limit: 5, windowMs: 10_000, ttlMs: 60_000, leaseLifeMs: 1000,
    keyLimits: { ...NO_KEY_LIMITS, rpm: 3 }, callTokens: 0,
  });
  t.equal((await admit('k:a')).kind, 'admitted');
  const counted = await Promise.all([1, 2].map((i) => scripts.count({ userId: 'u', keyId: 'k', memberId: `k:c${i}`, windowMs: 10_000, leaseLifeMs: 1000, rpm: true })));
  t.same(counted, [{ counted: true }, { counted: true }], 'counted without a limit to check');
  t.equal(await redis.hget(keys.rateWeights('u', 'k'), '#'), '3', 'the default window holds the admitted request and the two counted');
  t.equal(await redis.hget(keys.minuteWeights('u', 'k'), '#'), '3', 'so does the per-minute window of a key with rate_limit_rpm');
  t.match(await admit('k:b'), { kind: 'rate_limited', limit: 'rpm' }, 'the key\'s rate_limit_rpm of 3 is used up by them');
});

t.test('count.lua with a limit: counts while the window has room, else refuses with when one more fits; reads have their own window', async (t) => {
  const { redis, keys, scripts } = luaTestbed(t, 'checked', REDIS_URL);
  const count = (memberId: string, window: 'default' | 'reads', windowMs = 10_000) =>
    scripts.count({ userId: 'u', keyId: 'k', memberId, window, windowMs, leaseLifeMs: 1000, rpm: false, limit: 2 });
  t.same(await count('k:1', 'default'), { counted: true });
  t.same(await count('k:2', 'default'), { counted: true });
  const refused = await count('k:3', 'default');
  t.equal(refused.counted, false, 'the third is refused');
  if (!refused.counted) t.ok(refused.retryAfterMs > 9_000 && refused.retryAfterMs <= 10_000, `retry once the oldest leaves (${refused.retryAfterMs} ms)`);
  t.equal(await redis.hget(keys.rateWeights('u', 'k'), '#'), '2', 'a refused request takes no slot');
  t.equal(await redis.zscore(keys.rateWindow('u', 'k'), 'k:3'), null);
  t.equal(await redis.exists(keys.minuteWindow('u', 'k')), 0, 'the per-minute window only when asked (RequestWindows never asks)');
  t.same(await count('k:r1', 'reads'), { counted: true }, 'the read window is apart from the full default window');
  t.equal(await redis.hget(keys.readWeights('u', 'k'), '#'), '1');
  t.equal(await redis.zcard(keys.readWindow('u', 'k')), 1);
  // Members whose window has passed leave it (and its sum) at the next checked count.
  t.same(await count('k:s1', 'reads', 200), { counted: true });
  await new Promise((resolve) => setTimeout(resolve, 250));
  t.same(await count('k:s2', 'reads', 200), { counted: true }, 'room again once the older members left');
  t.equal(await redis.hget(keys.readWeights('u', 'k'), '#'), '1', 'their weight left the sum');
});

/** One request to the lowered gateway; its status and error code. */
async function send(method: string, path: string, credential: string, body?: unknown): Promise<RawResponse> {
  return rawRequest(`${low.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
const answerOf = (response: RawResponse) => `${response.status} ${response.body?.error?.code ?? ''}`.trim();
const times = <T>(n: number, value: T): T[] => Array(n).fill(value);
/** A BYOK row the gateway takes (201); with `base_url` on loopback, 422 once its host is resolved. */
const row = (label: string, baseUrl?: string) => ({ provider: 'openai', label, api_key: 'sk-window-0000000000', ...(baseUrl ? { base_url: baseUrl } : {}) });

function assertWindowRefusal(t: Test, response: RawResponse, limit: number, label: string): void {
  assertEnvelope(t, response, 429, 'rate_limit_exceeded', label);
  t.match(response.headers['retry-after'], /^\d+$/, `${label}: Retry-After`);
  t.ok(Number(response.headers['retry-after']) >= 1 && Number(response.headers['retry-after']) <= 10, `${label}: within the window`);
  t.equal(response.headers['x-ratelimit-limit-requests'], String(limit), `${label}: names the window's limit`);
  t.equal(response.headers['x-ratelimit-remaining-requests'], '0');
}

t.test('task cancels of ids that do not exist count in the default window: past it, 429 before any lookup', async (t) => {
  const { key } = await fastUser(low, 'cancels', '0');
  const answers: string[] = [];
  for (let i = 0; i < LOW_WRITES + 2; i++) {
    const path = i % 2 === 0 ? `/v1/videos/generations/${randomUUID()}` : `/v1/audio/speech/${randomUUID()}`;
    answers.push(answerOf(await send('DELETE', path, key)));
  }
  t.same(answers, [...times(LOW_WRITES, '404 not_found'), ...times(2, '429 rate_limit_exceeded')]);
  assertWindowRefusal(t, await send('DELETE', `/v1/audio/generations/${randomUUID()}`, key), LOW_WRITES, 'a music cancel too');
});

t.test("BYOK writes with a regular key count whatever their answer; past the window nothing is done, the row's host is not resolved", async (t) => {
  const user = 'byok-writes';
  const { key } = await fastUser(low, user, '0');
  const answers: string[] = [];
  for (let i = 0; i < LOW_WRITES; i++) {
    answers.push(answerOf(await send('POST', '/api/v1/byok', key, i < 3 ? row(`ok-${i}`) : row(`loopback-${i}`, 'https://localhost/v1'))));
  }
  t.same(answers, [...times(3, '201'), ...times(2, '422 validation_error')], 'created rows and refused addresses alike');
  // Within the window this body is 422 once `localhost` is resolved and found to be loopback: a 429
  // instead says the address check never ran.
  assertWindowRefusal(t, await send('POST', '/api/v1/byok', key, row('over', 'https://localhost/v1')), LOW_WRITES, 'an address past the window');
  assertWindowRefusal(t, await send('POST', '/api/v1/byok', key, row('over-ok')), LOW_WRITES, 'a valid row past the window');
  t.equal(answerOf(await send('DELETE', `/api/v1/byok/${randomUUID()}`, key)), '429 rate_limit_exceeded', 'a delete too');
  // Read with the session (not counted): only the rows made within the window exist.
  const listed = await send('GET', '/api/v1/byok', mintToken(user));
  t.equal(listed.status, 200);
  t.same((listed.body as { label: string }[]).map((r) => r.label).sort(), ['ok-0', 'ok-1', 'ok-2'], 'nothing was created past the window');
});

/** Task submits the gateway refuses only once it has resolved a host (`localhost`: loopback, refused without FETCH_ALLOW_LOOPBACK). */
const LOOPBACK_SUBMITS: readonly { path: string; body: object; code: string }[] = [
  { path: '/v1/audio/speech', body: { model: 'openai/tts-1-hd', input: 'Hello.', voice: 'alloy', callback_url: 'https://localhost/hook' }, code: 'invalid_callback_url' },
  { path: '/v1/audio/generations', body: { model: 'minimax/music-2.5', prompt: 'Indie folk', lyrics: '[Verse]\nHome', callback_url: 'https://localhost/hook' }, code: 'invalid_callback_url' },
  { path: '/v1/videos/generations', body: { model: 'shengshu/viduq3-pro-i2v', image_urls: ['https://localhost/first.png'] }, code: 'invalid_image_url' },
  { path: '/v1/videos/generations', body: { model: 'shengshu/viduq3-pro-i2v', image_urls: ['https://example.com/first.png'], callback_url: 'https://localhost/hook' }, code: 'invalid_callback_url' },
];

t.test('task submits resolve the hosts they name only once admitted: a bad callback_url or image URL is a 400 with nothing held, and a full window is 429 before any resolution', async (t) => {
  const user = 'submits-funded';
  const { key } = await fastUser(low, user, '10');
  const before = await low.balanceNano(user);
  const answers: string[] = [];
  for (let i = 0; i < LOW_WRITES; i++) {
    const submit = LOOPBACK_SUBMITS[i % LOOPBACK_SUBMITS.length]!;
    answers.push(answerOf(await send('POST', submit.path, key, submit.body)));
  }
  t.same(answers, Array.from({ length: LOW_WRITES }, (_, i) => `400 ${LOOPBACK_SUBMITS[i % LOOPBACK_SUBMITS.length]!.code}`), 'admitted, then refused at the host');
  t.same(await low.balanceNano(user), before, 'nothing held or charged');
  const [tasks] = await low.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(tasks!.n, 0, 'no task written');
  // Each of these is a 400 once `localhost` is resolved: a 429 says the vetting never ran.
  for (const [i, submit] of LOOPBACK_SUBMITS.entries()) assertWindowRefusal(t, await send('POST', submit.path, key, submit.body), LOW_WRITES, `submit ${i} past the window`);
  t.same(await low.balanceNano(user), before, 'still nothing held');
});

t.test('a $0 account cannot make the gateway resolve hosts: its submits are 402, then 429, never vetted', async (t) => {
  const { key } = await fastUser(low, 'submits-zero', '0');
  const answers: string[] = [];
  for (let i = 0; i < LOW_WRITES + LOOPBACK_SUBMITS.length; i++) {
    const submit = LOOPBACK_SUBMITS[i % LOOPBACK_SUBMITS.length]!;
    answers.push(answerOf(await send('POST', submit.path, key, submit.body)));
  }
  t.same(answers, [...times(LOW_WRITES, '402 insufficient_credits'), ...times(LOOPBACK_SUBMITS.length, '429 rate_limit_exceeded')]);
});

t.test('a management key counts its writes too, in its own window', async (t) => {
  const { token, key } = await fastUser(low, 'manager', '0');
  const management = await low.createKey(token, { name: 'ops automation', is_provisioning: true });
  const answers: string[] = [];
  for (let i = 0; i < LOW_WRITES; i++) answers.push(answerOf(await send('DELETE', `/api/v1/api-keys/${randomUUID()}`, management)));
  t.same(answers, times(LOW_WRITES, '404 not_found'));
  assertWindowRefusal(t, await send('POST', '/api/v1/byok', management, row('managed')), LOW_WRITES, 'a BYOK row past the window');
  assertWindowRefusal(t, await send('POST', '/api/v1/api-keys', management, { name: 'one more' }), LOW_WRITES, 'a new key past the window');
  t.equal(answerOf(await send('DELETE', `/v1/videos/generations/${randomUUID()}`, key)), '404 not_found', "the account's regular key has its own window");
});

t.test('reads count in their own window: a full default window leaves them alone, RATE_LIMIT_READS refuses them', async (t) => {
  const { key } = await fastUser(low, 'reader', '0');
  for (let i = 0; i < LOW_WRITES; i++) await send('DELETE', `/v1/videos/generations/${randomUUID()}`, key);
  t.equal(answerOf(await send('DELETE', `/v1/videos/generations/${randomUUID()}`, key)), '429 rate_limit_exceeded', 'the default window is full');
  const reads: string[] = [];
  for (let i = 0; i < LOW_READS; i++) {
    const path = [`/v1/videos/generations/${randomUUID()}`, '/v1/videos/generations', '/api/v1/billing/balance', '/v1/models'][i % 4]!;
    reads.push(String((await send('GET', path, key)).status));
  }
  t.same(reads, Array.from({ length: LOW_READS }, (_, i) => (i % 4 === 0 ? '404' : '200')), 'polls, lists and the balance are served');
  const refused = await send('GET', `/v1/videos/generations/${randomUUID()}`, key);
  assertWindowRefusal(t, refused, LOW_READS, 'a read past the read window');
  t.match(refused.body.error.message, /reads/, 'the message names the read window');
  t.equal(answerOf(await send('GET', '/api/v1/billing/balance', key)), '429 rate_limit_exceeded', 'every read of the key shares it');

  const { key: other } = await fastUser(low, 'reader-then-writer', '0');
  for (let i = 0; i < LOW_READS; i++) await send('GET', '/api/v1/billing/balance', other);
  t.equal(answerOf(await send('DELETE', `/v1/videos/generations/${randomUUID()}`, other)), '404 not_found', 'reads leave the default window alone');
});

t.test('a dashboard session is not counted', async (t) => {
  const token = mintToken('session-user');
  const answers = new Set<string>();
  for (let i = 0; i < LOW_WRITES + LOW_READS + 2; i++) {
    answers.add(answerOf(await send('POST', '/api/v1/byok', token, row(`session-${i}`, 'https://localhost/v1'))));
    answers.add(answerOf(await send('GET', '/api/v1/billing/balance', token)));
  }
  t.same([...answers].sort(), ['200', '422 validation_error'], 'never 429');
});

t.test('a replayed Idempotency-Key answer counts in the default window', async (t) => {
  const { key } = await fastUser(low, 'replays', '1');
  const idempotencyKey = randomUUID();
  const statuses: string[] = [];
  for (let i = 0; i < LOW_WRITES; i++) {
    const response = await postJson(`${low.v1}/chat/completions`, key, CHAT, { 'idempotency-key': idempotencyKey });
    statuses.push(`${response.status}${response.headers.get('idempotent-replayed') === 'true' ? ' replayed' : ''}`);
  }
  t.same(statuses, ['200', ...times(LOW_WRITES - 1, '200 replayed')]);
  // The counts leave with the thread's next batch of scripts (see above): the second call cannot pass.
  let next = await postJson(`${low.v1}/chat/completions`, key, CHAT);
  if (next.status === 200) next = await postJson(`${low.v1}/chat/completions`, key, CHAT);
  t.equal(next.status, 429, 'a new call is refused by the window the replays filled');
  t.equal(next.body.error.code, 'rate_limit_exceeded');
});
