// Edges of the HTTP surface of POST /v1/chat/completions and the operational routes: authentication,
// body parsing and limits, validation naming the field, model resolution, upstream failures (nothing
// charged), routing, health, readiness, metrics across threads, and what the upstream receives.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { MAX_JSON_DEPTH, parseJsonObject } from '../src/http/schemas/issues.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, parsePrometheus, rawRequest, sseEvents, sumSamples } from './helpers/http-tools.js';

const CHAT = '/v1/chat/completions';
const MODEL = 'openai/gpt-4o-mini';
const msg = (content: string) => [{ role: 'user', content }];

let gateway: Gateway;
/** Two HTTP threads, no practical rate limit: /metrics must add up both threads. */
let metricsGateway: Gateway;

t.before(async () => {
  [gateway, metricsGateway] = await Promise.all([
    startGateway({ env: { MAX_BODY_BYTES: '65536', JWT_SECRET: TEST_JWT_SECRET } }),
    // Call by call (ADMISSION_LEASE_CALLS 1): the script-timing counts below are one admit.lua and one settle.lua per call.
    startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: '1000/10', ADMISSION_LEASE_CALLS: '1', JWT_SECRET: TEST_JWT_SECRET } }),
  ]);
});
t.teardown(async () => {
  await Promise.all([gateway?.close(), metricsGateway?.close()]);
});

const chat = (key: string, body: unknown, headers: Record<string, string> = {}) => postJson(`${gateway.url}${CHAT}`, key, body, headers);

t.test('authentication failures on /v1/chat/completions are 401 with integer code and a msg saying access is not permitted', async (t) => {
  const { token, key } = await fastUser(gateway, 'auth-edge', '1');
  const body = JSON.stringify({ model: MODEL, messages: msg('hi') });
  const unknownKey = `sk-gw-${'A1b2C3d4E5f6'}-${'x'.repeat(24)}${'Y9'.repeat(12)}`;
  const cases: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['malformed key', { authorization: 'Bearer sk-gw-notakey' }],
    ['garbage bearer', { authorization: 'Bearer hello world' }],
    ['well-formed but unknown key', { authorization: `Bearer ${unknownKey}` }],
    ['valid key with a wrong secret', { authorization: `Bearer ${key.slice(0, -48)}${'Z'.repeat(48)}` }],
    ['Basic scheme', { authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` }],
    ['Basic scheme carrying a valid key', { authorization: `Basic ${key}` }],
    ['empty Bearer', { authorization: 'Bearer ' }],
    ['a dashboard JWT', { authorization: `Bearer ${token}` }],
  ];
  for (const [label, headers] of cases) {
    const response = await rawRequest(`${gateway.url}${CHAT}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    assertEnvelope(t, response, 401, undefined, label);
    t.match(response.body?.msg, /not permitted/i, `${label}: msg says access is not permitted`);
  }
  // Sanity: the same request with the key itself is accepted, so the 401s above are about the credential.
  const ok = await chat(key, { model: MODEL, messages: msg('hi [[mock chunks=1]]') });
  t.equal(ok.status, 200, 'the valid key works');
});

t.test('body parsing: malformed JSON, non-object bodies, empty body, wrong Content-Type', async (t) => {
  const { key } = await fastUser(gateway, 'body-edge', '1');
  const before = gateway.mock.requests().length;
  assertEnvelope(t, await chat(key, '{"model": "openai/gpt-4o-mini", "messages": ['), 400, 'invalid_json', 'truncated JSON');
  assertEnvelope(t, await chat(key, '{model: openai}'), 400, 'invalid_json', 'not JSON');
  assertEnvelope(t, await chat(key, JSON.stringify([{ model: MODEL, messages: msg('hi') }])), 400, undefined, 'a JSON array');
  assertEnvelope(t, await chat(key, '"just a string"'), 400, undefined, 'a JSON string');
  assertEnvelope(t, await chat(key, 'null'), 400, undefined, 'JSON null');
  assertEnvelope(t, await chat(key, ''), 400, undefined, 'empty body');
  const plain = await chat(key, JSON.stringify({ model: MODEL, messages: msg('hi') }), { 'content-type': 'text/plain' });
  assertEnvelope(t, plain, 401, 'invalid_content_type', 'text/plain: 401, as the spec answers wrong inference headers');
  t.match(plain.body.msg, /^Access is not permitted/);
  const form = await chat(key, 'model=x', { 'content-type': 'application/x-www-form-urlencoded' });
  assertEnvelope(t, form, 401, 'invalid_content_type', 'form body');
  assertEnvelope(t, await chat(key, JSON.stringify({ model: MODEL, messages: msg('hi') }), { 'content-type': '' }), 401, 'invalid_content_type', 'no Content-Type');
  const charset = await chat(key, JSON.stringify({ model: MODEL, messages: msg('hi [[mock chunks=1]]') }), { 'content-type': 'application/json; charset=utf-8' });
  t.equal(charset.status, 200, 'application/json with a charset parameter is accepted');
  t.equal(gateway.mock.requests().length, before + 1, 'only the valid request reached the upstream');
});

t.test('JSON nested beyond MAX_JSON_DEPTH is a 400 wherever it sits, even in fields passed through as they are', async (t) => {
  const { key, token } = await fastUser(gateway, 'deep-json', '1');
  const before = gateway.mock.requests().length;
  const nested = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
  // Far beyond any real request, within this gateway's 64 KB body limit. (50,000 levels, which overflowed
  // the stack when a family serialised the request again, answered 500 before the limit.)
  const deep = nested(10_000);
  t.throws(() => parseJsonObject(Buffer.from(`{"x":${nested(50_000)}}`)), { status: 400, code: 'invalid_json' }, 'parsing refuses 50,000 levels');
  const tool = (parameters: string) => `{"model":"${MODEL}","messages":[{"role":"user","content":"hi [[mock chunks=1]]"}],"tools":[{"type":"function","function":{"name":"f","parameters":${parameters}}}]}`;
  assertEnvelope(t, await chat(key, tool(deep)), 400, 'invalid_json', "a tool's parameters");
  assertEnvelope(t, await chat(key, `{"model":"${MODEL}","messages":[{"role":"user","content":"hi","name":${deep}}]}`), 400, 'invalid_json', "a message's own field");
  const schema = `{"model":"${MODEL}","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${deep}}}}`;
  assertEnvelope(t, await chat(key, schema), 400, 'invalid_json', 'a response_format schema');
  // The body is level 1, tools 2, the tool 3, function 4, parameters (the first of the nested objects) 5.
  const atLimit = await chat(key, tool(nested(MAX_JSON_DEPTH - 4)));
  t.equal(atLimit.status, 200, `${MAX_JSON_DEPTH} levels are accepted`);
  assertEnvelope(t, await chat(key, tool(nested(MAX_JSON_DEPTH - 3))), 400, 'invalid_json', `${MAX_JSON_DEPTH + 1} levels are not`);
  assertEnvelope(t, await postJson(`${gateway.url}/api/v1/api-keys`, token, `{"name":${deep}}`), 400, 'invalid_json', 'the management API too');
  t.equal(gateway.mock.requests().length, before + 1, 'only the request within the limit reached the upstream');
});

t.test('a body over MAX_BODY_BYTES is 413, with Content-Length and chunked; the server stays healthy', async (t) => {
  const { key } = await fastUser(gateway, 'big-body', '1');
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const big = JSON.stringify({ model: MODEL, messages: msg(`${'lorem ipsum '.repeat(8500)} [[mock chunks=1]]`) });
  t.ok(big.length > 100_000, 'about 100 KB');
  const before = gateway.mock.requests().length;

  const declared = await rawRequest(`${gateway.url}${CHAT}`, { method: 'POST', headers, body: big });
  assertEnvelope(t, declared, 413, undefined, 'with Content-Length');

  const pieces: string[] = [];
  for (let i = 0; i < big.length; i += 8192) pieces.push(big.slice(i, i + 8192));
  const chunked = await rawRequest(`${gateway.url}${CHAT}`, { method: 'POST', headers, chunks: pieces });
  assertEnvelope(t, chunked, 413, undefined, 'chunked, no Content-Length');
  t.equal(gateway.mock.requests().length, before, 'nothing oversized reached the upstream');

  const health = await rawRequest(`${gateway.url}/healthz`);
  t.equal(health.status, 200, 'healthz still answers');
  const normal = await chat(key, { model: MODEL, messages: msg('small again [[mock chunks=2]]') });
  t.equal(normal.status, 200, 'a normal request works afterwards');
  t.equal(normal.body?.usage?.completion_tokens, 2);

  const nearLimit = JSON.stringify({ model: MODEL, messages: msg(`${'lorem ipsum '.repeat(5000)} [[mock chunks=1]]`) });
  t.ok(nearLimit.length > 59_000 && nearLimit.length < 65_536, 'just under the limit');
  const under = await rawRequest(`${gateway.url}${CHAT}`, { method: 'POST', headers, body: nearLimit });
  t.equal(under.status, 200, 'a body just under the limit is accepted');
  const smallPieces = [nearLimit.slice(0, 20_000), nearLimit.slice(20_000, 40_000), nearLimit.slice(40_000)];
  const underChunked = await rawRequest(`${gateway.url}${CHAT}`, { method: 'POST', headers, chunks: smallPieces });
  t.equal(underChunked.status, 200, 'a chunked body under the limit is accepted');
  t.equal(underChunked.body?.usage?.completion_tokens, 1);
});

t.test('every out-of-range request field is a 400 whose error.param names the field', async (t) => {
  const { key } = await fastUser(gateway, 'validation', '1');
  const base = { model: MODEL, messages: msg('hi') };
  const without = (field: string) => Object.fromEntries(Object.entries(base).filter(([name]) => name !== field));
  const cases: [string, Record<string, unknown>, string | RegExp][] = [
    ['temperature 2.5', { ...base, temperature: 2.5 }, 'temperature'],
    ['temperature -1', { ...base, temperature: -1 }, 'temperature'],
    ['temperature as a string', { ...base, temperature: '1' }, 'temperature'],
    ['top_p 1.5', { ...base, top_p: 1.5 }, 'top_p'],
    ['presence_penalty 3', { ...base, presence_penalty: 3 }, 'presence_penalty'],
    ['frequency_penalty -3', { ...base, frequency_penalty: -3 }, 'frequency_penalty'],
    ['max_tokens 0', { ...base, max_tokens: 0 }, 'max_tokens'],
    ['max_tokens 1.5', { ...base, max_tokens: 1.5 }, 'max_tokens'],
    ['max_tokens -5', { ...base, max_tokens: -5 }, 'max_tokens'],
    ['max_tokens above the model maximum (16384)', { ...base, max_tokens: 16_385 }, 'max_tokens'],
    ['n 9', { ...base, n: 9 }, 'n'],
    ['n 0', { ...base, n: 0 }, 'n'],
    ['messages []', { ...base, messages: [] }, 'messages'],
    ['messages missing', without('messages'), 'messages'],
    ['messages not an array', { ...base, messages: 'hi' }, 'messages'],
    ['model missing', without('model'), 'model'],
    ["role 'robot'", { ...base, messages: [{ role: 'robot', content: 'hi' }] }, /^messages\[0\]\.role$/],
    ['content of wrong type', { ...base, messages: [{ role: 'user', content: 42 }] }, /^messages\[0\]\.content/],
    ['content part of unknown type', { ...base, messages: [{ role: 'user', content: [{ type: 'audio', data: 'x' }] }] }, /^messages\[0\]\.content/],
    ["stream 'yes'", { ...base, stream: 'yes' }, 'stream'],
    ['stop with 5 sequences', { ...base, stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    ['an unknown top-level field', { ...base, frobnicate: true }, 'frobnicate'],
    ["response_format {type: 'xml'}", { ...base, response_format: { type: 'xml' } }, /^response_format/],
    ["service_tier 'priority'", { ...base, service_tier: 'priority' }, 'service_tier'],
    ['tools with a bad function name', { ...base, tools: [{ type: 'function', function: { name: 'bad name!', parameters: {} } }] }, /^tools\[0\]\.function\.name$/],
  ];
  const before = gateway.mock.requests().length;
  for (const [label, body, param] of cases) {
    const response = await chat(key, body);
    assertEnvelope(t, response, 400, undefined, label);
    if (typeof param === 'string') t.equal(response.body?.error?.param, param, `${label}: param is ${param}`);
    else t.match(response.body?.error?.param, param, `${label}: param names the field`);
  }

  const vision = await chat(key, {
    model: 'deepseek/deepseek-v4-flash',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }],
  });
  assertEnvelope(t, vision, 400, undefined, 'image to a model without vision');
  t.match(vision.body?.error?.param, /^messages/, 'vision: param names messages');
  t.equal(gateway.mock.requests().length, before, 'no invalid request reached the upstream');
  const balance = await gateway.balanceNano('validation');
  t.equal(balance.held, 0n, 'nothing held');
  t.equal(balance.credits, 1_000_000_000n, 'nothing charged');
});

t.test('model resolution: unknown is 404 model_not_found, never 500', async (t) => {
  const { key } = await fastUser(gateway, 'models', '1');
  const unknown = await chat(key, { model: 'openai/gpt-does-not-exist', messages: msg('hi') });
  assertEnvelope(t, unknown, 404, 'model_not_found', 'unknown model');
  const bare = await chat(key, { model: 'gpt-4o-mini', messages: msg('hi') });
  assertEnvelope(t, bare, 404, 'model_not_found', 'upstream name without vendor prefix');
  const balance = await gateway.balanceNano('models');
  t.equal(balance.held, 0n);
  t.equal(balance.credits, 1_000_000_000n);
});

t.test('upstream errors are mapped (500 -> 502, 429 -> 429 with Retry-After, 400 -> 400) and nothing is charged', async (t) => {
  const user = 'upstream-fail';
  const { token, key } = await fastUser(gateway, user, '1');
  const start = await gateway.balanceNano(user);
  t.equal(start.credits, 1_000_000_000n);
  const cases: [string, Record<string, unknown>, number][] = [
    ['fail=500', { model: MODEL, messages: msg('x [[mock fail=500]]') }, 502],
    ['fail=503', { model: MODEL, messages: msg('x [[mock fail=503]]') }, 502],
    ['fail=429', { model: MODEL, messages: msg('x [[mock fail=429]]') }, 429],
    ['fail=400', { model: MODEL, messages: msg('x [[mock fail=400]]') }, 400],
    // The gateway's own upstream credential failing is not the caller's authentication problem.
    ['fail=401', { model: MODEL, messages: msg('x [[mock fail=401]]') }, 502],
    ['fail=500 streaming', { model: MODEL, messages: msg('x [[mock fail=500]]'), stream: true }, 502],
    ['fail=429 streaming', { model: MODEL, messages: msg('x [[mock fail=429]]'), stream: true }, 429],
  ];
  for (const [label, body, status] of cases) {
    const response = await chat(key, body);
    assertEnvelope(t, response, status, undefined, label);
    if (status === 429) {
      const retryAfter = response.headers.get('retry-after');
      t.ok(retryAfter, `${label}: Retry-After header present`);
      t.ok(/^\d+$/.test(retryAfter ?? '') && Number(retryAfter) >= 1, `${label}: Retry-After is whole seconds (${retryAfter})`);
    }
    await gateway.ledgerSettled(user);
    const after = await gateway.balanceNano(user);
    t.equal(after.credits, start.credits, `${label}: credits unchanged`);
    t.equal(after.held, 0n, `${label}: nothing held after`);
  }
  const balance = await gateway.balance(token);
  t.equal(balance.credits, 1);
  t.equal(balance.held, 0);
  t.equal(balance.available, 1);
  const usage = await gateway.sql`select id from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(usage.length, 0, 'no usage transaction was written');
  t.equal(await gateway.ledgerSum(user), 1_000_000_000n, 'the ledger holds only the top-up');
});

t.test('routing and health: unknown route 404 envelope, /healthz, /readyz', async (t) => {
  assertEnvelope(t, await rawRequest(`${gateway.url}/v1/nope`), 404, undefined, 'GET unknown /v1 route');
  assertEnvelope(t, await rawRequest(`${gateway.url}/api/v1/nothing-here`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 404, undefined, 'POST unknown /api/v1 route');
  assertEnvelope(t, await rawRequest(`${gateway.url}/`), 404, undefined, 'GET /');
  const health = await rawRequest(`${gateway.url}/healthz`);
  t.equal(health.status, 200);
  const ready = await rawRequest(`${gateway.url}/readyz`);
  t.equal(ready.status, 200);
  t.equal(ready.body?.checks?.redis, 'ok', 'readyz checks redis');
  t.equal(ready.body?.checks?.postgres, 'ok', 'readyz checks postgres');
});

t.test('the upstream receives stream_options.include_usage, its own model name, no include_reasoning; a GPT-6 reasoning model gets max_completion_tokens and no temperature', async (t) => {
  const { key } = await fastUser(gateway, 'upstream-body', '2');
  const recordOf = (marker: string) => gateway.mock.requests().find((r) => JSON.stringify(r.body).includes(marker));

  const streamed = await rawRequest(`${gateway.url}${CHAT}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, include_reasoning: true, messages: msg('marker-stream-1 [[mock chunks=2]]') }),
  });
  t.equal(streamed.status, 200);
  const events = sseEvents(streamed.text);
  t.equal(events.at(-1), '[DONE]', 'stream ends with [DONE]');
  const stream = recordOf('marker-stream-1');
  t.ok(stream, 'the upstream saw the streaming request');
  const sent = stream?.body as Record<string, any>;
  t.equal(sent?.model, 'gpt-4o-mini', 'the upstream model name, not the gateway id');
  t.equal(sent?.stream, true);
  t.same(sent?.stream_options, { include_usage: true }, 'stream_options.include_usage is true upstream');
  t.notOk(sent && 'include_reasoning' in sent, 'include_reasoning is not sent upstream');

  const optedOut = await chat(key, { model: MODEL, stream: true, stream_options: { include_usage: false }, messages: msg('marker-stream-2 [[mock chunks=2]]') });
  t.equal(optedOut.status, 200);
  t.equal((recordOf('marker-stream-2')?.body as any)?.stream_options?.include_usage, true, 'usage is requested upstream even when the client opted out');

  const plain = await chat(key, { model: MODEL, include_reasoning: false, messages: msg('marker-plain [[mock chunks=2]]') });
  t.equal(plain.status, 200);
  const plainSent = recordOf('marker-plain')?.body as Record<string, any>;
  t.equal(plainSent?.model, 'gpt-4o-mini');
  t.notOk(plainSent && 'include_reasoning' in plainSent, 'include_reasoning is not sent upstream (non-streaming)');
  t.notOk(plainSent && 'stream_options' in plainSent, 'no stream_options on a non-streaming call');

  const o4 = await chat(key, { model: 'openai/gpt-6-luna', max_tokens: 50, temperature: 0.7, messages: msg('marker-o4 [[mock chunks=3]]') });
  t.equal(o4.status, 200);
  t.equal(o4.body?.model, 'openai/gpt-6-luna');
  const o4Sent = recordOf('marker-o4')?.body as Record<string, any>;
  t.equal(o4Sent?.model, 'gpt-6-luna');
  t.equal(o4Sent?.max_completion_tokens, 50, 'max_tokens is sent as max_completion_tokens');
  t.notOk(o4Sent && 'max_tokens' in o4Sent, 'max_tokens itself is not sent');
  t.notOk(o4Sent && 'temperature' in o4Sent, 'temperature is not sent to a model without sampling knobs');
});

t.test('/metrics is Prometheus text over both HTTP threads, and the counts follow the traffic', async (t) => {
  const g = metricsGateway;
  const metricsText = async () => {
    const response = await rawRequest(`${g.url}/metrics`);
    t.equal(response.status, 200);
    t.match(String(response.headers['content-type']), /^text\/plain/);
    return response.text;
  };
  const before = parsePrometheus(await metricsText());
  t.equal(sumSamples(before, 'gateway_http_requests_total', { route: CHAT }), 0, 'no chat requests counted before traffic');

  const rich = await fastUser(g, 'metrics-rich', '5');
  const poor = await fastUser(g, 'metrics-poor', '0');
  const send = (key: string, body: unknown) => rawRequest(`${g.url}${CHAT}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const jobs: Promise<{ status: number }>[] = [];
  const SUCCESSES = 24;
  for (let i = 0; i < SUCCESSES; i++) jobs.push(send(rich.key, { model: MODEL, stream: i % 2 === 0, messages: msg(`metrics ${i} [[mock chunks=3]]`) }));
  for (let i = 0; i < 2; i++) jobs.push(send(poor.key, { model: MODEL, messages: msg('no money') }));
  for (let i = 0; i < 4; i++) jobs.push(send(rich.key, { model: MODEL, temperature: 5, messages: msg('bad') }));
  const statuses = (await Promise.all(jobs)).map((r) => r.status);
  const SENT = jobs.length;
  t.equal(statuses.filter((s) => s === 200).length, SUCCESSES, 'successes');
  t.equal(statuses.filter((s) => s === 402).length, 2, 'insufficient credits');
  t.equal(statuses.filter((s) => s === 400).length, 4, 'validation errors');

  // Settlement (tokens, cost, settle timing) finishes after the response; wait for it.
  let after = parsePrometheus(await metricsText());
  await eventually(async () => {
    after = parsePrometheus(await metricsText());
    return sumSamples(after, 'gateway_tokens_total', { kind: 'completion' }) >= SUCCESSES * 3
      && sumSamples(after, 'gateway_redis_script_duration_seconds_count', { script: 'settle' }) >= SUCCESSES;
  }, 5000, 100);
  const text = await metricsText();
  after = parsePrometheus(text);
  for (const name of ['gateway_http_requests_total', 'gateway_http_request_duration_seconds', 'gateway_upstream_ttfb_seconds', 'gateway_tokens_total',
    'gateway_cost_usd_total', 'gateway_admission_rejections_total', 'gateway_active_streams', 'gateway_redis_script_duration_seconds']) {
    t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
  }

  t.equal(sumSamples(after, 'gateway_http_requests_total', { route: CHAT }), SENT, 'chat requests of both threads add up to what was sent');
  t.equal(sumSamples(after, 'gateway_http_requests_total', { route: CHAT, status: '200' }), SUCCESSES, 'status label 200');
  t.equal(sumSamples(after, 'gateway_http_requests_total', { route: CHAT, status: '402' }), 2, 'status label 402');
  t.equal(sumSamples(after, 'gateway_http_requests_total', { route: CHAT, status: '400' }), 4, 'status label 400');
  const chatSamples = after.filter((s) => s.name === 'gateway_http_requests_total' && s.labels.route === CHAT);
  t.ok(chatSamples.length > 0 && chatSamples.every((s) => s.labels.method && s.labels.status), 'every sample has route, method and status labels');
  t.equal(sumSamples(after, 'gateway_http_request_duration_seconds_count', { route: CHAT }), SENT, 'request duration observed per chat request');
  t.equal(sumSamples(after, 'gateway_upstream_ttfb_seconds_count'), SUCCESSES, 'one upstream TTFB per upstream call');
  t.equal(sumSamples(after, 'gateway_tokens_total', { model: MODEL, kind: 'completion' }), SUCCESSES * 3, 'completion tokens counted');
  t.ok(sumSamples(after, 'gateway_tokens_total', { model: MODEL, kind: 'prompt' }) > 0, 'prompt tokens counted');
  t.equal(sumSamples(after, 'gateway_admission_rejections_total', { reason: 'insufficient_credits' }), 2, 'admission rejections counted');
  t.equal(sumSamples(after, 'gateway_active_streams'), 0, 'no stream active after the traffic');
  t.ok(sumSamples(after, 'gateway_redis_script_duration_seconds_count', { script: 'admit' }) >= SUCCESSES + 2, 'admit timings observed');
  t.equal(sumSamples(after, 'gateway_redis_script_duration_seconds_count', { script: 'settle' }), SUCCESSES, 'settle timings observed');

  await g.ledgerSettled('metrics-rich');
  const [row] = await g.sql<{ sum: bigint }[]>`select coalesce(sum(-credits_nano), 0)::bigint as sum from transactions where user_id = 'metrics-rich' and payment_method = 'usage'`;
  const chargedUsd = Number(row!.sum) / 1e9;
  t.ok(chargedUsd > 0, 'usage was charged');
  t.ok(Math.abs(sumSamples(after, 'gateway_cost_usd_total', { model: MODEL }) - chargedUsd) < 1e-9, `cost counter matches the ledger (${chargedUsd} USD)`);
});
