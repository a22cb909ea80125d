// Traces of inference calls (docs/operations.md "Traces") against a real gateway exporting to a
// local OTLP/HTTP receiver: the span tree of a streamed call with a retry, its GenAI attributes, the
// caller's and the vendor's traceparent, the request log's trace_id; an embeddings call; an image call
// whose submit and polls carry their attempt's traceparent; nothing sensitive in any
// attribute; nothing exported without an endpoint. And the settings' and traceparent's parsing.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { startHeaderTap, type HeaderTap } from './helpers/header-tap.js';
import { OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { eventually, parseJson, sseData } from './helpers/billing-checks.js';
import { spanContextOf, tracingSettingsOf } from '../src/tracing/tracing.js';

const MODEL = 'openai/gpt-4o-mini';
const IMAGE_MODEL = 'black-forest-labs/flux-2-pro';

t.test('tracingSettingsOf reads the OTEL_* variables', async (t) => {
  const endpoint = 'http://127.0.0.1:4318';
  t.equal(tracingSettingsOf({}), undefined, 'off without an endpoint');
  t.equal(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'TRUE' }), undefined, 'off when the SDK is disabled');
  t.equal(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' }), undefined, 'off with the none exporter');
  const plain = tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint })!;
  t.equal(plain.samplerName, 'parentbased_always_on', 'the specification\'s default sampler');
  t.same(plain.warnings, []);
  t.equal(tracingSettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces` })?.endpoint, `${endpoint}/v1/traces`, 'the traces endpoint alone turns it on');
  const ratio = tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' })!;
  t.equal(ratio.samplerName, 'parentbased_traceidratio 0.01');
  t.equal(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_off' })!.samplerName, 'always_off');
  const badRatio = tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' })!;
  t.equal(badRatio.samplerName, 'traceidratio 1', 'a ratio outside 0..1: 1');
  t.equal(badRatio.warnings.length, 1);
  const unknown = tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'sometimes' })!;
  t.equal(unknown.samplerName, 'parentbased_always_on', 'an unknown sampler: the default');
  t.match(unknown.warnings[0], /OTEL_TRACES_SAMPLER=sometimes/);
  const batch = tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BSP_MAX_QUEUE_SIZE: 'lots' })!;
  t.equal(batch.batch.scheduledDelayMillis, 100);
  t.equal(batch.batch.maxQueueSize, 2048, 'a malformed size: the default');
  t.equal(batch.warnings.length, 1);
});

t.test('spanContextOf follows W3C Trace Context', async (t) => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const spanId = '00f067aa0ba902b7';
  t.same(spanContextOf(`00-${traceId}-${spanId}-01`), { traceId, spanId, traceFlags: 1, isRemote: true });
  t.equal(spanContextOf(`00-${traceId}-${spanId}-00`)?.traceFlags, 0, 'not sampled');
  t.equal(spanContextOf(`00-${traceId}-${spanId}-03`)?.traceFlags, 1, 'unknown flags are ignored');
  t.ok(spanContextOf(`01-${traceId}-${spanId}-01-future`), 'a later version may carry more fields');
  for (const bad of [
    undefined, '', `00-${traceId}-${spanId}-01-extra`, `ff-${traceId}-${spanId}-01`, `00-${'0'.repeat(32)}-${spanId}-01`,
    `00-${traceId}-${'0'.repeat(16)}-01`, `00-${traceId.toUpperCase()}-${spanId}-01`, `00-${traceId}-${spanId}`, `00-${traceId.slice(1)}-${spanId}-01`,
    `00-${traceId}-${spanId}-01${'x'.repeat(600)}`,
  ]) {
    t.equal(spanContextOf(bad), undefined, `refused: ${JSON.stringify(bad)?.slice(0, 80)}`);
  }
});

t.test('a streamed call with a retry, traced', async (t) => {
  const receiver = await OtlpReceiver.start();
  const mock: MockVendor = await startMockVendor({ port: 0 });
  const tap: HeaderTap = await startHeaderTap(mock.url);
  const dir = mkdtempSync(join(tmpdir(), 'tracing-calls-'));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, `
models:
  ${MODEL}:
    targets:
      - { name: first, vendor: openai, api_key: trace-first-upstream-key, base_url: ${tap.url}/openai/v1, priority: 1 }
      - { name: second, vendor: openai, api_key: trace-second-upstream-key, base_url: ${tap.url}/openai/v1 }
`);
  const gateway: Gateway = await startGateway({
    mock, threads: 1,
    env: {
      ROUTING_FILE: file, RATE_LIMIT_DEFAULT: '100000/1', LOG_LEVEL: 'info', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100',
      BFL_BASE_URL: `${tap.url}/bfl/v1`, IMAGE_POLL_MS: '50',
    },
  });
  t.teardown(async () => {
    await gateway.close();
    await tap.close();
    await mock.close();
    await receiver.close();
  });
  t.match(gateway.output, /"msg":"tracing on"/, 'the start-up log says tracing is on');

  const user = `trace-${randomBytes(4).toString('hex')}`;
  const token = await gateway.token(user);
  await gateway.topup(user, '5');
  // A token budget: the prompt is counted on the token counter thread, under the admission span.
  const key = await gateway.createKey(token, { name: 'traced', rate_limit_tph: 1_000_000 });
  mock.setFaults({ 'trace-first-upstream-key': { kind: 503 } });

  const prompt = `the secret prompt ${randomBytes(8).toString('hex')}`;
  const callerTraceId = randomBytes(16).toString('hex');
  const callerSpanId = randomBytes(8).toString('hex');
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${callerTraceId}-${callerSpanId}-01` },
    body: JSON.stringify({ model: MODEL, stream: true, max_tokens: 40, messages: [{ role: 'user', content: prompt }] }),
  });
  const text = await response.text();
  t.equal(response.status, 200, text.slice(0, 200));
  const requestId = response.headers.get('x-request-id')!;
  const answer = sseData(text).filter((data) => data !== '[DONE]').map((data) => parseJson(data)?.choices?.[0]?.delta?.content ?? '').join('');
  t.ok(answer.length > 0, 'an answer was streamed');

  await receiver.waitFor((spans) => spans.some((span) => span.name === 'settlement' && span.traceId === callerTraceId)
    && spans.some((span) => span.name === 'POST /v1/chat/completions' && span.traceId === callerTraceId)
    && spans.filter((span) => span.name.startsWith('chat ') && span.traceId === callerTraceId).length === 2
    && spans.some((span) => span.name === 'count_tokens' && span.traceId === callerTraceId));
  const spans = receiver.trace(callerTraceId);
  const only = (name: string): ReceivedSpan => {
    const found = spans.filter((span) => span.name === name);
    t.equal(found.length, 1, `one ${name} span`);
    return found[0]!;
  };
  const server = only('POST /v1/chat/completions');
  t.equal(server.kind, 2, 'SERVER');
  t.equal(server.parentSpanId, callerSpanId, 'the server span continues the caller\'s traceparent');
  t.match(server.attributes, {
    'http.request.method': 'POST', 'http.route': '/v1/chat/completions', 'http.response.status_code': 200, 'gateway.request_id': requestId,
    'gen_ai.operation.name': 'chat', 'gen_ai.system': 'openai', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': MODEL,
    'gen_ai.response.model': MODEL, 'gen_ai.request.max_tokens': 40, 'gateway.stream': true, 'gateway.attempts': 2,
  });
  t.ok((server.attributes['gen_ai.usage.input_tokens'] as number) > 0, 'input tokens');
  t.ok((server.attributes['gen_ai.usage.output_tokens'] as number) > 0, 'output tokens');
  t.ok((server.attributes['gateway.cost_usd'] as number) > 0, 'the cost');
  t.equal(server.resource['thread.name'], 'http-0');

  const admission = only('admission');
  t.equal(admission.parentSpanId, server.spanId, 'admission is the server span\'s child');
  const count = only('count_tokens');
  t.equal(count.parentSpanId, admission.spanId, 'the token count is the admission span\'s child');
  t.equal(count.resource['thread.name'], 'token-counter', 'made on the token counter thread');

  const attempts = spans.filter((span) => span.name === 'chat gpt-4o-mini').sort((a, b) => Number(a.attributes['gateway.attempt']) - Number(b.attributes['gateway.attempt']));
  t.equal(attempts.length, 2, 'two attempts');
  const [first, second] = attempts as [ReceivedSpan, ReceivedSpan];
  for (const attempt of attempts) {
    t.equal(attempt.kind, 3, 'CLIENT');
    t.equal(attempt.parentSpanId, server.spanId, 'an attempt is the server span\'s child');
    t.equal(attempt.attributes['server.address'], '127.0.0.1');
    t.equal(attempt.attributes['gen_ai.request.model'], 'gpt-4o-mini');
    t.ok(attempt.events.some((event) => event.name === 'first_byte'), 'its time to first byte');
  }
  t.match(first.attributes, { 'gateway.target': 'first', 'gateway.attempt': 1, 'http.response.status_code': 503, 'error.type': '503' });
  t.equal(first.status.code, 2, 'the first attempt failed');
  t.match(second.attributes, { 'gateway.target': 'second', 'gateway.attempt': 2, 'http.response.status_code': 200 });
  t.equal(second.attributes['error.type'], undefined);
  t.ok(typeof second.attributes['gateway.ttfb_ms'] === 'number');
  t.ok(second.endNs >= second.startNs);

  const settlement = only('settlement');
  t.equal(settlement.parentSpanId, server.spanId, 'settlement is the server span\'s child');
  t.ok((settlement.attributes['gateway.charged_usd'] as number) > 0);

  // The vendor got a traceparent naming each attempt's span in the caller's trace.
  const sent = tap.requests().filter((request) => request.url.includes('/chat/completions')).map((request) => String(request.headers.traceparent));
  t.same(sent, [`00-${callerTraceId}-${first.spanId}-01`, `00-${callerTraceId}-${second.spanId}-01`], 'each upstream request carries its attempt\'s traceparent');

  const [row] = await eventually('the request log', async () => {
    const rows = await gateway.sql<{ trace_id: string | null }[]>`select trace_id from request_logs where id = ${requestId}`;
    return rows.length ? rows : undefined;
  }, 10_000);
  t.equal(row!.trace_id, callerTraceId, 'the request log row carries the trace id');
  const logs = await eventually('its id in GET /api/v1/requests', async () => {
    const listed = await (await fetch(`${gateway.url}/api/v1/requests`, { headers: { authorization: `Bearer ${token}` } })).json() as { data: { trace_id: string | null }[] };
    return listed.data?.length ? listed.data : undefined;
  });
  t.equal(logs[0]!.trace_id, callerTraceId);

  // Embeddings: the same server span, attempt and settlement, with the embeddings operation.
  const input = `the secret input ${randomBytes(8).toString('hex')}`;
  /** POSTs `body` to `path` with the key, expects 200, and returns its server span once its settlement span is in too. */
  const settledServerSpan = async (path: string, body: unknown): Promise<ReceivedSpan> => {
    const answered = await fetch(`${gateway.v1}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    const answeredText = await answered.text();
    t.equal(answered.status, 200, answeredText.slice(0, 200));
    const id = answered.headers.get('x-request-id')!;
    const serverOf = (all: readonly ReceivedSpan[]) => all.find((span) => span.attributes['gateway.request_id'] === id);
    await receiver.waitFor((all) => {
      const server = serverOf(all);
      return server !== undefined && all.some((span) => span.name === 'settlement' && span.parentSpanId === server.spanId);
    });
    return serverOf(receiver.spans)!;
  };
  const embeddingServer = await settledServerSpan('/embeddings', { model: 'openai/text-embedding-3-small', input });
  t.equal(embeddingServer.name, 'POST /v1/embeddings');
  t.match(embeddingServer.attributes, { 'gen_ai.operation.name': 'embeddings', 'gen_ai.request.model': 'openai/text-embedding-3-small', 'gateway.attempts': 1 });
  t.ok((embeddingServer.attributes['gen_ai.usage.input_tokens'] as number) > 0);
  const embeddingAttempt = receiver.trace(embeddingServer.traceId).find((span) => span.kind === 3);
  t.equal(embeddingAttempt?.name, 'embeddings text-embedding-3-small');
  t.equal(embeddingAttempt?.parentSpanId, embeddingServer.spanId);

  // Images from a submit-and-poll vendor: one CLIENT span for the attempt, whose traceparent its submit and every poll carry.
  const imagePrompt = `the secret picture ${randomBytes(8).toString('hex')}`;
  const imageServer = await settledServerSpan('/images/generations', { model: IMAGE_MODEL, prompt: `${imagePrompt} [[mock polls=2]]` });
  t.equal(imageServer.name, 'POST /v1/images/generations');
  t.match(imageServer.attributes, { 'gen_ai.operation.name': 'generate_content', 'gen_ai.request.model': IMAGE_MODEL, 'gateway.attempts': 1 });
  const imageSpans = receiver.trace(imageServer.traceId);
  const imageAdmission = imageSpans.filter((span) => span.name === 'admission');
  t.equal(imageAdmission.length, 1, 'one admission span');
  t.equal(imageAdmission[0]?.parentSpanId, imageServer.spanId);
  t.ok((imageAdmission[0]?.attributes['gateway.reserved_usd'] as number) > 0, 'the reservation');
  const imageAttempts = imageSpans.filter((span) => span.kind === 3);
  t.equal(imageAttempts.length, 1, 'one attempt span');
  const imageAttempt = imageAttempts[0]!;
  t.equal(imageAttempt.name, 'generate_content flux-2-pro');
  t.equal(imageAttempt.parentSpanId, imageServer.spanId);
  t.match(imageAttempt.attributes, { 'gateway.attempt': 1, 'gen_ai.request.model': 'flux-2-pro', 'http.response.status_code': 200, 'server.address': '127.0.0.1' });
  t.equal(imageAttempt.status.code, 0, 'the attempt did not fail');
  const vendorExchanges = tap.requests().filter((request) => request.url.startsWith('/bfl/'));
  t.same(vendorExchanges.map((request) => request.method), ['POST', 'GET', 'GET', 'GET'], 'the submit and three polls (two pending, then ready)');
  t.ok(vendorExchanges.every((request) => request.headers.traceparent === `00-${imageServer.traceId}-${imageAttempt.spanId}-01`),
    'the submit and every poll carry the attempt\'s traceparent');

  // (b) Nothing sensitive in what was exported.
  const exported = receiver.bodies.join('\n');
  for (const [what, secret] of [['the API key', key], ['the key\'s secret part', key.slice(-16)], ['an upstream key', 'trace-first-upstream-key'],
    ['the other upstream key', 'trace-second-upstream-key'], ['the prompt', prompt], ['the answer', answer], ['the embeddings input', input], ['the image prompt', imagePrompt]] as const) {
    t.notOk(exported.includes(secret), `${what} is in no exported span`);
  }
});

t.test('spans still queued at shutdown are exported, the token counter\'s too; a broken stream\'s warning carries its trace id', async (t) => {
  const receiver = await OtlpReceiver.start();
  // An export delay far past the test: only the shutdown's flush can send the spans.
  const gateway = await startGateway({
    threads: 1, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '3600000', RATE_LIMIT_DEFAULT: '100000/1', LOG_LEVEL: 'info' },
  });
  t.teardown(async () => {
    await gateway.close();
    await receiver.close();
  });
  const user = `trace-stop-${randomBytes(3).toString('hex')}`;
  const token = await gateway.token(user);
  await gateway.topup(user, '5');
  // A token budget: its prompt is counted on the token counter thread, which exports its own spans.
  const key = await gateway.createKey(token, { name: 'budgeted', rate_limit_tph: 1_000_000 });
  const call = async (stream: boolean) => {
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, stream, messages: [{ role: 'user', content: `counted ${randomBytes(6).toString('hex')}` }] }),
    });
    await response.text();
    return response.headers.get('x-request-id')!;
  };
  const counted = await call(false);
  // The upstream cuts this stream after its first chunk.
  gateway.mock.setFaults({ 'test-openai-key': { kind: 'cut', afterChunks: 1 } });
  const broken = await call(true);
  t.equal(receiver.spans.length, 0, 'nothing exported before the shutdown');
  t.equal(await gateway.stop(), 0, 'the gateway stopped cleanly');

  const server = receiver.spans.find((span) => span.attributes['gateway.request_id'] === counted);
  t.ok(server, 'the call\'s span was exported at shutdown');
  t.ok(receiver.spans.some((span) => span.name === 'count_tokens' && span.traceId === server?.traceId), 'and the token counter\'s');

  const brokenServer = receiver.spans.find((span) => span.attributes['gateway.request_id'] === broken)!;
  t.equal(brokenServer.attributes['error.type'], 'upstream_stream_broken', 'the broken call\'s span names its failure');
  const attempt = receiver.trace(brokenServer.traceId).find((span) => span.kind === 3);
  t.equal(attempt?.attributes['error.type'], 'upstream_stream_broken', 'so does the attempt whose stream broke');
  const warning = gateway.output.split('\n').find((line) => line.includes('upstream stream broke'));
  t.ok(warning, 'the warning was logged');
  t.equal(JSON.parse(warning!).trace_id, brokenServer.traceId, 'the warning names the call\'s trace');
});

t.test('nothing is exported when tracing is off', async (t) => {
  const receiver = await OtlpReceiver.start();
  // Disabled with an endpoint set, and no endpoint at all: neither exports a span.
  const [disabled, plain] = await Promise.all([
    startGateway({ threads: 1, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SDK_DISABLED: 'true', OTEL_BSP_SCHEDULE_DELAY: '100', LOG_LEVEL: 'info' } }),
    startGateway({ threads: 1, env: { LOG_LEVEL: 'info' } }),
  ]);
  let disabledClosed = false;
  t.teardown(async () => {
    if (!disabledClosed) await disabled.close();
    await plain.close();
    await receiver.close();
  });
  for (const [what, gateway] of [['OTEL_SDK_DISABLED=true', disabled], ['no endpoint', plain]] as const) {
    t.match(gateway.output, /"msg":"tracing off/, `${what}: the start-up log says tracing is off`);
    const { key } = await gateway.user(`untraced-${randomBytes(3).toString('hex')}`, '5');
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01` },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] }),
    });
    t.equal(response.status, 200);
    const requestId = response.headers.get('x-request-id')!;
    t.notOk(response.headers.get('traceparent'), 'no trace context in the answer');
    const [row] = await eventually('the request log', async () => {
      const rows = await gateway.sql<{ trace_id: string | null }[]>`select trace_id from request_logs where id = ${requestId}`;
      return rows.length ? rows : undefined;
    }, 10_000);
    t.equal(row!.trace_id, null, `${what}: no trace id in the request log`);
    t.notOk(/"trace_id"/.test(gateway.output), `${what}: no log line carries a trace id`);
  }
  // A stop drains and exits: whatever a provider would have queued would be exported by now.
  await disabled.close();
  disabledClosed = true;
  t.equal(receiver.bodies.length, 0, 'the receiver got nothing');
});
