// The mock vendor over real HTTP: wire format (raw and through the official openai client),
// token accounting, every directive, the request log and the CLI.
import { spawn } from 'node:child_process';
import http from 'node:http';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { decode, encode } from 'gpt-tokenizer';
import OpenAI from 'openai';
import { parseDirectives, directivesFromMessages } from '../src/mock-vendor/directives.js';
import { startMockVendor, type MockRequestRecord, type MockVendor } from '../src/mock-vendor/server.js';
import type { Usage } from '../src/mock-vendor/usage.js';
import { CONTENT_WORDS, REASONING_WORDS, TOOL_ARGUMENTS, TOOL_ARGUMENT_FRAGMENTS } from '../src/mock-vendor/words.js';

// ---------- wire types, as the tests expect them ----------

interface ToolCallDelta {
  index: number;
  id?: string;
  type?: string;
  function: { name?: string; arguments: string };
}

interface ChunkChoice {
  index: number;
  delta: {
    role?: string;
    content?: string | null;
    reasoning_content?: string;
    tool_calls?: ToolCallDelta[];
    refusal?: null;
  };
  logprobs: null;
  finish_reason: string | null;
}

interface Chunk {
  id: string;
  object: string;
  created: number;
  model: string;
  system_fingerprint: string;
  choices: ChunkChoice[];
  usage?: Usage | null;
}

interface Completion {
  id: string;
  object: string;
  created: number;
  model: string;
  system_fingerprint: string;
  choices: {
    index: number;
    message: {
      role: string;
      content: string | null;
      reasoning_content?: string;
      refusal: null;
      tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
    };
    logprobs: null;
    finish_reason: string;
  }[];
  usage?: Usage;
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

// ---------- helpers ----------

const AUTH = { authorization: 'Bearer test-key', 'content-type': 'application/json' };
const CHAT_PATH = '/openai/v1/chat/completions';
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
];

/** The text of n content (or reasoning) tokens, computed independently of the mock. */
function words(list: readonly string[], n: number): string {
  return Array.from({ length: n }, (_, i) => list[i % list.length]).join('');
}

/** OpenAI's counting for a single user message with plain text content. */
function promptTokensFor(text: string): number {
  return 3 + (3 + encode(text).length);
}

function chat(content: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], ...extra };
}

function post(mock: MockVendor, body: unknown, opts: { path?: string; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
  const init: RequestInit = {
    method: 'POST',
    headers: opts.headers ?? AUTH,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
  if (opts.signal) init.signal = opts.signal;
  return fetch(mock.url + (opts.path ?? CHAT_PATH), init);
}

async function completion(mock: MockVendor, body: unknown): Promise<Completion> {
  const res = await post(mock, body);
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as Completion;
}

interface SseResult {
  /** The payload of each `data:` event, in order. */
  data: string[];
  /** What broke the stream, if it did not end cleanly. */
  error: unknown;
}

/** Reads an SSE body, insisting on the exact `data: ...\n\n` framing. */
async function readSse(res: Response, onEvent?: (data: string) => void): Promise<SseResult> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const data: string[] = [];
  let buffered = '';
  let error: unknown;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) !== -1) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!event.startsWith('data: ') || event.includes('\n')) throw new Error(`malformed SSE event: ${JSON.stringify(event)}`);
        data.push(event.slice(6));
        onEvent?.(event.slice(6));
      }
    }
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('malformed SSE')) throw err;
    error = err;
  }
  if (error === undefined && buffered !== '') throw new Error(`trailing bytes after last event: ${JSON.stringify(buffered)}`);
  return { data, error };
}

/** Parses all events but the final [DONE]. */
function chunksOf(sse: SseResult): Chunk[] {
  return sse.data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Chunk);
}

async function stream(mock: MockVendor, body: Record<string, unknown>): Promise<{ res: Response; sse: SseResult; chunks: Chunk[] }> {
  const res = await post(mock, { ...body, stream: true });
  const sse = await readSse(res);
  return { res, sse, chunks: chunksOf(sse) };
}

function recordFor(mock: MockVendor, id: string): MockRequestRecord {
  const record = mock.requests().find((r) => r.id === id);
  if (!record) throw new Error(`no record for ${id}`);
  return record;
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const contentDeltas = (chunks: Chunk[], index = 0): string[] =>
  chunks.flatMap((c) => c.choices.filter((ch) => ch.index === index && typeof ch.delta.content === 'string' && ch.delta.content !== '').map((ch) => ch.delta.content as string));

// ---------- the token scheme itself ----------

t.test('every generated word is exactly one o200k token, and so is every word in a run', async (t) => {
  for (const word of [...CONTENT_WORDS, ...REASONING_WORDS]) {
    t.ok(word.startsWith(' '), `${JSON.stringify(word)} has a leading space`);
    t.equal(encode(word).length, 1, `${JSON.stringify(word)} is one token`);
  }
  t.equal(new Set(CONTENT_WORDS).size, CONTENT_WORDS.length, 'content words are distinct');
  t.notOk(CONTENT_WORDS.some((w) => REASONING_WORDS.includes(w)), 'reasoning words differ from content words');
  for (const n of [1, 7, CONTENT_WORDS.length, 3 * CONTENT_WORDS.length + 5]) {
    t.equal(encode(words(CONTENT_WORDS, n)).length, n, `${n} content words are ${n} tokens`);
    t.equal(encode(words(REASONING_WORDS, n)).length, n, `${n} reasoning words are ${n} tokens`);
  }
  t.same(encode(TOOL_ARGUMENTS).map((token) => decode([token])), TOOL_ARGUMENT_FRAGMENTS, 'tool argument fragments are its tokens');
});

// ---------- directive parsing (pure) ----------

t.test('directive parsing', async (t) => {
  t.same(parseDirectives('no directive here'), {}, 'plain text has none');
  t.same(
    parseDirectives('hello [[mock chunks=5 delay_ms=10 latency_ms=20 fail=503 disconnect_after=2 reasoning=3 cached=7 no_usage=1 tool=get_weather]] bye'),
    { chunks: 5, delayMs: 10, latencyMs: 20, fail: 503, disconnectAfter: 2, reasoning: 3, cached: 7, noUsage: true, tool: 'get_weather' },
    'all keys',
  );
  t.same(parseDirectives('[[mock   chunks=2\n colour=blue bogus chunks=3]]'), { chunks: 3 }, 'unknown keys and bare words ignored, later wins');
  t.same(parseDirectives('[[mock chunks=-1 delay_ms=abc fail=200 fail=99]]'), {}, 'invalid values ignored');
  t.same(parseDirectives('[[mock chunks=1]] and [[mock reasoning=2]]'), { chunks: 1, reasoning: 2 }, 'several blocks merge');
  t.same(parseDirectives('[[mockery chunks=1]]'), {}, 'the marker must stand alone');
  t.same(parseDirectives('[[mock chunks=1'), {}, 'an unterminated block is ignored');
  t.same(
    directivesFromMessages([
      { role: 'user', content: '[[mock chunks=1]]' },
      { role: 'assistant', content: '[[mock chunks=2]]' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }, { type: 'text', text: 'look [[mock chunks=3]]' }] },
      { role: 'system', content: '[[mock chunks=4]]' },
    ]),
    { chunks: 3 },
    'only the last user message counts, text parts included',
  );
});

// ---------- over HTTP ----------

const mock = await startMockVendor({ port: 0 });
t.teardown(() => mock.close());

t.test('url and port', async (t) => {
  t.match(mock.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(mock.url, `http://127.0.0.1:${mock.port}`);
  t.ok(mock.port > 0);
});

t.test('routing: any prefix before /chat/completions, 404 elsewhere', async (t) => {
  for (const path of ['/openai/v1/chat/completions', '/deepseek/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions?x=1']) {
    const res = await post(mock, chat('hi [[mock chunks=1]]'), { path });
    t.equal(res.status, 200, path);
    await res.arrayBuffer();
  }
  for (const [method, path] of [['POST', '/v1/completions'], ['GET', '/v1/models'], ['GET', '/v1/chat/completions'], ['POST', '/v1/chat/completions/x']] as const) {
    const res = await fetch(mock.url + path, { method, headers: AUTH, ...(method === 'POST' ? { body: '{}' } : {}) });
    t.equal(res.status, 404, `${method} ${path}`);
    t.match(res.headers.get('content-type'), /^application\/json/);
    const body = (await res.json()) as ErrorBody;
    t.same(Object.keys(body.error), ['message', 'type', 'param', 'code']);
    t.equal(body.error.type, 'invalid_request_error');
    t.equal(body.error.code, 'not_found');
    t.equal(body.error.param, null);
    t.type(body.error.message, 'string');
  }
});

t.test('401 without a bearer token', async (t) => {
  for (const headers of [{ 'content-type': 'application/json' }, { ...AUTH, authorization: 'Basic abc' }, { ...AUTH, authorization: 'Bearer ' }]) {
    const res = await post(mock, chat('hi'), { headers });
    t.equal(res.status, 401);
    const body = (await res.json()) as ErrorBody;
    t.equal(body.error.type, 'invalid_request_error');
    t.equal(body.error.code, 'invalid_api_key');
    t.equal(body.error.param, null);
  }
});

t.test('400 for malformed JSON and for invalid requests', async (t) => {
  const bad = await post(mock, '{"model": "x", ');
  t.equal(bad.status, 400);
  const badBody = (await bad.json()) as ErrorBody;
  t.equal(badBody.error.type, 'invalid_request_error');
  t.same(Object.keys(badBody.error), ['message', 'type', 'param', 'code']);

  const cases: [Record<string, unknown>, string][] = [
    [{ messages: [{ role: 'user', content: 'hi' }] }, 'model'],
    [{ model: 'm' }, 'messages'],
    [chat('hi', { n: 0 }), 'n'],
    [chat('hi', { max_tokens: 0 }), 'max_tokens'],
    [chat('hi', { max_completion_tokens: 'ten' }), 'max_completion_tokens'],
  ];
  for (const [body, param] of cases) {
    const res = await post(mock, body);
    t.equal(res.status, 400, `invalid ${param}`);
    t.equal(((await res.json()) as ErrorBody).error.param, param);
  }
});

t.test('non-streaming completion', async (t) => {
  const prompt = 'Say something [[mock chunks=5]]';
  const before = Math.floor(Date.now() / 1000);
  const res = await post(mock, chat(prompt));
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const body = (await res.json()) as Completion;
  t.match(body.id, /^chatcmpl-[A-Za-z0-9]{20,}$/);
  t.equal(body.object, 'chat.completion');
  t.ok(body.created >= before && body.created <= Math.floor(Date.now() / 1000) + 1, 'created is now, in seconds');
  t.equal(body.model, 'gpt-4o-mini-2024-07-18');
  t.equal(body.system_fingerprint, 'fp_mock');
  t.same(body.choices, [
    { index: 0, message: { role: 'assistant', content: words(CONTENT_WORDS, 5), refusal: null }, logprobs: null, finish_reason: 'stop' },
  ]);
  t.equal(encode(body.choices[0]!.message.content!).length, 5);
  t.same(body.usage, {
    prompt_tokens: promptTokensFor(prompt),
    completion_tokens: 5,
    total_tokens: promptTokensFor(prompt) + 5,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });

  const again = await completion(mock, chat(prompt));
  t.not(again.id, body.id, 'ids are random');
  t.equal(again.choices[0]!.message.content, body.choices[0]!.message.content, 'content is deterministic');
});

t.test('server defaults and the chunks directive', async (t) => {
  const byDefault = await completion(mock, chat('hi'));
  t.equal(byDefault.usage!.completion_tokens, 16, 'default is 16 tokens');
  t.equal(byDefault.choices[0]!.message.content, words(CONTENT_WORDS, 16));
  const none = await completion(mock, chat('hi [[mock chunks=0]]'));
  t.equal(none.choices[0]!.message.content, '');
  t.equal(none.usage!.completion_tokens, 0);
  const long = await completion(mock, chat('hi [[mock chunks=60]]'));
  t.equal(encode(long.choices[0]!.message.content!).length, 60, 'wraps around the word list');

  const custom = await startMockVendor({ defaults: { chunks: 3 } });
  t.teardown(() => custom.close());
  t.equal((await completion(custom, chat('hi'))).usage!.completion_tokens, 3, 'defaults.chunks');
  t.equal((await completion(custom, chat('hi [[mock chunks=4]]'))).usage!.completion_tokens, 4, 'directive beats defaults');
});

t.test('prompt tokens follow the per-message counting scheme', async (t) => {
  const system = 'You are a terse assistant.';
  const user = 'What is the capital of France? [[mock chunks=1]]';
  const body = await completion(mock, {
    model: 'gpt-4o-mini',
    messages: [
      { role: 'system', content: system },
      { role: 'user', name: 'alice', content: 'Hello there.' },
      { role: 'assistant', content: 'Hi!' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Describe ' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          { type: 'image_url', image_url: { url: 'https://example.invalid/b.png' } },
          { type: 'text', text: user },
        ],
      },
    ],
  });
  const expected =
    3 +
    (3 + encode(system).length) +
    (3 + encode('Hello there.').length + 1) +
    (3 + encode('Hi!').length) +
    (3 + encode('Describe ' + user).length + 2 * 85);
  t.equal(body.usage!.prompt_tokens, expected);

  const special = await completion(mock, chat('a <|endoftext|> b [[mock chunks=1]]'));
  t.ok(special.usage!.prompt_tokens > 6, 'special-token text is counted as plain text, not rejected');
});

t.test('max_tokens / max_completion_tokens cap the output', async (t) => {
  const capped = await completion(mock, chat('hi [[mock chunks=10]]', { max_tokens: 4 }));
  t.equal(capped.choices[0]!.message.content, words(CONTENT_WORDS, 4));
  t.equal(capped.choices[0]!.finish_reason, 'length');
  t.equal(capped.usage!.completion_tokens, 4);

  const roomy = await completion(mock, chat('hi [[mock chunks=10]]', { max_completion_tokens: 10 }));
  t.equal(roomy.choices[0]!.finish_reason, 'stop', 'a cap that is not reached is not a cut');
  t.equal(roomy.usage!.completion_tokens, 10);

  const both = await completion(mock, chat('hi [[mock chunks=10]]', { max_tokens: 8, max_completion_tokens: 6 }));
  t.equal(both.usage!.completion_tokens, 6, 'the smaller cap wins');

  const reasoningFirst = await completion(mock, chat('hi [[mock chunks=5 reasoning=3]]', { max_completion_tokens: 4 }));
  t.equal(reasoningFirst.choices[0]!.message.reasoning_content, words(REASONING_WORDS, 3));
  t.equal(reasoningFirst.choices[0]!.message.content, words(CONTENT_WORDS, 1), 'reasoning spends the cap first');
  t.equal(reasoningFirst.choices[0]!.finish_reason, 'length');
  t.equal(reasoningFirst.usage!.completion_tokens, 4);
  t.equal(reasoningFirst.usage!.completion_tokens_details.reasoning_tokens, 3);
});

t.test('n choices', async (t) => {
  const body = await completion(mock, chat('hi [[mock chunks=3]]', { n: 3 }));
  t.equal(body.choices.length, 3);
  t.same(body.choices.map((c) => c.index), [0, 1, 2]);
  for (const choice of body.choices) t.equal(choice.message.content, words(CONTENT_WORDS, 3));
  t.equal(body.usage!.completion_tokens, 9, 'usage counts every choice');

  const { chunks } = await stream(mock, chat('hi [[mock chunks=2]]', { n: 2 }));
  for (const index of [0, 1]) {
    t.same(contentDeltas(chunks, index), [CONTENT_WORDS[0], CONTENT_WORDS[1]], `choice ${index} streams its tokens`);
    t.ok(chunks.some((c) => c.choices[0]?.index === index && c.choices[0].finish_reason === 'stop'), `choice ${index} finishes`);
    t.ok(chunks.some((c) => c.choices[0]?.index === index && c.choices[0].delta.role === 'assistant'), `choice ${index} opens with the role`);
  }
});

t.test('reasoning tokens', async (t) => {
  const prompt = 'think first [[mock chunks=2 reasoning=4]]';
  const body = await completion(mock, chat(prompt));
  t.same(body.choices[0]!.message, {
    role: 'assistant',
    content: words(CONTENT_WORDS, 2),
    reasoning_content: words(REASONING_WORDS, 4),
    refusal: null,
  });
  t.equal(body.usage!.completion_tokens, 6);
  t.equal(body.usage!.completion_tokens_details.reasoning_tokens, 4);
  t.equal(body.usage!.total_tokens, promptTokensFor(prompt) + 6);

  const { chunks } = await stream(mock, chat(prompt, { stream_options: { include_usage: true } }));
  const kinds = chunks.map((c) =>
    c.choices.length === 0 ? 'usage' : c.choices[0]!.finish_reason ? 'finish' : c.choices[0]!.delta.role ? 'role' : c.choices[0]!.delta.reasoning_content ? 'reasoning' : 'content',
  );
  t.same(kinds, ['role', 'reasoning', 'reasoning', 'reasoning', 'reasoning', 'content', 'content', 'finish', 'usage']);
  t.same(
    chunks.filter((c) => c.choices[0]?.delta.reasoning_content).map((c) => c.choices[0]!.delta),
    REASONING_WORDS.slice(0, 4).map((w) => ({ reasoning_content: w })),
    'reasoning deltas carry only reasoning_content',
  );
  t.equal(chunks.at(-1)!.usage!.completion_tokens_details.reasoning_tokens, 4);
});

t.test('cached and no_usage directives', async (t) => {
  const cached = await completion(mock, chat('hi [[mock chunks=1 cached=5]]'));
  t.equal(cached.usage!.prompt_tokens_details.cached_tokens, 5);
  const capped = await completion(mock, chat('hi [[mock chunks=1 cached=100000]]'));
  t.equal(capped.usage!.prompt_tokens_details.cached_tokens, capped.usage!.prompt_tokens, 'never more than the prompt');

  const noUsage = await completion(mock, chat('hi [[mock chunks=2 no_usage=1]]'));
  t.notOk('usage' in noUsage, 'no usage in the body');
  t.equal(noUsage.choices[0]!.message.content, words(CONTENT_WORDS, 2));

  const { chunks, sse } = await stream(mock, chat('hi [[mock chunks=2 no_usage=1]]', { stream_options: { include_usage: true } }));
  t.notOk(chunks.some((c) => 'usage' in c), 'no usage key in any chunk, despite include_usage');
  t.equal(sse.data.at(-1), '[DONE]');
});

t.test('streaming wire format', async (t) => {
  const prompt = 'stream please [[mock chunks=4]]';
  const res = await post(mock, chat(prompt, { stream: true }));
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/event-stream');
  const sse = await readSse(res);
  t.equal(sse.error, undefined, 'ends cleanly');
  t.equal(sse.data.at(-1), '[DONE]');
  t.equal(sse.data.filter((d) => d === '[DONE]').length, 1);
  const chunks = chunksOf(sse);
  t.equal(chunks.length, 1 + 4 + 1, 'role, 4 tokens, finish');
  for (const [i, raw] of sse.data.slice(0, -1).entries()) {
    t.equal(JSON.stringify(JSON.parse(raw)), raw, `chunk ${i} is compact JSON`);
    t.same(Object.keys(JSON.parse(raw) as object), ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices'], `chunk ${i} key order`);
  }
  const first = chunks[0]!;
  t.match(first.id, /^chatcmpl-/);
  t.ok(chunks.every((c) => c.id === first.id && c.created === first.created), 'one id and created for the stream');
  t.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-4o-mini-2024-07-18' && c.system_fingerprint === 'fp_mock'));
  t.same(first.choices, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  t.same(
    chunks.slice(1, 5).map((c) => c.choices),
    CONTENT_WORDS.slice(0, 4).map((w) => [{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }]),
  );
  t.same(chunks[5]!.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]);
  t.equal(encode(contentDeltas(chunks).join('')).length, 4);

  const record = recordFor(mock, first.id);
  t.equal(record.stream, true);
  t.equal(record.contentChunksWritten, 4);
  t.equal(record.completed, true);
  t.equal(record.clientAborted, false);
  t.equal(record.status, 200);
});

t.test('streaming with include_usage', async (t) => {
  const prompt = 'count me [[mock chunks=3]]';
  const { sse, chunks } = await stream(mock, chat(prompt, { stream_options: { include_usage: true } }));
  t.equal(sse.data.at(-1), '[DONE]');
  const usageChunk = chunks.at(-1)!;
  t.same(usageChunk.choices, []);
  t.same(usageChunk.usage, {
    prompt_tokens: promptTokensFor(prompt),
    completion_tokens: 3,
    total_tokens: promptTokensFor(prompt) + 3,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  });
  for (const chunk of chunks.slice(0, -1)) t.equal(chunk.usage, null, 'earlier chunks carry usage: null');
  for (const raw of sse.data.slice(0, -1)) {
    t.same(Object.keys(JSON.parse(raw) as object), ['id', 'object', 'created', 'model', 'system_fingerprint', 'choices', 'usage']);
  }
  t.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'stop', 'finish comes before usage');

  const { chunks: capped } = await stream(mock, chat('hi [[mock chunks=9]]', { max_tokens: 2, stream_options: { include_usage: true } }));
  t.equal(contentDeltas(capped).length, 2);
  t.equal(capped.at(-2)!.choices[0]!.finish_reason, 'length');
  t.equal(capped.at(-1)!.usage!.completion_tokens, 2);
});

t.test('chunk delay and latency', async (t) => {
  const arrivals: number[] = [];
  const start = Date.now();
  const res = await post(mock, chat('slow [[mock chunks=4 delay_ms=60]]', { stream: true }));
  const sse = await readSse(res, (data) => {
    if (data.includes('"content":" ')) arrivals.push(Date.now() - start);
  });
  t.equal(sse.error, undefined);
  t.equal(arrivals.length, 4);
  t.ok(arrivals[0]! >= 50, `first token waited for its delay (${arrivals[0]}ms)`);
  t.ok(arrivals[3]! - arrivals[0]! >= 150, `tokens arrive spread out (${arrivals.join(', ')}ms), as separate writes`);

  const latencyStart = Date.now();
  const late = await post(mock, chat('hi [[mock chunks=1 latency_ms=200]]'));
  t.ok(Date.now() - latencyStart >= 190, 'the response head waits latency_ms');
  await late.arrayBuffer();

  const custom = await startMockVendor({ defaults: { latencyMs: 150, chunkDelayMs: 40, chunks: 3 } });
  t.teardown(() => custom.close());
  const t0 = Date.now();
  const { sse: defaultSse } = await stream(custom, chat('hi'));
  t.equal(contentDeltas(chunksOf(defaultSse)).length, 3);
  t.ok(Date.now() - t0 >= 150 + 3 * 40 - 15, 'defaults.latencyMs and chunkDelayMs apply');
});

t.test('fail directive', async (t) => {
  const limited = await post(mock, chat('hi [[mock fail=429]]'));
  t.equal(limited.status, 429);
  t.equal(limited.headers.get('retry-after'), '1');
  const limitedBody = (await limited.json()) as ErrorBody;
  t.same(Object.keys(limitedBody.error), ['message', 'type', 'param', 'code']);
  t.equal(limitedBody.error.code, 'rate_limit_exceeded');

  for (const status of [500, 503, 502]) {
    const res = await post(mock, chat(`hi [[mock fail=${status}]]`, { stream: true }));
    t.equal(res.status, status);
    t.match(res.headers.get('content-type'), /^application\/json/, 'errors are JSON even for stream requests');
    t.equal(res.headers.get('retry-after'), null);
    t.equal(((await res.json()) as ErrorBody).error.type, 'server_error');
  }
  const forbidden = await post(mock, chat('hi [[mock fail=403]]'));
  t.equal(forbidden.status, 403);
  t.equal(((await forbidden.json()) as ErrorBody).error.type, 'invalid_request_error');

  const start = Date.now();
  const slowFail = await post(mock, chat('hi [[mock fail=500 latency_ms=120]]'));
  t.equal(slowFail.status, 500);
  t.ok(Date.now() - start >= 110, 'latency applies before a failure');
  await slowFail.arrayBuffer();
});

t.test('disconnect_after cuts the stream mid-way', async (t) => {
  const { sse, chunks } = await stream(mock, chat('hi [[mock chunks=10 disconnect_after=3]]', { stream_options: { include_usage: true } }));
  t.ok(sse.error, 'the client sees the body break');
  t.same(contentDeltas(chunks), CONTENT_WORDS.slice(0, 3), 'exactly 3 content chunks arrived first');
  t.notOk(sse.data.includes('[DONE]'), 'no [DONE]');
  t.notOk(chunks.some((c) => c.choices[0]?.finish_reason), 'no finish chunk');
  t.notOk(chunks.some((c) => c.usage), 'no usage');
  const record = recordFor(mock, chunks[0]!.id);
  t.equal(record.contentChunksWritten, 3);
  t.equal(record.completed, false);
  t.equal(record.clientAborted, false, 'the mock cut it, not the client');

  const { sse: slow, chunks: slowChunks } = await stream(mock, chat('hi [[mock chunks=10 disconnect_after=2 delay_ms=20]]'));
  t.ok(slow.error);
  t.equal(contentDeltas(slowChunks).length, 2, 'also with a chunk delay');

  const { sse: atOnce, chunks: roleOnly } = await stream(mock, chat('hi [[mock chunks=10 disconnect_after=0 reasoning=2]]'));
  t.ok(atOnce.error);
  t.equal(roleOnly.length, 3, 'role and reasoning, then the cut');

  const plain = await completion(mock, chat('hi [[mock chunks=2 disconnect_after=1]]'));
  t.equal(plain.choices[0]!.message.content, words(CONTENT_WORDS, 2), 'non-streaming ignores disconnect_after');
});

t.test('a client abort stops generation', async (t) => {
  const controller = new AbortController();
  const res = await post(mock, chat('hi [[mock chunks=200 delay_ms=30]]', { stream: true }), { signal: controller.signal });
  let id = '';
  let contentSeen = 0;
  await readSse(res, (data) => {
    const chunk = JSON.parse(data) as Chunk;
    id = chunk.id;
    if (chunk.choices[0]?.delta.content) contentSeen++;
    if (contentSeen === 3) controller.abort();
  });
  const record = recordFor(mock, id);
  await waitFor('the abort to be recorded', () => record.clientAborted);
  const written = record.contentChunksWritten;
  t.ok(written >= 3 && written < 15, `stopped right away (${written} written)`);
  await sleep(150);
  t.equal(record.contentChunksWritten, written, 'no more chunks after the abort');
  t.equal(record.completed, false);
  t.equal(record.status, 200);

  // An abort during the latency wait: nothing is ever answered.
  const early = new AbortController();
  const pending = post(mock, chat('hi [[mock latency_ms=300 chunks=1]]'), { signal: early.signal });
  await waitFor('the request to arrive', () => mock.requests().some((r) => JSON.stringify(r.body ?? '').includes('latency_ms=300')));
  early.abort();
  await t.rejects(pending);
  const waiting = mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes('latency_ms=300')).at(-1)!;
  await waitFor('the early abort to be recorded', () => waiting.clientAborted);
  await sleep(350);
  t.equal(waiting.status, 0, 'no response after the client left');
});

t.test('tool calls', async (t) => {
  const body = await completion(mock, chat('weather? [[mock tool=get_weather]]', { tools: TOOLS }));
  const choice = body.choices[0]!;
  t.equal(choice.finish_reason, 'tool_calls');
  t.equal(choice.message.content, null);
  t.equal(choice.message.tool_calls!.length, 1);
  const call = choice.message.tool_calls![0]!;
  t.match(call.id, /^call_[A-Za-z0-9]{20,}$/);
  t.same({ type: call.type, function: call.function }, { type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
  t.equal(body.usage!.completion_tokens, encode('{"city":"Paris"}').length);

  const { chunks, sse } = await stream(mock, chat('weather? [[mock tool=get_weather]]', { tools: TOOLS }));
  t.equal(sse.data.at(-1), '[DONE]');
  t.same(chunks[0]!.choices[0]!.delta.tool_calls![0], {
    index: 0,
    id: chunks[0]!.choices[0]!.delta.tool_calls![0]!.id,
    type: 'function',
    function: { name: 'get_weather', arguments: '' },
  });
  t.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
  const fragments = chunks.slice(1, -1).map((c) => c.choices[0]!.delta.tool_calls![0]!);
  t.ok(fragments.every((f) => f.index === 0 && f.id === undefined && f.function.name === undefined), 'fragments carry only arguments');
  t.equal(fragments.map((f) => f.function.arguments).join(''), '{"city":"Paris"}');
  t.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'tool_calls');
  t.equal(recordFor(mock, chunks[0]!.id).contentChunksWritten, fragments.length);

  const noTools = await completion(mock, chat('weather? [[mock tool=get_weather chunks=2]]'));
  t.equal(noTools.choices[0]!.message.content, words(CONTENT_WORDS, 2), 'without tools in the request, the directive is ignored');
  t.equal(noTools.choices[0]!.finish_reason, 'stop');
});

t.test('request records and the inspection endpoint', async (t) => {
  const res = await fetch(`${mock.url}/__mock/requests`, { method: 'DELETE' });
  t.equal(res.status, 204);
  t.same(mock.requests(), []);

  const body = chat('record me [[mock chunks=2]]');
  const answer = await completion(mock, body);
  await (await post(mock, chat('hi'), { path: '/nope' })).arrayBuffer();
  await (await post(mock, chat('hi'), { headers: { 'content-type': 'application/json' } })).arrayBuffer();

  const listed = (await (await fetch(`${mock.url}/__mock/requests`)).json()) as MockRequestRecord[];
  t.same(listed, JSON.parse(JSON.stringify(mock.requests())), 'the endpoint serves requests()');
  t.equal(listed.length, 3, 'inspection calls are not recorded');
  t.same(listed[0], {
    id: answer.id,
    path: CHAT_PATH,
    authorization: 'Bearer test-key',
    body,
    stream: false,
    contentChunksWritten: 0,
    completed: true,
    clientAborted: false,
    status: 200,
  });
  t.equal(listed[1]!.path, '/nope');
  t.equal(listed[1]!.status, 404);
  t.equal(listed[2]!.status, 401);
  t.equal(listed[2]!.authorization, undefined);

  await (await post(mock, '{oops')).arrayBuffer();
  t.equal(mock.requests().at(-1)!.body, '{oops', 'an unparsable body is kept as text');

  mock.clearRequests();
  t.same((await (await fetch(`${mock.url}/__mock/requests`)).json()) as unknown, []);
});

t.test('keepRequests bounds the record ring', async (t) => {
  const small = await startMockVendor({ keepRequests: 2 });
  t.teardown(() => small.close());
  for (const n of [1, 2, 3]) await completion(small, chat(`hi ${n} [[mock chunks=1]]`));
  t.same(
    small.requests().map((r) => (r.body as { messages: { content: string }[] }).messages[0]!.content),
    ['hi 2 [[mock chunks=1]]', 'hi 3 [[mock chunks=1]]'],
    'keeps the most recent, oldest first',
  );

  const none = await startMockVendor({ keepRequests: 0 });
  t.teardown(() => none.close());
  await completion(none, chat('hi [[mock chunks=1]]'));
  t.same(none.requests(), []);
});

t.test('keep-alive: consecutive requests share one connection', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const reused: boolean[] = [];
  for (const streamIt of [false, true, false]) {
    await new Promise<void>((resolve, reject) => {
      const req = http.request(mock.url + CHAT_PATH, { method: 'POST', agent, headers: AUTH }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      req.on('error', reject);
      req.end(JSON.stringify(chat('hi [[mock chunks=2]]', { stream: streamIt })));
      reused.push(req.reusedSocket);
    });
  }
  t.same(reused, [false, true, true]);
});

t.test('close() ends in-flight streams at once', async (t) => {
  const doomed = await startMockVendor();
  const res = await post(doomed, chat('hi [[mock chunks=100 delay_ms=1000]]', { stream: true }));
  const reading = readSse(res);
  await waitFor('the stream to start', () => doomed.requests()[0]?.status === 200);
  const start = Date.now();
  await doomed.close();
  t.ok(Date.now() - start < 500, 'close did not wait for the stream');
  t.ok((await reading).error, 'the client saw the stream end abnormally');
  t.equal(doomed.requests()[0]!.clientAborted, true);
});

t.test('the official openai client', async (t) => {
  const client = new OpenAI({ baseURL: mock.url + '/openai/v1', apiKey: 'x', maxRetries: 0 });

  const plain = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello [[mock chunks=6]]' }],
  });
  t.equal(plain.model, 'gpt-4o-mini-2024-07-18');
  t.equal(plain.choices[0]!.message.content, words(CONTENT_WORDS, 6));
  t.equal(plain.usage!.completion_tokens, 6);
  t.equal(recordFor(mock, plain.id).authorization, 'Bearer x');

  const chunks = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello [[mock chunks=5]]' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  let finish: string | null = null;
  for await (const chunk of chunks) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  t.equal(text, words(CONTENT_WORDS, 5));
  t.equal(finish, 'stop');
  t.equal(usage?.completion_tokens, 5);
  t.equal(usage?.prompt_tokens, promptTokensFor('hello [[mock chunks=5]]'));

  const toolStream = client.chat.completions.stream({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'weather? [[mock tool=get_weather]]' }],
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
  });
  const assembled = await toolStream.finalChatCompletion();
  const toolCall = assembled.choices[0]!.message.tool_calls![0]!;
  t.equal(assembled.choices[0]!.finish_reason, 'tool_calls');
  t.equal(toolCall.type, 'function');
  if (toolCall.type === 'function') {
    t.equal(toolCall.function.name, 'get_weather');
    t.same(JSON.parse(toolCall.function.arguments), { city: 'Paris' });
  }

  await t.rejects(
    client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[mock fail=429]]' }] }),
    { status: 429, code: 'rate_limit_exceeded' },
    'errors surface as the SDK error classes',
  );
  const overloaded = await client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: '[[mock fail=503]]' }] })
    .then(() => undefined, (err: unknown) => err);
  t.ok(overloaded instanceof OpenAI.InternalServerError, '503 is an InternalServerError');

  const broken = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: '[[mock chunks=8 disconnect_after=2]]' }],
    stream: true,
  });
  let received = 0;
  await t.rejects(
    (async () => {
      for await (const chunk of broken) if (chunk.choices[0]?.delta.content) received++;
    })(),
    'a cut stream fails in the SDK',
  );
  t.equal(received, 2);
});

t.test('the CLI', async (t) => {
  const main = fileURLToPath(new URL('../src/mock-vendor/main.js', import.meta.url));
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, MOCK_VENDOR_PORT: '0', MOCK_CHUNKS: '2', MOCK_LATENCY_MS: '0', MOCK_CHUNK_DELAY_MS: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (data: Buffer) => {
      out += data.toString();
      const nl = out.indexOf('\n');
      if (nl !== -1) resolve(out.slice(0, nl));
    });
    child.once('exit', () => reject(new Error('mock CLI exited early')));
  });
  const announced = JSON.parse(line) as { msg: string; url: string };
  t.equal(announced.msg, 'mock vendor listening');
  t.match(announced.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(announced.url + '/v1/chat/completions', { method: 'POST', headers: AUTH, body: JSON.stringify(chat('hi')) });
  t.equal(((await res.json()) as Completion).usage!.completion_tokens, 2, 'MOCK_CHUNKS applies');
  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'exits cleanly on SIGTERM');
});
