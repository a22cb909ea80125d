// A task's trace (docs/operations.md "Task spans"), end to end against gateways exporting to a local
// OTLP receiver: a video task's creation, vendor submit, polls, download, settlement and callback are
// spans of one trace, the trace tasks.trace_parent and the request log row name; the steps run by a
// second gateway after the first hands the task's shard over join that trace; nothing sensitive is
// in any exported span; with tracing off nothing is stored.
import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { keysMatching, postJson, startGateway, type Gateway } from './helpers/harness.js';
import { OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';

const MODEL = 'bytedance/seedance-1.0-pro-fast';
const REF = 'https://localhost/reference.png';
/** The caller's own trace, sent with the submit. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_TRACEPARENT = `00-${CALLER_TRACE}-00f067aa0ba902b7-01`;

let mock: MockVendor;
let receiver: OtlpReceiver;
let mediaDir: string;

const env = (traced: boolean, extra: Record<string, string> = {}) => ({
  JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'info',
  TASK_POLL_MS: '50', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500', TASK_SHARDS: '8',
  ...(traced ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' } : {}),
  ...extra,
});

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'tracing-tasks-'));
  mock = await startMockVendor({ port: 0, keepRequests: 500 });
  receiver = await OtlpReceiver.start();
});
t.teardown(async () => {
  await receiver.close();
  await mock.close();
  await rm(mediaDir, { recursive: true, force: true });
});

/** A callback receiver on loopback: what it got, and its URL (with a query that must never reach a span). */
async function callbackReceiver(t: Test): Promise<{ url: string; seen: http.IncomingHttpHeaders[] }> {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(req.headers);
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/tasks?token=callback-query-secret`, seen };
}

async function taskRow(gateway: Gateway, id: string) {
  const [row] = await gateway.sql<{ status: string; shard: number; upstream_id: string | null; trace_parent: string | null; callback_status: string | null }[]>`
    select status, shard, upstream_id, trace_parent, callback_status from tasks where id = ${id}`;
  return row!;
}

const named = (spans: readonly ReceivedSpan[], name: string) => spans.filter((span) => span.name === name);

t.test("a video task's steps are spans of one trace: the row's, the request log's, the callback's", async (t) => {
  const gateway = await startGateway({ mock, env: env(true) });
  t.teardown(() => gateway.close());
  const { key, token } = await fastUser(gateway, 'trace-video', '5');
  const callback = await callbackReceiver(t);
  const prompt = 'a lighthouse in the fog, secret-prompt-words [[mock job_ms=300]]';
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: MODEL, prompt, image_urls: [REF], callback_url: callback.url }, { traceparent: CALLER_TRACEPARENT });
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  t.ok(await eventually(async () => (await taskRow(gateway, id)).callback_status === 'delivered', 20_000), 'the task ended and its callback was delivered');

  const row = await taskRow(gateway, id);
  t.equal(row.status, 'success');
  t.match(row.trace_parent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'tasks.trace_parent is a sampled traceparent');
  const traceId = row.trace_parent!.split('-')[1]!;
  t.not(traceId, CALLER_TRACE, 'the task has a trace of its own');
  const [log] = await gateway.sql<{ trace_id: string | null }[]>`select trace_id from request_logs where id = ${id}`;
  t.equal(log?.trace_id, traceId, "the request log row's trace_id is the task's trace");

  await receiver.waitFor(() => named(receiver.trace(traceId), 'callback.deliver').length > 0 && named(receiver.trace(traceId), 'task.callback').length > 0);
  const trace = receiver.trace(traceId);
  const [creation, ...others] = named(trace, `task ${MODEL}`);
  t.equal(others.length, 0, 'one creation span');
  t.equal(creation?.parentSpanId, '', 'the creation span is the root of the task trace');
  t.equal(`00-${traceId}-${creation?.spanId}-01`, row.trace_parent, 'tasks.trace_parent is the creation span');
  t.match(creation?.attributes, { 'gen_ai.request.model': MODEL, 'gen_ai.operation.name': 'generate_content', 'gateway.task_id': id, 'gateway.task_status': 'pending' });
  t.ok(creation?.links.some((link) => link.traceId === CALLER_TRACE), 'the creation span links to the submit request');

  const steps = ['task.submit', 'task.poll', 'task.settle', 'task.callback'];
  for (const step of steps) {
    const found = named(trace, step);
    t.ok(found.length > 0, `a ${step} span`);
    t.ok(found.every((span) => span.parentSpanId === creation!.spanId), `${step} is a child of the creation span`);
    t.ok(found.every((span) => span.attributes['gateway.task_id'] === id && span.attributes['gen_ai.request.model'] === MODEL), `${step} names the task and model`);
  }
  // As many as the vendor saw (how many depends on the machine's pace against the mock's job time).
  const polls = mock.requests().filter((request) => request.path === `/bytedance/v1/contents/generations/tasks/${row.upstream_id}`);
  t.ok(polls.length > 0, 'the vendor was polled');
  t.equal(named(trace, 'task.poll').length, polls.length, 'a span for each poll');
  t.match(named(trace, 'task.settle')[0]?.attributes, { 'gateway.task_status': 'success' }, "the settle span carries the task's status after it");
  const byId = new Map(trace.map((span) => [span.spanId, span]));
  const parentName = (span: ReceivedSpan | undefined) => byId.get(span?.parentSpanId ?? '')?.name;
  const submit = named(trace, 'vendor.submit')[0];
  t.equal(parentName(submit), 'task.submit', 'the worker span of the vendor submit is a child of its step');
  t.match(submit?.attributes, { 'gen_ai.provider.name': 'bytedance', 'gateway.attempt': 1 });
  t.match(submit?.resource, { 'thread.name': /^tasks-\d+$/ }, 'made in a task worker thread');
  const exchange = trace.find((span) => span.kind === 3 && parentName(span) === 'vendor.submit');
  t.match(exchange?.attributes, { 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'http.response.status_code': 200 }, 'the vendor exchange is a client span');
  t.ok(named(trace, 'vendor.poll').every((span) => parentName(span) === 'task.poll'), 'each vendor poll is a child of its step');
  const rehost = named(trace, 'media.rehost')[0];
  t.equal(parentName(rehost), 'task.poll', 'the download of the result is a child of the poll that found it done');
  t.ok(Number(rehost?.attributes['http.response.body.size']) > 0, 'with its size');
  const delivery = named(trace, 'callback.deliver')[0];
  t.equal(parentName(delivery), 'task.callback');
  t.match(delivery?.attributes, { 'http.response.status_code': 204, 'server.address': '127.0.0.1', 'gateway.attempt': 1 });

  const sent = callback.seen[0]?.traceparent;
  t.match(sent, new RegExp(`^00-${traceId}-${delivery?.spanId}-01$`), "the callback carries its span's traceparent");

  const taskLines = gateway.output.split('\n').filter((line) => line.includes(`"task":"${id}"`)).map((line) => JSON.parse(line) as { msg: string; trace_id?: string });
  t.ok(taskLines.some((line) => line.msg === 'task submitted') && taskLines.some((line) => line.msg === 'task accepted by its vendor'), 'the task logged its submit and acceptance');
  t.same(taskLines.filter((line) => line.trace_id !== traceId).map((line) => line.msg), [], "every log line of the task carries the task's trace id");

  // Audio made at once: its submit step asks the vendor for it, the made step records it.
  const speech = await postJson(`${gateway.v1}/audio/speech`, key, { model: 'openai/tts-1-hd', input: 'Hello, secret-speech-words. [[mock audio_ms=500]]', voice: 'alloy', response_format: 'wav' });
  t.equal(speech.status, 200);
  t.ok(await eventually(async () => (await taskRow(gateway, speech.body.id)).status === 'success', 20_000), 'the speech task succeeded');
  const speechTrace = (await taskRow(gateway, speech.body.id)).trace_parent!.split('-')[1]!;
  // The worker thread exports its spans on its own schedule: wait for its span as well as the runtime's.
  await receiver.waitFor(() => ['task.settle', 'vendor.generate'].every((name) => named(receiver.trace(speechTrace), name).length > 0));
  const audio = receiver.trace(speechTrace);
  const audioParent = new Map(audio.map((span) => [span.spanId, span.name]));
  t.ok(['task.submit', 'task.made', 'task.settle'].every((name) => named(audio, name).length === 1), 'submit, made and settle spans');
  t.equal(audioParent.get(named(audio, 'vendor.generate')[0]?.parentSpanId ?? ''), 'task.submit', 'the generation in the worker is a child of the submit step');
  t.match(named(audio, 'vendor.generate')[0]?.attributes, { 'gen_ai.provider.name': 'openai', 'gateway.attempt': 1 });
  const [speechLog] = await gateway.sql<{ trace_id: string | null }[]>`select trace_id from request_logs where id = ${speech.body.id}`;
  t.equal(speechLog?.trace_id, speechTrace, "the speech task's request log row names its trace");

  // Nothing sensitive in anything exported.
  const secret = ((await (await fetch(`${gateway.url}/api/v1/webhook-secret`, { headers: { authorization: `Bearer ${token}` } })).json()) as { secret: string }).secret;
  const exported = receiver.bodies.join('\n');
  const secrets: [string, string][] = [
    ['the API key', key], ['the vendor key', 'test-bytedance-key'], ['the prompt', 'secret-prompt-words'], ['the speech input', 'secret-speech-words'], ['the callback URL', 'callback-query-secret'],
    ['the callback path', '/hooks/tasks'], ['the webhook secret', secret.slice('whsec_'.length)], ['the signature', String(callback.seen[0]?.['webhook-signature']).slice(3)],
    ['the reference image', 'reference.png'],
  ];
  for (const [what, value] of secrets) t.notOk(exported.includes(value), `no span carries ${what}`);
});

t.test("across a shard move: the steps the next owner runs join the task's trace", async (t) => {
  const first = await startGateway({ mock, env: env(true) });
  const second = await startGateway({ mock, env: env(true), shared: { database: first.database, prefix: first.prefix } });
  t.teardown(async () => {
    await second.close();
    await first.close();
  });
  const lease = (shard: number) => `${first.prefix}{ts:${shard}}:lease`;
  const ownerPid = async (shard: number) => Number((await first.redis.get(lease(shard)))?.split('|')[0]?.split(':')[1]);
  // Both processes own shards (each claims its share within a lease round).
  t.ok(await eventually(async () => {
    const leases = await keysMatching(first.redis, lease(0).replace('{ts:0}', '{ts:*}'));
    const pids = new Set(await Promise.all(leases.map(async (key) => (await first.redis.get(key))?.split('|')[0]?.split(':')[1])));
    return leases.length === 8 && pids.size === 2;
  }, 30_000), 'both gateways own shards');
  const { key } = await fastUser(first, 'trace-move', '5');
  const submitted = await postJson(`${first.v1}/videos/generations`, key, { model: MODEL, prompt: 'a slow one [[mock job_ms=6000]]', image_urls: [REF] });
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  t.ok(await eventually(async () => (await taskRow(first, id)).upstream_id !== null, 10_000), 'its vendor accepted it');
  const { shard, trace_parent: traceParent } = await taskRow(first, id);
  const traceId = traceParent!.split('-')[1]!;
  const owner = (await ownerPid(shard)) === first.process.pid ? first : second;
  const next = owner === first ? second : first;
  // The owner stops gracefully: it hands its shards over (and exports its spans as it goes).
  await owner.stop();
  t.ok(await eventually(async () => (await taskRow(next, id)).status === 'success', 30_000), 'the next owner ended the task');

  const instanceOf = (gateway: Gateway) => (span: ReceivedSpan) => span.resource['process.pid'] === gateway.process.pid;
  // The worker threads export on their own schedule: wait for the next owner's worker span too.
  await receiver.waitFor(() => named(receiver.trace(traceId), 'task.settle').length > 0 && named(receiver.trace(traceId), 'vendor.poll').some(instanceOf(next)), 30_000);
  const trace = receiver.trace(traceId);
  const submit = named(trace, 'task.submit');
  t.equal(submit.length, 1, 'one submit');
  t.ok(submit.every(instanceOf(owner)), 'submitted by the first owner');
  const settledBy = named(trace, 'task.settle')[0];
  t.ok(settledBy && instanceOf(next)(settledBy), 'settled by the next owner');
  t.ok(named(trace, 'task.poll').some(instanceOf(next)), 'the next owner polled it');
  t.ok(named(trace, 'vendor.poll').some(instanceOf(next)), "and its worker's vendor exchange is in the trace too");
  const instances = new Set(trace.map((span) => span.resource['service.instance.id']));
  t.equal(instances.size, 2, 'one trace, spans from two gateway processes');
  const creation = named(trace, `task ${MODEL}`)[0];
  t.ok(creation && trace.filter((span) => span.name.startsWith('task.')).every((span) => span.parentSpanId === creation.spanId), 'every step is a child of the creation span');
});

t.test('a drained gateway exports the spans its task steps and task workers hold', async (t) => {
  // Spans are exported only at shutdown here: the batch delay is longer than the test.
  const gateway = await startGateway({ mock, env: env(true, { OTEL_BSP_SCHEDULE_DELAY: '600000' }) });
  const { key } = await fastUser(gateway, 'trace-drain', '5');
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: MODEL, prompt: 'x [[mock job_ms=100]]', image_urls: [REF] });
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  t.ok(await eventually(async () => (await taskRow(gateway, id)).status === 'success', 20_000));
  const traceId = (await taskRow(gateway, id)).trace_parent!.split('-')[1]!;
  t.same(receiver.trace(traceId).map((span) => span.name), [], 'nothing exported before the drain');
  await gateway.close();
  const names = new Set(receiver.trace(traceId).map((span) => span.name));
  for (const name of ['task.submit', 'task.poll', 'task.settle']) t.ok(names.has(name), `the runtime's ${name} span was exported as it stopped`);
  for (const name of ['vendor.submit', 'vendor.poll', 'media.rehost']) t.ok(names.has(name), `the task worker's ${name} span was exported as its pool closed`);
});

t.test('tracing off: no traceparent is stored, no trace id is logged', async (t) => {
  const gateway = await startGateway({ mock, env: env(false) });
  t.teardown(() => gateway.close());
  const { key } = await fastUser(gateway, 'trace-off', '5');
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: MODEL, prompt: 'x [[mock job_ms=50]]', image_urls: [REF] }, { traceparent: CALLER_TRACEPARENT });
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  t.ok(await eventually(async () => (await taskRow(gateway, id)).status === 'success', 20_000));
  t.equal((await taskRow(gateway, id)).trace_parent, null);
  const [log] = await gateway.sql<{ trace_id: string | null }[]>`select trace_id from request_logs where id = ${id}`;
  t.equal(log?.trace_id, null);
  t.notOk(gateway.output.includes('"trace_id"'), 'no log line carries a trace id');
});
