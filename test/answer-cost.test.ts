// Issue 28 item 4: each chat and Responses answer carries its own cost. `usage.cost` (USD) in a
// whole answer, in a stream's final usage chunk and in a Response's usage (whole and
// `response.completed`), and the `x-gateway-cost` header on a whole answer, equal the call's
// usage transaction to the nano-USD; a call on the caller's own credential (BYOK) costs 0.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, rawRequest } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

const toNano = (usd: unknown): bigint => BigInt(Math.round(Number(usd) * 1e9));

async function post(key: string, path: string, body: Record<string, unknown>) {
  return rawRequest(`${gateway.v1}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
}

/** The data payloads of an SSE body, parsed (`[DONE]` left out). */
function events(text: string): any[] {
  return text.split('\n').filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]').map((line) => JSON.parse(line.slice(6)));
}

/** What the call's usage transaction took, in nano-USD (0 when none was written). */
async function charged(user: string, requestId: string): Promise<bigint> {
  await gateway.ledgerSettled(user);
  const [row] = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where id = ${requestId}`;
  return row ? -BigInt(row.credits_nano) : 0n;
}

const header = (headers: any, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

t.test('whole chat answers: usage.cost and x-gateway-cost equal the transaction (OpenAI, Anthropic and Gemini families)', async (t) => {
  const { key } = await gateway.user('cost-whole', '5');
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash']) {
    const response = await post(key, '/chat/completions', { model, messages: [{ role: 'user', content: 'Say hello [[mock chunks=9]]' }] });
    t.equal(response.status, 200, model);
    const cost = response.body.usage.cost;
    t.type(cost, 'number', `${model}: usage.cost is a JSON number`);
    const amount = await charged('cost-whole', header(response.headers, 'x-request-id')!);
    t.ok(amount > 0n, `${model}: the call was charged`);
    t.equal(toNano(cost), amount, `${model}: usage.cost is the transaction`);
    t.equal(header(response.headers, 'x-gateway-cost'), String(Number(amount) / 1e9), `${model}: the header is the transaction in USD`);
  }
});

t.test('streamed chat answers: the final usage chunk carries the cost (OpenAI relay and translated families)', async (t) => {
  const { key } = await gateway.user('cost-stream', '5');
  for (const model of ['openai/gpt-4o-mini', 'anthropic/claude-sonnet-4-5', 'google/gemini-2.5-flash']) {
    const response = await post(key, '/chat/completions', {
      model, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Stream please [[mock chunks=7]]' }],
    });
    t.equal(response.status, 200, model);
    const withUsage = events(response.text).filter((chunk) => chunk.usage);
    t.equal(withUsage.length, 1, `${model}: one usage chunk`);
    const cost = withUsage[0]!.usage.cost;
    t.type(cost, 'number', `${model}: the usage chunk has cost`);
    const amount = await charged('cost-stream', header(response.headers, 'x-request-id')!);
    t.ok(amount > 0n, `${model}: the call was charged`);
    t.equal(toNano(cost), amount, `${model}: usage.cost is the transaction`);
  }
});

t.test('Responses answers: usage.cost, whole and in response.completed, equals the transaction', async (t) => {
  const { key } = await gateway.user('cost-responses', '5');
  const whole = await post(key, '/responses', { model: 'openai/gpt-4o-mini', input: 'Hello [[mock chunks=5]]', store: false });
  t.equal(whole.status, 200);
  const wholeAmount = await charged('cost-responses', header(whole.headers, 'x-request-id')!);
  t.ok(wholeAmount > 0n);
  t.equal(toNano(whole.body.usage.cost), wholeAmount, 'whole Response');
  t.equal(header(whole.headers, 'x-gateway-cost'), String(Number(wholeAmount) / 1e9), 'the header too');

  const streamed = await post(key, '/responses', { model: 'openai/gpt-4o-mini', input: 'Hello [[mock chunks=6]]', store: false, stream: true });
  t.equal(streamed.status, 200);
  const completed = events(streamed.text).find((event) => event.type === 'response.completed');
  const streamedAmount = await charged('cost-responses', header(streamed.headers, 'x-request-id')!);
  t.ok(streamedAmount > 0n);
  t.equal(toNano(completed?.response?.usage?.cost), streamedAmount, 'response.completed');
});

t.test('a call on the caller\'s own credential (BYOK) shows cost 0, as it is charged', async (t) => {
  const { token, key } = await gateway.user('cost-byok', '5');
  const created = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'own', api_key: 'sk-own-cost-0001', always_use: true }),
  });
  t.equal(created.status, 201, created.text);
  const before = gateway.mock.requests().length;
  const whole = await post(key, '/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Mine [[mock chunks=4]]' }] });
  t.equal(whole.status, 200, whole.text);
  t.same(gateway.mock.requests().slice(before).map((record) => record.authorization), ['Bearer sk-own-cost-0001'], 'served by the own credential');
  t.ok(whole.body.usage.completion_tokens > 0, 'tokens are counted');
  t.equal(whole.body.usage.cost, 0);
  t.equal(header(whole.headers, 'x-gateway-cost'), '0');
  t.equal(await charged('cost-byok', header(whole.headers, 'x-request-id')!), 0n, 'nothing charged');
  const streamed = await post(key, '/chat/completions', { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Mine [[mock chunks=4]]' }] });
  const usage = events(streamed.text).find((chunk) => chunk.usage)?.usage;
  t.equal(usage?.cost, 0, 'the streamed usage chunk too');
});

t.test('/v1/messages: a translated Message carries usage.cost, whole and in the final message_delta; native pass-through only the header', async (t) => {
  const { key } = await gateway.user('cost-messages', '5');
  const message = (model: string, extra: Record<string, unknown> = {}) => rawRequest(`${gateway.v1}/messages`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Hello there [[mock chunks=6]]' }], ...extra }),
  });
  const whole = await message('openai/gpt-4o-mini');
  t.equal(whole.status, 200, whole.text);
  t.equal(whole.body.type, 'message', 'an Anthropic Message, translated from the chat completion');
  const wholeAmount = await charged('cost-messages', header(whole.headers, 'x-request-id')!);
  t.ok(wholeAmount > 0n, 'charged');
  t.type(whole.body.usage.cost, 'number');
  t.equal(toNano(whole.body.usage.cost), wholeAmount, 'the Message\'s usage.cost is the transaction');
  t.equal(header(whole.headers, 'x-gateway-cost'), String(Number(wholeAmount) / 1e9), 'so is the header');

  const streamed = await message('openai/gpt-4o-mini', { stream: true });
  t.equal(streamed.status, 200);
  const deltas = events(streamed.text).filter((event) => event.type === 'message_delta');
  t.equal(deltas.length, 1, 'one message_delta');
  const streamedAmount = await charged('cost-messages', header(streamed.headers, 'x-request-id')!);
  t.ok(streamedAmount > 0n);
  t.equal(toNano(deltas[0]?.usage?.cost), streamedAmount, 'the final message_delta\'s usage.cost is the transaction');
  t.notOk('cost' in (events(streamed.text).find((event) => event.type === 'message_start')?.message?.usage ?? {}), 'message_start has none: the call is not settled yet');

  const native = await message('anthropic/claude-sonnet-4-5');
  t.equal(native.status, 200, native.text);
  t.notOk('cost' in native.body.usage, 'a native Anthropic answer is the upstream\'s bytes, untouched');
  const nativeAmount = await charged('cost-messages', header(native.headers, 'x-request-id')!);
  t.ok(nativeAmount > 0n);
  t.equal(header(native.headers, 'x-gateway-cost'), String(Number(nativeAmount) / 1e9), 'its cost is in the header');
});

t.test('a replayed Idempotency-Key answer is the first answer as it was: its cost and id; the replay is not charged', async (t) => {
  const user = 'cost-replay';
  const { key } = await gateway.user(user, '5');
  const send = () => rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'cost-replay-1' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Once [[mock chunks=5]]' }] }),
  });
  const first = await send();
  t.equal(first.status, 200, first.text);
  const replay = await send();
  t.equal(replay.status, 200);
  t.equal(header(replay.headers, 'idempotent-replayed'), 'true');
  t.equal(replay.text, first.text, 'the same body, usage.cost included');
  t.equal(header(replay.headers, 'x-gateway-cost'), header(first.headers, 'x-gateway-cost'), 'the same x-gateway-cost');
  t.equal(header(replay.headers, 'x-request-id'), header(first.headers, 'x-request-id'), 'the same x-request-id');
  const amount = await charged(user, header(first.headers, 'x-request-id')!);
  t.equal(toNano(first.body.usage.cost), amount, 'the first call\'s charge');
  const rows = await gateway.sql<{ n: number }[]>`select count(*)::int as n from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(rows[0]!.n, 1, 'one usage transaction: the replay is not charged');
  const logs = await gateway.sql<{ n: number }[]>`select count(*)::int as n from request_logs where user_id = ${user}`;
  t.equal(logs[0]!.n, 1, 'one request-log row');
});
