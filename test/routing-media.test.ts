// Routing for images, video and audio against a real gateway, Redis and Postgres, the mock vendor
// playing faults per credential: an image key pool where one key answers 429 serves every call from
// the other, charged once each; a video submit refused with 503 by its first target is accepted by the
// second, and that task is polled and cancelled with the second target's key only; so is a MiniMax
// speech submit, polled and fetched with the second target's key; a vendor's 400 is never sent to
// another target.
import t from 'tap';
import { many } from './helpers/http-tools.js';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { leasesClosed } from './helpers/billing-checks.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';

const IMAGE_MODEL = 'openai/gpt-image-2';
/** gpt-image-2 at 1024x1024, low quality: 0.006 USD an image (the seed's list price). */
const IMAGE_NANO = 6_000_000n;
const VIDEO_MODEL = 'alibaba/wan2.6-r2v';
/** wan2.6-r2v, 5 seconds at its default resolution: 0.75 USD. */
const VIDEO_NANO = 750_000_000n;
const VIDEO_SUBMIT = '/alibaba/v1/services/aigc/video-generation/video-synthesis';
const VIDEO_TASKS = /^\/alibaba\/v1\/tasks\/[^/]+$/;
/** MiniMax async speech: its own task on the vendor, polled and its file fetched with the key that created it. */
const SPEECH_MODEL = 'minimax/speech-2.6-hd';
/** minimax/speech-2.6-hd: 0.10 USD per 1,000 characters of input. */
const SPEECH_NANO_PER_CHAR = 100_000n;
const SPEECH_SUBMIT = '/minimax/v1/t2a_async_v2';
const SPEECH_POLLS = new Set(['/minimax/v1/query/t2a_async_query_v2', '/minimax/v1/files/retrieve']);

let mock: MockVendor;
let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mock = await startMockVendor({ port: 0, keepRequests: 10_000 });
  mediaDir = await mkdtemp(join(tmpdir(), 'routing-media-test-'));
  const file = join(mkdtempSync(join(tmpdir(), 'routing-media-file-')), 'routing.yaml');
  // Both pools start from the vendors' <VENDOR>_BASE_URL (the mock); each key is its own account there.
  writeFileSync(file, `
vendors:
  openai:
    targets:
      - { name: img-a, api_key: img-a-key }
      - { name: img-b, api_key: img-b-key }
  alibaba:
    targets:
      - { name: video-first, api_key: video-first-key, priority: 1 }
      - { name: video-second, api_key: video-second-key }
  minimax:
    targets:
      - { name: audio-first, api_key: audio-first-key, priority: 1 }
      - { name: audio-second, api_key: audio-second-key }
`);
  gateway = await startGateway({
    mock,
    env: {
      ROUTING_FILE: file, JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, FETCH_ALLOW_LOOPBACK: 'true', RATE_LIMIT_DEFAULT: '100000/10',
      TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500', LOG_LEVEL: 'info',
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
  await rm(mediaDir, { recursive: true, force: true });
});

async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `routing-media-${++users}`;
  return { user, key: (await fastUser(gateway, user, usd)).key };
}

/** The user's usage charges in Postgres (nano-USD, positive), once the ledger has them. */
async function charges(user: string): Promise<bigint[]> {
  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
  return rows.map((row) => -row.credits_nano);
}

const generate = (key: string, prompt: string) =>
  postJson(`${gateway.v1}/images/generations`, key, { model: IMAGE_MODEL, prompt, n: 1, size: '1024x1024', quality: 'low' });
const counts = (credential: string) => ({ ...mock.faultCounts(credential) });
const bearer = (key: string) => `Bearer ${key}`;

interface Task { id: string; status: string; data?: { url: string }[]; error?: { code: string; message: string } }

/** A task's record at the gateway: a video (the default) or, with `path`, another kind of task. */
async function taskOf(key: string, id: string, path = 'videos/generations'): Promise<Task> {
  const response = await fetch(`${gateway.v1}/${path}/${id}`, { headers: { authorization: `Bearer ${key}` } });
  return (await response.json()) as Task;
}

async function finished(key: string, id: string, path?: string): Promise<Task> {
  let last: Task | undefined;
  const ended = await eventually(async () => (last = await taskOf(key, id, path)).status !== 'pending', 15_000, 30);
  if (!ended) throw new Error(`task ${id} still pending: ${JSON.stringify(last)}`);
  return last!;
}

/** The sum of a metric's samples whose labels include `labels`, as /metrics serves them now. */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  return sumSamples(parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text()), name, labels);
}

/**
 * A failover's counts on /metrics from now on: attempts failed on `first`, served by `second`, and
 * retries of `model`; the function it returns reads how much each has grown since.
 */
async function failoverCounts(first: string, second: string, model: string): Promise<() => Promise<number[]>> {
  const read = () => Promise.all([
    metric('gateway_routing_attempts_total', { target: first, outcome: 'failed' }),
    metric('gateway_routing_attempts_total', { target: second, outcome: 'served' }),
    metric('gateway_routing_retries_total', { model }),
  ]);
  const before = await read();
  return async () => (await read()).map((value, i) => value - before[i]!);
}

const submitVideo = (key: string, prompt: string) =>
  postJson(`${gateway.v1}/videos/generations`, key, { model: VIDEO_MODEL, prompt, video_urls: ['https://localhost/ref.mp4'] });

t.test('an image pool where one key answers 429 every time: every call served by the other, charged once each', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'img-a-key': { kind: 429, retryAfterSeconds: 5 } });
  const before = { a: counts('img-a-key'), b: counts('img-b-key') };
  const results = await many(20, 4, (i) => generate(key, `a lighthouse ${i}`));
  t.same(results.map((r) => r.status), results.map(() => 200), 'every call answered 200');
  t.ok(results.every((r) => r.body.data?.length === 1 && r.body.data[0].url.startsWith(`${gateway.url}/media/`)), 'one image each, on the media host');
  const attempts = results.map((r) => Number(r.headers.get('x-gateway-attempts')));
  t.ok(attempts.every((n) => n === 1 || n === 2), `one or two attempts each (${attempts.join(',')})`);
  const a = counts('img-a-key');
  const b = counts('img-b-key');
  t.equal(b.served - before.b.served, 20, 'the healthy key served every call');
  t.equal(a.served - before.a.served, 0, 'the rate-limited key served none');
  const hits = a.faulted - before.a.faulted;
  t.ok(hits >= 1 && hits <= 4, `the 429 key got the calls in flight when it first answered, then none: it is cooled down (${hits})`);
  t.equal(attempts.filter((n) => n === 2).length, hits, 'each 429 cost its call one more attempt');
  const charged = await charges(user);
  t.same(charged, charged.map(() => IMAGE_NANO), 'each charge is one image at the list price');
  t.equal(charged.length, 20, 'one charge per call, none for the failed attempts');
  t.equal((await leasesClosed(gateway, user)).held, 0n, 'nothing left held');
  t.match(gateway.output, /upstream attempt failed.*img-a/, 'the failed attempt is logged with its target');
  t.notMatch(gateway.output, /img-a-key|img-b-key/, 'never a credential in the logs');
  mock.setFaults({});
});

t.test('a video submit refused with 503 by its first target: accepted by the second, polled and finished through the second', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'video-first-key': { kind: 503 } });
  const mark = mock.requests().length;
  const attemptsSince = await failoverCounts('video-first', 'video-second', VIDEO_MODEL);
  const submitted = await submitVideo(key, 'two friends wave [[mock job_ms=300]]');
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const task = await finished(key, submitted.body.id);
  t.equal(task.status, 'success', JSON.stringify(task));
  t.ok(task.data?.[0]?.url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');

  const calls = mock.requests().slice(mark).filter((r) => r.path.startsWith('/alibaba/'));
  const submits = calls.filter((r) => r.path === VIDEO_SUBMIT);
  t.same(submits.map((r) => [r.authorization, r.status]), [[bearer('video-first-key'), 503], [bearer('video-second-key'), 200]],
    'the first target (priority 1) refused it, the second accepted it');
  const polls = calls.filter((r) => VIDEO_TASKS.test(r.path));
  t.ok(polls.length >= 1, `polled (${polls.length} polls)`);
  t.same([...new Set(polls.map((r) => r.authorization))], [bearer('video-second-key')], 'every poll carries the key that created the task');
  const [row] = await gateway.sql<{ upstream_target: string | null }[]>`select upstream_target from tasks where id = ${submitted.body.id}`;
  t.equal(row?.upstream_target, 'video-second', 'the task remembers the target that accepted it');
  t.same(await attemptsSince(), [1, 1, 1],
    'the submit\'s attempts are on /metrics: one failed on the first target, one served by the second, one retry');

  await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
  t.same(await charges(user), [VIDEO_NANO], 'charged once, at the list price');
  mock.setFaults({});
});

t.test('an audio submit refused with 503 by its first target is accepted by the second, polled through the second, charged once', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'audio-first-key': { kind: 503 } });
  const mark = mock.requests().length;
  const attemptsSince = await failoverCounts('audio-first', 'audio-second', SPEECH_MODEL);
  const input = 'A chapter read aloud. [[mock job_ms=300 audio_ms=1500]]';
  const submitted = await postJson(`${gateway.v1}/audio/speech`, key, { model: SPEECH_MODEL, input });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const task = await finished(key, submitted.body.id, 'audio/speech');
  t.equal(task.status, 'success', JSON.stringify(task));
  t.ok(task.data?.[0]?.url.startsWith(`${gateway.url}/media/`), 'the audio is on the media host');

  const calls = mock.requests().slice(mark).filter((r) => r.path.startsWith('/minimax/'));
  const submits = calls.filter((r) => r.path === SPEECH_SUBMIT);
  t.same(submits.map((r) => [r.authorization, r.status]), [[bearer('audio-first-key'), 503], [bearer('audio-second-key'), 200]],
    'the first target (priority 1) refused it, the second accepted it');
  const polls = calls.filter((r) => SPEECH_POLLS.has(r.path));
  t.ok(polls.some((r) => r.path.endsWith('/files/retrieve')), `polled and the file retrieved (${polls.length} requests)`);
  t.same([...new Set(polls.map((r) => r.authorization))], [bearer('audio-second-key')], 'every poll carries the key that created the task');
  const [row] = await gateway.sql<{ upstream_target: string | null }[]>`select upstream_target from tasks where id = ${submitted.body.id}`;
  t.equal(row?.upstream_target, 'audio-second', 'the task remembers the target that accepted it');
  t.same(await attemptsSince(), [1, 1, 1],
    'the submit\'s attempts are on /metrics: one failed on the first target, one served by the second, one retry');

  await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
  t.same(await charges(user), [BigInt([...input].length) * SPEECH_NANO_PER_CHAR], 'charged once, per character at the list price');
  mock.setFaults({});
});

t.test('a task accepted by the second target is cancelled with the second target\'s key', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'video-first-key': { kind: 503 } });
  const mark = mock.requests().length;
  const submitted = await submitVideo(key, 'a slow one [[mock job_ms=20000]]');
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  t.ok(await eventually(async () => {
    const [row] = await gateway.sql<{ upstream_id: string | null }[]>`select upstream_id from tasks where id = ${id}`;
    return row?.upstream_id != null;
  }, 10_000), 'accepted by a vendor');
  const response = await fetch(`${gateway.v1}/videos/generations/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
  const cancelled = await response.json() as Task;
  t.equal(response.status, 200, JSON.stringify(cancelled));
  t.equal(cancelled.error?.code, 'cancelled');
  const cancels = mock.requests().slice(mark).filter((r) => /^\/alibaba\/v1\/tasks\/[^/]+\/cancel$/.test(r.path));
  t.same(cancels.map((r) => [r.authorization, r.status]), [[bearer('video-second-key'), 200]], 'the vendor was asked with the key that created the task, and cancelled it');
  // The message is the cancel's own ("nothing was charged"), or the vendor's when the task's poll saw the
  // cancel at the vendor and ended the task first (a race the cancel route accepts): either way, free.
  t.notMatch(cancelled.error?.message, /price was charged/, `a cancel the vendor confirmed is free (${cancelled.error?.message})`);
  await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
  t.same(await charges(user), [], 'nothing charged');
  mock.setFaults({});
});

t.test('a vendor\'s 400 is not retried on another target', async (t) => {
  await t.test('an image call', async (t) => {
    const { user, key } = await newUser();
    mock.setFaults({ 'img-a-key': { kind: 400 }, 'img-b-key': { kind: 400 } });
    const before = counts('img-a-key').faulted + counts('img-b-key').faulted;
    const results = await many(6, 2, (i) => generate(key, `refused ${i}`));
    for (const result of results) {
      assertEnvelope(t, result, 400, 'upstream_rejected');
      t.equal(result.headers.get('x-gateway-attempts'), '1', 'one attempt');
    }
    t.equal(counts('img-a-key').faulted + counts('img-b-key').faulted - before, 6, 'one upstream request per call');
    t.equal((await leasesClosed(gateway, user)).held, 0n, 'the reservations released');
    t.same(await charges(user), [], 'nothing charged');
    mock.setFaults({});
  });

  await t.test('a video submit', async (t) => {
    const { user, key } = await newUser();
    mock.setFaults({ 'video-first-key': { kind: 400 } });
    const mark = mock.requests().length;
    const submitted = await submitVideo(key, 'refused at once [[mock job_ms=300]]');
    t.equal(submitted.status, 200);
    const task = await finished(key, submitted.body.id);
    t.equal(task.status, 'failed', JSON.stringify(task));
    const submits = mock.requests().slice(mark).filter((r) => r.path === VIDEO_SUBMIT);
    t.same(submits.map((r) => [r.authorization, r.status]), [[bearer('video-first-key'), 400]], 'one submit, to the first target only');
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    t.same(await charges(user), [], 'nothing charged');
    mock.setFaults({});
  });
});

t.test('every image target failing: 503 upstream_unavailable naming the last upstream error, nothing charged', async (t) => {
  const { user, key } = await newUser();
  mock.setFaults({ 'img-a-key': { kind: 502 }, 'img-b-key': { kind: 502 } });
  const result = await generate(key, 'nobody can');
  assertEnvelope(t, result, 503, 'upstream_unavailable');
  t.match(result.body.error?.message ?? result.body.msg, /after [12] attempts?; the last: .*502/, 'the message names the last upstream error');
  t.match(result.headers.get('x-gateway-attempts'), /^[12]$/);
  t.equal((await leasesClosed(gateway, user)).held, 0n, 'the reservation released');
  t.same(await charges(user), [], 'nothing charged');
  mock.setFaults({});
});
