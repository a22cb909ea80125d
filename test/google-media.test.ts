// Google's media models through the gateway over real HTTP and the mock vendor's Gemini API: the Nano
// Banana image models through the official OpenAI client's images.generate (generateContent with
// IMAGE output, input images as parts, the PNG rehosted), and Veo 3.1 as video tasks (a long-running
// operation polled to done, the video downloaded with the API key and rehosted; a first frame sent
// inline as bytes); each success charged
// exactly its price, each failure releasing its hold; Gemini 2.5 Flash TTS as speech tasks (PCM
// answered inline, stored as WAV, charged by text and audio tokens) and Lyria 3.5 as music tasks (an
// MP3 part, charged per song); a 400 names each invalid field.
import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser } from './helpers/http-tools.js';
import { usageSettled } from './helpers/billing-checks.js';
import { MEDIA_KEY } from '../src/media/storage.js';
import { mp4DurationSeconds } from '../src/mock-vendor/mp4.js';
import { audioInfo } from '../src/media/audio-duration.js';
import { countTokens } from 'gpt-tokenizer';

const PNG_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'google-media-'));
  gateway = await startGateway({
    env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true', TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20' },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `google-media-${++users}`;
  return { user, key: (await fastUser(gateway, user, usd)).key };
}

const settled = (user: string) => usageSettled(gateway, user);

/** Nothing charged to `user` and nothing left held, once the leases closed and the ledger drained. */
async function nothingCharged(t: Test, user: string): Promise<void> {
  const money = await settled(user);
  t.equal(money.charged, 0n, 'nothing charged');
  t.equal(money.held, 0n, 'every hold released');
}

/** Each `[model, extra fields, field, message]` posted to `path` (over `base`) is a 400 naming the field, and never reaches the vendor's `upstreamMethod`. */
async function refusedEach(t: Test, key: string, path: string, cases: readonly [string, Record<string, unknown>, string, RegExp][], upstreamMethod: string,
  base: Record<string, unknown> = { prompt: 'x' }): Promise<void> {
  const mark = gateway.mock.requests().length;
  for (const [model, extra, field, message] of cases) {
    const response = await postJson(`${gateway.v1}/${path}`, key, { model, ...base, ...extra });
    assertEnvelope(t, response, 400);
    const error = (response.body as any).error;
    t.equal(error.param, field, `${model} ${JSON.stringify(extra).slice(0, 40)}: param ${field}`);
    t.match(error.message, message);
  }
  t.notOk(gateway.mock.requests().slice(mark).some((r) => r.path.endsWith(upstreamMethod)), 'none reached the vendor');
}

/** The mock's generateContent records since `mark`, with the body each was sent. */
const geminiCallsSince = (mark: number) => gateway.mock.requests().slice(mark).filter((r) => r.path.endsWith(':generateContent'));

async function hostedPng(t: Test, url: string | undefined): Promise<void> {
  t.ok(url?.startsWith(`${gateway.url}/media/`), 'the image is on the media host');
  t.match(url!.slice(url!.lastIndexOf('/') + 1), MEDIA_KEY);
  const bytes = Buffer.from(await (await fetch(url!)).arrayBuffer());
  t.same(bytes.subarray(0, 8), PNG_SIGNATURE, 'a PNG');
}

const IMAGE_MODELS = [
  { id: 'google/gemini-3-pro-image', upstream: 'gemini-3-pro-image', resolution: '4K', price: '0.24', defaultPrice: '0.134', aspect: '21:9' },
  { id: 'google/gemini-3.1-flash-image', upstream: 'gemini-3.1-flash-image', resolution: '2K', price: '0.101', defaultPrice: '0.067', aspect: '8:1' },
] as const;

for (const model of IMAGE_MODELS) {
  t.test(`${model.id}: images.generate through generateContent, rehosted, charged its price`, async (t) => {
    const { user, key } = await newUser();
    const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
    const mark = gateway.mock.requests().length;
    const result = await client.images.generate({ model: model.id, prompt: 'a lighthouse at dawn' });
    t.equal(result.data?.length, 1, 'one image');
    await hostedPng(t, result.data?.[0]?.url);
    const [call] = geminiCallsSince(mark);
    t.ok(call?.path.endsWith(`/models/${model.upstream}:generateContent`), `the Gemini API path of the model (${call?.path})`);
    t.equal(call?.authorization, 'test-gemini-key', 'the key in x-goog-api-key');
    t.same((call?.body as any).generationConfig, { responseModalities: ['IMAGE'] }, 'IMAGE output, the vendor\'s default size');
    t.same((call?.body as any).contents, [{ role: 'user', parts: [{ text: 'a lighthouse at dawn' }] }]);
    const money = await settled(user);
    t.equal(money.charged, NANO(model.defaultPrice), `charged the default (1K) price ${model.defaultPrice}`);
    t.equal(money.held, 0n, 'nothing left held');
  });

  t.test(`${model.id}: resolution, aspect ratio and an input image go as imageConfig and an inlineData part`, async (t) => {
    const { user, key } = await newUser();
    const mark = gateway.mock.requests().length;
    const response = await postJson(`${gateway.v1}/images/generations`, key, {
      model: model.id, prompt: 'the same, wider', resolution: model.resolution, aspect_ratio: model.aspect, image_urls: [PNG_URI],
    });
    t.equal(response.status, 200, JSON.stringify(response.body));
    await hostedPng(t, (response.body as any).data?.[0]?.url);
    const [call] = geminiCallsSince(mark);
    const body = call?.body as any;
    t.same(body.generationConfig, { responseModalities: ['IMAGE'], imageConfig: { aspectRatio: model.aspect, imageSize: model.resolution } });
    const parts = body.contents[0].parts;
    t.equal(parts[0].text, 'the same, wider');
    // The media host is on loopback here, so the image goes inline; a public media host is referenced by URL (fileData).
    t.equal(parts[1].inlineData?.mimeType, 'image/png', 'the input image inline');
    t.ok(parts[1].inlineData?.data.length > 0);
    const inputImage = model.id === 'google/gemini-3-pro-image' ? NANO('0.0011') : 0n;
    t.equal((await settled(user)).charged, NANO(model.price) + inputImage, `charged ${model.price} at ${model.resolution} (and the input image where priced)`);
  });
}

t.test('a withheld image (safety) is the caller\'s 400 and releases the hold; a vendor error too', async (t) => {
  const { user, key } = await newUser();
  const withheld = await postJson(`${gateway.v1}/images/generations`, key, { model: 'google/gemini-3.1-flash-image', prompt: 'x [[mock images=0]]' });
  assertEnvelope(t, withheld, 400, 'content_policy_violation');
  const failed = await postJson(`${gateway.v1}/images/generations`, key, { model: 'google/gemini-3-pro-image', prompt: 'x [[mock fail=500]]' });
  t.equal(failed.status, 502, 'a vendor 500 is a 502');
  await nothingCharged(t, user);
});

t.test('each invalid image parameter is a 400 naming the field and the allowed values', async (t) => {
  const { key } = await newUser();
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['google/gemini-3-pro-image', { resolution: '512' }, 'resolution', /1K, 2K, 4K/],
    ['google/gemini-3.1-flash-image', { resolution: '8K' }, 'resolution', /512, 1K, 2K, 4K/],
    ['google/gemini-3-pro-image', { aspect_ratio: '8:1' }, 'aspect_ratio', /21:9/],
    ['google/gemini-3-pro-image', { n: 2 }, 'n', /at most 1/],
    ['google/gemini-3-pro-image', { size: '1024x1024' }, 'size', /does not take/],
    ['google/gemini-3-pro-image', { quality: 'high' }, 'quality', /does not take/],
    ['google/gemini-3.1-flash-image', { negative_prompt: 'blur' }, 'negative_prompt', /does not take/],
    ['google/gemini-3.1-flash-image', { image_urls: Array(15).fill(PNG_URI) }, 'image_urls', /at most 14/],
  ];
  await refusedEach(t, key, 'images/generations', cases, ':generateContent');
});

t.test('Imagen 4 is listed retired with the reason, not as waiting for an adapter', async (t) => {
  const [model] = await gateway.sql<{ is_active: boolean; status: string; retired_at: string; tags: string[]; description: string }[]>`
    select is_active, status, retired_at::text as retired_at, tags, description from models where id = 'google/imagen-4'`;
  if (!model) return t.fail('Imagen 4 is listed');
  t.equal(model.is_active, false);
  t.equal(model.status, 'retired');
  t.equal(model.retired_at, '2026-08-17');
  t.notOk(model.tags.includes('not-served-yet'), 'not tagged not-served-yet');
  t.match(model.description, /shut down/);
});

interface Task { id: string; status: string; model: string; data?: { url: string }[]; error?: { code: string; message: string } }

async function polled(client: OpenAI, id: string, path = 'videos/generations'): Promise<Task> {
  let task = await client.get(`/${path}/${id}`) as Task;
  for (let i = 0; i < 400 && task.status === 'pending'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 30));
    task = await client.get(`/${path}/${id}`) as Task;
  }
  return task;
}

const VEO_MODELS = [
  { id: 'google/veo-3.1', upstream: 'veo-3.1-generate-preview', body: { duration: 8, resolution: '4k', aspect_ratio: '9:16' }, usd: '4.80', seconds: 8,
    parameters: { aspectRatio: '9:16', durationSeconds: 8, resolution: '4k' } },
  { id: 'google/veo-3.1-fast', upstream: 'veo-3.1-fast-generate-preview', body: { duration: 6 }, usd: '0.60', seconds: 6,
    parameters: { aspectRatio: '16:9', durationSeconds: 6, resolution: '720p' } },
  { id: 'google/veo-3.1-lite', upstream: 'veo-3.1-lite-generate-preview', body: { resolution: '1080p', negative_prompt: 'rain', seed: 7 }, usd: '0.64', seconds: 8,
    parameters: { aspectRatio: '16:9', durationSeconds: 8, resolution: '1080p', negativePrompt: 'rain', seed: 7 } },
] as const;

for (const model of VEO_MODELS) {
  t.test(`${model.id}: a task submitted by the OpenAI client, polled to success, the video on the media host, charged ${model.usd}`, async (t) => {
    const { user, key } = await newUser();
    const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
    const mark = gateway.mock.requests().length;
    const submitted = await client.post('/videos/generations', { body: { model: model.id, prompt: 'waves at dusk [[mock job_ms=150]]', ...model.body } }) as Task;
    t.equal(submitted.status, 'pending', 'answered at once, pending');
    t.equal((await gateway.balanceNano(user)).held, NANO(model.usd), 'the price is held while it runs');
    const task = await polled(client, submitted.id);
    t.equal(task.status, 'success', JSON.stringify(task));
    const url = task.data?.[0]?.url ?? '';
    t.ok(url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
    t.notOk(JSON.stringify(task).includes(gateway.mock.url), 'no vendor address in the task');
    const video = Buffer.from(await (await fetch(url)).arrayBuffer());
    t.equal(video.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
    t.equal(mp4DurationSeconds(video), model.seconds, 'of the requested length');

    const calls = gateway.mock.requests().slice(mark);
    const submit = calls.find((r) => r.path.endsWith(`/models/${model.upstream}:predictLongRunning`));
    t.ok(submit, 'submitted to predictLongRunning of the model');
    t.equal(submit?.authorization, 'test-gemini-key', 'the key in x-goog-api-key');
    t.same(submit?.body, { instances: [{ prompt: 'waves at dusk [[mock job_ms=150]]' }], parameters: model.parameters }, 'the general fields as Veo parameters');
    t.ok(calls.some((r) => /\/models\/[^/]+\/operations\/[^/]+$/.test(r.path)), 'the operation polled');
    const download = calls.find((r) => r.path.endsWith(':download'));
    t.equal(download?.authorization, 'test-gemini-key', 'the video downloaded with the API key');

    const money = await settled(user);
    t.equal(money.charged, NANO(model.usd), `charged ${model.usd} USD`);
    t.equal(money.held, 0n, 'nothing left held');
  });
}

t.test('a failed or filtered Veo operation, or a refused submit, fails the task and releases the hold', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const cases = [
    { directive: 'task_fail=13', code: '13', message: /failed \(mock\)/ },
    { directive: 'filtered', code: 'content_filtered', message: /safety filters withheld/ },
    { directive: 'submit_fail=400', code: 'INVALID_ARGUMENT', message: /Mock failure/ },
  ];
  for (const c of cases) {
    const submitted = await client.post('/videos/generations', { body: { model: 'google/veo-3.1-fast', prompt: `x [[mock job_ms=50 ${c.directive}]]`, duration: 4 } }) as Task;
    const task = await polled(client, submitted.id);
    t.equal(task.status, 'failed', `${c.directive}: failed`);
    t.equal(task.error?.code, c.code, `${c.directive}: code ${c.code}`);
    t.match(task.error?.message, c.message);
    t.notOk('data' in task, 'no data');
  }
  await nothingCharged(t, user);
});

t.test('Veo image-to-video on the Gemini API: the first frame sent inline as bytes, its type sniffed', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1-lite', prompt: 'it moves [[mock job_ms=50]]', image_urls: [PNG_URI], duration: 4 });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const task = await polled(new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 }), submitted.body.id);
  t.equal(task.status, 'success', JSON.stringify(task));
  const submit = gateway.mock.requests().slice(mark).find((r) => r.path.endsWith('/models/veo-3.1-lite-generate-preview:predictLongRunning'));
  t.same((submit?.body as any)?.instances, [{ prompt: 'it moves [[mock job_ms=50]]', image: { bytesBase64Encoded: PNG_URI.slice(PNG_URI.indexOf(',') + 1), mimeType: 'image/png' } }]);
  t.equal((await settled(user)).charged, NANO('0.20'), 'charged 4 seconds at 0.05');
});

t.test('each invalid Veo parameter is a 400 naming the field and the allowed values', async (t) => {
  const { key } = await newUser();
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['google/veo-3.1', { duration: 5 }, 'duration', /'4', '6', '8'|4, 6, 8/],
    ['google/veo-3.1', { resolution: '1080p', duration: 4 }, 'duration', /8 seconds/],
    ['google/veo-3.1', { resolution: '8k' }, 'resolution', /'720p', '1080p', '4k'/],
    ['google/veo-3.1-lite', { resolution: '4k' }, 'resolution', /'720p', '1080p'/],
    ['google/veo-3.1-fast', { aspect_ratio: '1:1' }, 'aspect_ratio', /'16:9', '9:16'/],
    ['google/veo-3.1', { image_urls: ['data:image/gif;base64,R0lGODlhAQABAAAAACw='] }, 'image_urls[0]', /png\|jpeg/],
    ['google/veo-3.1', { image_urls: [PNG_URI, PNG_URI] }, 'image_urls', /at most 1/],
    ['google/veo-3.1', { audio: false }, 'audio', /./],
    ['google/veo-3.1', { seed: -1 }, 'seed', /whole number/],
    ['google/veo-3.1', { prompt: '' }, 'prompt', /empty/],
    ['google/veo-3.1', { negative_prompt: 'x'.repeat(1001) }, 'negative_prompt', /at most 1000/],
  ];
  await refusedEach(t, key, 'videos/generations', cases, ':predictLongRunning');
});

t.test('a Veo task has no cancel at the vendor: cancelled once Google has it, it is charged its hold', async (t) => {
  const { user, key } = await newUser();
  const mark = gateway.mock.requests().length;
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1-lite', prompt: 'x [[mock job_ms=5000]]', duration: 4 });
  t.equal(submitted.status, 200);
  await eventually(async () => gateway.mock.requests().slice(mark).some((r) => r.path.endsWith(':predictLongRunning') && r.status === 200));
  let cancelled: { status: number; body: any } = { status: 0, body: undefined };
  for (let i = 0; i < 50; i++) {
    const response = await fetch(`${gateway.v1}/videos/generations/${submitted.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    cancelled = { status: response.status, body: await response.json() };
    if (cancelled.status !== 409) break;
    await new Promise((resolve) => setTimeout(resolve, 50)); // task_starting: the id is being recorded
  }
  t.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
  t.match(cancelled.body, { status: 'failed', error: { code: 'cancelled' } });
  const money = await settled(user);
  t.equal(money.charged, NANO('0.20'), 'charged its hold: 4 s at 0.05');
  t.equal(money.held, 0n);
});

interface SpeechTask extends Omit<Task, 'data'> { data?: { url: string; format: string; duration_seconds: number }[] }

t.test('google/gemini-2.5-flash-tts: the SDK\'s speech call, PCM stored as WAV, charged its text and audio tokens', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const input = 'Good evening, and welcome. [[mock audio_ms=2000]]';
  const mark = gateway.mock.requests().length;
  const response = await client.audio.speech.create({ model: 'google/gemini-2.5-flash-tts', voice: 'Puck', input } as never);
  const submitted = await response.json() as SpeechTask;
  t.equal(submitted.status, 'pending');
  const task = await polled(client, submitted.id, 'audio/speech') as unknown as SpeechTask;
  t.equal(task.status, 'success', JSON.stringify(task));
  const entry = task.data?.[0];
  t.equal(entry?.format, 'wav', 'stored as WAV');
  t.ok(entry?.url.startsWith(`${gateway.url}/media/`), 'on the media host');
  const info = audioInfo(Buffer.from(await (await fetch(entry!.url)).arrayBuffer()));
  t.equal(info?.format, 'wav');
  t.ok(Math.abs(info!.seconds - 2) <= 0.01, `2 s long (${info?.seconds})`);
  const call = gateway.mock.requests().slice(mark).find((r) => r.path.endsWith('/models/gemini-2.5-flash-preview-tts:generateContent'));
  t.equal(call?.authorization, 'test-gemini-key');
  t.same((call?.body as any).generationConfig, { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } } });
  t.same((call?.body as any).contents, [{ role: 'user', parts: [{ text: input }] }]);
  // 0.50 per 1M text tokens, 10.00 per 1M audio tokens at 32 a second.
  const price = BigInt(countTokens(input)) * 500n + BigInt(Math.ceil(info!.seconds * 32)) * 10_000n;
  const money = await settled(user);
  t.equal(money.charged, price, `charged ${price} nano-USD`);
  t.equal(money.held, 0n);
});

t.test('Gemini speech: a vendor error fails the task and releases the hold; each invalid field is a 400', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const submitted = await client.post('/audio/speech', { body: { model: 'google/gemini-2.5-flash-tts', input: 'x [[mock fail=400]]' } }) as Task;
  const task = await polled(client, submitted.id, 'audio/speech');
  t.equal(task.status, 'failed', JSON.stringify(task));
  t.equal(task.error?.code, 'INVALID_ARGUMENT', "Google's status word is the code");
  await nothingCharged(t, user);
  await refusedEach(t, key, 'audio/speech', [
    ['google/gemini-2.5-flash-tts', { input: 'x', voice: 'alloy' }, 'voice', /'Zephyr'/],
    ['google/gemini-2.5-flash-tts', { input: 'x', speed: 1.5 }, 'speed', /does not take/],
    ['google/gemini-2.5-flash-tts', { input: 'x', instructions: 'calm' }, 'instructions', /does not take/],
    ['google/gemini-2.5-flash-tts', { input: 'x', response_format: 'mp3' }, 'response_format', /'wav'/],
    ['google/gemini-2.5-flash-tts', { input: 'x'.repeat(8001) }, 'input', /8000/],
  ], ':generateContent', {});
});

t.test('google/lyria-3.5: a music task, the MP3 part stored, charged its price per song', async (t) => {
  const { user, key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1, maxRetries: 0 });
  const prompt = 'A cheerful acoustic folk song about rain, about 3 seconds [[mock audio_ms=3000]]';
  const mark = gateway.mock.requests().length;
  const submitted = await client.post('/audio/generations', { body: { model: 'google/lyria-3.5', prompt } }) as Task;
  const task = await polled(client, submitted.id, 'audio/generations') as unknown as SpeechTask;
  t.equal(task.status, 'success', JSON.stringify(task));
  const entry = task.data?.[0];
  t.equal(entry?.format, 'mp3');
  t.ok(entry?.url.startsWith(`${gateway.url}/media/`), 'on the media host');
  const info = audioInfo(Buffer.from(await (await fetch(entry!.url)).arrayBuffer()));
  t.equal(info?.format, 'mp3');
  t.ok(Math.abs(info!.seconds - 3) <= 0.04, `3 s long (${info?.seconds})`);
  const call = gateway.mock.requests().slice(mark).find((r) => r.path.endsWith('/models/lyria-3.5:generateContent'));
  t.same((call?.body as any).contents, [{ role: 'user', parts: [{ text: prompt }] }], 'the prompt as the one part');
  const money = await settled(user);
  t.equal(money.charged, NANO('0.08'), 'charged 0.08 a song');
  t.equal(money.held, 0n);
  await refusedEach(t, key, 'audio/generations', [
    ['google/lyria-3.5', { lyrics: 'la la' }, 'lyrics', /does not take/],
    ['google/lyria-3.5', { duration: 30 }, 'duration', /does not take/],
    ['google/lyria-3.5', { instrumental: true }, 'instrumental', /does not take/],
    ['google/lyria-3.5', { format: 'wav' }, 'format', /'mp3'/],
  ], ':generateContent');
});
