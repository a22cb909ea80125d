// The mock vendor's image APIs over real HTTP: OpenAI's Images API (GPT Image and URL models,
// generations and edits), Black Forest Labs' submit-and-poll FLUX API, the PNG bytes they hand out,
// and the image directives.
import { inflateSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { encode } from 'gpt-tokenizer';
import { parseDirectives } from '../src/mock-vendor/directives.js';
import { crc32, mockPng } from '../src/mock-vendor/png.js';
import { startMockVendor, type MockRequestRecord } from '../src/mock-vendor/server.js';

// ---------- wire types, as the tests expect them ----------

interface ImagesBody {
  created: number;
  data: { b64_json?: string; url?: string }[];
  size?: string;
  quality?: string;
  output_format?: string;
  background?: string;
  usage?: { input_tokens: number; input_tokens_details: { text_tokens: number; image_tokens: number }; output_tokens: number; total_tokens: number };
}
interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface Submitted {
  id: string;
  polling_url: string;
  cost: number;
  input_mp: number;
  output_mp: number;
}
interface Polled {
  id: string;
  status: string;
  result: null | string | { sample: string; prompt: string; seed: number; start_time: number; end_time: number; duration: number };
  progress: number | null;
}
interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

// ---------- helpers ----------

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const BEARER = { authorization: 'Bearer test-key', 'content-type': 'application/json' };
const X_KEY = { 'x-key': 'bfl-test-key', 'content-type': 'application/json' };
const GENERATIONS = '/openai/v1/images/generations';
const EDITS = '/openai/v1/images/edits';
const DATA_URI = 'data:image/png;base64,iVBORw0KGgo=';

const mock = await startMockVendor();
t.teardown(() => mock.close());

function post(path: string, body: unknown, headers: Record<string, string> = BEARER): Promise<Response> {
  return fetch(mock.url + path, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

async function json<T>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

const images = async (body: unknown, path = GENERATIONS): Promise<ImagesBody> => json<ImagesBody>(await post(path, body), 200);

/** The chunks of a PNG, each with whether its stored CRC matches; throws unless it starts with the signature. */
function pngChunks(bytes: Buffer): { type: string; data: Buffer; crcOk: boolean; crc: number }[] {
  if (!PNG_SIGNATURE.every((b, i) => bytes[i] === b)) throw new Error('no PNG signature');
  const chunks = [];
  for (let at = 8; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const data = bytes.subarray(at + 8, at + 8 + length);
    const crc = bytes.readUInt32BE(at + 8 + length);
    chunks.push({ type, data, crc, crcOk: crc === crc32(bytes.subarray(at + 4, at + 8 + length)) });
    at += 12 + length;
  }
  return chunks;
}

/** Checks the PNG is a whole, decodable 8x8 RGB image. */
function assertPng(t: Test, bytes: Buffer, what: string): void {
  const chunks = pngChunks(bytes);
  t.same(chunks.map((c) => c.type), ['IHDR', 'IDAT', 'IEND'], `${what}: chunk order`);
  t.ok(chunks.every((c) => c.crcOk), `${what}: every CRC matches`);
  const header = chunks[0]!.data;
  t.same([header.readUInt32BE(0), header.readUInt32BE(4), header[8], header[9]], [8, 8, 8, 2], `${what}: 8x8, 8-bit RGB`);
  const raw = inflateSync(chunks[1]!.data);
  t.equal(raw.length, 8 * (1 + 8 * 3), `${what}: IDAT inflates to 8 rows of a filter byte and 24 bytes`);
}

const fromBase64 = (b64: string | undefined): Buffer => Buffer.from(b64 ?? '', 'base64');

function lastRecord(path: string): MockRequestRecord {
  const record = mock.requests().filter((r) => r.path === path).at(-1);
  if (!record) throw new Error(`no record for ${path}`);
  return record;
}

async function submit(model: string, body: Record<string, unknown>, headers: Record<string, string> = X_KEY): Promise<Submitted> {
  return json<Submitted>(await post(`/bfl/v1/${model}`, body, headers), 200);
}

const pollRaw = (url: string, headers: Record<string, string> = { 'x-key': 'bfl-test-key' }): Promise<Response> => fetch(url, { headers });
const poll = async (url: string): Promise<Polled> => json<Polled>(await pollRaw(url), 200);

// ---------- the PNG encoder and the directives (pure) ----------

t.test('crc32 is the standard CRC-32', async (t) => {
  t.equal(crc32(Buffer.from('123456789')), 0xcbf43926, 'the published check value');
  t.equal(crc32(Buffer.from('IEND')), 0xae426082, 'the CRC every PNG ends with');
  t.equal(crc32(Buffer.alloc(0)), 0);
});

t.test('mockPng draws a valid image per seed', async (t) => {
  const a = mockPng('req:0');
  assertPng(t, a, 'seed req:0');
  t.same(mockPng('req:0'), a, 'the same seed draws the same bytes');
  t.notSame(mockPng('req:1'), a, 'another seed draws other bytes');
  t.equal(a.readUInt32BE(a.length - 4), 0xae426082, 'ends with the IEND CRC');
});

t.test('image directives parse', async (t) => {
  t.same(
    parseDirectives('a cat [[mock images=2 polls=3 task_status=Content_Moderated broken_url=1 poll_fail=503 latency_ms=5 fail=429]]'),
    { images: 2, polls: 3, taskStatus: 'Content Moderated', brokenUrl: true, pollFail: 503, latencyMs: 5, fail: 429 },
  );
  t.same(parseDirectives('[[mock broken_url]]'), { brokenUrl: true }, 'a flag may stand alone');
  t.same(parseDirectives('[[mock task_status=Request_Moderated]]'), { taskStatus: 'Request Moderated' });
  t.same(parseDirectives('[[mock task_status=Error]]'), { taskStatus: 'Error' });
  t.same(parseDirectives('[[mock task_status=Ready task_status=oops poll_fail=200 images=-1 polls=x]]'), {}, 'invalid values are ignored');
  t.same(parseDirectives('[[mock images]]'), {}, 'a bare key that is not a flag is ignored');
});

// ---------- OpenAI Images API ----------

t.test('GPT Image generations: n base64 PNGs, all different, with size, quality and usage', async (t) => {
  const prompt = 'a lighthouse at dusk';
  const body = await images({ model: 'gpt-image-1.5', prompt, n: 3 });
  t.equal(body.data.length, 3, 'n honoured');
  const pngs = body.data.map((d) => fromBase64(d.b64_json));
  body.data.forEach((d, i) => {
    t.notOk('url' in d, `image ${i} has no url`);
    assertPng(t, pngs[i]!, `image ${i}`);
  });
  t.equal(new Set(pngs.map((p) => p.toString('hex'))).size, 3, 'the three images differ');
  t.same([body.size, body.quality, body.output_format, body.background], ['1024x1024', 'medium', 'png', 'opaque'], 'defaults reported');
  t.ok(Math.abs(body.created - Date.now() / 1000) < 60, 'created is now, in seconds');
  const textTokens = encode(prompt).length;
  t.same(body.usage, {
    input_tokens: textTokens,
    input_tokens_details: { text_tokens: textTokens, image_tokens: 0 },
    output_tokens: 3 * 1056,
    total_tokens: textTokens + 3 * 1056,
  }, 'usage: prompt tokens in, 1056 per medium 1024x1024 image out');

  const again = await images({ model: 'gpt-image-1.5', prompt, n: 1 });
  t.notOk(pngs.some((p) => p.equals(fromBase64(again.data[0]!.b64_json))), 'another response, other bytes');
});

t.test('GPT Image echoes size, quality and background; output scales with area', async (t) => {
  const body = await images({ model: 'gpt-image-2', prompt: 'x', size: '1536x1024', quality: 'high', background: 'transparent', output_format: 'png' });
  t.same([body.size, body.quality, body.background], ['1536x1024', 'high', 'transparent']);
  t.equal(body.usage!.output_tokens, 6240, 'a high 1536x1024 image is 6240 tokens');
  const auto = await images({ model: 'gpt-image-2', prompt: 'x', size: 'auto', quality: 'auto', background: 'auto' });
  t.same([auto.size, auto.quality, auto.background], ['1024x1024', 'medium', 'opaque'], 'auto reports the defaults');
  const low = await images({ model: 'gpt-image-2', prompt: 'x', quality: 'low', n: 2 });
  t.equal(low.usage!.output_tokens, 2 * 272);
});

t.test('GPT Image refuses response_format, as OpenAI does', async (t) => {
  for (const format of ['url', 'b64_json']) {
    const err = await json<ErrorBody>(await post(GENERATIONS, { model: 'gpt-image-1', prompt: 'x', response_format: format }), 400);
    t.equal(err.error.param, 'response_format', format);
    t.equal(err.error.type, 'invalid_request_error');
  }
});

t.test('URL models (ByteDance, xAI): URLs the mock serves, or base64 when asked', async (t) => {
  const refs = ['https://example.com/a.png', DATA_URI];
  const body = await images({ model: 'seedream-4-5-251128', prompt: 'two cats', n: 2, image: refs, size: '2K', watermark: false, user: 'u1' }, '/bytedance/v1/images/generations');
  t.equal(body.data.length, 2);
  t.notOk('usage' in body, 'no token usage outside GPT Image');
  const fetched: Buffer[] = [];
  for (const item of body.data) {
    t.notOk('b64_json' in item);
    t.ok(item.url!.startsWith(`${mock.url}/__mock/files/`), 'the URL points at the mock');
    const res = await fetch(item.url!);
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'image/png');
    const bytes = Buffer.from(await res.arrayBuffer());
    assertPng(t, bytes, item.url!);
    fetched.push(bytes);
  }
  t.notOk(fetched[0]!.equals(fetched[1]!), 'the two files differ');
  t.same(lastRecord('/bytedance/v1/images/generations').referenceImages, refs, 'reference images recorded');

  const single = await images({ model: 'seedream-4-5-251128', prompt: 'x', image: 'https://example.com/one.png' }, '/bytedance/v1/images/generations');
  t.equal(single.data.length, 1, 'n defaults to 1');
  t.same(lastRecord('/bytedance/v1/images/generations').referenceImages, ['https://example.com/one.png'], 'a single image string');

  const b64 = await images({ model: 'grok-imagine-image', prompt: 'x', response_format: 'b64_json' }, '/xai/v1/images/generations');
  t.notOk('url' in b64.data[0]!);
  assertPng(t, fromBase64(b64.data[0]!.b64_json), 'xai b64');

  const missing = await fetch(`${mock.url}/__mock/files/nothing-here.png`);
  t.equal(missing.status, 404, 'an unknown file is 404');
  await missing.arrayBuffer();
});

t.test('edits: JSON images recorded, input image tokens counted', async (t) => {
  const refs = ['https://example.com/photo.jpg', DATA_URI];
  const prompt = 'make it blue';
  const body = await images({ model: 'gpt-image-1.5', prompt, images: refs.map((image_url) => ({ image_url })), n: 2, quality: 'low' }, EDITS);
  t.equal(body.data.length, 2);
  assertPng(t, fromBase64(body.data[1]!.b64_json), 'edited image');
  t.equal(body.usage!.input_tokens_details.image_tokens, 2 * 765, 'each input image counts');
  t.equal(body.usage!.input_tokens, encode(prompt).length + 2 * 765);
  t.same(lastRecord(EDITS).referenceImages, refs);

  const noImages = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1.5', prompt }), 400);
  t.equal(noImages.error.param, 'images');
  t.equal(noImages.error.code, 'missing_required_parameter');
  const empty = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1.5', prompt, images: [] }), 400);
  t.equal(empty.error.param, 'images', 'an empty list');
  const tooMany = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1.5', prompt, images: Array(17).fill({ image_url: refs[0] }) }), 400);
  t.equal(tooMany.error.param, 'images', 'more than 16');
  const notUrl = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1.5', prompt, images: [{ image_url: refs[0] }, { image_url: 'file:///etc/passwd' }] }), 400);
  t.equal(notUrl.error.param, 'images[1].image_url', 'names the bad entry');
});

t.test('validation: 400 with the OpenAI error shape, 401 before anything', async (t) => {
  const cases: [string, unknown, string, string | null][] = [
    ['no model', { prompt: 'x' }, 'model', 'missing_required_parameter'],
    ['no prompt', { model: 'gpt-image-1' }, 'prompt', 'missing_required_parameter'],
    ['empty prompt', { model: 'gpt-image-1', prompt: '' }, 'prompt', 'empty_string'],
    ['prompt not a string', { model: 'gpt-image-1', prompt: 7 }, 'prompt', 'invalid_type'],
    ['n = 0', { model: 'gpt-image-1', prompt: 'x', n: 0 }, 'n', 'integer_below_min_value'],
    ['n = 11', { model: 'gpt-image-1', prompt: 'x', n: 11 }, 'n', 'integer_above_max_value'],
    ['n a string', { model: 'gpt-image-1', prompt: 'x', n: '2' }, 'n', 'invalid_type'],
    ['bad size', { model: 'gpt-image-1', prompt: 'x', size: 'huge' }, 'size', 'invalid_value'],
    ['ModelArk size on GPT Image', { model: 'gpt-image-1', prompt: 'x', size: '2K' }, 'size', 'invalid_value'],
    ['bad quality', { model: 'gpt-image-1', prompt: 'x', quality: 'hd' }, 'quality', 'invalid_value'],
    ['bad response_format', { model: 'seedream', prompt: 'x', response_format: 'gif' }, 'response_format', 'invalid_value'],
    ['bad image', { model: 'seedream', prompt: 'x', image: [1] }, 'image', 'invalid_type'],
    ['not an object', [1, 2], 'body', 'invalid_value'],
  ];
  for (const [what, body, param, code] of cases) {
    const err = await json<ErrorBody>(await post(GENERATIONS, body), 400);
    t.same(Object.keys(err.error), ['message', 'type', 'param', 'code'], `${what}: shape`);
    t.equal(err.error.type, 'invalid_request_error', `${what}: type`);
    t.equal(err.error.param, param, `${what}: param`);
    t.equal(err.error.code, code, `${what}: code`);
    t.ok(err.error.message.length > 0, `${what}: message`);
  }
  const badJson = await json<ErrorBody>(await post(GENERATIONS, '{"model": '), 400);
  t.match(badJson.error.message, /parse the JSON/);

  const noKey = await json<ErrorBody>(await post(GENERATIONS, { prompt: 'x' }, { 'content-type': 'application/json' }), 401);
  t.equal(noKey.error.code, 'invalid_api_key', 'no key: 401 even for an invalid body');
  const basic = await post(GENERATIONS, { model: 'gpt-image-1', prompt: 'x' }, { ...BEARER, authorization: 'Basic abc' });
  t.equal(basic.status, 401, 'not a bearer token');
  await basic.arrayBuffer();
  const revoked = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1', prompt: 'x' }, { ...BEARER, authorization: 'Bearer sk-revoked-1' }), 401);
  t.equal(revoked.error.code, 'invalid_api_key', 'a revoked key');
  const wrongMethod = await fetch(mock.url + GENERATIONS, { headers: BEARER });
  t.equal(wrongMethod.status, 404, 'GET is not a route');
  await wrongMethod.arrayBuffer();
});

t.test('directives: images=K, fail, latency_ms, broken_url', async (t) => {
  const fewer = await images({ model: 'gpt-image-1', prompt: 'x [[mock images=2]]', n: 5 });
  t.equal(fewer.data.length, 2, 'GPT Image: at most K');
  t.equal(fewer.usage!.output_tokens, 2 * 1056, 'usage counts the images delivered');
  const none = await images({ model: 'seedream', prompt: 'x [[mock images=0]]', n: 3 });
  t.same(none.data, [], 'K may be 0');
  const notMore = await images({ model: 'seedream', prompt: 'x [[mock images=4]]', n: 1 });
  t.equal(notMore.data.length, 1, 'K above n changes nothing');

  const limited = await post(GENERATIONS, { model: 'gpt-image-1', prompt: 'x [[mock fail=429]]' });
  const limitedBody = await json<ErrorBody>(limited, 429);
  t.equal(limited.headers.get('retry-after'), '1');
  t.equal(limitedBody.error.code, 'rate_limit_exceeded');
  const down = await json<ErrorBody>(await post(EDITS, { model: 'gpt-image-1', prompt: 'x [[mock fail=503]]', images: [{ image_url: DATA_URI }] }), 503);
  t.equal(down.error.type, 'server_error');

  const start = Date.now();
  await images({ model: 'seedream', prompt: 'x [[mock latency_ms=150]]' });
  t.ok(Date.now() - start >= 140, 'latency_ms delays the answer');

  const broken = await images({ model: 'seedream', prompt: 'x [[mock broken_url]]', n: 2 });
  t.equal(broken.data.length, 2);
  for (const item of broken.data) {
    const res = await fetch(item.url!);
    t.equal(res.status, 404, 'the broken URL 404s');
    await res.arrayBuffer();
  }
});

// ---------- Black Forest Labs ----------

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('BFL: submit, Pending per polls=K, Ready, the sample fetchable', async (t) => {
  const prompt = 'a red fox [[mock polls=3]]';
  const task = await submit('flux-2-pro', { prompt, seed: 42, output_format: 'png', prompt_upsampling: false, safety_tolerance: 2 });
  t.match(task.id, UUID);
  t.equal(task.polling_url, `${mock.url}/bfl/v1/get_result?id=${task.id}`);
  t.same([task.cost, task.input_mp, task.output_mp], [3, 0, 1], 'FLUX.2 [pro] at 1 MP: 3 credits');
  const record = lastRecord('/bfl/v1/flux-2-pro');
  t.equal(record.id, task.id);
  t.equal(record.authorization, 'bfl-test-key', 'the x-key is recorded');

  let lastProgress = -1;
  for (let i = 0; i < 3; i++) {
    const pending = await poll(task.polling_url);
    t.same([pending.id, pending.status, pending.result], [task.id, 'Pending', null], `poll ${i + 1} is Pending`);
    t.ok(pending.progress! >= 0 && pending.progress! < 1 && pending.progress! > lastProgress, `poll ${i + 1}: progress ${pending.progress} rises below 1`);
    lastProgress = pending.progress!;
  }
  const ready = await poll(task.polling_url);
  t.equal(ready.status, 'Ready');
  t.equal(ready.progress, 1);
  const result = ready.result as Exclude<Polled['result'], string | null>;
  t.equal(result.sample, `${mock.url}/__mock/files/${task.id}.png`);
  t.equal(result.prompt, prompt);
  t.equal(result.seed, 42);
  t.ok(result.end_time >= result.start_time && result.duration >= 0, 'times in order');
  const res = await fetch(result.sample);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'image/png');
  assertPng(t, Buffer.from(await res.arrayBuffer()), 'sample');
  t.same(await poll(task.polling_url), ready, 'Ready stays Ready, same sample');

  const byDefault = await submit('flux-2-max', { prompt: 'x' });
  t.equal(byDefault.cost, 7);
  t.equal((await poll(byDefault.polling_url)).status, 'Pending', 'one Pending by default');
  t.equal((await poll(byDefault.polling_url)).status, 'Ready');
  const immediate = await submit('flux-kontext-pro', { prompt: 'x [[mock polls=0]]', aspect_ratio: '16:9' });
  t.equal(immediate.cost, 4, 'FLUX.1 Kontext [pro]: flat 4 credits');
  t.equal((await poll(immediate.polling_url)).status, 'Ready', 'polls=0: Ready at once');
});

t.test('BFL: input images recorded and priced by megapixel', async (t) => {
  const task = await submit('flux-2-pro', { prompt: 'x', input_image: 'https://example.com/a.jpg', input_image_2: DATA_URI, input_image_3: null, width: 1024, height: 1536 });
  t.same([task.input_mp, task.output_mp], [2, 2], 'two inputs; 1.5 MP rounds up to 2');
  t.equal(task.cost, 3 + 3 * 1.5, 'first MP, one more output MP, two input MP');
  t.same(lastRecord('/bfl/v1/flux-2-pro').referenceImages, ['https://example.com/a.jpg', DATA_URI]);
  const klein = await submit('flux-2-klein-4b', { prompt: 'x', input_image: 'abc' });
  t.equal(klein.cost, 1.5, 'no float noise');
});

t.test('BFL: failure statuses chosen by task_status', async (t) => {
  for (const [directive, status] of [['Error', 'Error'], ['Content_Moderated', 'Content Moderated'], ['Request_Moderated', 'Request Moderated']]) {
    const task = await submit('flux-2-pro', { prompt: `x [[mock task_status=${directive} polls=1]]` });
    t.equal((await poll(task.polling_url)).status, 'Pending', `${status}: Pending first`);
    const final = await poll(task.polling_url);
    t.equal(final.status, status);
    t.type(final.result, 'string', `${status}: a reason`);
    t.equal(final.progress, null);
    const files = await fetch(`${mock.url}/__mock/files/${task.id}.png`);
    t.equal(files.status, 404, `${status}: no file`);
    await files.arrayBuffer();
  }
});

t.test('BFL: 403 without a usable x-key, on submit and on poll', async (t) => {
  for (const headers of [{ 'content-type': 'application/json' }, { ...X_KEY, 'x-key': '' }, { ...X_KEY, 'x-key': 'key-revoked' }, { ...BEARER }]) {
    const res = await post('/bfl/v1/flux-2-pro', { prompt: 'x' }, headers);
    t.same(await json(res, 403), { detail: 'Not authenticated' }, JSON.stringify(headers));
  }
  t.same(await json(await post('/bfl/v1/flux-2-pro', {}, { 'content-type': 'application/json' }), 403), { detail: 'Not authenticated' }, 'before the body is validated');
  const task = await submit('flux-2-pro', { prompt: 'x' });
  t.same(await json(await pollRaw(task.polling_url, {}), 403), { detail: 'Not authenticated' }, 'poll without a key');
  t.same(await json(await pollRaw(task.polling_url, { 'x-key': 'revoked' }), 403), { detail: 'Not authenticated' }, 'poll with a revoked key');
  t.equal((await poll(task.polling_url)).status, 'Pending', 'refused polls did not count');
});

t.test('BFL: 422 in FastAPI shape, 404 and 405', async (t) => {
  const noPrompt = await json<{ detail: FieldError[] }>(await post('/bfl/v1/flux-2-pro', { width: 1024 }, X_KEY), 422);
  t.same(noPrompt.detail, [{ loc: ['body', 'prompt'], msg: 'Field required', type: 'missing' }]);
  const several = await json<{ detail: FieldError[] }>(await post('/bfl/v1/flux-2-pro', { prompt: 'x', width: 1000, height: 32, output_format: 'gif', input_image_4: 5 }, X_KEY), 422);
  t.same(several.detail.map((e) => [e.loc.join('.'), e.type]), [
    ['body.input_image_4', 'string_type'],
    ['body.width', 'multiple_of'],
    ['body.height', 'greater_than_equal'],
    ['body.output_format', 'enum'],
  ], 'every bad field listed');
  const notJson = await json<{ detail: FieldError[] }>(await post('/bfl/v1/flux-2-pro', '{"prompt":', X_KEY), 422);
  t.equal(notJson.detail[0]!.type, 'json_invalid');

  t.same(await json(await post('/bfl/v1/flux-9-ultra', { prompt: 'x' }, X_KEY), 404), { detail: 'Not Found' }, 'unknown model');
  t.same(await json(await fetch(`${mock.url}/bfl/v1/flux-2-pro`, { headers: X_KEY }), 405), { detail: 'Method Not Allowed' });
  t.same(await json(await pollRaw(`${mock.url}/bfl/v1/get_result?id=nope`), 404), { id: 'nope', status: 'Task not found' }, 'unknown task');
  const noId = await json<{ detail: FieldError[] }>(await pollRaw(`${mock.url}/bfl/v1/get_result`), 422);
  t.same(noId.detail[0]!.loc, ['query', 'id']);
});

t.test('BFL directives: fail, poll_fail, broken_url, latency_ms', async (t) => {
  const refused = await post('/bfl/v1/flux-2-pro', { prompt: 'x [[mock fail=429]]' }, X_KEY);
  t.equal(refused.headers.get('retry-after'), '1');
  t.type((await json<{ detail: unknown }>(refused, 429)).detail, 'string');
  t.same(await json(await post('/bfl/v1/flux-2-pro', { prompt: 'x [[mock fail=402]]' }, X_KEY), 402), { detail: 'Insufficient credits' });

  const failing = await submit('flux-2-pro', { prompt: 'x [[mock poll_fail=503 polls=0]]' });
  for (const attempt of [1, 2]) {
    const res = await pollRaw(failing.polling_url);
    t.same(await json(res, 503), { detail: 'Service Unavailable' }, `poll ${attempt} answers 503`);
  }

  const broken = await submit('flux-2-pro', { prompt: 'x [[mock broken_url polls=0]]' });
  const ready = await poll(broken.polling_url);
  t.equal(ready.status, 'Ready');
  const sample = await fetch((ready.result as { sample: string }).sample);
  t.equal(sample.status, 404, 'the sample URL 404s');
  await sample.arrayBuffer();

  const start = Date.now();
  await submit('flux-2-pro', { prompt: 'x [[mock latency_ms=150]]' });
  t.ok(Date.now() - start >= 140, 'latency_ms delays the submit answer');
});
