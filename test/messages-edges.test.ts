// POST /v1/messages and /v1/messages/count_tokens at the edges (issue 27), through real HTTP against a
// gateway process, the mock vendor, and a hostile upstream of this file's own (a raw TCP server: the
// routing file's only target for Claude Haiku 5.5 and GPT-4.1, so their calls are the platform's and
// charging is real; the same server over TLS as a BYOK row's base_url, loopback allowed): a client
// that leaves a stream pays once for the prompt and what was generated; an upstream that cuts its
// stream, reports an error mid-stream, or sends an event that never ends costs nothing and the stream
// ends with Anthropic's `error` event (memory flat), passed through or translated; refusals in
// Anthropic's envelope with the gateway's `code` and `msg` (413, 401 for the Content-Type, 400, 403 for
// a management key, 401 for a revoked key); Idempotency-Key replays; count_tokens counts in the key's
// window; Claude Code's `?beta=true`; an unknown top-level field refused when translated, passed on when not.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type Gateway } from './helpers/harness.js';
import { eachRequest } from './helpers/raw-requests.js';
import { TEST_JWT_SECRET, fastUser, rawRequest, type RawResponse } from './helpers/http-tools.js';
import { eventually, leasesClosed, moneyView } from './helpers/billing-checks.js';
import { selfSignedCert } from './helpers/self-signed-cert.js';
import type { MockRequestRecord } from '../src/mock-vendor/server.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import { usdToNano } from '../src/catalog/model.js';

/** The routing file sends these models to the hostile upstream, and only there: one passed through, one translated. */
const HOSTILE_MODEL = 'anthropic/claude-haiku-5-5';
const HOSTILE_OPENAI_MODEL = 'openai/gpt-4.1';
const MAX_BODY_BYTES = 1024 * 1024;
const MIB_200 = 200 * 1024 * 1024;

// ---- the hostile upstream: what it does with a request is chosen by the marker in its body ----

type Mode = (socket: net.Socket, request: string) => void;
const modes = new Map<string, Mode>();
const seen: { marker: string; socket: net.Socket; closed: boolean }[] = [];
const sockets = new Set<net.Socket>();
/** Serves one connection of the hostile upstream, plain or TLS. */
function hostileConnection(socket: net.Socket): void {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
  eachRequest(socket, (request) => {
    const marker = /messages-edges-[0-9a-f]+/.exec(request)?.[0] ?? '';
    const record = { marker, socket, closed: false };
    socket.on('close', () => { record.closed = true; });
    seen.push(record);
    const mode = modes.get(marker);
    if (mode) mode(socket, request);
    else socket.destroy();
  });
}
const hostile = net.createServer(hostileConnection);
// The same over TLS, for a BYOK row's base_url (https only), with a certificate made here and trusted
// by the gateway through NODE_EXTRA_CA_CERTS; FETCH_ALLOW_LOOPBACK lets a row name loopback.
const certificate = selfSignedCert('messages-edges');
const hostileTls = tls.createServer({ key: certificate.key, cert: certificate.cert }, hostileConnection);

function marked(mode: Mode): string {
  const marker = `messages-edges-${randomBytes(4).toString('hex')}`;
  modes.set(marker, mode);
  return marker;
}

const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const MESSAGE_START = sse('message_start', { message: { id: 'msg_hostile', type: 'message', role: 'assistant', model: 'claude-haiku-5-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 25, output_tokens: 1 } } });
const TEXT_START = sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
const textDelta = (text: string) => sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } });
const openAiChunk = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'chatcmpl-h', object: 'chat.completion.chunk', created: 1, model: 'gpt-4.1', choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const OPENAI_START = openAiChunk({ role: 'assistant', content: '' });
const SSE_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

// ---- the gateway ----

let gateway: Gateway;
t.before(async () => {
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => hostileTls.listen(0, '127.0.0.1', resolve));
  const routing = join(certificate.dir, 'routing.yaml');
  writeFileSync(routing, `
models:
  ${HOSTILE_MODEL}:
    targets:
      - { name: hostile, vendor: anthropic, api_key: hostile-key, base_url: "http://127.0.0.1:${(hostile.address() as AddressInfo).port}/v1" }
  ${HOSTILE_OPENAI_MODEL}:
    targets:
      - { name: hostile-openai, vendor: openai, api_key: hostile-key, base_url: "http://127.0.0.1:${(hostile.address() as AddressInfo).port}/v1" }
`);
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, ROUTING_FILE: routing, MAX_BODY_BYTES: String(MAX_BODY_BYTES),
      NODE_EXTRA_CA_CERTS: certificate.certPath, FETCH_ALLOW_LOOPBACK: 'true',
    },
  });
});
t.teardown(async () => {
  if (process.env.GW_DEBUG) console.error(gateway?.output);
  await gateway?.close();
  for (const socket of sockets) socket.destroy();
  hostile.close();
  hostileTls.close();
  certificate.remove();
});

// ---- tools ----

const HEADERS = { 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };

async function post(path: string, key: string, body: string | Record<string, unknown>, headers: Record<string, string> = {}): Promise<RawResponse> {
  return rawRequest(`${gateway.url}${path}`, {
    method: 'POST', headers: { 'x-api-key': key, ...HEADERS, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Anthropic's envelope (`type: 'error'`, `error.type`) with the gateway's `code`, `msg`, `error.code` beside it. */
function anthropicEnvelope(t: Test, response: RawResponse, status: number, type: string, code?: string, label = ''): void {
  const prefix = label ? `${label}: ` : '';
  t.equal(response.status, status, `${prefix}HTTP ${status} (${response.text.slice(0, 200)})`);
  const body = response.body as Record<string, any>;
  t.equal(body?.type, 'error', `${prefix}type: error`);
  t.equal(body?.error?.type, type, `${prefix}error.type ${type}`);
  t.equal(body?.code, status, `${prefix}code ${status}`);
  t.ok(typeof body?.msg === 'string' && body.msg.length > 0, `${prefix}msg`);
  t.equal(body?.error?.message, body?.msg, `${prefix}error.message is msg`);
  if (code !== undefined) t.equal(body?.error?.code, code, `${prefix}error.code ${code}`);
}

/** The events of an Anthropic SSE text: name and parsed data, complete events only. */
function eventsOf(text: string): { name: string; data: any }[] {
  const complete = text.slice(0, text.lastIndexOf('\n\n') + 2);
  return complete.split('\n\n').filter((block) => block.trim() !== '').map((block) => {
    const name = /^event: (.*)$/m.exec(block)?.[1] ?? '';
    const data = /^data: (.*)$/m.exec(block)?.[1];
    return { name, data: data === undefined ? undefined : JSON.parse(data) };
  });
}

const textDeltas = (text: string) => eventsOf(text).filter((e) => e.name === 'content_block_delta' && e.data?.delta?.type === 'text_delta').length;

/** The stream ends with Anthropic's `error` event and nothing after it; no `message_stop`. */
function endsWithError(t: Test, text: string): void {
  const events = eventsOf(text);
  const last = events.at(-1);
  t.equal(last?.name, 'error', `the last event is an error event: ${text.slice(-300)}`);
  t.equal(last?.data?.type, 'error');
  t.type(last?.data?.error?.type, 'string', 'with Anthropic\'s error type');
  t.type(last?.data?.error?.message, 'string');
  t.notOk(events.some((e) => e.name === 'message_stop'), 'no message_stop');
  t.ok(text.endsWith('\n\n'), 'the stream ends after it');
}

const mockRecord = (marker: string): MockRequestRecord | undefined => gateway.mock.requests().find((r) => JSON.stringify(r.body ?? '').includes(marker));

/** Per-token prices of a catalog model, nano-USD. */
function pricesOf(model: string): { input: bigint; output: bigint } {
  const entry = CHAT_MODELS.find((m) => m.id === model)!;
  return { input: usdToNano(entry.usdPerMillion.input) / 1_000_000n, output: usdToNano(entry.usdPerMillion.output) / 1_000_000n };
}

/** Nothing charged, nothing held, each call logged with no cost. */
async function nothingCharged(t: Test, user: string, calls: number): Promise<{ status: number; error_code: string | null }[]> {
  await gateway.ledgerSettled(user);
  await sleep(200); // a late settlement, if any, would land now
  const money = await leasesClosed(gateway, user);
  t.equal(money.usageTransactions, 0, 'no usage transaction');
  t.equal(money.held, 0n, 'nothing held');
  t.equal(money.credits, money.ledgerSum, 'credits unchanged (Redis and the ledger agree)');
  const logs = await eventually(`${calls} logged calls of ${user}`, async () => {
    const rows = await gateway.sql<{ status: number; error_code: string | null; cost_nano: bigint }[]>`select status, error_code, cost_nano from request_logs where user_id = ${user}`;
    return rows.length >= calls ? rows : undefined;
  });
  t.ok(logs.every((log) => log.cost_nano === 0n), 'logged with no cost');
  return logs;
}

// ---- streams ----

for (const model of [{ id: 'anthropic/claude-sonnet-4-5', label: 'an Anthropic model (passed through)' }, { id: 'openai/gpt-4o-mini', label: 'a translated model' }]) {
  t.test(`${model.label}: a client that leaves mid-stream pays once, for the prompt and what was generated`, async (t) => {
    const user = `edges-abort-${model.id.split('/')[0]}`;
    const { key } = await fastUser(gateway, user, '5');
    const marker = `abort-${randomBytes(4).toString('hex')}`;
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST', headers: { 'x-api-key': key, ...HEADERS }, signal: controller.signal,
      body: JSON.stringify({ model: model.id, max_tokens: 1000, stream: true, messages: [{ role: 'user', content: `please stream ${marker} [[mock chunks=200 delay_ms=20]]` }] }),
    });
    t.equal(response.status, 200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (textDeltas(received) < 5) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
    const seenByClient = textDeltas(received);
    t.ok(seenByClient >= 5, `the client read ${seenByClient} text deltas before leaving`);
    t.equal(eventsOf(received)[0]?.name, 'message_start');
    controller.abort();
    await reader.read().catch(() => undefined);

    const record = await eventually('the upstream connection to close', () => {
      const found = mockRecord(marker);
      return found?.clientAborted ? found : undefined;
    });
    t.equal(record.completed, false, 'the upstream call was cut');
    t.ok(record.contentChunksWritten < 100, `far fewer than 200 tokens generated (${record.contentChunksWritten})`);
    await gateway.ledgerSettled(user);
    await sleep(300); // a second settlement, if any, would land now
    await gateway.ledgerSettled(user);
    const rows = await gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
    t.equal(rows.length, 1, 'exactly one charge');
    const charged = -(rows[0]?.credits_nano ?? 0n);
    const [log] = await gateway.sql<{ id: string; client_aborted: boolean; cost_nano: bigint; prompt_tokens: number; completion_tokens: number; cached_tokens: number }[]>`
      select id, client_aborted, cost_nano, prompt_tokens, completion_tokens, cached_tokens from request_logs where user_id = ${user}`;
    t.equal(log?.id, rows[0]?.id, 'the log row is the charged call');
    t.equal(log?.client_aborted, true, 'logged as left by its client');
    t.equal(log?.cost_nano, charged);
    t.ok(log!.prompt_tokens > 0, `the prompt counted (${log!.prompt_tokens} tokens)`);
    t.ok(log!.completion_tokens >= seenByClient, `at least what the client saw (${log!.completion_tokens} >= ${seenByClient})`);
    t.ok(log!.completion_tokens <= record.contentChunksWritten, `at most what was generated (${log!.completion_tokens} <= ${record.contentChunksWritten})`);
    const price = pricesOf(model.id);
    t.equal(log!.cached_tokens, 0);
    t.equal(charged, BigInt(log!.prompt_tokens) * price.input + BigInt(log!.completion_tokens) * price.output, 'charged the prompt and the generated tokens at the model\'s prices');
    const money = await leasesClosed(gateway, user);
    t.equal(money.held, 0n, 'nothing held');
    t.equal(money.credits, 5_000_000_000n - charged, 'the balance moved by the one charge');
    t.equal(money.credits, money.ledgerSum);
  });

  t.test(`${model.label}: an upstream that cuts its stream: an error event, no message_stop, nothing charged`, async (t) => {
    const user = `edges-cut-${model.id.split('/')[0]}`;
    const { key } = await fastUser(gateway, user, '5');
    // Both of the mock's ways to cut: a fault directive, and disconnect_after.
    const directives = ['[[mock chunks=20 fault=cut cut_after=3]]', '[[mock chunks=20 disconnect_after=3]]'];
    for (const directive of directives) {
      const marker = `cut-${randomBytes(4).toString('hex')}`;
      const response = await post('/v1/messages', key, { model: model.id, max_tokens: 100, stream: true, messages: [{ role: 'user', content: `cut me ${marker} ${directive}` }] });
      t.equal(response.status, 200, `${directive}: the stream had begun`);
      t.match(response.headers['content-type'], /^text\/event-stream/);
      t.equal(textDeltas(response.text), 3, 'the 3 deltas before the cut were relayed');
      endsWithError(t, response.text);
      t.equal(mockRecord(marker)?.clientAborted, false, 'the upstream cut it, not the gateway');
    }
    // The SDK raises the error event as an error of its own.
    const sdk = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
    const failed = await sdk.messages.stream({ model: model.id, max_tokens: 100, messages: [{ role: 'user', content: 'cut [[mock chunks=20 disconnect_after=2]]' }] }).finalMessage().then(() => undefined, (error: Error) => error);
    t.ok(failed instanceof Anthropic.APIError, `the SDK throws its APIError (${String(failed)})`);
    const logs = await nothingCharged(t, user, directives.length + 1);
    t.ok(logs.every((log) => log.status === 502), 'each logged as a 502');
  });
}

t.test('an upstream error event mid-stream is passed on as sent; nothing charged', async (t) => {
  const user = 'edges-error-event';
  const { key } = await fastUser(gateway, user, '5');
  const error = sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } });
  const marker = marked((socket) => {
    socket.write(SSE_HEAD + chunk(MESSAGE_START + TEXT_START + textDelta('Hello') + textDelta(' there')));
    setTimeout(() => socket.end(chunk(error) + '0\r\n\r\n'), 50);
  });
  const response = await post('/v1/messages', key, { model: HOSTILE_MODEL, max_tokens: 100, stream: true, messages: [{ role: 'user', content: `hi ${marker}` }] });
  t.equal(response.status, 200);
  t.equal(textDeltas(response.text), 2, 'the deltas before it');
  t.ok(response.text.endsWith(error), 'the upstream\'s error event reaches the client as sent, last');
  endsWithError(t, response.text);
  t.equal(eventsOf(response.text).filter((e) => e.name === 'error').length, 1, 'one error event, none added');
  const [log] = await nothingCharged(t, user, 1);
  t.same(log, { status: 502, error_code: 'upstream_error', cost_nano: 0n }, 'logged as the failure it was');
});

t.test('a translated model: the upstream\'s error mid-stream becomes Anthropic\'s error event; nothing charged', async (t) => {
  const user = 'edges-error-event-translated';
  const { key } = await fastUser(gateway, user, '5');
  const marker = marked((socket) => {
    socket.write(SSE_HEAD + chunk(OPENAI_START + openAiChunk({ content: 'Hello' }) + openAiChunk({ content: ' there' })));
    setTimeout(() => socket.end(chunk(`data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } })}\n\n`) + '0\r\n\r\n'), 50);
  });
  const response = await post('/v1/messages', key, { model: HOSTILE_OPENAI_MODEL, max_tokens: 100, stream: true, messages: [{ role: 'user', content: `hi ${marker}` }] });
  t.equal(response.status, 200);
  t.equal(eventsOf(response.text)[0]?.name, 'message_start');
  t.equal(textDeltas(response.text), 2, 'the deltas before it');
  endsWithError(t, response.text);
  const last = eventsOf(response.text).at(-1)!;
  t.same(last.data, { type: 'error', error: { type: 'api_error', message: 'The server had an error while processing your request.' } }, 'the upstream\'s message, in Anthropic\'s event');
  t.equal(eventsOf(response.text).filter((e) => e.name === 'error').length, 1, 'one error event');
  const [log] = await nothingCharged(t, user, 1);
  t.same(log, { status: 502, error_code: 'upstream_error', cost_nano: 0n }, 'logged as the failure it was');
});

t.test('the mock vendor\'s `error` fault: a translated stream ends with the error event, no message_delta or message_stop; 502, nothing charged', async (t) => {
  const user = 'edges-error-fault';
  const { key } = await fastUser(gateway, user, '5');
  const response = await post('/v1/messages', key, {
    model: 'openai/gpt-4o-mini', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi [[mock chunks=6 fault=error cut_after=2]]' }],
  });
  t.equal(response.status, 200);
  t.equal(textDeltas(response.text), 2, 'the deltas before the vendor\'s error');
  endsWithError(t, response.text);
  t.notOk(eventsOf(response.text).some((e) => e.name === 'message_delta'), 'no message_delta (no usage of a call that is not charged)');
  t.equal(eventsOf(response.text).filter((e) => e.name === 'error').length, 1, 'one error event');
  const [log] = await nothingCharged(t, user, 1);
  t.same(log, { status: 502, error_code: 'upstream_error', cost_nano: 0n }, 'logged as the failure it was');
});

/** Starts the gateway's peak resident memory afresh (Linux's clear_refs); the answer is how far the peak grew since. */
function peakGrowth(): () => number {
  const peak = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${gateway.process.pid}/status`, 'utf8'))![1]) * 1024;
  writeFileSync(`/proc/${gateway.process.pid}/clear_refs`, '5');
  const before = peak();
  return () => peak() - before;
}

/**
 * A stream whose upstream sends the start of a message, then 200 MiB with no blank line: broken with
 * Anthropic's error event once the event passes UPSTREAM_MAX_EVENT_BYTES, the upstream let go, memory
 * flat, nothing charged, logged 502 upstream_stream_broken.
 */
async function endlessEvent(t: Test, user: string, key: string, model: string, opening = MESSAGE_START + TEXT_START + 'event: content_block_delta\ndata: '): Promise<void> {
  const progress = { sent: 0 };
  const piece = Buffer.alloc(1024 * 1024, 'A');
  const marker = marked((socket) => {
    socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: ${opening.length + MIB_200}\r\n\r\n${opening}`);
    const more = (): void => {
      while (progress.sent < MIB_200 && !socket.destroyed) {
        progress.sent += piece.length;
        if (!socket.write(piece)) return void socket.once('drain', more);
      }
    };
    more();
  });
  const grown = peakGrowth();
  const started = Date.now();
  const response = await fetch(`${gateway.url}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': key, ...HEADERS },
    body: JSON.stringify({ model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: `endless ${marker}` }] }),
  });
  t.equal(response.status, 200);
  let bytes = 0;
  let tail = '';
  for await (const part of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += part.length;
    tail = (tail + Buffer.from(part).toString('utf8')).slice(-64 * 1024);
  }
  t.ok(Date.now() - started < 15_000, `broken in ${Date.now() - started} ms`);
  t.ok(bytes < 64 * 1024, `the client got ${bytes} bytes, none of the endless event`);
  t.equal(eventsOf(tail)[0]?.name, 'message_start', 'the events before it were relayed');
  endsWithError(t, tail);
  t.match(tail, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/, 'Anthropic\'s error event');
  const record = seen.find((r) => r.marker === marker);
  await eventually('the upstream connection to close', () => (record?.closed ? true : undefined));
  t.ok(progress.sent < MIB_200, `the gateway stopped reading: ${(progress.sent / 1048576).toFixed(1)} of 200 MiB written`);
  t.ok(grown() < 64 * 1024 * 1024, `peak RSS grew by ${(grown() / 1048576).toFixed(1)} MiB`);
  const [log] = await nothingCharged(t, user, 1);
  t.equal(log!.status, 502);
  t.equal(log!.error_code, 'upstream_stream_broken');
}

t.test('an upstream event that never ends (200 MiB without a blank line): an error event, memory flat, nothing charged', async (t) => {
  const user = 'edges-endless';
  const { key } = await fastUser(gateway, user, '5');
  await endlessEvent(t, user, key, HOSTILE_MODEL);
});

t.test('a translated model whose upstream event never ends: the same', async (t) => {
  const user = 'edges-endless-translated';
  const { key } = await fastUser(gateway, user, '5');
  await endlessEvent(t, user, key, HOSTILE_OPENAI_MODEL, `${OPENAI_START}data: `);
});

t.test('the same through a BYOK row whose base_url is the hostile upstream (over TLS, loopback allowed)', async (t) => {
  const user = 'edges-endless-byok';
  const { key, token } = await fastUser(gateway, user, '5');
  const created = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'anthropic', label: 'hostile', api_key: 'sk-ant-hostile-0001', base_url: `https://127.0.0.1:${(hostileTls.address() as AddressInfo).port}/v1`, always_use: true }),
  });
  t.equal(created.status, 201, created.text);
  await endlessEvent(t, user, key, 'claude-sonnet-4-5');
});

// ---- refusals ----

t.test('refusals in Anthropic\'s envelope with code and msg: 413, 401 for the Content-Type, 400 for malformed JSON', async (t) => {
  const user = 'edges-refusals';
  const { key } = await fastUser(gateway, user, '5');
  const big = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x'.repeat(MAX_BODY_BYTES) }] });
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    anthropicEnvelope(t, await post(path, key, big), 413, 'request_too_large', undefined, `${path}: a body over MAX_BODY_BYTES`);
    const ok = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    anthropicEnvelope(t, await post(path, key, ok, { 'content-type': '' }), 401, 'authentication_error', 'invalid_content_type', `${path}: no Content-Type`);
    anthropicEnvelope(t, await post(path, key, ok, { 'content-type': 'text/plain' }), 401, 'authentication_error', 'invalid_content_type', `${path}: text/plain`);
    const malformed = await post(path, key, '{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [');
    anthropicEnvelope(t, malformed, 400, 'invalid_request_error', undefined, `${path}: malformed JSON`);
    anthropicEnvelope(t, await post(path, key, '[1, 2]'), 400, 'invalid_request_error', undefined, `${path}: not a JSON object`);
  }
  await nothingCharged(t, user, 0);
});

t.test('a management key is 403 permission_error; a key revoked mid-flight fails before its next upstream call, then is 401 at once', async (t) => {
  const user = 'edges-keys';
  const { key, token } = await fastUser(gateway, user, '5');
  const management = await gateway.createKey(token, { name: 'automation', is_provisioning: true });
  const body = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi [[mock chunks=1]]' }] };
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    anthropicEnvelope(t, await post(path, management, body), 403, 'permission_error', 'management_key', `${path}: a management key`);
    anthropicEnvelope(t, await post(path, management, body, { authorization: `Bearer ${management}` }), 403, 'permission_error', 'management_key', `${path}: a management key as a bearer token`);
  }
  t.equal((await post('/v1/messages', key, body)).status, 200, 'the regular key calls the model');

  // Admitted, its first model answers 529 slowly; the key is revoked meanwhile: the fallback model is never called.
  const marker = `revoked-${randomBytes(4).toString('hex')}`;
  const calling = post('/v1/messages', key, {
    model: 'claude-sonnet-4-5', models: ['anthropic/claude-haiku-4-5'], max_tokens: 10,
    messages: [{ role: 'user', content: `hi ${marker} [[mock latency_ms=800 fail=529]]` }],
  });
  await eventually('the first model to be called', () => mockRecord(marker));
  const revoked = await rawRequest(`${gateway.url}/api/v1/api-keys/${await regularKeyId(token)}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  t.equal(revoked.status, 204, 'revoked while the call waits on its first model');
  anthropicEnvelope(t, await calling, 401, 'authentication_error', 'key_revoked', 'the call in flight');
  t.same(gateway.mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker)).map((r) => (r.body as { model: string }).model), ['claude-sonnet-4-5'], 'the fallback model was not called');
  for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
    anthropicEnvelope(t, await post(path, key, body), 401, 'authentication_error', 'invalid_api_key', `${path}: the revoked key, at once`);
  }
  await gateway.ledgerSettled(user);
  t.equal((await leasesClosed(gateway, user)).usageTransactions, 1, 'only the call before the revocation charged');
});

/** The id of the user's one regular key (the other is the management key). */
async function regularKeyId(token: string): Promise<string> {
  const response = await rawRequest(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as { id: string; is_provisioning: boolean }[]).find((k) => !k.is_provisioning)!.id;
}

t.test('Idempotency-Key: a repeat returns the first answer, whole or streamed, and is charged once', async (t) => {
  const user = 'edges-idempotency';
  const { key } = await fastUser(gateway, user, '5');
  for (const stream of [false, true]) {
    const marker = `idem-${randomBytes(4).toString('hex')}`;
    const body = { model: 'claude-sonnet-4-5', max_tokens: 100, stream, messages: [{ role: 'user', content: `once ${marker} [[mock chunks=4]]` }] };
    const idem = `edges-${randomBytes(8).toString('hex')}`;
    const first = await post('/v1/messages', key, body, { 'idempotency-key': idem });
    t.equal(first.status, 200, `stream ${stream}: ${first.text.slice(0, 200)}`);
    t.notOk(first.headers['idempotent-replayed'], 'the first is no replay');
    const again = await post('/v1/messages', key, body, { 'idempotency-key': idem });
    t.equal(again.status, 200);
    t.equal(again.headers['idempotent-replayed'], 'true', 'the repeat says it is a replay');
    t.equal(again.text, first.text, 'the same bytes');
    t.equal(again.headers['x-request-id'], first.headers['x-request-id'], 'the same request id');
    t.equal(gateway.mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker)).length, 1, 'one upstream call');
    const other = await post('/v1/messages', key, { ...body, max_tokens: 99 }, { 'idempotency-key': idem });
    anthropicEnvelope(t, other, 422, 'invalid_request_error', 'idempotency_key_reused', 'another body with the key');
  }
  await gateway.ledgerSettled(user);
  const money = await leasesClosed(gateway, user);
  t.equal(money.usageTransactions, 2, 'one charge per key');
  t.equal(money.held, 0n);
});

t.test('count_tokens counts in the key\'s window: past it, 429 rate_limit_error with Retry-After, for /v1/messages too', async (t) => {
  const user = 'edges-window';
  const { key } = await fastUser(gateway, user, '5');
  const statuses: number[] = [];
  // The default window: 20 requests per 10 s per key (the harness leaves RATE_LIMIT_DEFAULT as it is).
  for (let i = 0; i < 20; i++) {
    const model = i % 2 === 0 ? 'claude-sonnet-4-5' : 'openai/gpt-4o-mini';
    statuses.push((await post('/v1/messages/count_tokens', key, { model, messages: [{ role: 'user', content: `count ${i}` }] })).status);
  }
  t.same(statuses, Array(20).fill(200), 'twenty counts answered');
  const refused = await post('/v1/messages/count_tokens', key, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'one more' }] });
  anthropicEnvelope(t, refused, 429, 'rate_limit_error', 'rate_limit_exceeded', 'the 21st count');
  t.match(refused.headers['retry-after'], /^\d+$/, `Retry-After: ${refused.headers['retry-after']}`);
  const call = await post('/v1/messages', key, { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi [[mock chunks=1]]' }] });
  anthropicEnvelope(t, call, 429, 'rate_limit_error', 'rate_limit_exceeded', 'a call in the window the counts filled');
  t.match(call.headers['retry-after'], /^\d+$/);
  const money = await leasesClosed(gateway, user);
  t.equal(money.usageTransactions, 0, 'counts are never charged');
});

t.test('?beta=true (as Claude Code sends it) on both paths', async (t) => {
  const { key } = await fastUser(gateway, 'edges-beta', '5');
  const beta = { 'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14' };
  const marker = `beta-${randomBytes(4).toString('hex')}`;
  const answer = await post('/v1/messages?beta=true', key, { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: `hi ${marker} [[mock chunks=2]]` }] }, beta);
  t.equal(answer.status, 200, answer.text.slice(0, 200));
  t.equal(answer.body.type, 'message');
  t.equal(mockRecord(marker)?.anthropicBeta, beta['anthropic-beta'], 'the betas passed on');
  const translated = await post('/v1/messages?beta=true', key, { model: 'openai/gpt-4o-mini', max_tokens: 50, messages: [{ role: 'user', content: 'hi [[mock chunks=2]]' }] }, beta);
  t.equal(translated.status, 200);
  t.equal(translated.body.type, 'message');
  const counted = await post('/v1/messages/count_tokens?beta=true', key, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'How many?' }] }, beta);
  t.equal(counted.status, 200, counted.text.slice(0, 200));
  t.ok(Number.isInteger(counted.body.input_tokens) && counted.body.input_tokens > 0, `input_tokens ${counted.body.input_tokens}`);
});

t.test('an unknown top-level field: 400 naming it on a translated model, passed to the upstream on an Anthropic model', async (t) => {
  const user = 'edges-unknown-field';
  const { key } = await fastUser(gateway, user, '5');
  const refused = await post('/v1/messages', key, { model: 'openai/gpt-4o-mini', max_tokens: 50, context_management: { edits: [] }, messages: [{ role: 'user', content: 'hi' }] });
  anthropicEnvelope(t, refused, 400, 'invalid_request_error', undefined, 'translated');
  t.equal(refused.body.error.param, 'context_management', 'param names the field');
  t.match(refused.body.msg, /context_management/, 'and so does the message');
  const marker = `field-${randomBytes(4).toString('hex')}`;
  const passed = await post('/v1/messages', key, { model: 'claude-sonnet-4-5', max_tokens: 50, context_management: { edits: [] }, messages: [{ role: 'user', content: `hi ${marker} [[mock chunks=1]]` }] });
  t.equal(passed.status, 200, 'the mock (as Anthropic) accepts it');
  t.same((mockRecord(marker)?.body as Record<string, unknown>).context_management, { edits: [] }, 'the field reached the upstream as sent');
});
