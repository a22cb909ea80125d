// Request-level fallbacks (`models: [...]`) and the routing file's virtual models, against a real
// gateway, Redis and Postgres, the mock vendor failing one credential at a time: the call goes on to
// the next model only after a retryable failure, is answered and billed as the model that served,
// reserves for the dearest model it may reach, and a virtual model is listed and serves.
import t from 'tap';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { chargeOf, eventually, leasesClosed, parseJson, postChat, sseData, usdToNano } from './helpers/billing-checks.js';
import { parseRoutingFile, RoutingFileError } from '../src/routing/file.js';
import { modelChain } from '../src/routing/model-chain.js';
import { ApiError } from '../src/http/errors.js';

const MINI = 'openai/gpt-4o-mini';
const HAIKU = 'anthropic/claude-haiku-4-5';
/** claude-haiku-4-5 list prices, nano-USD per token (input, output): not gpt-4o-mini's. */
const HAIKU_PRICE = { input: 1000n, output: 5000n };
let mock: MockVendor;
let gateway: Gateway;

t.before(async () => {
  mock = await startMockVendor({ port: 0 });
  const file = join(mkdtempSync(join(tmpdir(), 'routing-models-test-')), 'routing.yaml');
  writeFileSync(file, `
models:
  ${MINI}:
    targets:
      - { name: mini, vendor: openai, api_key: mini-key }
  ${HAIKU}:
    targets:
      - { name: haiku, vendor: anthropic, api_key: haiku-key }
virtual_models:
  fast-chat:
    models: [${MINI}, ${HAIKU}]
    description: Small and quick, from whichever vendor answers
`);
  gateway = await startGateway({ mock, threads: 2, env: { ROUTING_FILE: file, RATE_LIMIT_DEFAULT: '1000000/1', LOG_LEVEL: 'info' } });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
});

/** One user for the tests that check no money (each user costs two command-line runs to make). */
let shared: Promise<string> | undefined;
const sharedKey = () => (shared ??= gateway.user('models-shared', '5').then((made) => made.key));

const body = (fields: Record<string, unknown>) => JSON.stringify({ messages: [{ role: 'user', content: 'hello there' }], ...fields });
const served = (credential: string) => mock.faultCounts(credential).served;
const faulted = (credential: string) => mock.faultCounts(credential).faulted;

/** Whether `fn` throws an error that `matches` (printing any other, to say what it was). */
function thrown(fn: () => unknown, matches: (error: unknown) => boolean): boolean {
  try {
    fn();
    return false;
  } catch (error) {
    if (!matches(error)) console.error(error);
    return matches(error);
  }
}

/** The request log row and usage transaction of one call, once the ledger writer has them. */
async function loggedCall(user: string, callId: string) {
  await gateway.ledgerSettled(user, 30_000);
  const [log] = await gateway.sql<{ model: string; prompt_tokens: number; completion_tokens: number; cached_tokens: number; cost_nano: bigint }[]>`
    select model, prompt_tokens, completion_tokens, cached_tokens, cost_nano from request_logs where id = ${callId}`;
  const [transaction] = await gateway.sql<{ model: string; credits_nano: bigint }[]>`
    select model, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  return { log: log!, transaction: transaction! };
}

t.test('the chain a request names: its model, then its models, virtual models expanded, each once', async (t) => {
  const catalog = new Map([[MINI, { id: MINI }], [HAIKU, { id: HAIKU }], ['alias.mini', { id: MINI }]]);
  const find = (id: string) => catalog.get(id);
  const virtual = { 'fast-chat': { models: [MINI, 'retired/model', HAIKU] } };
  t.same(modelChain(MINI, undefined, find, virtual).map((m) => m.id), [MINI]);
  t.same(modelChain(MINI, [HAIKU, 'alias.mini', MINI], find, virtual).map((m) => m.id), [MINI, HAIKU], 'an alias of a model already in the chain adds nothing');
  t.same(modelChain('fast-chat', undefined, find, virtual).map((m) => m.id), [MINI, HAIKU], 'a retired model of a virtual model is left out');
  t.same(modelChain(HAIKU, ['fast-chat'], find, virtual).map((m) => m.id), [HAIKU, MINI]);
  const notFound = (fn: () => unknown, param: string) =>
    t.ok(thrown(fn, (error) => error instanceof ApiError && error.status === 404 && error.code === 'model_not_found' && error.param === param), `404 naming ${param}`);
  notFound(() => modelChain('nope/model', [HAIKU], find, virtual), 'model');
  notFound(() => modelChain(MINI, [HAIKU, 'nope/model'], find, virtual), 'models[1]');
  notFound(() => modelChain('gone', undefined, find, { gone: { models: ['retired/model'] } }), 'model');
  const many = new Map(Array.from({ length: 9 }, (_, i) => [`v/m${i}`, { id: `v/m${i}` }]));
  t.ok(thrown(() => modelChain('v/m0', ['v/m1', 'v/m2', 'v/m3', 'v/m4', 'v/m5', 'v/m6', 'v/m7', 'v/m8'], (id) => many.get(id), undefined),
    (error) => error instanceof ApiError && error.status === 400 && error.param === 'models'), 'nine models in one call: 400');
});

t.test('virtual models in the routing file: validated, errors naming the line', async (t) => {
  const vendors = { openai: { baseUrl: 'https://api.openai.com/v1', apiKey: 'k' } };
  const table = parseRoutingFile(`virtual_models:\n  fast:\n    models: [${MINI}, ${HAIKU}]\n`, 'r.yaml', vendors, {});
  t.same(table.virtualModels, { fast: { models: [MINI, HAIKU] } });
  const refused = (text: string, pattern: RegExp) =>
    t.ok(thrown(() => parseRoutingFile(text, 'r.yaml', vendors, {}), (error) => error instanceof RoutingFileError && pattern.test(error.message)), String(pattern));
  refused(`virtual_models:\n  a/b:\n    models: [${MINI}]\n`, /^r\.yaml:2: virtual_models\.a\/b must be 1 to 64 letters.*without \//);
  refused(`virtual_models:\n  a:\n    models: []\n`, /^r\.yaml:3: .*must list at least one model/);
  refused(`virtual_models:\n  a:\n    models: [${MINI}]\n  b:\n    models:\n      - ${HAIKU}\n      - a\n`, /^r\.yaml:7: 'a' is a virtual model/);
  refused(`virtual_models:\n  a:\n    models:\n      - ${MINI}\n      - ${MINI}\n`, /^r\.yaml:5: '.*' is listed twice/);
  refused(`virtual_models:\n  a:\n    models: [${MINI}]\n    weight: 2\n`, /^r\.yaml:4: /);
});

t.test('models: [a, b] with a failing 503 is served by b, answered and billed as b', async (t) => {
  const user = 'models-fallback';
  const { key } = await gateway.user(user, '5');
  mock.setFaults({ 'mini-key': { kind: 503 } });
  const before = { mini: faulted('mini-key'), haiku: served('haiku-key') };
  const response = await postChat(gateway, key, body({ model: MINI, models: [HAIKU], max_tokens: 40 }));
  mock.setFaults({});
  t.equal(response.status, 200, response.text);
  t.equal(response.headers.get('x-gateway-attempts'), '2');
  t.equal(parseJson(response.text).model, HAIKU, 'the answer names the model that served');
  t.equal(faulted('mini-key') - before.mini, 1, 'a was tried once');
  t.equal(served('haiku-key') - before.haiku, 1, 'b served');
  const { log, transaction } = await loggedCall(user, response.headers.get('x-request-id')!);
  t.equal(log.model, HAIKU, 'the request log names b');
  t.equal(transaction.model, HAIKU, 'so does the usage transaction');
  const charge = BigInt(log.prompt_tokens - log.cached_tokens) * HAIKU_PRICE.input + BigInt(log.completion_tokens) * HAIKU_PRICE.output;
  t.ok(log.prompt_tokens > 0 && log.completion_tokens > 0);
  t.equal(-transaction.credits_nano, charge, `charged at b's price (${charge} nano-USD)`);
  t.equal(BigInt(log.cost_nano), charge);
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(money.held, 0n, 'the rest of the reservation is released');
  t.equal(usdToNano(5) - money.ledgerSum, charge, 'the ledger holds that one charge');
  t.match(String(await (await fetch(`${gateway.url}/metrics`)).text()), new RegExp(`gateway_routing_fallbacks_total\\{from="${MINI}",to="${HAIKU}"\\} 1`));
});

t.test('the first model serving needs no fallback, and is billed at its own price', async (t) => {
  const user = 'models-first';
  const { key } = await gateway.user(user, '5');
  const before = served('haiku-key');
  const response = await postChat(gateway, key, body({ model: MINI, models: [HAIKU] }));
  t.equal(response.status, 200, response.text);
  t.equal(response.headers.get('x-gateway-attempts'), '1');
  t.equal(parseJson(response.text).model, MINI);
  t.equal(served('haiku-key'), before, 'b untouched');
  await gateway.ledgerSettled(user, 30_000);
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(usdToNano(5) - money.ledgerSum, chargeOf(response.text), "charged at a's price");
});

t.test('a non-retryable answer of a is returned at once: b is not tried', async (t) => {
  const key = await sharedKey();
  mock.setFaults({ 'mini-key': { kind: 400 } });
  const before = served('haiku-key') + faulted('haiku-key');
  const response = await postChat(gateway, key, body({ model: MINI, models: [HAIKU] }));
  mock.setFaults({});
  t.equal(response.status, 400, response.text);
  t.equal(served('haiku-key') + faulted('haiku-key'), before);
});

t.test('every model failing: 503 naming the last error, the attempts of every model counted, nothing charged', async (t) => {
  const user = 'models-all-fail';
  const { key } = await gateway.user(user, '5');
  mock.setFaults({ 'mini-key': { kind: 503 }, 'haiku-key': { kind: 529 } });
  const response = await postChat(gateway, key, body({ model: MINI, models: [HAIKU] }));
  mock.setFaults({});
  t.equal(response.status, 503, response.text);
  t.equal(parseJson(response.text).error.code, 'upstream_unavailable');
  t.equal(response.headers.get('x-gateway-attempts'), '2');
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(money.credits, usdToNano(5), 'nothing charged');
  t.equal(money.held, 0n);
});

t.test('the reservation covers the dearest model the call may reach', async (t) => {
  // 40 output tokens of gpt-4o-mini fit in this balance many times over; haiku's worst case does not.
  const { key } = await gateway.user('models-dearest', '0.0001');
  const cheap = await postChat(gateway, key, body({ model: MINI, max_tokens: 40 }));
  t.equal(cheap.status, 200, cheap.text);
  const both = await postChat(gateway, key, body({ model: MINI, models: [HAIKU], max_tokens: 40 }));
  t.equal(both.status, 402, `refused for credit: its worst case is haiku's (${both.text})`);
});

t.test('a stream falls back before its first byte, and is rendered as the model that served', async (t) => {
  const key = await sharedKey();
  mock.setFaults({ 'mini-key': { kind: 503 } });
  const response = await postChat(gateway, key, body({ model: MINI, models: [HAIKU], stream: true, stream_options: { include_usage: true } }));
  mock.setFaults({});
  t.equal(response.status, 200, response.text.slice(0, 300));
  t.equal(response.headers.get('x-gateway-attempts'), '2');
  const chunks = sseData(response.text).filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as { model: string });
  t.ok(chunks.length > 1 && chunks.every((chunk) => chunk.model === HAIKU), 'every chunk names b');
});

t.test('the Responses endpoint takes models too', async (t) => {
  const key = await sharedKey();
  mock.setFaults({ 'mini-key': { kind: 503 } });
  const response = await fetch(`${gateway.v1}/responses`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MINI, models: [HAIKU], input: 'hi' }),
  });
  mock.setFaults({});
  const text = await response.text();
  t.equal(response.status, 200, text);
  t.equal(parseJson(text).model, HAIKU);
});

t.test('bad models: an unknown id is a 404 naming it, a wrong type or too many a 400', async (t) => {
  const key = await sharedKey();
  const unknown = await postChat(gateway, key, body({ model: MINI, models: [HAIKU, 'nope/nothing'] }));
  t.equal(unknown.status, 404);
  t.equal(parseJson(unknown.text).error.param, 'models[1]');
  for (const models of ['x', [1], [''], Array.from({ length: 9 }, () => MINI)]) {
    const response = await postChat(gateway, key, body({ model: MINI, models }));
    t.equal(response.status, 400, `${JSON.stringify(models).slice(0, 40)}: ${response.text}`);
    t.match(parseJson(response.text).error.param, /^models/);
  }
});

t.test('a virtual model is listed in /v1/models and the catalog, and serves as its first model', async (t) => {
  const user = 'models-virtual';
  const { key, token } = await gateway.user(user, '5');
  const list = parseJson(await (await fetch(`${gateway.v1}/models`, { headers: { authorization: `Bearer ${key}` } })).text());
  const listed = list.data.find((m: { id: string }) => m.id === 'fast-chat');
  t.match(listed, { object: 'model', owned_by: 'gateway', virtual: true, models: [MINI, HAIKU] });
  t.ok(list.data.some((m: { id: string }) => m.id === MINI), 'the catalog models are still there');
  const one = await fetch(`${gateway.v1}/models/fast-chat`, { headers: { authorization: `Bearer ${key}` } });
  t.equal(one.status, 200);
  const catalog = parseJson(await (await fetch(`${gateway.url}/api/v1/models?search=fast&per_page=5`, { headers: { authorization: `Bearer ${token}` } })).text());
  t.match(catalog.data[0], { id: 'fast-chat', provider: 'gateway', modality: 'chat', virtual: true, models: [MINI, HAIKU] });
  const other = parseJson(await (await fetch(`${gateway.url}/api/v1/models?task=image&per_page=100`, { headers: { authorization: `Bearer ${token}` } })).text());
  t.notOk(other.data.some((m: { id: string }) => m.id === 'fast-chat'), 'not an image model');
  // Pages run over virtual models and catalog rows together: none lost, none twice.
  const pages: string[] = [];
  const firstPage = parseJson(await (await fetch(`${gateway.url}/api/v1/models?per_page=7`, { headers: { authorization: `Bearer ${token}` } })).text());
  for (let page = 1; page <= firstPage.total_pages; page++) {
    const data = parseJson(await (await fetch(`${gateway.url}/api/v1/models?per_page=7&page=${page}`, { headers: { authorization: `Bearer ${token}` } })).text()).data;
    pages.push(...data.map((m: { id: string }) => m.id));
  }
  t.equal(pages.length, firstPage.total, 'every entry on one page');
  t.equal(new Set(pages).size, pages.length, 'none twice');
  t.equal(pages[0], 'fast-chat');

  const response = await postChat(gateway, key, body({ model: 'fast-chat' }));
  t.equal(response.status, 200, response.text);
  t.equal(parseJson(response.text).model, MINI, 'the answer names the catalog model that served');
  await gateway.ledgerSettled(user, 30_000);
  const money = await leasesClosed(gateway, user, 10_000);
  t.equal(usdToNano(5) - money.ledgerSum, chargeOf(response.text), "billed at that model's price");
});

t.test('a virtual model falls back to its next model', async (t) => {
  const key = await sharedKey();
  mock.setFaults({ 'mini-key': { kind: 429, retryAfterSeconds: 1 } });
  const response = await postChat(gateway, key, body({ model: 'fast-chat' }));
  mock.setFaults({});
  t.equal(response.status, 200, response.text);
  t.equal(parseJson(response.text).model, HAIKU);
  await eventually('the ledger check', async () => /^ledger check: ok /.test(await gateway.cli('ledger', 'check')) || undefined, 30_000);
});
