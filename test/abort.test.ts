// A client that leaves mid-stream pays once, for what was generated; an upstream that fails
// (an error status, or a stream cut mid-way) costs nothing and releases the reservation.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { chatBody, envelopeProblems, eventually, moneyView, parseJson, postChat, PRICE, sseData } from './helpers/billing-checks.js';
import { promptTokens } from '../src/mock-vendor/usage.js';
import type { MockRequestRecord } from '../src/mock-vendor/server.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

const INITIAL_NANO = 5_000_000_000n;

function mockRecord(marker: string): MockRequestRecord | undefined {
  return gateway.mock.requests().find((r) => JSON.stringify(r.body ?? '').includes(marker));
}

/** Content deltas (non-empty `delta.content`) in SSE text. */
function contentEvents(text: string): number {
  let n = 0;
  for (const data of sseData(text)) {
    const chunk = parseJson(data);
    const content = chunk?.choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content !== '') n++;
  }
  return n;
}

t.test('a stream aborted by the client is charged exactly once, for the prompt and what was generated', async (t) => {
  const user = 'abort-user';
  const { key } = await gateway.user(user, '5');
  const marker = `abort-${randomBytes(4).toString('hex')}`;
  const content = `please stream ${marker} [[mock chunks=200 delay_ms=20]]`;
  const body = chatBody(content, { stream: true });

  const controller = new AbortController();
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
    signal: controller.signal,
  });
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type'), /^text\/event-stream/);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let received = '';
  while (contentEvents(received) < 5) {
    const { value, done } = await reader.read();
    if (done) break;
    received += decoder.decode(value, { stream: true });
  }
  // Only complete events count: the client certainly saw these before leaving.
  const seenByClient = contentEvents(received.slice(0, received.lastIndexOf('\n\n') + 2));
  t.ok(seenByClient >= 5, `the client read ${seenByClient} content chunks before aborting`);
  controller.abort();
  await reader.read().catch(() => undefined);

  const record = await eventually('the mock to see the upstream connection close', () => {
    const found = mockRecord(marker);
    return found?.clientAborted ? found : undefined;
  });
  t.equal(record.clientAborted, true, 'the gateway closed the upstream connection early');
  t.equal(record.completed, false, 'the upstream response never completed');
  t.ok(record.contentChunksWritten < 100, `far fewer than 200 chunks were generated (${record.contentChunksWritten})`);
  t.ok(record.contentChunksWritten >= seenByClient, 'the mock wrote at least what the client saw');

  await gateway.ledgerSettled(user);
  await sleep(300); // a second settlement, if any, would land now
  await gateway.ledgerSettled(user);

  const rows = await gateway.sql<{ id: string; credits_nano: bigint }[]>`
    select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(rows.length, 1, 'exactly one usage transaction for the aborted call');
  const charged = -(rows[0]?.credits_nano ?? 0n);
  const prompt = promptTokens((JSON.parse(body) as { messages: unknown[] }).messages);
  const promptCost = BigInt(prompt) * PRICE.input;
  t.ok(charged > promptCost, `charged ${charged} > the prompt alone (${promptCost})`);
  t.ok(charged >= promptCost + BigInt(seenByClient) * PRICE.output, 'charged at least the prompt and the tokens the client received');
  t.ok(charged <= promptCost + BigInt(record.contentChunksWritten) * PRICE.output,
    `charged ${charged} <= prompt + the ${record.contentChunksWritten} tokens the mock wrote (${promptCost + BigInt(record.contentChunksWritten) * PRICE.output})`);
  t.equal((charged - promptCost) % PRICE.output, 0n, 'the completion part is a whole number of output tokens');

  const money = await moneyView(gateway, user);
  t.equal(money.held, 0n, 'held back to 0');
  t.equal(money.openReservations, 0, 'no open reservation');
  t.equal(money.credits, INITIAL_NANO - charged, 'Redis credits moved by exactly the one charge');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');

  const [log] = await gateway.sql<{ id: string; client_aborted: boolean; cost_nano: bigint; stream: boolean }[]>`
    select id, client_aborted, cost_nano, stream from request_logs where user_id = ${user}`;
  t.ok(log, 'the call is in request_logs');
  t.equal(log?.client_aborted, true, 'logged as aborted by the client');
  t.equal(log?.cost_nano, charged, 'logged with the charged cost');
  t.equal(log?.id, rows[0]?.id, 'the log row and the transaction are the same call');
});

t.test('a stream aborted before the upstream answered is released or charged once, never held', async (t) => {
  const user = 'early-abort-user';
  const { key } = await gateway.user(user, '5');
  const marker = `early-${randomBytes(4).toString('hex')}`;
  const controller = new AbortController();
  const pending = postChat(gateway, key, chatBody(`wait ${marker} [[mock chunks=50 latency_ms=1500]]`, { stream: true }), controller.signal);
  pending.catch(() => undefined);
  await eventually('the call to reach the upstream', () => mockRecord(marker));
  controller.abort();
  await t.rejects(pending, 'the client gave up');
  const record = await eventually('the upstream connection to close', () => {
    const found = mockRecord(marker);
    return found?.clientAborted ? found : undefined;
  });
  t.equal(record.contentChunksWritten, 0, 'nothing was generated');
  await gateway.ledgerSettled(user);
  await sleep(200);
  const money = await moneyView(gateway, user);
  t.ok(money.usageTransactions <= 1, 'charged at most once');
  t.equal(money.held, 0n, 'held back to 0');
  t.equal(money.openReservations, 0, 'no open reservation');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');
});

t.test('a non-streaming call whose client left is cut at the upstream and settled, never held', async (t) => {
  const user = 'sync-abort-user';
  const { key } = await gateway.user(user, '5');
  const marker = `sync-${randomBytes(4).toString('hex')}`;
  const body = chatBody(`answer later ${marker} [[mock chunks=7 latency_ms=600]]`, { max_tokens: 50 });
  const controller = new AbortController();
  const pending = postChat(gateway, key, body, controller.signal);
  pending.catch(() => undefined);
  await eventually('the call to reach the upstream', () => mockRecord(marker));
  controller.abort();
  await t.rejects(pending, 'the client gave up');
  const record = await eventually('the mock to see the upstream connection close', () => {
    const found = mockRecord(marker);
    return found?.clientAborted ? found : undefined;
  });
  t.equal(record.completed, false, 'the upstream call was cut, not run to its end');
  await gateway.ledgerSettled(user);
  const money = await moneyView(gateway, user);
  t.equal(money.usageTransactions, 0, 'left before the upstream answered: nothing to charge, as for a stream');
  t.equal(money.credits, INITIAL_NANO);
  t.equal(money.held, 0n, 'the reservation is released');
  const [log] = await gateway.sql<{ status: number }[]>`select status from request_logs where user_id = ${user}`;
  t.equal(log?.status, 499, 'logged as left by its client');
});

t.test('upstream failures release everything and charge nothing', async (t) => {
  const user = 'failure-user';
  const { key } = await gateway.user(user, '5');

  t.test('non-streaming upstream 500: 502 envelope', async (t) => {
    const r = await postChat(gateway, key, chatBody('fail please [[mock fail=500]]', { max_tokens: 20 }));
    t.equal(r.status, 502);
    t.same(envelopeProblems(parseJson(r.text), 502), [], `502 envelope: ${r.text.slice(0, 200)}`);
  });

  t.test('streaming upstream 500 before any byte: 502 envelope', async (t) => {
    const r = await postChat(gateway, key, chatBody('fail please [[mock fail=500]]', { stream: true }));
    t.equal(r.status, 502);
    t.same(envelopeProblems(parseJson(r.text), 502), [], `502 envelope: ${r.text.slice(0, 200)}`);
  });

  t.test('stream cut by the upstream after 3 chunks: SSE error event, then the end', async (t) => {
    const marker = `cut-${randomBytes(4).toString('hex')}`;
    const r = await postChat(gateway, key, chatBody(`cut me ${marker} [[mock chunks=20 disconnect_after=3]]`, { stream: true }));
    t.equal(r.status, 200, 'the stream had begun');
    t.match(r.headers.get('content-type'), /^text\/event-stream/);
    const events = sseData(r.text);
    t.equal(contentEvents(r.text), 3, 'the 3 chunks generated before the cut were relayed');
    const last = parseJson(events[events.length - 1] ?? '');
    t.type(last?.error, 'object', `the last event is an error: ${events[events.length - 1]}`);
    t.type(last?.error?.message, 'string');
    t.notOk(events.includes('[DONE]'), 'no [DONE] after a broken stream');
    t.notOk(events.some((e) => /"usage":\{/.test(e)), 'no usage reported');
    t.ok(r.text.endsWith('\n\n'), 'the response ends after the error event');
    const record = mockRecord(marker);
    t.equal(record?.contentChunksWritten, 3);
    t.equal(record?.clientAborted, false, 'the upstream cut it, not the gateway');
  });

  t.test('nothing charged, nothing held', async (t) => {
    await gateway.ledgerSettled(user);
    await sleep(200);
    await gateway.ledgerSettled(user);
    const money = await moneyView(gateway, user);
    t.equal(money.usageTransactions, 0, 'no usage transaction');
    t.equal(money.held, 0n, 'held 0');
    t.equal(money.openReservations, 0, 'no open reservation');
    t.equal(money.credits, INITIAL_NANO, 'credits unchanged');
    t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');
    const logs = await gateway.sql<{ status: number; cost_nano: bigint }[]>`select status, cost_nano from request_logs where user_id = ${user}`;
    t.equal(logs.length, 3, 'each failed call is logged');
    t.ok(logs.every((l) => l.cost_nano === 0n && l.status === 502), 'logged as 502 with no cost');
  });
});

t.test('a client that stops reading a long stream: the gateway stops reading the upstream, and the whole stream arrives once the client reads again', async (t) => {
  const { key } = await gateway.user('slow-reader-user', '5');
  const marker = `slow-${randomBytes(4).toString('hex')}`;
  const chunks = 200_000; // some 30 MB of events: far more than the sockets between the three can hold
  const body = chatBody(`stream to a slow reader ${marker} [[mock chunks=${chunks}]]`, { stream: true });
  const { connect } = await import('node:net');
  const url = new URL(`${gateway.v1}/chat/completions`);
  const socket = connect(Number(url.port), url.hostname);
  const received: Buffer[] = [];
  socket.on('data', (part: Buffer) => received.push(part));
  socket.write(`POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  await eventually('the stream to start', () => received.length > 0 || undefined);
  socket.pause();
  // Whatever the sockets hold, the upstream is held back once they are full: it has not written it all.
  await sleep(1500);
  const writtenWhilePaused = mockRecord(marker)?.contentChunksWritten ?? 0;
  await sleep(500);
  t.equal(mockRecord(marker)?.contentChunksWritten, writtenWhilePaused, `the upstream stopped at ${writtenWhilePaused} of ${chunks} chunks while the client read nothing`);
  t.ok(writtenWhilePaused < chunks, 'and had not written the whole answer');
  const ended = new Promise<void>((resolve) => socket.on('end', resolve));
  socket.resume();
  await ended;
  const text = Buffer.concat(received).toString('utf8');
  t.equal(contentEvents(text.slice(text.indexOf('\r\n\r\n') + 4)), chunks, 'every content chunk arrived');
  t.ok(text.includes('data: [DONE]'), 'the stream ended');
  t.equal(mockRecord(marker)?.completed, true, 'the upstream finished once the client read again');
});
