// POST /v1/images/generations over real HTTP: the official OpenAI client, the OpenAI Images API and
// the submit-and-poll FLUX API of the mock vendor, per-model validation, input images (data: URIs,
// fetched URLs) hosted, results rehosted on the media host, and the money of every outcome.
import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { usageSettled } from './helpers/billing-checks.js';
import { MEDIA_KEY } from '../src/media/storage.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const PNG_URI = `data:image/png;base64,${PNG.toString('base64')}`;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
/** USD list prices of the seed, as nano-USD per image. */
const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'images-test-'));
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, IMAGE_POLL_MS: '20', RATE_LIMIT_DEFAULT: '1000/10' } });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

/** A fresh user with `usd` of credit (each test its own, so charges do not mix). */
async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `img-user-${++users}`;
  return { user, key: (await fastUser(gateway, user, usd)).key };
}

const settled = (user: string) => usageSettled(gateway, user);

const generate = (key: string, body: unknown, headers: Record<string, string> = {}) => postJson(`${gateway.v1}/images/generations`, key, body, headers);

/** The mock's records of upstream image calls since `mark`. */
function upstreamSince(mark: number) {
  return gateway.mock.requests().slice(mark).filter((r) => r.path.includes('/images/') || r.path.startsWith('/bfl/'));
}

async function fetchHosted(t: Test, url: string): Promise<Buffer> {
  t.ok(url.startsWith(`${gateway.url}/media/`), `${url.slice(0, 60)} is on the media host`);
  t.match(url.slice(url.lastIndexOf('/') + 1), MEDIA_KEY);
  const response = await fetch(url);
  t.equal(response.status, 200, 'the media host serves it');
  return Buffer.from(await response.arrayBuffer());
}

t.test('the official openai client: images.generate served from the media host, charged at the list price', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const mark = gateway.mock.requests().length;
  const result = await client.images.generate({ model: 'openai/gpt-image-2', prompt: 'a lighthouse at dawn', n: 2, size: '1024x1024', quality: 'low' });
  t.equal(result.data?.length, 2, 'two images');
  t.type(result.created, 'number');
  const bytes = await Promise.all(result.data!.map((image) => fetchHosted(t, image.url!)));
  for (const image of bytes) t.same(image.subarray(0, 8), PNG_SIGNATURE, 'a PNG');
  t.not(sha(bytes[0]!), sha(bytes[1]!), 'two different images');
  const [upstream] = upstreamSince(mark);
  t.equal(upstream?.path, '/openai/v1/images/generations');
  t.match(upstream?.body, { model: 'gpt-image-2', prompt: 'a lighthouse at dawn', n: 2, size: '1024x1024', quality: 'low' }, 'the upstream model name and the fields');
  const money = await settled(user);
  t.equal(money.charged, 2n * NANO('0.006'), '2 x 0.006 USD (1024x1024, low)');
  t.equal(money.held, 0n, 'nothing left held');
  t.equal(money.usageTransactions, 1, 'one usage transaction');
  t.equal(money.credits, NANO('10') - money.charged, 'the balance is down by exactly the charge');
});

t.test('quality left to the vendor: the dearest tier is reserved, the tier the vendor reports is charged', async (t) => {
  const { user, key } = await newUser();
  const reply = await generate(key, { model: 'openai/gpt-image-2', prompt: 'a fox', size: '1536x1024' });
  t.equal(reply.status, 200, JSON.stringify(reply.body).slice(0, 300));
  const money = await settled(user);
  // The mock reports `medium` for a request without quality (src/mock-vendor/images.ts).
  t.equal(money.charged, NANO('0.041'), 'medium at 1536x1024');
});

t.test('aspect_ratio picks the size of that shape on a pixel-sized model', async (t) => {
  const { key } = await newUser();
  const mark = gateway.mock.requests().length;
  const reply = await generate(key, { model: 'openai/gpt-image-2', prompt: 'a tower', aspect_ratio: '2:3', quality: 'low' });
  t.equal(reply.status, 200);
  t.equal((upstreamSince(mark)[0]?.body as { size?: string }).size, '1024x1536');
  assertEnvelope(t, await generate(key, { model: 'openai/gpt-image-2', prompt: 'x', aspect_ratio: '16:9' }), 400, 'invalid_request', 'a shape it does not make');
  const contradiction = await generate(key, { model: 'openai/gpt-image-2', prompt: 'x', aspect_ratio: '1:1', size: '1024x1536' });
  assertEnvelope(t, contradiction, 400);
  t.equal(contradiction.body.error.param, 'aspect_ratio');
});

t.test('an OpenAI edit: input images go to /images/edits as images[].image_url', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const reply = await generate(key, { model: 'openai/gpt-image-2', prompt: 'add a hat', image_urls: [PNG_URI, PNG_URI], size: '1024x1024', quality: 'medium' });
  t.equal(reply.status, 200, JSON.stringify(reply.body).slice(0, 300));
  const [upstream] = upstreamSince(mark);
  t.equal(upstream?.path, '/openai/v1/images/edits');
  t.same((upstream?.body as { images?: unknown }).images, [{ image_url: PNG_URI }, { image_url: PNG_URI }]);
  t.equal((await settled(user)).charged, NANO('0.053'), 'GPT Image prices an edit as a generation');
});

t.test('FLUX (submit and poll): waited for, rehosted, charged; an edit with a data: URI is hosted and priced as an edit', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const reply = await generate(key, { model: 'black-forest-labs/flux-2-pro', prompt: 'a red bicycle [[mock polls=3]]', aspect_ratio: '16:9' });
  t.equal(reply.status, 200, JSON.stringify(reply.body).slice(0, 300));
  t.equal(reply.body.data.length, 1);
  const image = await fetchHosted(t, reply.body.data[0].url);
  t.same(image.subarray(0, 8), PNG_SIGNATURE);
  const calls = upstreamSince(mark);
  t.equal(calls[0]?.path, '/bfl/v1/flux-2-pro', 'submitted to the model path');
  t.match(calls[0]?.body, { width: 1344, height: 768 }, '16:9 as FLUX.2 dimensions');
  t.ok(calls.filter((call) => call.path === '/bfl/v1/get_result').length >= 4, 'polled until Ready (3 pending answers, then Ready)');
  let money = await settled(user);
  t.equal(money.charged, NANO('0.03'), 'the generate price');

  const edit = await generate(key, { model: 'black-forest-labs/flux-2-pro', prompt: 'make it blue', image_urls: [PNG_URI] });
  t.equal(edit.status, 200, JSON.stringify(edit.body).slice(0, 300));
  const hostedInput = await fetch(`${gateway.url}/media/${sha(PNG)}.png`);
  t.equal(hostedInput.status, 200, 'the data: URI was decoded and hosted');
  t.same(Buffer.from(await hostedInput.arrayBuffer()), PNG, 'byte for byte');
  const submit = upstreamSince(mark).filter((call) => call.path === '/bfl/v1/flux-2-pro').at(-1);
  // The media host is on loopback here, which no vendor could reach: the image goes inline.
  t.equal((submit?.body as { input_image?: string }).input_image, PNG_URI, 'the input image reached the upstream intact');
  money = await settled(user);
  t.equal(money.charged, NANO('0.03') + NANO('0.045'), 'the edit price on top');
});

t.test('an edit model requires image_urls; a deprecated alias resolves to its model', async (t) => {
  const { user, key } = await newUser();
  const missing = await generate(key, { model: 'black-forest-labs/flux-kontext-pro', prompt: 'brighter' });
  assertEnvelope(t, missing, 400, 'invalid_request');
  t.equal(missing.body.error.param, 'image_urls');
  const viaAlias = await generate(key, { model: 'image_generate.flux_kontext_pro', prompt: 'brighter', image_urls: [PNG_URI], aspect_ratio: '21:9' });
  t.equal(viaAlias.status, 200, JSON.stringify(viaAlias.body).slice(0, 300));
  const money = await settled(user);
  t.equal(money.charged, NANO('0.04'));
});

t.test('failures release everything: upstream errors, failed and moderated tasks, no image', async (t) => {
  const { user, key } = await newUser();
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['an upstream 500', { model: 'openai/gpt-image-2', prompt: 'x [[mock fail=500]]', quality: 'low', size: '1024x1024' }, 502, 'upstream_error'],
    ['an upstream 400', { model: 'openai/gpt-image-2', prompt: 'x [[mock fail=400]]', quality: 'low', size: '1024x1024' }, 400, 'upstream_rejected'],
    ['a failed task', { model: 'black-forest-labs/flux-2-pro', prompt: 'x [[mock task_status=Error]]' }, 502, 'upstream_error'],
    ['a moderated task', { model: 'black-forest-labs/flux-2-pro', prompt: 'x [[mock task_status=Content_Moderated]]' }, 400, 'content_policy_violation'],
    ['a failing poll', { model: 'black-forest-labs/flux-2-pro', prompt: 'x [[mock poll_fail=503]]' }, 502, 'upstream_error'],
    ['a refused submit', { model: 'black-forest-labs/flux-2-max', prompt: 'x [[mock fail=500]]' }, 502, 'upstream_error'],
  ];
  for (const [name, body, status, code] of cases) assertEnvelope(t, await generate(key, body), status, code, name);
  const money = await settled(user);
  t.equal(money.charged, 0n, 'nothing charged');
  t.equal(money.credits, NANO('10'), 'the balance is whole');
  const logs = await gateway.sql<{ status: number }[]>`select status from request_logs where user_id = ${user} and endpoint = 'images.generations'`;
  t.equal(logs.length, cases.length, 'each failed call is in the request log');
});

t.test('a vendor that delivers fewer images than asked: only those are charged', async (t) => {
  const { user, key } = await newUser();
  const reply = await generate(key, { model: 'openai/gpt-image-2', prompt: 'x [[mock images=1]]', n: 3, quality: 'high', size: '1024x1024' });
  t.equal(reply.status, 200);
  t.equal(reply.body.data.length, 1);
  t.equal((await settled(user)).charged, NANO('0.211'));
});

t.test('every field is checked against the model: 400 naming it, nothing charged', async (t) => {
  const { user, key } = await newUser();
  const gpt = { model: 'openai/gpt-image-2', prompt: 'x' };
  const flux = { model: 'black-forest-labs/flux-2-pro', prompt: 'x' };
  const cases: [Record<string, unknown>, number, string][] = [
    [{ ...gpt, n: 11 }, 400, 'n'],
    [{ ...gpt, n: 0 }, 400, 'n'],
    [{ ...gpt, n: 1.5 }, 400, 'n'],
    [{ ...flux, n: 2 }, 400, 'n'],
    [{ ...gpt, size: '512x512' }, 400, 'size'],
    [{ ...flux, size: '1024x1024' }, 400, 'size'],
    [{ ...gpt, quality: 'hd' }, 400, 'quality'],
    [{ ...flux, quality: 'high' }, 400, 'quality'],
    [{ ...gpt, resolution: '2K' }, 400, 'resolution'],
    [{ ...gpt, style: 'vivid' }, 400, 'style'],
    [{ ...gpt, negative_prompt: 'blur' }, 400, 'negative_prompt'],
    [{ ...flux, aspect_ratio: '5:4' }, 400, 'aspect_ratio'],
    [{ ...flux, image_urls: [] }, 400, 'image_urls'],
    [{ ...flux, image_urls: Array(9).fill(PNG_URI) }, 400, 'image_urls'],
    [{ ...flux, image_urls: ['ftp://example.com/a.png'] }, 400, 'image_urls[0]'],
    [{ ...flux, image_urls: [PNG_URI, 'data:image/png;base64,@@@@'] }, 400, 'image_urls[1]'],
    [{ ...flux, image_urls: [`data:text/plain;base64,${Buffer.from('hello, not an image').toString('base64')}`] }, 415, 'image_urls[0]'],
    [{ ...flux, image_urls: ['https://127.0.0.1/a.png'] }, 400, 'image_urls[0]'],
    [{ ...flux, image_urls: ['https://169.254.169.254/latest/meta-data'] }, 400, 'image_urls[0]'],
    [{ ...gpt, response_format: 'b64_json' }, 400, 'response_format'],
    [{ ...gpt, seed: 1 }, 400, 'seed'],
    [{ ...gpt, prompt: '' }, 400, 'prompt'],
    [{ model: 'openai/gpt-image-2' }, 400, 'prompt'],
    [{ ...gpt, prompt: 'x'.repeat(32_001) }, 400, 'prompt'],
    [{ ...gpt, model: 'openai/gpt-4o-mini' }, 400, 'model'],
    [{ ...gpt, model: 'alibaba/wan2.6-r2v' }, 400, 'model'],
    [{ ...gpt, model: 'google/imagen-4' }, 404, 'model'], // listed inactive: retired by its vendor
    [{ ...gpt, model: 'nobody/none' }, 404, 'model'],
  ];
  for (const [body, status, param] of cases) {
    const reply = await generate(key, body);
    const label = JSON.stringify(body).slice(0, 90);
    assertEnvelope(t, reply, status, undefined, label);
    t.equal(reply.body?.error?.param, param, `${label} names ${param}`);
  }
  assertEnvelope(t, await generate(key, '{"model": "openai/gpt-image-2",'), 400, 'invalid_json', 'malformed JSON');
  assertEnvelope(t, await generate(key, gpt, { 'content-type': 'text/plain' }), 401, 'invalid_content_type', 'not JSON');
  assertEnvelope(t, await generate('sk-gw-nope', gpt), 401, undefined, 'no valid key');
  const money = await settled(user);
  t.equal(money.charged, 0n);
  t.equal(money.usageTransactions, 0);
});

t.test('402 when the balance does not cover n images at the dearest tier, and nothing reaches the upstream', async (t) => {
  const { user, key } = await newUser('0.5');
  const mark = gateway.mock.requests().length;
  // 3 images, quality open: reserved at high, 3 x 0.211 = 0.633 > 0.5.
  assertEnvelope(t, await generate(key, { model: 'openai/gpt-image-2', prompt: 'x', n: 3, size: '1024x1024' }), 402, 'insufficient_credits');
  t.equal(upstreamSince(mark).length, 0, 'no upstream call');
  const ok = await generate(key, { model: 'openai/gpt-image-2', prompt: 'x', n: 3, size: '1024x1024', quality: 'medium' });
  t.equal(ok.status, 200, 'the same at a tier it covers');
  t.equal((await settled(user)).charged, 3n * NANO('0.053'));
});

t.test('the address of an upload in image_urls is read from the media storage (no fetch, so no loopback allowance needed)', async (t) => {
  const { user, key } = await newUser();
  const upload = await fetch(`${gateway.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: PNG });
  t.equal(upload.status, 201);
  const { url } = (await upload.json()) as { url: string };
  const mark = gateway.mock.requests().length;
  const edit = await generate(key, { model: 'black-forest-labs/flux-2-pro', prompt: 'edit', image_urls: [url] });
  t.equal(edit.status, 200, JSON.stringify(edit.body).slice(0, 300));
  const submit = upstreamSince(mark).find((call) => call.path === '/bfl/v1/flux-2-pro');
  t.equal((submit?.body as { input_image?: string }).input_image, PNG_URI, 'the uploaded bytes reached the upstream');
  const gone = await generate(key, { model: 'black-forest-labs/flux-2-pro', prompt: 'edit', image_urls: [`${gateway.url}/media/${'a'.repeat(64)}.png`] });
  assertEnvelope(t, gone, 400, 'invalid_image_url', 'media the gateway does not have');
  t.equal((await settled(user)).charged, NANO('0.045'), 'only the edit that ran');
});

t.test('caller URLs are fetched through the guard (loopback allowed only by the test setting) and hosted', async (t) => {
  const looseDir = await mkdtemp(join(tmpdir(), 'images-loopback-'));
  const loose = await startGateway({ mock: gateway.mock, env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: looseDir, IMAGE_POLL_MS: '20', FETCH_ALLOW_LOOPBACK: 'true' } });
  t.teardown(async () => { await loose.close(); await rm(looseDir, { recursive: true, force: true }); });
  const { key } = await fastUser(loose, 'img-loopback', '10');
  // An image the mock serves (a previous result), addressed on loopback over plain http.
  const first = await postJson(`${loose.v1}/images/generations`, key, { model: 'bytedance/seedream-4.5', prompt: 'source' });
  t.equal(first.status, 200, JSON.stringify(first.body).slice(0, 300));
  const sourceUrl = `${loose.url}/media/${first.body.data[0].url.split('/').at(-1)}`;
  const mark = loose.mock.requests().length;
  const edit = await postJson(`${loose.v1}/images/generations`, key, { model: 'bytedance/seedream-4.5', prompt: 'edit', image_urls: [sourceUrl] });
  t.equal(edit.status, 200, JSON.stringify(edit.body).slice(0, 300));
  const sent = (loose.mock.requests().slice(mark).find((r) => r.path === '/bytedance/v1/images/generations')?.body as { image?: string })?.image;
  const source = Buffer.from(await (await fetch(sourceUrl)).arrayBuffer());
  t.equal(sent, `data:image/png;base64,${source.toString('base64')}`, 'fetched, hosted and sent inline to ModelArk as `image`');
  const missing = await postJson(`${loose.v1}/images/generations`, key, { model: 'bytedance/seedream-4.5', prompt: 'edit', image_urls: [`${loose.url}/media/${'0'.repeat(64)}.png`] });
  assertEnvelope(t, missing, 400, 'invalid_image_url', 'a URL that answers 404');
});

t.test('BYOK: the OpenAI credentials serve image calls first (uncharged), in order, with the platform as fallback', async (t) => {
  const { user, key } = await newUser();
  const token = mintToken(user);
  const addCredential = async (body: Record<string, unknown>) => {
    const response = await rawRequest(`${gateway.url}/api/v1/byok`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ provider: 'openai', ...body }),
    });
    t.equal(response.status, 201, 'credential created');
    return response.body as { id: string };
  };
  const tried = async (body: Record<string, unknown>) => {
    const mark = gateway.mock.requests().length;
    const reply = await generate(key, body);
    return { reply, tried: upstreamSince(mark).map((call) => call.authorization) };
  };
  const call = { model: 'openai/gpt-image-2', prompt: 'own key', size: '1024x1024', quality: 'low' };

  const revoked = await addCredential({ label: 'revoked', api_key: 'sk-own-revoked-1', priority: 5 });
  await addCredential({ label: 'good', api_key: 'sk-own-good-2', priority: 0 });
  const own = await tried(call);
  t.equal(own.reply.status, 200, JSON.stringify(own.reply.body).slice(0, 200));
  t.same(own.tried, ['Bearer sk-own-revoked-1', 'Bearer sk-own-good-2'], 'priority order, each once');
  t.equal((await settled(user)).charged, 0n, 'not charged on the caller\'s own key');

  const list = await rawRequest(`${gateway.url}/api/v1/byok?provider=openai`, { headers: { authorization: `Bearer ${token}` } });
  const good = (list.body as { id: string; label: string }[]).find((row) => row.label === 'good')!;
  await rawRequest(`${gateway.url}/api/v1/byok/${good.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  const phase = gateway.mock.requests().length;
  await eventually(async () => (await tried(call)).tried.length === 2); // until the deleted row has left the cache
  const fallback = await tried(call);
  t.equal(fallback.reply.status, 200);
  t.same(fallback.tried, ['Bearer sk-own-revoked-1', 'Bearer test-openai-key'], 'the platform credential after the own one failed');
  const platformCalls = upstreamSince(phase).filter((record) => record.authorization === 'Bearer test-openai-key').length;
  t.equal((await settled(user)).charged, BigInt(platformCalls) * NANO('0.006'), 'each platform call charged at the list price, the own ones not');

  await rawRequest(`${gateway.url}/api/v1/byok/${revoked.id}`, {
    method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ always_use: true }),
  });
  await eventually(async () => (await tried(call)).reply.status === 401);
  const before = (await settled(user)).charged;
  const refused = await tried(call);
  assertEnvelope(t, refused.reply, 401, 'upstream_error', 'always_use: the vendor\'s answer as it was');
  t.same(refused.tried, ['Bearer sk-own-revoked-1'], 'no fallback');
  t.equal((await settled(user)).charged, before, 'nothing charged');
});

t.test('with MEDIA_STORAGE=off nothing is hosted: results come as the vendor gave them, inputs go inline', async (t) => {
  const bare = await startGateway({ mock: gateway.mock, env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_STORAGE: 'off', IMAGE_POLL_MS: '20' } });
  t.teardown(() => bare.close());
  const { key } = await fastUser(bare, 'img-no-storage', '10');
  const inline = await postJson(`${bare.v1}/images/generations`, key, { model: 'openai/gpt-image-2', prompt: 'x', size: '1024x1024', quality: 'low' });
  t.equal(inline.status, 200);
  const url: string = inline.body.data[0].url;
  t.match(url, /^data:image\/png;base64,/, 'a base64 result as a data: URI');
  t.same(Buffer.from(url.slice(url.indexOf(',') + 1), 'base64').subarray(0, 8), PNG_SIGNATURE);
  const mark = bare.mock.requests().length;
  const flux = await postJson(`${bare.v1}/images/generations`, key, { model: 'black-forest-labs/flux-2-pro', prompt: 'x', image_urls: [PNG_URI] });
  t.equal(flux.status, 200);
  t.match(flux.body.data[0].url, `${bare.mock.url}/__mock/files/`, 'the vendor\'s own address');
  const submit = bare.mock.requests().slice(mark).find((r) => r.path === '/bfl/v1/flux-2-pro');
  t.equal((submit?.body as { input_image?: string }).input_image, PNG_URI, 'the input sent inline');
});
