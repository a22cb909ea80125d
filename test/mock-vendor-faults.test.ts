// The mock vendor's faults over real HTTP (issue 26 item 8): each kind (status, reset, hang, cut),
// per credential (another credential is served as usual), from the settings, from setFaults, from
// MOCK_FAULTS and from directives; each family's error shape (chat, images, task submits, audio); the
// rate over many requests.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { parseDirectives } from '../src/mock-vendor/directives.js';
import { checkFaults } from '../src/mock-vendor/faults.js';
import { startMockVendor, type MockFaults, type MockVendor } from '../src/mock-vendor/server.js';
import { EventStreamDecoder } from '../src/providers/cloud/eventstream.js';
import { signSigV4 } from '../src/providers/cloud/sigv4.js';

// ---------- raw HTTP: what arrived, and how the connection ended ----------

interface Outcome {
  /** Undefined when no response head arrived. */
  status: number | undefined;
  headers: http.IncomingHttpHeaders;
  body: string;
  raw: Buffer;
  /** The body ended as the protocol says (content-length reached, or the final chunk). */
  complete: boolean;
  /** The error code the request or response ended with (ECONNRESET, ABORT_ERR, …). */
  error: string | undefined;
}

/** One POST on a fresh connection; `abortAfterMs` gives up (AbortController) if nothing is done by then. */
function post(mock: MockVendor, path: string, headers: Record<string, string>, body: unknown, abortAfterMs = 10_000): Promise<Outcome> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), abortAfterMs);
  return new Promise<Outcome>((resolve) => {
    const outcome: Outcome = { status: undefined, headers: {}, body: '', raw: Buffer.alloc(0), complete: false, error: undefined };
    const parts: Buffer[] = [];
    let settled = false;
    const settle = (error?: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) outcome.error = error.code ?? error.name;
      outcome.raw = Buffer.concat(parts);
      outcome.body = outcome.raw.toString('utf8');
      resolve(outcome);
    };
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(mock.url + path, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers }, signal: controller.signal }, (res) => {
      outcome.status = res.statusCode;
      outcome.headers = res.headers;
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        outcome.complete = res.complete;
        settle();
      });
      res.on('error', settle);
      res.on('close', () => settle(res.complete ? undefined : Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    });
    req.on('error', settle);
    req.end(payload);
  });
}

const OPENAI_PATH = '/openai/v1/chat/completions';
const ANTHROPIC_PATH = '/anthropic/v1/messages';
const GEMINI_PATH = '/gemini/v1beta/models/gemini-2.5-flash:generateContent';
const GEMINI_STREAM_PATH = '/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const anthropicHeaders = (key: string) => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });

function openaiChat(text = 'Hello', stream = false): unknown {
  return { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: text }] };
}
function anthropicChat(text = 'Hello', stream = false): unknown {
  return { model: 'claude-sonnet-4-5', max_tokens: 256, stream, messages: [{ role: 'user', content: text }] };
}
function geminiChat(text = 'Hello'): unknown {
  return { contents: [{ role: 'user', parts: [{ text }] }] };
}

/** Content tokens in an OpenAI SSE body (the head's empty content is not one). */
function openaiContentChunks(body: string): number {
  let count = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: { delta: { content?: string } }[] };
    if (chunk.choices?.[0]?.delta.content) count++; // an error object has no choices
  }
  return count;
}

/** Text deltas in an Anthropic SSE body. */
const anthropicContentChunks = (body: string): number => body.split('\n').filter((line) => line.startsWith('data: ') && line.includes('"text_delta"')).length;

/** Text parts in a Gemini SSE body (the finishing event's empty text is not one). */
function geminiContentChunks(body: string): number {
  let count = 0;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const event = JSON.parse(line.slice(6)) as { candidates?: { content: { parts: { text?: string }[] } }[] };
    if (event.candidates?.[0]?.content.parts[0]?.text) count++; // an error event has no candidates
  }
  return count;
}

async function mockWith(t: Test, faults?: MockFaults): Promise<MockVendor> {
  const mock = await startMockVendor({ faults });
  t.teardown(() => mock.close());
  return mock;
}

// ---------- the settings map, per credential, each kind ----------

t.test('settings: each status fault answers for its credential only, in OpenAI\'s error shape, and another credential is served', async (t) => {
  const statuses = [429, 500, 502, 503, 504, 529];
  const faults: Record<string, { kind: number; retryAfterSeconds?: number }> = {};
  for (const status of statuses) faults[`key-${status}`] = { kind: status };
  faults['key-429-slow'] = { kind: 429, retryAfterSeconds: 30 };
  faults['key-503-slow'] = { kind: 503, retryAfterSeconds: 12 };
  const mock = await mockWith(t, faults);

  for (const status of statuses) {
    const failed = await post(mock, OPENAI_PATH, bearer(`key-${status}`), openaiChat());
    t.equal(failed.status, status, `key-${status} answers ${status}`);
    const error = (JSON.parse(failed.body) as { error: { message: string; type: string; param: null; code: string | null } }).error;
    t.type(error.message, 'string', `${status}: an OpenAI error body`);
    t.equal(error.type, status === 429 ? 'requests' : 'server_error', `${status}: OpenAI's error type`);
    t.equal(failed.headers['retry-after'], status === 429 ? '1' : undefined, `${status}: Retry-After only on 429 unless the fault says`);
  }
  const slow = await post(mock, OPENAI_PATH, bearer('key-429-slow'), openaiChat());
  t.equal(slow.headers['retry-after'], '30', 'a 429 fault with retryAfterSeconds says so');
  t.match(JSON.parse(slow.body), { error: { message: /try again in 30s/, code: 'rate_limit_exceeded' } }, 'and so does the message');
  const unavailable = await post(mock, OPENAI_PATH, bearer('key-503-slow'), openaiChat());
  t.equal(unavailable.status, 503);
  t.equal(unavailable.headers['retry-after'], '12', 'a 503 fault may say Retry-After too');

  const healthy = await post(mock, OPENAI_PATH, bearer('key-healthy'), openaiChat());
  t.equal(healthy.status, 200, 'a credential without a fault is served');
  t.equal((JSON.parse(healthy.body) as { object: string }).object, 'chat.completion');

  t.same(mock.faultCounts('key-429'), { faulted: 1, served: 0 });
  t.same(mock.faultCounts('key-healthy'), { faulted: 0, served: 1 });
  t.same(mock.faultCounts('never-seen'), { faulted: 0, served: 0 });
  t.equal((await post(mock, OPENAI_PATH, bearer('constructor'), openaiChat())).status, 200, 'a credential named like an Object key has no fault');
  const records = mock.requests();
  t.equal(records.find((r) => r.authorization === 'Bearer key-529')?.fault, '529', 'the record names the fault played');
  t.equal(records.find((r) => r.authorization === 'Bearer key-healthy')?.fault, undefined, 'a served request has none');
});

t.test('settings: reset destroys the connection before any byte, streamed or not', async (t) => {
  const mock = await mockWith(t, { 'key-reset': { kind: 'reset' } });
  for (const stream of [false, true]) {
    const outcome = await post(mock, OPENAI_PATH, bearer('key-reset'), openaiChat('Hello', stream));
    t.equal(outcome.status, undefined, `stream=${stream}: no response head`);
    t.equal(outcome.raw.length, 0, `stream=${stream}: no byte`);
    t.equal(outcome.error, 'ECONNRESET', `stream=${stream}: the connection is reset`);
  }
  const record = mock.requests().at(-1)!;
  t.equal(record.status, 0, 'no status was sent');
  t.equal(record.fault, 'reset');
  t.notOk(record.clientAborted, 'the mock cut it, not the client');
  t.same(mock.faultCounts('key-reset'), { faulted: 2, served: 0 });
  t.equal((await post(mock, OPENAI_PATH, bearer('other'), openaiChat())).status, 200, 'another credential is served');
});

t.test('settings: hang holds the response head until the client gives up', async (t) => {
  const mock = await mockWith(t, { 'key-hang': { kind: 'hang' } });
  for (const stream of [false, true]) {
    const outcome = await post(mock, OPENAI_PATH, bearer('key-hang'), openaiChat('Hello', stream), 400);
    t.equal(outcome.status, undefined, `stream=${stream}: no head arrived before the client aborted`);
    t.equal(outcome.error, 'ABORT_ERR', `stream=${stream}: the client's AbortController ended it`);
  }
  // The client's abort reaches the mock as a closed connection.
  for (let i = 0; i < 50 && !mock.requests().every((r) => r.clientAborted); i++) await new Promise((r) => setTimeout(r, 20));
  for (const record of mock.requests()) {
    t.equal(record.status, 0, 'the mock never wrote a head');
    t.ok(record.clientAborted, 'the client left');
    t.equal(record.fault, 'hang');
  }
  t.same(mock.faultCounts('key-hang'), { faulted: 2, served: 0 });
});

t.test('settings: cut delivers afterChunks content chunks, then the connection closes with the stream unterminated', async (t) => {
  const mock = await mockWith(t, { 'key-cut': { kind: 'cut', afterChunks: 3 }, 'key-cut-default': { kind: 'cut' } });
  const cut = await post(mock, OPENAI_PATH, bearer('key-cut'), openaiChat('Hello [[mock chunks=10]]', true));
  t.equal(cut.status, 200, 'the stream started');
  t.equal(openaiContentChunks(cut.body), 3, 'three content chunks arrived');
  t.notOk(cut.complete, 'the body did not end properly');
  t.notMatch(cut.body, /\[DONE\]/, 'no [DONE]');
  t.notMatch(cut.body, /finish_reason":"stop"/, 'no finish');
  const byDefault = await post(mock, OPENAI_PATH, bearer('key-cut-default'), openaiChat('Hello', true));
  t.equal(openaiContentChunks(byDefault.body), 1, 'one chunk by default');
  t.notOk(byDefault.complete);

  const notStreamed = await post(mock, OPENAI_PATH, bearer('key-cut'), openaiChat());
  t.equal(notStreamed.status, undefined, 'a non-streamed answer is reset instead');
  t.equal(notStreamed.error, 'ECONNRESET');

  const whole = await post(mock, OPENAI_PATH, bearer('other'), openaiChat('Hello [[mock chunks=10]]', true));
  t.equal(openaiContentChunks(whole.body), 10, 'another credential gets the whole stream');
  t.ok(whole.complete);
  t.match(whole.body, /\[DONE\]/);
  t.same(mock.faultCounts('key-cut'), { faulted: 2, served: 0 });
  t.notOk(mock.requests()[0]!.clientAborted, 'the mock cut it, not the client');
});

t.test('error: the stream ends after afterChunks content chunks with the vendor\'s own error event (OpenAI, Anthropic, Gemini); a whole answer is a 500', async (t) => {
  const mock = await mockWith(t, { 'key-error': { kind: 'error', afterChunks: 2 } });
  const openai = await post(mock, OPENAI_PATH, bearer('key-error'), openaiChat('Hello [[mock chunks=10]]', true));
  t.equal(openai.status, 200);
  t.equal(openaiContentChunks(openai.body), 2, 'two content chunks');
  t.ok(openai.complete, 'the body ends properly');
  t.match(openai.body, /\ndata: \{"error":\{"message":"[^"]+","type":"server_error"[^\n]*\}\n\n$/, 'last: OpenAI\'s error object');
  t.notMatch(openai.body, /\[DONE\]|"usage"/, 'no usage, no [DONE]');
  const anthropic = await post(mock, ANTHROPIC_PATH, anthropicHeaders('any'), anthropicChat('Hello [[mock chunks=10 fault=error cut_after=3]]', true));
  t.equal(anthropicContentChunks(anthropic.body), 3, 'the directive: three text deltas');
  t.match(anthropic.body, /event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error","message":"Overloaded"\}\}\n\n$/, 'last: Anthropic\'s error event');
  t.notMatch(anthropic.body, /message_stop/);
  const gemini = await post(mock, GEMINI_STREAM_PATH, { 'x-goog-api-key': 'any' }, geminiChat('Hello [[mock chunks=10 fault=error]]'));
  t.equal(geminiContentChunks(gemini.body), 1, 'one chunk by default');
  t.match(gemini.body, /data: \{"error":\{"code":500,[^\n]*"status":"INTERNAL"\}\}\n\n$/, 'last: Google\'s error');
  t.equal((await post(mock, OPENAI_PATH, bearer('key-error'), openaiChat())).status, 500, 'a whole answer: 500');
  t.same(parseDirectives('[[mock fault=error cut_after=4]]'), { fault: 'error', cutAfter: 4 });
});

// ---------- setFaults ----------

t.test('setFaults switches a credential from failing to healthy and back; an invalid map is refused', async (t) => {
  const mock = await mockWith(t, { pooled: { kind: 529 } });
  t.equal((await post(mock, OPENAI_PATH, bearer('pooled'), openaiChat())).status, 529);
  mock.setFaults({});
  t.equal((await post(mock, OPENAI_PATH, bearer('pooled'), openaiChat())).status, 200, 'healthy once its fault is removed');
  mock.setFaults({ pooled: { kind: 429, retryAfterSeconds: 5 } });
  const limited = await post(mock, OPENAI_PATH, bearer('pooled'), openaiChat());
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '5');
  t.same(mock.faultCounts('pooled'), { faulted: 2, served: 1 });

  t.throws(() => mock.setFaults({ pooled: { kind: 'slow' as 'hang' } }), /\["pooled"\]\["kind"\] must be an HTTP status/);
  t.throws(() => mock.setFaults({ pooled: { kind: 500, rate: 1.5 } }), /\["pooled"\]\["rate"\] must be a number from 0 to 1/);
  t.throws(() => mock.setFaults({ pooled: { kind: 'cut', afterChunks: -1 } }), /\["afterChunks"\]/);
  t.throws(() => mock.setFaults({ pooled: { kind: 429, retry: 5 } as never }), /no other keys|retry/);
  t.equal((await post(mock, OPENAI_PATH, bearer('pooled'), openaiChat())).status, 429, 'a refused map leaves the faults as they were');
  await t.rejects(startMockVendor({ faults: { k: { kind: 200 } } }), /must be an HTTP status/, 'the options are checked too');
});

t.test('checkFaults names the place of the first problem', async (t) => {
  t.same(checkFaults({ a: { kind: 'reset', rate: 0.5 } }), { a: { kind: 'reset', rate: 0.5 } });
  t.throws(() => checkFaults([]), /must be an object of credential -> fault/);
  t.throws(() => checkFaults({ '': { kind: 500 } }), /credential must not be empty/);
  t.throws(() => checkFaults({ a: { kind: 429, retryAfterSeconds: 1.5 } }), /\["a"\]\["retryAfterSeconds"\] must be a whole number/);
});

// ---------- directives ----------

t.test('directives parse the fault keys; bad values are ignored', async (t) => {
  t.same(parseDirectives('[[mock fault=529 fault_rate=0.25 retry_after=9 cut_after=4 fault_key=k-1]]'),
    { fault: 529, faultRate: 0.25, retryAfter: 9, cutAfter: 4, faultKey: 'k-1' });
  t.same(parseDirectives('[[mock fault=reset]]'), { fault: 'reset' });
  t.same(parseDirectives('[[mock fault=hang fault_rate=1]]'), { fault: 'hang', faultRate: 1 });
  t.same(parseDirectives('[[mock fault=cut fault_rate=.5]]'), { fault: 'cut', faultRate: 0.5 });
  t.same(parseDirectives('[[mock fault=slow fault_rate=1.5 retry_after=-1 fault_rate=abc cut_after=x fault=200]]'), {}, 'none of these parse');
});

t.test('directives: fault=STATUS with retry_after, reset, hang and cut, for every credential or only for fault_key', async (t) => {
  const mock = await mockWith(t);
  const limited = await post(mock, OPENAI_PATH, bearer('any'), openaiChat('Hi [[mock fault=429 retry_after=17]]'));
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '17');
  t.equal((await post(mock, OPENAI_PATH, bearer('any'), openaiChat('Hi [[mock fault=502]]'))).status, 502);

  const reset = await post(mock, OPENAI_PATH, bearer('any'), openaiChat('Hi [[mock fault=reset]]'));
  t.equal(reset.status, undefined);
  t.equal(reset.error, 'ECONNRESET');

  const hung = await post(mock, OPENAI_PATH, bearer('any'), openaiChat('Hi [[mock fault=hang]]'), 300);
  t.equal(hung.status, undefined, 'no head before the client gave up');
  t.equal(hung.error, 'ABORT_ERR');

  const cut = await post(mock, OPENAI_PATH, bearer('any'), openaiChat('Hi [[mock fault=cut cut_after=2 chunks=8]]', true));
  t.equal(openaiContentChunks(cut.body), 2, 'cut after two chunks');
  t.notOk(cut.complete);

  const keyed = 'Hi [[mock fault=503 fault_key=pool-a]]';
  t.equal((await post(mock, OPENAI_PATH, bearer('pool-a'), openaiChat(keyed))).status, 503, 'fault_key: the named credential meets it');
  t.equal((await post(mock, OPENAI_PATH, bearer('pool-b'), openaiChat(keyed))).status, 200, 'fault_key: another credential is served');
  t.same(mock.faultCounts('pool-a'), { faulted: 1, served: 0 });
  t.same(mock.faultCounts('pool-b'), { faulted: 0, served: 1 });
  t.same(mock.faultCounts('any'), { faulted: 5, served: 0 });
});

t.test('directives win over the settings for the request that carries them', async (t) => {
  const mock = await mockWith(t, { k: { kind: 429 } });
  t.equal((await post(mock, OPENAI_PATH, bearer('k'), openaiChat('Hi [[mock fault=500]]'))).status, 500);
  t.equal((await post(mock, OPENAI_PATH, bearer('k'), openaiChat('Hi [[mock fault=500 fault_key=other]]'))).status, 429, 'a directive for another credential leaves the settings in force');
  t.equal((await post(mock, OPENAI_PATH, bearer('k'), openaiChat('Hi [[mock fault=500 fault_rate=0]]'))).status, 200, 'a directive with rate 0 never fails');
});

// ---------- the rate ----------

/** Sends `total` requests, `concurrency` at a time; returns how many answered each status. */
async function statusCounts(total: number, concurrency: number, send: () => Promise<Outcome>): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      const { status } = await send();
      counts.set(status ?? 0, (counts.get(status ?? 0) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return counts;
}

t.test('rate: a 30 % fault fails about 30 % of 1,000 requests, rolled per request (settings and directive)', async (t) => {
  const mock = await mockWith(t, { flaky: { kind: 503, rate: 0.3 } });
  // Binomial(1000, 0.3): a standard deviation of 14.5, so ±60 is more than 4 of them.
  const fromSettings = await statusCounts(1000, 16, () => post(mock, OPENAI_PATH, bearer('flaky'), openaiChat()));
  const failed = fromSettings.get(503) ?? 0;
  t.ok(failed >= 240 && failed <= 360, `settings: ${failed} of 1000 failed (expected 300 ± 60)`);
  t.equal(failed + (fromSettings.get(200) ?? 0), 1000, 'every other request was served');
  t.same(mock.faultCounts('flaky'), { faulted: failed, served: 1000 - failed }, 'the counts match what clients saw');

  const fromDirective = await statusCounts(1000, 16, () => post(mock, OPENAI_PATH, bearer('steered'), openaiChat('Hi [[mock fault=500 fault_rate=0.3]]')));
  const failedByDirective = fromDirective.get(500) ?? 0;
  t.ok(failedByDirective >= 240 && failedByDirective <= 360, `directive: ${failedByDirective} of 1000 failed (expected 300 ± 60)`);
  t.equal(mock.faultCounts('steered').faulted, failedByDirective);
});

// ---------- each family's wire format ----------

t.test('Anthropic Messages: overloaded_error on 529, rate_limit_error with Retry-After on 429, api_error on 5xx; reset and cut', async (t) => {
  const mock = await mockWith(t, {
    'sk-ant-overloaded': { kind: 529 },
    'sk-ant-limited': { kind: 429, retryAfterSeconds: 20 },
    'sk-ant-broken': { kind: 500 },
    'sk-ant-gateway': { kind: 502 },
    'sk-ant-reset': { kind: 'reset' },
    'sk-ant-cut': { kind: 'cut', afterChunks: 2 },
  });
  const expect = [['sk-ant-overloaded', 529, 'overloaded_error'], ['sk-ant-limited', 429, 'rate_limit_error'], ['sk-ant-broken', 500, 'api_error'], ['sk-ant-gateway', 502, 'api_error']] as const;
  for (const [key, status, type] of expect) {
    const outcome = await post(mock, ANTHROPIC_PATH, anthropicHeaders(key), anthropicChat());
    t.equal(outcome.status, status, `${key}: ${status}`);
    const body = JSON.parse(outcome.body) as { type: string; error: { type: string; message: string } };
    t.equal(body.type, 'error');
    t.equal(body.error.type, type, `${key}: ${type}`);
    t.type(body.error.message, 'string');
  }
  const limited = await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-limited'), anthropicChat());
  t.equal(limited.headers['retry-after'], '20');
  t.equal((JSON.parse((await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-overloaded'), anthropicChat())).body) as { error: { message: string } }).error.message, 'Overloaded');

  const reset = await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-reset'), anthropicChat());
  t.equal(reset.error, 'ECONNRESET');
  t.equal(reset.status, undefined);
  const cut = await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-cut'), anthropicChat('Hello [[mock chunks=6]]', true));
  t.equal(cut.status, 200);
  t.equal(anthropicContentChunks(cut.body), 2, 'two text deltas, then the cut');
  t.notMatch(cut.body, /message_stop/);
  t.notOk(cut.complete);

  const healthy = await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-healthy'), anthropicChat('Hello [[mock chunks=6]]', true));
  t.equal(anthropicContentChunks(healthy.body), 6);
  t.match(healthy.body, /message_stop/);
  const directive = await post(mock, ANTHROPIC_PATH, anthropicHeaders('sk-ant-healthy'), anthropicChat('Hi [[mock fault=529 fault_key=sk-ant-healthy]]'));
  t.equal(directive.status, 529, 'directives work on this route too');
  t.same(mock.faultCounts('sk-ant-healthy'), { faulted: 1, served: 1 });
});

t.test('Gemini: Google\'s status names, RetryInfo with Retry-After on 429; the key from x-goog-api-key or ?key=; reset and cut', async (t) => {
  const mock = await mockWith(t, {
    'g-unavailable': { kind: 503 },
    'g-limited': { kind: 429, retryAfterSeconds: 40 },
    'g-timeout': { kind: 504 },
    'g-reset': { kind: 'reset' },
    'g-cut': { kind: 'cut', afterChunks: 2 },
  });
  const unavailable = await post(mock, GEMINI_PATH, { 'x-goog-api-key': 'g-unavailable' }, geminiChat());
  t.equal(unavailable.status, 503);
  t.same(JSON.parse(unavailable.body), { error: { code: 503, message: 'Mock failure (503).', status: 'UNAVAILABLE' } });
  const limited = await post(mock, `${GEMINI_PATH}?key=g-limited`, {}, geminiChat());
  t.equal(limited.status, 429, 'the key in ?key= is the credential');
  t.equal(limited.headers['retry-after'], '40');
  t.same(JSON.parse(limited.body), {
    error: { code: 429, message: 'Mock failure (429).', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '40s' }] },
  });
  const timeout = await post(mock, GEMINI_PATH, { 'x-goog-api-key': 'g-timeout' }, geminiChat());
  t.equal((JSON.parse(timeout.body) as { error: { status: string } }).error.status, 'DEADLINE_EXCEEDED');
  t.equal((await post(mock, GEMINI_PATH, { 'x-goog-api-key': 'g-reset' }, geminiChat())).error, 'ECONNRESET');

  const cut = await post(mock, GEMINI_STREAM_PATH, { 'x-goog-api-key': 'g-cut' }, geminiChat('Hello [[mock chunks=6]]'));
  t.equal(cut.status, 200);
  t.equal(geminiContentChunks(cut.body), 2, 'two text events, then the cut');
  t.notOk(cut.complete);
  t.notMatch(cut.body, /finishReason/);
  const healthy = await post(mock, GEMINI_STREAM_PATH, { 'x-goog-api-key': 'g-healthy' }, geminiChat('Hello [[mock chunks=6]]'));
  t.equal(geminiContentChunks(healthy.body), 6);
  t.ok(healthy.complete);
  t.equal((await post(mock, GEMINI_PATH, { 'x-goog-api-key': 'g-healthy' }, geminiChat('Hi [[mock fault=503]]'))).status, 503, 'directives work on this route too');
  t.same(mock.faultCounts('g-limited'), { faulted: 1, served: 0 });
});

t.test('Azure OpenAI: the api-key header is the credential', async (t) => {
  const mock = await mockWith(t, { 'azure-key': { kind: 503, retryAfterSeconds: 3 } });
  const path = '/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21';
  const failed = await post(mock, path, { 'api-key': 'azure-key' }, openaiChat());
  t.equal(failed.status, 503);
  t.equal(failed.headers['retry-after'], '3');
  t.equal((JSON.parse(failed.body) as { error: { type: string } }).error.type, 'server_error');
  t.equal((await post(mock, path, { 'api-key': 'other' }, openaiChat())).status, 200);
});

t.test('Bedrock (Claude): the access key id is the credential; ThrottlingException, and a cut event stream', async (t) => {
  const secrets = { AKIDLIMITED: 'secret-1', AKIDCUT: 'secret-2', AKIDOK: 'secret-3' };
  const mock = await startMockVendor({ cloud: { awsSecrets: secrets }, faults: { AKIDLIMITED: { kind: 429, retryAfterSeconds: 2 }, AKIDCUT: { kind: 'cut', afterChunks: 2 } } });
  t.teardown(() => mock.close());
  const invoke = (accessKeyId: keyof typeof secrets, stream: boolean) => {
    const path = `/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/${stream ? 'invoke-with-response-stream' : 'invoke'}`;
    const body = JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 256, messages: [{ role: 'user', content: 'Hello [[mock chunks=5]]' }] });
    const signed = signSigV4({ method: 'POST', url: mock.url + path, headers: { 'content-type': 'application/json' }, body, region: 'us-east-1', service: 'bedrock' },
      { accessKeyId, secretAccessKey: secrets[accessKeyId] }, new Date());
    return post(mock, path, signed, body);
  };
  const limited = await invoke('AKIDLIMITED', false);
  t.equal(limited.status, 429);
  t.match(String(limited.headers['x-amzn-errortype']), /^ThrottlingException:/);
  t.equal(limited.headers['retry-after'], '2');

  const cut = await invoke('AKIDCUT', true);
  t.equal(cut.status, 200);
  t.notOk(cut.complete, 'the event stream did not end properly');
  const events = new EventStreamDecoder().push(cut.raw).map((m) => JSON.parse(Buffer.from((JSON.parse(m.payload.toString()) as { bytes: string }).bytes, 'base64').toString()) as { type: string; delta?: { type: string } });
  t.equal(events.filter((e) => e.delta?.type === 'text_delta').length, 2, 'two text deltas, then the cut');
  t.notOk(events.some((e) => e.type === 'message_stop'));
  const healthy = await invoke('AKIDOK', true);
  t.ok(healthy.complete);
  t.same(mock.faultCounts('AKIDOK'), { faulted: 0, served: 1 });
});

t.test('OpenAI Images API: a status fault and a reset for the credential', async (t) => {
  const mock = await mockWith(t, { 'img-limited': { kind: 429, retryAfterSeconds: 8 }, 'img-reset': { kind: 'reset' } });
  const body = { model: 'gpt-image-1', prompt: 'a lighthouse', n: 1, size: '1024x1024' };
  const limited = await post(mock, '/openai/v1/images/generations', bearer('img-limited'), body);
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '8');
  t.equal((JSON.parse(limited.body) as { error: { code: string } }).error.code, 'rate_limit_exceeded');
  t.equal((await post(mock, '/openai/v1/images/generations', bearer('img-reset'), body)).error, 'ECONNRESET');
  t.equal((await post(mock, '/openai/v1/images/generations', bearer('img-ok'), { ...body, prompt: 'a lighthouse [[mock fault=500 fault_key=img-other]]' })).status, 200);
  t.equal((await post(mock, '/openai/v1/images/generations', bearer('img-ok'), { ...body, prompt: 'a lighthouse [[mock fault=500]]' })).status, 500, 'directives in the prompt');
});

t.test('task submits (BFL, DashScope, Ark video): status faults in each vendor\'s shape and resets, by credential; polls are not faulted', async (t) => {
  const mock = await mockWith(t, { 'bfl-limited': { kind: 429, retryAfterSeconds: 6 }, 'ds-busy': { kind: 503 }, 'ark-reset': { kind: 'reset' } });
  const bfl = await post(mock, '/bfl/v1/flux-2-pro', { 'x-key': 'bfl-limited' }, { prompt: 'a fox' });
  t.equal(bfl.status, 429);
  t.equal(bfl.headers['retry-after'], '6');
  t.same(JSON.parse(bfl.body), { detail: 'You have reached the limit of active tasks.' }, "BFL's FastAPI shape");
  const bflOk = await post(mock, '/bfl/v1/flux-2-pro', { 'x-key': 'bfl-ok' }, { prompt: 'a fox' });
  t.equal(bflOk.status, 200);
  t.equal((await post(mock, '/bfl/v1/flux-2-pro', { 'x-key': 'bfl-ok' }, { prompt: 'a fox [[mock fault=500]]' })).status, 500, 'directives in the prompt');

  const dashscope = '/alibaba/v1/services/aigc/video-generation/video-synthesis';
  const busy = await post(mock, dashscope, { ...bearer('ds-busy'), 'x-dashscope-async': 'enable' }, { model: 'wan2.6-r2v', input: { prompt: 'x' } });
  t.equal(busy.status, 503);
  t.match(JSON.parse(busy.body), { code: 'InternalError', message: 'Mock failure (503).' }, "DashScope's shape");
  const submitted = await post(mock, dashscope, { ...bearer('ds-ok'), 'x-dashscope-async': 'enable' }, { model: 'wan2.6-r2v', input: { prompt: 'x [[mock job_ms=20]]' } });
  t.equal(submitted.status, 200);

  const ark = await post(mock, '/bytedance/v1/contents/generations/tasks', bearer('ark-reset'), { model: 'm', content: [{ type: 'text', text: 'x' }] });
  t.equal(ark.error, 'ECONNRESET');
  t.equal(ark.status, undefined);
  t.same(mock.faultCounts('ark-reset'), { faulted: 1, served: 0 });

  // A poll with a faulted credential is answered: the fault is the submit's.
  mock.setFaults({ 'ds-ok': { kind: 503 } });
  const id = (JSON.parse(submitted.body) as { output: { task_id: string } }).output.task_id;
  const polled = await fetch(`${mock.url}/alibaba/v1/tasks/${id}`, { headers: bearer('ds-ok') });
  t.equal(polled.status, 200);
});

t.test('audio (OpenAI speech, ElevenLabs speech and music, MiniMax speech and music): status faults in each vendor\'s shape, reset, hang and cut, by credential; MiniMax polls are not faulted', async (t) => {
  const mock = await mockWith(t, {
    'tts-limited': { kind: 429, retryAfterSeconds: 7 },
    'tts-reset': { kind: 'reset' },
    'xi-limited': { kind: 429, retryAfterSeconds: 9 },
    'xi-busy': { kind: 503 },
    'mm-busy': { kind: 503, retryAfterSeconds: 4 },
    'mm-limited': { kind: 429, retryAfterSeconds: 4 },
    'mm-cut': { kind: 'cut' },
    'mm-hang': { kind: 'hang' },
  });
  const speech = { model: 'tts-1', input: 'Hello', voice: 'alloy' };
  const limited = await post(mock, '/openai/v1/audio/speech', bearer('tts-limited'), speech);
  t.equal(limited.status, 429, 'OpenAI speech: 429');
  t.equal(limited.headers['retry-after'], '7');
  t.match(JSON.parse(limited.body), { error: { type: 'requests', code: 'rate_limit_exceeded', message: /try again in 7s/ } }, "OpenAI's error shape");
  const reset = await post(mock, '/openai/v1/audio/speech', bearer('tts-reset'), speech);
  t.equal(reset.status, undefined, 'OpenAI speech: reset, no head');
  t.equal(reset.error, 'ECONNRESET');
  const spoken = await post(mock, '/openai/v1/audio/speech', bearer('tts-ok'), speech);
  t.equal(spoken.status, 200, 'another credential is served');
  t.equal(spoken.headers['content-type'], 'audio/mpeg');
  t.equal((await post(mock, '/openai/v1/audio/speech', bearer('tts-ok'), { ...speech, input: 'Hi [[mock fault=502]]' })).status, 502, 'directives in the input');
  t.same(mock.faultCounts('tts-ok'), { faulted: 1, served: 1 });

  const voice = '/elevenlabs/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM';
  const xiLimited = await post(mock, voice, { 'xi-api-key': 'xi-limited' }, { text: 'Hello' });
  t.equal(xiLimited.status, 429, 'ElevenLabs speech: 429');
  t.equal(xiLimited.headers['retry-after'], '9');
  t.same(JSON.parse(xiLimited.body), { detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests (mock).' } }, "ElevenLabs' detail shape");
  const xiBusy = await post(mock, '/elevenlabs/v1/music', { 'xi-api-key': 'xi-busy' }, { prompt: 'calm piano', music_length_ms: 3000 });
  t.equal(xiBusy.status, 503, 'ElevenLabs music: 503');
  t.match(JSON.parse(xiBusy.body), { detail: { status: 'internal_server_error' } });
  t.equal(xiBusy.headers['retry-after'], undefined, 'no Retry-After on a 5xx unless the fault says');
  t.equal((await post(mock, voice, { 'xi-api-key': 'xi-ok' }, { text: 'Hello' })).status, 200, 'another credential is served');
  t.equal((await post(mock, voice, { 'xi-api-key': 'xi-ok' }, { text: 'Hi [[mock fault=reset]]' })).error, 'ECONNRESET', 'directives in the text');
  t.same(mock.faultCounts('xi-limited'), { faulted: 1, served: 0 });
  t.same(mock.faultCounts('xi-ok'), { faulted: 1, served: 1 });

  const submit = (key: string, text = 'Hello [[mock job_ms=20]]') =>
    post(mock, '/minimax/v1/t2a_async_v2', bearer(key), { model: 'speech-2.6-hd', text, voice_setting: { voice_id: 'English_expressive_narrator' } });
  const busy = await submit('mm-busy');
  t.equal(busy.status, 503, 'MiniMax submit: 503');
  t.equal(busy.headers['retry-after'], '4', 'with the fault\'s Retry-After');
  t.match(JSON.parse(busy.body), { base_resp: { status_code: 1000, status_msg: 'unknown error' } }, "MiniMax's base_resp shape");
  const mmLimited = await submit('mm-limited');
  t.equal(mmLimited.status, 200, 'MiniMax rate limit: HTTP 200, as MiniMax sends it');
  t.match(JSON.parse(mmLimited.body), { base_resp: { status_code: 1002 } });
  t.notOk('task_id' in JSON.parse(mmLimited.body), 'no task');
  t.equal((await submit('mm-cut')).error, 'ECONNRESET', 'a cut of a one-body answer is a reset');
  const hung = await post(mock, '/minimax/v1/music_generation', bearer('mm-hang'), { model: 'music-2.5', prompt: 'x', is_instrumental: true }, 300);
  t.equal(hung.status, undefined, 'MiniMax music: a hang sends no head before the client gives up');
  t.equal(hung.error, 'ABORT_ERR');
  const music = await post(mock, '/minimax/v1/music_generation', bearer('mm-ok'), { model: 'music-2.5', prompt: 'x [[mock fault=500]]', is_instrumental: true });
  t.equal(music.status, 500, 'MiniMax music: directives in the prompt');
  t.match(JSON.parse(music.body), { base_resp: { status_code: 1000 } });
  t.same(mock.faultCounts('mm-busy'), { faulted: 1, served: 0 });

  // A poll with a faulted credential is answered: the fault is the submit's.
  const accepted = await submit('mm-ok');
  t.equal(accepted.status, 200);
  const taskId = /"task_id":(\d+)/.exec(accepted.body)![1];
  mock.setFaults({ 'mm-ok': { kind: 503 } });
  await new Promise((r) => setTimeout(r, 40));
  const polled = await fetch(`${mock.url}/minimax/v1/query/t2a_async_query_v2?task_id=${taskId}`, { headers: bearer('mm-ok') });
  t.equal(polled.status, 200);
  const state = await polled.json() as { status: string; file_id: number };
  t.equal(state.status, 'Success', 'the query answers');
  const fileId = /"file_id":(\d+)/.exec(accepted.body)![1];
  const retrieved = await fetch(`${mock.url}/minimax/v1/files/retrieve?file_id=${fileId}`, { headers: bearer('mm-ok') });
  t.equal(retrieved.status, 200, 'so does the file retrieval');
  t.match(await retrieved.json(), { base_resp: { status_code: 0 } });
  t.same(mock.faultCounts('mm-ok'), { faulted: 1, served: 1 }, 'the polls were not counted: only the POSTs meet faults');
});

// ---------- the standalone mock ----------

t.test('the CLI reads MOCK_FAULTS, and refuses a bad one at start-up naming the variable', async (t) => {
  const main = fileURLToPath(new URL('../src/mock-vendor/main.js', import.meta.url));
  const run = (faults: string) => spawn(process.execPath, [main], { env: { ...process.env, MOCK_VENDOR_PORT: '0', MOCK_FAULTS: faults }, stdio: ['ignore', 'pipe', 'pipe'] });

  const child = run(JSON.stringify({ 'cli-key': { kind: 429, retryAfterSeconds: 4 } }));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (data: Buffer) => {
      out += data.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve(out.slice(0, nl));
    });
    child.once('exit', () => reject(new Error('mock CLI exited early')));
  });
  const { url } = JSON.parse(line) as { url: string };
  const ask = (key: string) => fetch(url + OPENAI_PATH, { method: 'POST', headers: { ...bearer(key), 'content-type': 'application/json' }, body: JSON.stringify(openaiChat()) });
  const limited = await ask('cli-key');
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('retry-after'), '4');
  t.equal((await ask('other')).status, 200);
  child.kill('SIGTERM');
  await once(child, 'exit');

  for (const [bad, problem] of [['{not json', /MOCK_FAULTS is not valid JSON/], ['{"k":{"kind":"slow"}}', /MOCK_FAULTS: \[\\"k\\"\]\[\\"kind\\"\] must be an HTTP status/]] as const) {
    const refused = run(bad);
    let err = '';
    refused.stderr!.on('data', (data: Buffer) => (err += data.toString()));
    const [code] = (await once(refused, 'exit')) as [number | null];
    t.equal(code, 1, `${bad}: exits with 1`);
    t.match(err, problem, `${bad}: the error names MOCK_FAULTS and the problem`);
  }
});
