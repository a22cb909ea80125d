// Trust at the edges, the upstream leg: a hostile upstream (a raw TCP server of this test's own, set as
// the OpenAI vendor's base URL) cannot blow up the gateway's memory with a huge error body or answer,
// hold a call past the exchange deadline, inject headers through Retry-After, or get a POST twice
// after a dead kept-alive connection; a non-streamed call whose client leaves is cut upstream and settled.
// Streamed answers (every family): an event that never ends breaks the stream once it passes
// UPSTREAM_MAX_EVENT_BYTES, and endless small events (comments, content) keep the memory flat; a
// /v1/responses stream, whose output items are kept whole, breaks once they pass the output allowance.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { eachRequest } from './helpers/raw-requests.js';
import { decode } from 'gpt-tokenizer';
import { startGateway, type Gateway } from './helpers/harness.js';
import { chatBody, costNano, eventually, parseJson, postChat, reserveNano } from './helpers/billing-checks.js';
import { MAX_CHARS_PER_TOKEN } from '../src/providers/pending-event.js';

/** What the hostile upstream does with a request whose body holds the mode's marker. */
type Mode = (socket: net.Socket, request: string) => void;

interface Seen {
  readonly marker: string;
  readonly socket: net.Socket;
  closed: boolean;
}

const modes = new Map<string, Mode>();
const seen: Seen[] = [];
const sockets = new Set<net.Socket>();

const hostile = net.createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  eachRequest(socket, (request) => {
    const marker = /upstream-limits-[0-9a-f]+/.exec(request)?.[0] ?? '';
    const record: Seen = { marker, socket, closed: false };
    socket.on('close', () => { record.closed = true; });
    seen.push(record);
    const mode = modes.get(marker);
    if (mode) mode(socket, request);
    else socket.destroy();
  });
});

/** A fresh marker whose requests `mode` answers. */
function marked(mode: Mode): string {
  const marker = `upstream-limits-${randomBytes(4).toString('hex')}`;
  modes.set(marker, mode);
  return marker;
}

const seenFor = (marker: string) => seen.filter((record) => record.marker === marker);

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-x', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const answerOk = (socket: net.Socket) => socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${COMPLETION.length}\r\n\r\n${COMPLETION}`);

/**
 * Writes `head`, then `total` bytes of `piece` repeated (about 1 MiB of 'A' by default), then `tail`,
 * as fast as the reader takes them; counts the poured bytes written.
 */
function pour(socket: net.Socket, head: string, total: number, piece = Buffer.alloc(1024 * 1024, 'A'), tail = ''): { sent: number } {
  const progress = { sent: 0 };
  socket.write(head);
  const more = (): void => {
    while (progress.sent < total && !socket.destroyed) {
      const size = Math.min(piece.length, total - progress.sent);
      progress.sent += size;
      if (!socket.write(size === piece.length ? piece : piece.subarray(0, size))) {
        socket.once('drain', more);
        return;
      }
    }
    if (progress.sent === total && tail !== '' && !socket.destroyed) socket.write(tail);
  };
  more();
  return progress;
}

/** `text` repeated to about 1 MiB (whole repetitions only, so a stream of them is cut at no event). */
const repeated = (text: string) => Buffer.from(text.repeat(Math.floor(1024 * 1024 / text.length)));

/** A 200 `text/event-stream` head for a body of `length` bytes. */
const eventStreamHead = (length: number) => `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${length}\r\n\r\n`;

/** Reads a streamed answer (of `path`, chat by default) as it comes, keeping only its size and its last 64 KiB. */
async function streamChat(gateway: Gateway, key: string, body: string, path = 'chat/completions'): Promise<{ status: number; bytes: number; tail: string }> {
  const response = await fetch(`${gateway.v1}/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  let bytes = 0;
  let tail = Buffer.alloc(0);
  for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += part.length;
    tail = Buffer.concat([tail, part]);
    if (tail.length > 128 * 1024) tail = tail.subarray(tail.length - 64 * 1024);
  }
  return { status: response.status, bytes, tail: tail.toString('utf8') };
}

/** The gateway process's peak resident memory (VmHWM), bytes. */
function peakRss(gateway: Gateway): number {
  const status = readFileSync(`/proc/${gateway.process.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/**
 * Measures the gateway's peak memory from now: its peak is reset to its current RSS (clear_refs 5) so
 * an earlier test's peak hides nothing; the answer gives how far the peak has grown since.
 */
function peakGrowth(gateway: Gateway): () => number {
  writeFileSync(`/proc/${gateway.process.pid}/clear_refs`, '5');
  const before = peakRss(gateway);
  return () => peakRss(gateway) - before;
}

/** One raw HTTP/1.1 exchange with the gateway: the answer's bytes as they came (no client parser in between). */
function rawChat(gateway: Gateway, key: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(new URL(gateway.url).port), '127.0.0.1');
    const parts: Buffer[] = [];
    socket.on('data', (part) => parts.push(part));
    socket.on('end', () => resolve(Buffer.concat(parts).toString('latin1')));
    socket.on('error', reject);
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\nauthorization: Bearer ${key}\r\n`
      + `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}

let gateway: Gateway;
let key: string;
const USER = 'upstream-limits-user';
/** A gateway for streams, with the default UPSTREAM_MAX_EVENT_BYTES and a deadline long enough to pour 200 MiB. */
let streams: Gateway;

t.before(async () => {
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  const port = (hostile.address() as AddressInfo).port;
  [gateway, streams] = await Promise.all([
    startGateway({
      env: {
        OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
        UPSTREAM_DEADLINE_MS: '1500',
        UPSTREAM_MAX_BODY_BYTES: String(256 * 1024),
      },
    }),
    startGateway({
      env: {
        OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
        ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}/v1`,
        GEMINI_BASE_URL: `http://127.0.0.1:${port}/v1beta`,
        UPSTREAM_DEADLINE_MS: '60000',
      },
    }),
  ]);
  ({ key } = await gateway.user(USER, '50'));
  await warmUp(streams);
});

/**
 * What a gateway's first streams cost once (the token counting worker and its tables, the heap sized
 * for a fast stream) is paid before the memory tests measure: a stream of 16 MiB of content, no usage.
 */
async function warmUp(gateway: Gateway): Promise<void> {
  const { key: warmKey } = await gateway.user('upstream-limits-warm-up', '5');
  const piece = repeated(CONTENT_DELTA);
  const done = 'data: [DONE]\n\n';
  const total = 16 * piece.length;
  const marker = marked((socket) => { pour(socket, eventStreamHead(total + done.length), total, piece, done); });
  const answer = await streamChat(gateway, warmKey, JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, max_tokens: 16, messages: [{ role: 'user', content: `warm ${marker}` }] }));
  if (!answer.tail.endsWith(done)) throw new Error('the warm-up stream did not complete');
}

/** A chunk of 100 characters of content. */
const CONTENT_DELTA = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'word '.repeat(20) }, finish_reason: null }] })}\n\n`;
t.teardown(async () => {
  await Promise.all([gateway?.close(), streams?.close()]);
  for (const socket of sockets) socket.destroy();
  hostile.close();
});

t.test('a 500 with a 200 MiB body: the gateway reads its cap, closes the connection, answers at once, and its memory does not grow by the body', async (t) => {
  const total = 200 * 1024 * 1024;
  let progress: { sent: number } | undefined;
  const marker = marked((socket) => {
    progress = pour(socket, `HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: ${total}\r\n\r\n`, total);
  });
  const before = peakRss(gateway);
  const answer = await postChat(gateway, key, chatBody(`fail ${marker}`));
  t.equal(answer.status, 502);
  t.equal(parseJson(answer.text).error.code, 'upstream_error');
  t.ok(answer.text.length < 2000, `the error message stays short (${answer.text.length} bytes)`);
  const [record] = seenFor(marker);
  await eventually('the upstream connection to close', () => (record?.closed ? true : undefined));
  t.ok(progress!.sent < total, `the gateway stopped reading: ${(progress!.sent / 1048576).toFixed(1)} of 200 MiB written`);
  const grown = peakRss(gateway) - before;
  t.ok(grown < 64 * 1024 * 1024, `peak RSS grew by ${(grown / 1048576).toFixed(1)} MiB, far below the body`);
});

t.test('a non-streamed 200 answer beyond UPSTREAM_MAX_BODY_BYTES is a clean 502', async (t) => {
  const total = 4 * 1024 * 1024;
  const marker = marked((socket) => {
    pour(socket, `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${total}\r\n\r\n`, total);
  });
  const answer = await postChat(gateway, key, chatBody(`big ${marker}`));
  t.equal(answer.status, 502);
  t.equal(parseJson(answer.text).error.code, 'upstream_response_too_large');
  const [record] = seenFor(marker);
  await eventually('the upstream connection to close', () => (record?.closed ? true : undefined));
  await eventually('the reservation to be released', async () => ((await gateway.balanceNano(USER)).held === 0n ? true : undefined));
});

t.test('an upstream that keeps trickling bytes is cut at UPSTREAM_DEADLINE_MS, though it is never idle', async (t) => {
  let timer: NodeJS.Timeout | undefined;
  const marker = marked((socket) => {
    socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n');
    timer = setInterval(() => { if (!socket.destroyed) socket.write('1\r\n \r\n'); }, 100);
  });
  t.teardown(() => clearInterval(timer));
  const answer = await postChat(gateway, key, chatBody(`slow ${marker}`));
  clearInterval(timer);
  t.equal(answer.status, 502);
  t.equal(parseJson(answer.text).error.code, 'upstream_unreachable');
  await eventually('the upstream connection to close', () => (seenFor(marker)[0]!.closed ? true : undefined));

  const silent = marked(() => {});
  const quiet = await postChat(gateway, key, chatBody(`silent ${silent}`));
  t.equal(quiet.status, 502, 'a silent upstream (no head at all) too');
  t.equal(parseJson(quiet.text).error.code, 'upstream_unreachable');
});

t.test('a client that leaves a non-streamed call: the upstream request is cut and the call settled', async (t) => {
  const user = 'upstream-limits-leaver';
  const { key: leaverKey } = await gateway.user(user, '5');
  const marker = marked(() => {}); // never answers: only the client leaving ends it (before the deadline)
  const controller = new AbortController();
  const calling = postChat(gateway, leaverKey, chatBody(`leave ${marker}`), controller.signal).catch((error: Error) => error);
  await eventually('the upstream to get the request', () => (seenFor(marker).length === 1 ? true : undefined));
  t.ok((await gateway.balanceNano(user)).held > 0n, 'the call holds its reservation while it runs');
  controller.abort();
  await calling;
  const [record] = seenFor(marker);
  await eventually('the upstream connection to close', () => (record!.closed ? true : undefined));
  await eventually('the reservation to be released', async () => ((await gateway.balanceNano(user)).held === 0n ? true : undefined));
  const logs = await eventually('the call to be logged', async () => {
    const rows = await gateway.sql<{ status: number; client_aborted: boolean }[]>`select status, client_aborted from request_logs where user_id = ${user}`;
    return rows.length > 0 ? rows : undefined;
  });
  t.equal(logs.length, 1);
  t.equal(logs[0]!.status, 499, 'settled as left by its client (not cut later by the deadline)');
});

t.test('Retry-After: a bare LF injects no header; only seconds or an HTTP date are passed on', async (t) => {
  const injecting = marked((socket) => {
    socket.end('HTTP/1.1 429 Too Many Requests\r\nretry-after: 7\nX-Injected: yes\nSet-Cookie: session=stolen\r\ncontent-length: 0\r\n\r\n');
  });
  const raw = await rawChat(gateway, key, chatBody(`inject ${injecting}`));
  const head = raw.slice(0, raw.indexOf('\r\n\r\n')).toLowerCase();
  t.match(head, /^http\/1\.1 502/, 'a head with a bare LF is refused as a broken answer');
  t.notMatch(head, /x-injected/, 'no injected header');
  t.notMatch(head, /set-cookie/, 'no injected cookie');
  t.notMatch(head, /retry-after/, 'no Retry-After');

  const odd = marked((socket) => socket.end('HTTP/1.1 429 Too Many Requests\r\nretry-after: 7, <b>soon</b>\r\ncontent-length: 0\r\n\r\n'));
  const oddAnswer = await postChat(gateway, key, chatBody(`odd ${odd}`));
  t.equal(oddAnswer.status, 429);
  t.equal(oddAnswer.headers.get('retry-after'), '1', 'a Retry-After that is neither seconds nor a date is replaced by 1');

  const plain = marked((socket) => socket.end('HTTP/1.1 429 Too Many Requests\r\nretry-after: 120\r\ncontent-length: 0\r\n\r\n'));
  t.equal((await postChat(gateway, key, chatBody(`plain ${plain}`))).headers.get('retry-after'), '120', 'seconds are passed on');
});

t.test('a POST written to a kept-alive connection the upstream then dropped is not sent again', async (t) => {
  let calls = 0;
  const marker = marked((socket) => {
    calls++;
    if (calls === 1) answerOk(socket); // kept alive
    else socket.destroy(); // the second request was read, then the connection dropped without an answer
  });
  const first = await postChat(gateway, key, chatBody(`stale ${marker}`));
  t.equal(first.status, 200);
  const second = await postChat(gateway, key, chatBody(`stale ${marker}`));
  t.equal(second.status, 502, 'the call fails instead of being sent a second time');
  t.equal(parseJson(second.text).error.code, 'upstream_unreachable');
  const records = seenFor(marker);
  t.equal(records.length, 2, 'the upstream got each POST once');
  t.equal(records[0]!.socket, records[1]!.socket, 'the second went over the kept-alive connection');
});

const MIB_200 = 200 * 1024 * 1024;

/** The stream's broken-stream ending: the error event, and no `[DONE]`. */
function endsBroken(t: Test, tail: string): void {
  t.match(tail, /"code":"upstream_stream_broken"/, 'the stream ends with the broken-stream error event');
  t.notMatch(tail, /data: \[DONE\]/, 'and no [DONE]');
}

/**
 * The streamed answer of a call whose upstream never stops; undefined (the upstream's socket destroyed,
 * the test failed) when the gateway did not end the stream within `ms`.
 */
async function brokenWithin(t: Test, streaming: ReturnType<typeof streamChat>, marker: string, ms: number, grown: () => number) {
  const answer = await Promise.race([streaming, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]);
  const [record] = seenFor(marker);
  if (!answer) {
    record?.socket.destroy();
    t.fail(`the stream did not break within ${ms / 1000} s (peak RSS grew by ${(grown() / 1048576).toFixed(1)} MiB)`);
    return undefined;
  }
  return { answer, record };
}

/**
 * After a stream broke before any usage: the gateway let go of the upstream before its 200 MiB, its
 * memory stayed flat, nothing was charged and the call is logged 502 `upstream_stream_broken`.
 */
async function brokeCleanly(t: Test, user: string, before: { credits: bigint }, record: { closed: boolean } | undefined, progress: { sent: number }, grown: () => number) {
  await eventually('the upstream connection to close', () => (record?.closed ? true : undefined));
  t.ok(progress.sent < MIB_200, `the gateway stopped reading: ${(progress.sent / 1048576).toFixed(1)} of 200 MiB written`);
  t.ok(grown() < 64 * 1024 * 1024, `peak RSS grew by ${(grown() / 1048576).toFixed(1)} MiB`);
  await eventually('the reservation to be released', async () => ((await streams.balanceNano(user)).held === 0n ? true : undefined));
  t.equal((await streams.balanceNano(user)).credits, before.credits, 'a stream that broke before any usage is not charged');
  const [log] = await eventually('the call to be logged', async () => {
    const rows = await streams.sql<{ status: number; error_code: string | null; endpoint: string }[]>`select status, error_code, endpoint from request_logs where user_id = ${user}`;
    return rows.length > 0 ? rows : undefined;
  });
  t.equal(log!.status, 502);
  t.equal(log!.error_code, 'upstream_stream_broken');
  return log!;
}

/** A streamed call whose upstream sends `opening`, then 200 MiB with no blank line: broken, nothing charged, memory flat. */
async function endlessEvent(t: Test, model: string, opening: string): Promise<void> {
  const user = `upstream-limits-endless-${randomBytes(3).toString('hex')}`;
  const { key: userKey } = await streams.user(user, '5');
  const before = await streams.balanceNano(user);
  let progress: { sent: number } | undefined;
  const marker = marked((socket) => {
    progress = pour(socket, `${eventStreamHead(opening.length + MIB_200)}${opening}`, MIB_200);
  });
  const grown = peakGrowth(streams);
  const streaming = streamChat(streams, userKey, JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: `endless ${marker}` }] }));
  const broken = await brokenWithin(t, streaming, marker, 15_000, grown);
  if (!broken) return;
  t.equal(broken.answer.status, 200);
  endsBroken(t, broken.answer.tail);
  await brokeCleanly(t, user, before, broken.record, progress!, grown);
}

// The streams' memory tests come first: on a gateway only warmed up, memory freed by earlier tests cannot hide growth.
t.test('200 MiB of comment events are relayed with flat memory, and the usage after them is charged', async (t) => {
  const user = 'upstream-limits-comments';
  const { key: userKey } = await streams.user(user, '5');
  const before = await streams.balanceNano(user);
  const usage = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })}\n\ndata: [DONE]\n\n`;
  const piece = repeated(': x\n\n');
  const total = Math.floor(MIB_200 / piece.length) * piece.length;
  const marker = marked((socket) => { pour(socket, eventStreamHead(total + usage.length), total, piece, usage); });
  const grown = peakGrowth(streams);
  const answer = await streamChat(streams, userKey, JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `comments ${marker}` }] }));
  t.equal(answer.status, 200);
  t.ok(answer.bytes > total, `the comments reached the client (${(answer.bytes / 1048576).toFixed(1)} MiB)`);
  t.match(answer.tail, /"usage":\{"prompt_tokens":7,"completion_tokens":3/);
  t.match(answer.tail, /data: \[DONE\]\n\n$/);
  t.ok(grown() < 64 * 1024 * 1024, `peak RSS grew by ${(grown() / 1048576).toFixed(1)} MiB`);
  await eventually('the call to settle', async () => ((await streams.balanceNano(user)).held === 0n ? true : undefined));
  t.equal((await streams.balanceNano(user)).credits, before.credits - costNano(7, 3), 'charged the usage the vendor reported');
});

t.test('200 MiB of content with no usage: memory stays flat and the counted charge stops at the output allowance', async (t) => {
  const user = 'upstream-limits-content';
  const { key: userKey } = await streams.user(user, '5');
  const before = await streams.balanceNano(user);
  const piece = repeated(CONTENT_DELTA);
  const total = Math.floor(MIB_200 / piece.length) * piece.length;
  const done = 'data: [DONE]\n\n';
  const marker = marked((socket) => { pour(socket, eventStreamHead(total + done.length), total, piece, done); });
  const body = JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, max_tokens: 16, messages: [{ role: 'user', content: `content ${marker}` }] });
  const grown = peakGrowth(streams);
  const answer = await streamChat(streams, userKey, body);
  t.equal(answer.status, 200);
  t.match(answer.tail, /data: \[DONE\]\n\n$/);
  t.ok(grown() < 64 * 1024 * 1024, `peak RSS grew by ${(grown() / 1048576).toFixed(1)} MiB`);
  await eventually('the call to settle', async () => ((await streams.balanceNano(user)).held === 0n ? true : undefined));
  const charged = before.credits - (await streams.balanceNano(user)).credits;
  const [log] = await streams.sql<{ completion_tokens: number }[]>`select completion_tokens from request_logs where user_id = ${user}`;
  t.ok(log!.completion_tokens >= 16, `the text kept counts at least the allowance (${log!.completion_tokens} tokens)`);
  t.equal(charged, reserveNano(body, 16), 'charged its reservation: the whole output allowance, no more');
});

t.test('a /v1/responses stream of 200 MiB of content: the output items stop at the output allowance, the stream ends with its error event', async (t) => {
  const user = 'upstream-limits-responses';
  const { key: userKey } = await streams.user(user, '5');
  const before = await streams.balanceNano(user);
  const piece = repeated(CONTENT_DELTA);
  const total = Math.floor(MIB_200 / piece.length) * piece.length;
  const done = 'data: [DONE]\n\n';
  let progress: { sent: number } | undefined;
  const marker = marked((socket) => { progress = pour(socket, eventStreamHead(total + done.length), total, piece, done); });
  // No max_output_tokens: the model's output limit (gpt-4o-mini: 16,384 tokens) at MAX_CHARS_PER_TOKEN bounds the items.
  const body = JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, input: `responses ${marker}` });
  const grown = peakGrowth(streams);
  const streaming = streamChat(streams, userKey, body, 'responses');
  const broken = await brokenWithin(t, streaming, marker, 30_000, grown);
  if (!broken) return;
  const { answer } = broken;
  t.equal(answer.status, 200);
  t.match(answer.tail, /event: error\ndata: \{"type":"error","sequence_number":\d+,"code":"upstream_stream_broken"/, 'the stream ends with the Responses error event');
  t.notMatch(answer.tail, /response\.completed|response\.incomplete/, 'and does not complete');
  const allowanceChars = 16_384 * MAX_CHARS_PER_TOKEN;
  t.ok(answer.bytes < 16 * allowanceChars, `the client got ${(answer.bytes / 1048576).toFixed(1)} MiB, a few times the allowance's characters`);
  const log = await brokeCleanly(t, user, before, broken.record, progress!, grown);
  t.match(log.endpoint, /responses/);
});

t.test('a non-streamed /v1/responses answer beyond UPSTREAM_MAX_BODY_BYTES is a clean 502, as a chat answer', async (t) => {
  const total = 4 * 1024 * 1024;
  const marker = marked((socket) => {
    pour(socket, `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${total}\r\n\r\n`, total);
  });
  const response = await fetch(`${gateway.v1}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', input: `big ${marker}` }),
  });
  t.equal(response.status, 502);
  t.equal(parseJson(await response.text()).error.code, 'upstream_response_too_large');
  await eventually('the upstream connection to close', () => (seenFor(marker)[0]?.closed ? true : undefined));
  await eventually('the reservation to be released', async () => ((await gateway.balanceNano(USER)).held === 0n ? true : undefined));
});

t.test('an OpenAI-wire stream whose event never ends breaks at UPSTREAM_MAX_EVENT_BYTES', async (t) => {
  const opening = `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\ndata: `;
  await endlessEvent(t, 'openai/gpt-4o-mini', opening);
});

t.test('an Anthropic stream whose event never ends breaks at UPSTREAM_MAX_EVENT_BYTES', async (t) => {
  const start = { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } };
  await endlessEvent(t, 'anthropic/claude-sonnet-4-5', `event: message_start\ndata: ${JSON.stringify(start)}\n\nevent: content_block_delta\ndata: `);
});

t.test('a Gemini stream whose event never ends breaks at UPSTREAM_MAX_EVENT_BYTES', async (t) => {
  const first = { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'Hi' }] } }] };
  await endlessEvent(t, 'google/gemini-2.5-flash', `data: ${JSON.stringify(first)}\r\n\r\ndata: `);
});

t.test('MAX_CHARS_PER_TOKEN bounds the text of every o200k token', async (t) => {
  let longest = 0;
  for (let id = 0; id < 201_000; id++) {
    let text: string;
    try {
      text = decode([id]);
    } catch {
      continue;
    }
    longest = Math.max(longest, Buffer.byteLength(text));
  }
  t.ok(longest > 0 && longest <= MAX_CHARS_PER_TOKEN, `the longest token is ${longest} bytes`);
});
