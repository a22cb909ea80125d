// POST /v1/embeddings over real HTTP: the official OpenAI client's embeddings.create on every
// embedding model of the catalog (OpenAI, Gemini's batchEmbedContents, Mistral, DashScope's
// compatible mode, all played by the mock vendor in their own wire formats), float and base64,
// `dimensions`, string / array / token input, the money of every outcome (charged exactly the input
// tokens at the model's price, nothing for a failure, nothing on the caller's own key), the 400s of
// bad input, the catalog's `embedding` task, and `gateway ledger check` after it all.
import t from 'tap';
import OpenAI from 'openai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { usageSettled } from './helpers/billing-checks.js';
import { EMBEDDING_MODELS } from '../src/catalog/seed/embedding.js';
import type { EmbeddingModel } from '../src/catalog/model.js';
import type { EmbeddingJob } from '../src/providers/embeddings/family.js';
import { compatibleEmbeddings, floatsOfBase64, openAiEmbeddings } from '../src/providers/embeddings/openai.js';
import { geminiEmbeddings } from '../src/providers/embeddings/gemini.js';

/** Seed prices in nano-USD per input token (USD per 1M tokens x 1000). */
const PRICE: Readonly<Record<string, bigint>> = {
  'openai/text-embedding-3-small': 20n,
  'openai/text-embedding-3-large': 130n,
  'google/gemini-embedding-001': 150n,
  'mistral/mistral-embed': 100n,
  'alibaba/text-embedding-v4': 70n,
};
const DIMENSIONS: Readonly<Record<string, number>> = {
  'openai/text-embedding-3-small': 1536,
  'openai/text-embedding-3-large': 3072,
  'google/gemini-embedding-001': 3072,
  'mistral/mistral-embed': 1024,
  'alibaba/text-embedding-v4': 1024,
};
const UPSTREAM_PATH: Readonly<Record<string, string>> = {
  'openai/text-embedding-3-small': '/openai/v1/embeddings',
  'openai/text-embedding-3-large': '/openai/v1/embeddings',
  'google/gemini-embedding-001': '/gemini/v1/models/gemini-embedding-001:batchEmbedContents',
  'mistral/mistral-embed': '/mistral/v1/embeddings',
  'alibaba/text-embedding-v4': '/alibaba/v1/embeddings',
};

let gateway: Gateway;
let users = 0;

t.before(async () => {
  // DashScope through a pool of two keys (the routing test); every other vendor through its one key.
  const routingFile = join(mkdtempSync(join(tmpdir(), 'embeddings-routing-')), 'routing.yaml');
  writeFileSync(routingFile, `
vendors:
  alibaba:
    targets:
      - { name: emb-first, api_key: emb-first-key, priority: 1 }
      - { name: emb-second, api_key: emb-second-key }
`);
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10', ROUTING_FILE: routingFile } });
});
t.teardown(() => gateway.close());

async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `emb-user-${++users}`;
  return { user, key: (await fastUser(gateway, user, usd)).key };
}

const settled = (user: string) => usageSettled(gateway, user);

const embed = (key: string, body: unknown) => postJson(`${gateway.v1}/embeddings`, key, body);
const upstreamSince = (mark: number) => gateway.mock.requests().slice(mark).filter((r) => r.path.endsWith('/embeddings') || r.path.endsWith(':batchEmbedContents'));

/** Little-endian float32 values of a base64 string, as OpenAI documents its base64 encoding. */
function floatsOf(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}
const norm = (vector: readonly number[]) => Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));


/** A seeded embedding model as the call path reads it (prices do not matter to the translators). */
function seeded(id: string): EmbeddingModel {
  const seed = EMBEDDING_MODELS.find((entry) => entry.id === id)!;
  return {
    id, name: seed.name, provider: seed.provider, modality: 'embedding', family: seed.family, upstreamVendor: seed.upstreamVendor,
    upstreamModel: seed.upstreamModel, capabilities: seed.capabilities, prices: { input: 0n, cachedInput: 0n, cacheWrite: 0n, output: 0n },
  };
}
const jobOf = (id: string, texts: string[], dimensions?: number): EmbeddingJob => ({ model: seeded(id), inputs: { kind: 'text', texts }, dimensions, user: 'u-1' });
const target = { baseUrl: 'https://vendor.example/v1', apiKey: 'k-1' };
const float32 = (values: number[]) => {
  const bytes = Buffer.alloc(values.length * 4);
  values.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
};

t.test('translators: OpenAI asks for base64 and decodes it, by index; the compatible vendors ask for floats', async (t) => {
  const job = jobOf('openai/text-embedding-3-small', ['a', 'b'], 2);
  const request = openAiEmbeddings.request(job, target);
  t.equal(request.url, 'https://vendor.example/v1/embeddings');
  t.same(request.headers, { authorization: 'Bearer k-1', 'content-type': 'application/json' });
  t.same(JSON.parse(request.body), { model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'base64', dimensions: 2, user: 'u-1' });
  const answer = openAiEmbeddings.read(JSON.stringify({
    object: 'list', model: 'text-embedding-3-small', usage: { prompt_tokens: 2, total_tokens: 2 },
    data: [{ object: 'embedding', index: 1, embedding: float32([0.5, -0.25]) }, { object: 'embedding', index: 0, embedding: float32([1, 0]) }],
  }), job);
  t.same(answer, { vectors: [[1, 0], [0.5, -0.25]], promptTokens: 2 }, 'ordered by index, usage read');
  t.same(floatsOfBase64(float32([0.1])), [Math.fround(0.1)]);
  const mistral = jobOf('mistral/mistral-embed', ['a']);
  t.same(JSON.parse(compatibleEmbeddings.request(mistral, target).body), { model: 'mistral-embed', input: ['a'], encoding_format: 'float' }, 'no user, no dimensions');
  const tokens: EmbeddingJob = { ...job, inputs: { kind: 'tokens', tokens: [[1, 2], [3]] }, dimensions: undefined };
  t.same(JSON.parse(openAiEmbeddings.request(tokens, target).body).input, [[1, 2], [3]], 'token arrays as they are');
  const bad = (data: unknown) => () => openAiEmbeddings.read(JSON.stringify({ data }), job);
  t.throws(bad([{ index: 0, embedding: [1, 0] }]), 'one vector for two inputs');
  t.throws(bad([{ index: 0, embedding: [1, 0, 0] }, { index: 1, embedding: [1, 0, 0] }]), 'the wrong length');
  t.throws(bad([{ index: 0, embedding: [1, 0] }, { index: 0, embedding: [1, 0] }]), 'a repeated index');
  t.throws(bad([{ index: 0, embedding: [1, 'x'] }, { index: 1, embedding: [1, 0] }]), 'not a number');
  t.throws(() => openAiEmbeddings.read('{"error": {}}', job), 'no data');
});

t.test('translators: Gemini batchEmbedContents both ways, no usage', async (t) => {
  const job = jobOf('google/gemini-embedding-001', ['first', 'second'], 3);
  const request = geminiEmbeddings.request(job, target);
  t.equal(request.url, 'https://vendor.example/v1/models/gemini-embedding-001:batchEmbedContents');
  t.same(request.headers, { 'x-goog-api-key': 'k-1', 'content-type': 'application/json' });
  t.same(JSON.parse(request.body), { requests: [
    { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'first' }] }, outputDimensionality: 3 },
    { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'second' }] }, outputDimensionality: 3 },
  ] });
  t.same(geminiEmbeddings.read(JSON.stringify({ embeddings: [{ values: [1, 2, 3] }, { values: [4, 5, 6] }] }), job), { vectors: [[1, 2, 3], [4, 5, 6]], promptTokens: undefined });
  t.throws(() => geminiEmbeddings.read(JSON.stringify({ embeddings: [{ values: [1, 2, 3] }] }), job), 'a vector missing');
  t.throws(() => geminiEmbeddings.read(JSON.stringify({ embedding: { values: [1, 2, 3] } }), job), 'embedContent\'s answer is not batchEmbedContents\'');
});

t.test('this file covers every seeded embedding model (the served families: test/callable-models.test.ts)', async (t) => {
  t.same(EMBEDDING_MODELS.map((seed) => seed.id).sort(), Object.keys(PRICE).sort());
});

t.test('the official openai client on every embedding model: vectors of the model\'s length, charged exactly its input tokens at its price', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  let expected = 0n;
  for (const model of Object.keys(PRICE)) {
    const mark = gateway.mock.requests().length;
    // The client asks for base64 by default and decodes it: the base64 path, seen as floats.
    const result = await client.embeddings.create({ model, input: ['the quick brown fox', 'jumps over the lazy dog'] });
    t.equal(result.object, 'list', model);
    t.equal(result.model, model, `${model}: the gateway's id`);
    t.equal(result.data.length, 2, `${model}: one vector per input`);
    t.same(result.data.map((item) => item.index), [0, 1]);
    for (const item of result.data) {
      t.equal(item.object, 'embedding');
      t.equal(item.embedding.length, DIMENSIONS[model], `${model}: ${DIMENSIONS[model]} dimensions`);
      t.ok(Math.abs(norm(item.embedding) - 1) < 1e-4, `${model}: the mock's unit vector arrives intact`);
    }
    t.not(result.data[0]!.embedding[0], result.data[1]!.embedding[0], 'different inputs, different vectors');
    t.ok(result.usage.prompt_tokens > 0, `${model}: usage`);
    t.equal(result.usage.total_tokens, result.usage.prompt_tokens);
    const [upstream] = upstreamSince(mark);
    t.equal(upstream?.path, UPSTREAM_PATH[model], `${model}: the vendor's own endpoint`);
    expected += BigInt(result.usage.prompt_tokens) * PRICE[model]!;
  }
  const money = await settled(user);
  t.equal(money.charged, expected, 'charged exactly the reported input tokens x each model\'s input price');
  t.equal(money.held, 0n, 'nothing left held');
  const logs = await gateway.sql<{ n: number }[]>`select count(*)::int as n from request_logs where user_id = ${user} and endpoint = 'embeddings' and status = 200`;
  t.equal(logs[0]!.n, Object.keys(PRICE).length, 'each call in the request log as `embeddings`');
});

t.test('what each vendor is sent: OpenAI base64 with user, the compatible vendors floats, Gemini one request per input with its key header', async (t) => {
  const { key } = await newUser();
  let mark = gateway.mock.requests().length;
  t.equal((await embed(key, { model: 'openai/text-embedding-3-small', input: 'hello', user: 'end-user-7' })).status, 200);
  t.match(upstreamSince(mark)[0]?.body, { model: 'text-embedding-3-small', input: ['hello'], encoding_format: 'base64', user: 'end-user-7' });
  mark = gateway.mock.requests().length;
  t.equal((await embed(key, { model: 'mistral/mistral-embed', input: 'hello', user: 'end-user-7' })).status, 200);
  const mistral = upstreamSince(mark)[0]?.body as Record<string, unknown>;
  t.match(mistral, { model: 'mistral-embed', input: ['hello'], encoding_format: 'float' });
  t.notOk('user' in mistral, 'no user for a compatible vendor');
  mark = gateway.mock.requests().length;
  t.equal((await embed(key, { model: 'google/gemini-embedding-001', input: ['a', 'b'], dimensions: 768 })).status, 200);
  const gemini = upstreamSince(mark)[0]!;
  t.equal(gemini.authorization, 'test-gemini-key', 'x-goog-api-key');
  t.same(gemini.body, { requests: ['a', 'b'].map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] }, outputDimensionality: 768 })) });
});

t.test('float and base64 answers carry the same values; dimensions shortens the vectors where the model takes it', async (t) => {
  const { key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const asFloat = await client.embeddings.create({ model: 'openai/text-embedding-3-large', input: 'same text', encoding_format: 'float', dimensions: 256 });
  const asBase64 = await client.embeddings.create({ model: 'openai/text-embedding-3-large', input: 'same text', encoding_format: 'base64', dimensions: 256 });
  const floats = asFloat.data[0]!.embedding;
  t.equal(floats.length, 256, 'dimensions: 256');
  t.type(asBase64.data[0]!.embedding, 'string', 'base64 asked: a string');
  t.same(floatsOf(asBase64.data[0]!.embedding as unknown as string), floats, 'base64 decodes (little-endian float32) to the float answer');
  const raw = await embed(key, { model: 'mistral/mistral-embed', input: 'x', encoding_format: 'base64' });
  t.equal(floatsOf(raw.body.data[0].embedding).length, 1024, 'base64 from a float-only vendor: encoded here');
  for (const [model, dimensions] of [['google/gemini-embedding-001', 768], ['alibaba/text-embedding-v4', 512], ['openai/text-embedding-3-small', 1]] as const) {
    const reply = await embed(key, { model, input: 'x', dimensions });
    t.equal(reply.status, 200, model);
    t.equal(reply.body.data[0].embedding.length, dimensions, `${model}: ${dimensions} dimensions`);
  }
});

t.test('token input: a token array and an array of token arrays, billed exactly their tokens', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const mark = gateway.mock.requests().length;
  const one = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: [9906, 1917, 0, 100257] });
  t.equal(one.data.length, 1);
  t.equal(one.usage.prompt_tokens, 4);
  const many = await client.embeddings.create({ model: 'openai/text-embedding-3-small', input: [[1, 2], [3, 4, 5]], encoding_format: 'float' });
  t.equal(many.data.length, 2);
  t.equal(many.usage.prompt_tokens, 5);
  t.same(upstreamSince(mark).map((r) => (r.body as { input: unknown }).input), [[[9906, 1917, 0, 100257]], [[1, 2], [3, 4, 5]]], 'sent as token arrays');
  t.equal((await settled(user)).charged, 9n * PRICE['openai/text-embedding-3-small']!);
});

t.test('a vendor that reports no usage: the input tokens are counted here and charged', async (t) => {
  const { user, key } = await newUser();
  const reply = await embed(key, { model: 'mistral/mistral-embed', input: ['hello there [[mock no_usage]]'] });
  t.equal(reply.status, 200);
  t.ok(reply.body.usage.prompt_tokens > 0, 'counted');
  t.equal((await settled(user)).charged, BigInt(reply.body.usage.prompt_tokens) * PRICE['mistral/mistral-embed']!);
});

t.test('bad input is a 400 naming the field, and reaches no upstream', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const model = 'openai/text-embedding-3-small';
  const cases: [string, Record<string, unknown>, string][] = [
    ['no input', { model }, 'input'],
    ['an empty string', { model, input: '' }, 'input'],
    ['an empty array', { model, input: [] }, 'input'],
    ['an empty string item', { model, input: ['a', ''] }, 'input[1]'],
    ['a number among strings', { model, input: ['a', 1] }, 'input[1]'],
    ['more than 2048 inputs', { model, input: Array.from({ length: 2049 }, () => 'a') }, 'input'],
    ['a fractional token id', { model, input: [1, 2.5] }, 'input[1]'],
    ['a negative token id', { model, input: [[1], [-1]] }, 'input[1][0]'],
    ['a token id out of range', { model, input: [[1], [2, 100258]] }, 'input[1][1]'],
    ['an empty token array', { model, input: [[1], []] }, 'input[1]'],
    ['an object', { model, input: { text: 'a' } }, 'input'],
    ['a boolean item', { model, input: [true] }, 'input[0]'],
    ['token input to a text-only model', { model: 'mistral/mistral-embed', input: [1, 2] }, 'input'],
    ['too many inputs for the model', { model: 'alibaba/text-embedding-v4', input: Array.from({ length: 11 }, () => 'a') }, 'input'],
    ['dimensions on a model without it', { model: 'mistral/mistral-embed', input: 'a', dimensions: 512 }, 'dimensions'],
    ['dimensions above the model\'s', { model, input: 'a', dimensions: 1537 }, 'dimensions'],
    ['dimensions below Gemini\'s', { model: 'google/gemini-embedding-001', input: 'a', dimensions: 64 }, 'dimensions'],
    ['dimensions DashScope does not offer', { model: 'alibaba/text-embedding-v4', input: 'a', dimensions: 100 }, 'dimensions'],
    ['dimensions not an integer', { model, input: 'a', dimensions: 1.5 }, 'dimensions'],
    ['dimensions zero', { model, input: 'a', dimensions: 0 }, 'dimensions'],
    ['an unknown encoding', { model, input: 'a', encoding_format: 'hex' }, 'encoding_format'],
    ['an unknown field', { model, input: 'a', truncate: true }, 'truncate'],
    ['a chat model', { model: 'openai/gpt-4o-mini', input: 'a' }, 'model'],
  ];
  for (const [name, body, param] of cases) {
    const reply = await embed(key, body);
    assertEnvelope(t, reply, 400, undefined, name);
    t.equal(reply.body.error?.param, param, `${name}: names ${param}`);
  }
  assertEnvelope(t, await embed(key, { model: 'openai/no-such-embedding', input: 'a' }), 404, 'model_not_found');
  t.equal(upstreamSince(mark).length, 0, 'no upstream call');
  const money = await settled(user);
  t.equal(money.charged, 0n);
  t.equal(money.held, 0n);
});

t.test('402 when the balance does not cover the worst case, and nothing reaches the upstream', async (t) => {
  const { key } = await newUser('0');
  const mark = gateway.mock.requests().length;
  assertEnvelope(t, await embed(key, { model: 'openai/text-embedding-3-small', input: 'no credit' }), 402, 'insufficient_credits');
  t.equal(upstreamSince(mark).length, 0, 'no upstream call');
});

t.test('an upstream 5xx is answered as chat answers it (502), with nothing charged; an upstream 400 is the caller\'s 400', async (t) => {
  const { user, key } = await newUser();
  for (const model of ['openai/text-embedding-3-small', 'google/gemini-embedding-001', 'mistral/mistral-embed']) {
    const reply = await embed(key, { model, input: ['fine', 'broken [[mock fail=500]]'] });
    assertEnvelope(t, reply, 502, 'upstream_error', model);
    t.equal(reply.headers.get('x-gateway-attempts'), '1', 'one attempt (a one-target route is not retried on a 500)');
  }
  assertEnvelope(t, await embed(key, { model: 'openai/text-embedding-3-small', input: 'x [[mock fail=400]]' }), 400, 'upstream_rejected');
  assertEnvelope(t, await embed(key, { model: 'mistral/mistral-embed', input: 'x [[mock fault=reset]]' }), 502, 'upstream_unreachable', 'a reset connection');
  const money = await settled(user);
  t.equal(money.charged, 0n, 'nothing charged');
  t.equal(money.held, 0n, 'nothing left held');
  t.equal(money.credits, 10_000_000_000n, 'the balance is whole');
  const logs = await gateway.sql<{ status: number }[]>`select status from request_logs where user_id = ${user} and endpoint = 'embeddings' order by status`;
  t.same(logs.map((row) => row.status), [400, 502, 502, 502, 502], 'each failed call logged');
});

t.test('routing: a 503 from the first target is retried on the second, charged once; Idempotency-Key replays without a second call', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const body = { model: 'alibaba/text-embedding-v4', input: ['routed [[mock fault=503 fault_key=emb-first-key]]'] };
  const headers = { 'idempotency-key': `emb-${user}` };
  const first = await postJson(`${gateway.v1}/embeddings`, key, body, headers);
  t.equal(first.status, 200, JSON.stringify(first.body).slice(0, 200));
  t.equal(first.headers.get('x-gateway-attempts'), '2', 'two attempts');
  t.same(upstreamSince(mark).map((r) => r.authorization), ['Bearer emb-first-key', 'Bearer emb-second-key'], 'the first target, then the second');
  const again = await postJson(`${gateway.v1}/embeddings`, key, body, headers);
  t.equal(again.status, 200);
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'a replay');
  t.same(again.body, first.body, 'the first answer again');
  t.equal(upstreamSince(mark).length, 2, 'no upstream call for the replay');
  t.equal((await settled(user)).charged, BigInt(first.body.usage.prompt_tokens) * PRICE['alibaba/text-embedding-v4']!, 'charged once, for the attempt that served');
});

t.test('BYOK: the caller\'s OpenAI credential serves embeddings first, uncharged; the platform after it fails', async (t) => {
  const { user, key } = await newUser();
  const token = mintToken(user);
  const created = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'own', api_key: 'sk-own-embeddings-1' }),
  });
  t.equal(created.status, 201);
  const tried = async () => {
    const mark = gateway.mock.requests().length;
    const reply = await embed(key, { model: 'openai/text-embedding-3-small', input: 'own key' });
    return { reply, keys: upstreamSince(mark).map((r) => r.authorization) };
  };
  const own = await tried();
  t.equal(own.reply.status, 200);
  t.same(own.keys, ['Bearer sk-own-embeddings-1'], 'the caller\'s key, once');
  t.equal((await settled(user)).charged, 0n, 'not charged on the caller\'s own key');

  const id = (created.body as { id: string }).id;
  await rawRequest(`${gateway.url}/api/v1/byok/${id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ api_key: 'sk-own-revoked-2' }),
  });
  t.ok(await eventually(async () => (await tried()).keys[0] === 'Bearer sk-own-revoked-2'), 'the changed row is used');
  const before = (await settled(user)).charged;
  const fallback = await tried();
  t.equal(fallback.reply.status, 200);
  t.same(fallback.keys, ['Bearer sk-own-revoked-2', 'Bearer test-openai-key'], 'the platform after the refused own key');
  t.equal((await settled(user)).charged - before, BigInt(fallback.reply.body.usage.prompt_tokens) * PRICE['openai/text-embedding-3-small']!, 'the platform call charged');
});

t.test('the catalog lists embedding models under task=embedding, priced per input token', async (t) => {
  const token = mintToken('emb-catalog');
  const auth = { headers: { authorization: `Bearer ${token}` } };
  const listed = await rawRequest(`${gateway.url}/api/v1/models?task=embedding`, auth);
  t.equal(listed.status, 200);
  const body = listed.body as { data: { id: string; modality: string }[]; total: number };
  t.same(body.data.map((m) => m.id).sort(), Object.keys(PRICE).sort());
  t.ok(body.data.every((m) => m.modality === 'embedding'));
  const chat = await rawRequest(`${gateway.url}/api/v1/models?task=chat`, auth);
  t.notOk((chat.body as { data: { modality: string }[] }).data.some((m) => m.modality === 'embedding'), 'task=chat keeps its meaning');
  const pricing = await rawRequest(`${gateway.url}/api/v1/models/openai/text-embedding-3-small/pricing`, auth);
  t.match(pricing.body, { modality: 'embedding', prices: [{ component: 'input_token', usd_per_million: '0.02' }] });
  const v1 = await rawRequest(`${gateway.v1}/models/google/gemini-embedding-001`, { headers: { authorization: `Bearer ${(await newUser()).key}` } });
  t.equal(v1.status, 200, '/v1/models lists it too');
});

t.test('`gateway ledger check` passes after every call above', async (t) => {
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});
