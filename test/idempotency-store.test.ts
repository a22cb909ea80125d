// The Idempotency-Key record's states through its three Lua scripts on the test's Redis (claim or read,
// keep, release, each only by the claim's owner; a claim lapses), the answer recorder's size bound, and
// the pure rules (which keys are usable, what makes two requests the same).
import t from 'tap';
import { luaTestbed } from './helpers/lua-testbed.js';
import { IdempotencyStore, type IdempotencyClaim } from '../src/routing/idempotency-store.js';
import { AnswerRecorder } from '../src/routing/idempotency-recorder.js';
import { fingerprintOf, idempotencyKeyProblem } from '../src/routing/idempotency.js';
import { sleep } from './helpers/http-tools.js';

t.test('the record: claimed once, renewed by its owner, kept or released only by it', async (t) => {
  const { redis, keys } = luaTestbed(t, 'idem');
  const store = new IdempotencyStore(redis, keys);
  const record = store.recordOf('user-1', 'a'.repeat(64));
  const first: IdempotencyClaim = { record, fingerprint: 'POST /v1/chat/completions abc', owner: 'owner-1' };
  const second: IdempotencyClaim = { ...first, owner: 'owner-2' };

  t.same(await store.claim(first, 10_000), { kind: 'claimed' });
  t.same(await store.claim(first, 10_000), { kind: 'claimed' }, 'its owner renews it');
  t.match(await store.claim(second, 10_000), { kind: 'in_progress', claimLeftMs: Number });
  t.same(await store.claim({ ...second, fingerprint: 'POST /v1/chat/completions other' }, 10_000), { kind: 'reused' }, 'another fingerprint: reused, whatever the state');
  t.equal(await store.release(second), false, 'only the owner releases');
  t.equal(await store.complete(second, 60_000, 200, { headers: {}, body: Buffer.from('x') }), false, 'only the owner keeps an answer');

  const answer = { headers: { 'content-type': 'application/json', 'x-request-id': 'r1' }, body: Buffer.from('{"ok":"é"}') };
  t.equal(await store.complete(first, 60_000, 201, answer), true);
  t.same(await store.claim(second, 10_000), { kind: 'kept', answer: { status: 201, headers: answer.headers, body: '{"ok":"é"}' } });
  t.equal(await store.release(first), false, 'a kept answer is never released');
  t.ok((await redis.pttl(record)) > 50_000, 'kept for the retention');

  const big = store.recordOf('user-1', 'b'.repeat(64));
  const bigClaim = { ...first, record: big };
  await store.claim(bigClaim, 10_000);
  t.equal(await store.complete(bigClaim, 60_000, 200, undefined), true);
  t.same(await store.claim({ ...bigClaim, owner: 'x' }, 10_000), { kind: 'too_large', status: 200 });

  const released = { ...first, record: store.recordOf('user-1', 'c'.repeat(64)) };
  await store.claim(released, 10_000);
  t.equal(await store.release(released), true);
  t.same(await store.claim({ ...released, owner: 'next' }, 10_000), { kind: 'claimed' }, 'a released key is claimed again');

  const lapsing = { ...first, record: store.recordOf('user-1', 'd'.repeat(64)) };
  await store.claim(lapsing, 100);
  await sleep(200);
  t.same(await store.claim({ ...lapsing, owner: 'next' }, 10_000), { kind: 'claimed' }, 'a claim not renewed lapses');
  t.equal(await store.complete(lapsing, 60_000, 200, answer), false, 'and its old owner cannot keep an answer over the new claim');
});

t.test('the recorder keeps the first answer, in bounds, without the rate-window headers', async (t) => {
  const whole = new AnswerRecorder(1024);
  whole.whole(200, 'application/json', { 'x-request-id': 'r', 'x-ratelimit-remaining-requests': '3' }, '{"a":1}');
  whole.whole(500, 'application/json', undefined, 'second');
  t.ok(whole.complete);
  t.same(whole.answer(), { headers: { 'content-type': 'application/json', 'x-request-id': 'r' }, body: Buffer.from('{"a":1}') });

  const stream = new AnswerRecorder(1024);
  stream.streamHead(200, { 'content-type': 'text/event-stream' });
  const chunk = Buffer.from('data: 1\n\n');
  stream.streamChunk(chunk);
  chunk.fill(0); // a relay reusing its buffer does not change what was recorded
  stream.streamChunk('data: [DONE]\n\n');
  t.notOk(stream.complete, 'not complete before its end');
  stream.streamEnd();
  t.equal(stream.answer()?.body.toString(), 'data: 1\n\ndata: [DONE]\n\n');

  const big = new AnswerRecorder(1024);
  big.streamHead(200, {});
  for (let i = 0; i < 20; i++) big.streamChunk('x'.repeat(100));
  big.streamEnd();
  t.ok(big.complete && big.tooLarge);
  t.equal(big.answer(), undefined, 'past the bound: nothing to keep');

  const binary = new AnswerRecorder(1024);
  binary.whole(200, 'application/octet-stream', undefined, Buffer.from([0xff, 0xfe]));
  t.equal(binary.answer(), undefined, 'bytes that are not UTF-8 text are not kept');
});

t.test('usable keys and fingerprints', async (t) => {
  t.equal(idempotencyKeyProblem('k'.repeat(255)), undefined);
  t.match(idempotencyKeyProblem('k'.repeat(256)), /256 characters/);
  t.match(idempotencyKeyProblem('a\tb'), /control character/);
  t.equal(idempotencyKeyProblem('order-42 ✓'), undefined, 'any printable text');
  const body = Buffer.from('{"model":"m"}');
  t.equal(fingerprintOf('post', '/v1/responses', body), fingerprintOf('POST', '/v1/responses', Buffer.from('{"model":"m"}')));
  t.not(fingerprintOf('post', '/v1/responses', body), fingerprintOf('post', '/v1/chat/completions', body), 'the path counts');
  t.not(fingerprintOf('post', '/v1/responses', body), fingerprintOf('post', '/v1/responses', Buffer.from('{"model":"m" }')), 'every body byte counts');
});
