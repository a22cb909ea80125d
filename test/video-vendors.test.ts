// The video models outside the spec's six profiles, end to end over real HTTP: the official OpenAI
// client submits a task and polls it to success through the mock vendor playing each vendor's own task
// API (MiniMax Hailuo: submit, query, then files/retrieve for the download URL); the video lands on
// the media host; success is charged exactly the model's price, a failed task releases its hold; each
// invalid parameter is a 400 naming the field and what it may be. Runway Aleph (video-to-video) is
// priced by its input video's length, read before the hold. Kling, listed but not offered (no
// verified price), is played adapter to mock: its signed token, its paths, success and failure.
import t from 'tap';
import OpenAI from 'openai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser, rawRequest } from './helpers/http-tools.js';
import { mockMp4, mp4DurationSeconds } from '../src/mock-vendor/mp4.js';
import { KLING_VIDEO } from '../src/providers/video/kling.js';
import { exchange } from '../src/tasks/vendor-exchange.js';
import type { VendorTarget } from '../src/providers/video/adapter.js';
import type { VideoJob } from '../src/tasks/video-job.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseVideoRequest } from '../src/http/schemas/videos.js';
import { ApiError } from '../src/http/errors.js';
import { catalogRows } from '../src/catalog/seed/index.js';
import { priceSheetFromRows } from '../src/billing/price-sheet.js';
import type { MediaModel } from '../src/catalog/model.js';

const PNG_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const REF = 'https://localhost/first-frame.png';
const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'video-vendors-'));
  gateway = await startGateway({
    env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, MEDIA_MAX_BYTES: String(1024 * 1024), RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true', TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50' },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

interface Task { id: string; status: string; model: string; data?: { url: string }[]; error?: { code: string; message: string } }

async function newUser(usd = '10') {
  const user = `video-vendor-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

async function pollToEnd(client: OpenAI, id: string): Promise<Task> {
  let task = await client.get(`/videos/generations/${id}`) as Task;
  for (let i = 0; i < 500 && task.status === 'pending'; i++) {
    await new Promise((r) => setTimeout(r, 30));
    task = await client.get(`/videos/generations/${id}`) as Task;
  }
  return task;
}

async function usageOf(user: string) {
  await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
  const usage = await gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  return { usage, ...(await gateway.balanceNano(user)) };
}

/** The requests the mock vendor saw at `path`, newest last. */
const sentTo = (path: string) => gateway.mock.requests().filter((r) => r.path === path);

const SUCCESSES = [
  {
    what: 'Hailuo 2.3 text-to-video, 6 s', model: 'minimax/hailuo-2.3', body: { prompt: 'a lighthouse at dawn' }, usd: '0.28', seconds: 6,
    submitPath: '/minimax/v1/video_generation', sent: { model: 'MiniMax-Hailuo-2.3', prompt: /^a lighthouse at dawn/, duration: 6, resolution: '768P', prompt_optimizer: true },
    alsoCalled: ['/minimax/v1/query/video_generation', '/minimax/v1/files/retrieve'],
  },
  {
    what: 'Hailuo 2.3 image-to-video, 10 s', model: 'minimax/hailuo-2.3', body: { prompt: 'the boat sails', image_urls: [REF], duration: 10, prompt_optimizer: false }, usd: '0.56', seconds: 10,
    submitPath: '/minimax/v1/video_generation', sent: { model: 'MiniMax-Hailuo-2.3', first_frame_image: REF, duration: 10, resolution: '768P', prompt_optimizer: false },
    alsoCalled: ['/minimax/v1/files/retrieve'],
  },
  {
    what: 'Runway gen4_turbo image-to-video, 4 s at 9:16', model: 'runway/gen4-turbo', body: { prompt: 'the kite rises', image_urls: [PNG_URI], duration: 4, aspect_ratio: '9:16', seed: 42 }, usd: '0.20', seconds: 4,
    submitPath: '/runway/v1/image_to_video', sent: { model: 'gen4_turbo', promptImage: /^data:image\/png;base64,/, promptText: /^the kite rises/, ratio: '720:1280', duration: 4, seed: 42 },
    alsoCalled: [],
  },
  {
    what: 'Luma Ray 3.2 text-to-video, 10 s at 1080p', model: 'luma/ray-3.2', body: { prompt: 'a glacier calves', duration: 10, resolution: '1080p', aspect_ratio: '21:9' }, usd: '4.32', seconds: 10,
    submitPath: '/luma/v1/generations', sent: { model: 'ray-3.2', type: 'video', prompt: /^a glacier calves/, aspect_ratio: '21:9', video: { resolution: '1080p', duration: '10s', hdr: false } },
    alsoCalled: [],
  },
  {
    what: 'Luma Ray 3.2 image-to-video, HDR 720p', model: 'luma/ray-3.2', body: { prompt: 'the flag waves', image_urls: [PNG_URI], dynamic_range: 'hdr' }, usd: '2.16', seconds: 5,
    submitPath: '/luma/v1/generations', sent: { model: 'ray-3.2', type: 'video', video: { resolution: '720p', duration: '5s', hdr: true, start_frame: { media_type: 'image/png', data: /^iVBOR/ } } },
    alsoCalled: [],
  },
  {
    what: 'Kling 3.0 text-to-video, std, 4 s', model: 'kuaishou/kling-v3', body: { prompt: 'a kite over dunes', duration: 4 }, usd: '0.336', seconds: 4,
    submitPath: '/kuaishou/v1/videos/text2video', sent: { model_name: 'kling-v3', prompt: /^a kite over dunes/, mode: 'std', duration: '4', aspect_ratio: '16:9', sound: 'off' },
    alsoCalled: [],
  },
  {
    what: 'Kling 3.0 image-to-video, pro with audio, 5 s', model: 'kuaishou/kling-v3', body: { prompt: 'the kite dives', image_urls: [PNG_URI], mode: 'pro', audio: true }, usd: '0.84', seconds: 5,
    submitPath: '/kuaishou/v1/videos/image2video', sent: { model_name: 'kling-v3', image: /^iVBOR/, mode: 'pro', duration: '5', sound: 'on' },
    alsoCalled: [],
  },
] as const;

t.test('each model: the OpenAI client submits and polls to success, the video on the media host, charged exactly its price', async (t) => {
  for (const c of SUCCESSES) {
    await t.test(c.what, async (t) => {
      const { user, key } = await newUser();
      const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
      const submitted = await client.post('/videos/generations', { body: { model: c.model, ...c.body, prompt: `${c.body.prompt} [[mock job_ms=150]]` } }) as Task;
      t.match(submitted, { status: 'pending', model: c.model }, 'answered at once, pending');
      t.equal((await gateway.balanceNano(user)).held, NANO(c.usd), `${c.usd} USD held while it runs`);
      const task = await pollToEnd(client, submitted.id);
      t.equal(task.status, 'success', JSON.stringify(task));
      const url = task.data![0]!.url;
      t.ok(url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
      t.notOk(JSON.stringify(task).includes(gateway.mock.url), 'no vendor address in the task');
      const video = Buffer.from(await (await fetch(url)).arrayBuffer());
      t.equal(video.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
      t.equal(mp4DurationSeconds(video), c.seconds, 'of the requested length');
      t.match(sentTo(c.submitPath).at(-1)?.body, c.sent, 'the vendor got the job in its own wire format');
      for (const path of c.alsoCalled) t.ok(sentTo(path).length > 0, `${path} was called`);
      const money = await usageOf(user);
      t.equal(money.held, 0n, 'nothing held after it ended');
      t.same(money.usage.map((u) => [u.id, u.credits_nano]), [[submitted.id, -NANO(c.usd)]], `one charge of ${c.usd} USD, the task's`);
      t.equal(money.credits, NANO('10') - NANO(c.usd), 'credits moved by the charge only');
    });
  }
});

const FAILURES = [
  { what: 'Hailuo: the input fails review (base_resp 1026)', body: { model: 'minimax/hailuo-2.3', prompt: 'x [[mock job_ms=50 task_fail=1026]]' }, code: 'minimax_1026', message: /content review/ },
  { what: 'Hailuo: the output fails review (base_resp 1027)', body: { model: 'minimax/hailuo-2.3', prompt: 'x [[mock job_ms=50 task_fail=1027]]' }, code: 'minimax_1027', message: /generated video/ },
  { what: 'Hailuo: the submit is refused (base_resp 2013)', body: { model: 'minimax/hailuo-2.3', prompt: 'x [[mock submit_fail=400]]' }, code: 'minimax_2013', message: /./ },
  { what: 'Runway: the task fails its input review', body: { model: 'runway/gen4-turbo', prompt: 'x [[mock job_ms=50 task_fail=SAFETY.INPUT.IMAGE]]', image_urls: [REF] }, code: 'SAFETY.INPUT.IMAGE', message: /SAFETY/ },
  { what: 'Runway: the submit is refused', body: { model: 'runway/gen4-turbo', prompt: 'x [[mock submit_fail=400]]', image_urls: [REF] }, code: 'http_400', message: /Mock failure/ },
  { what: 'Kling: the task fails (task_status_msg)', body: { model: 'kuaishou/kling-v3', prompt: 'x [[mock job_ms=50 task_fail=risk]]' }, code: 'upstream_failed', message: /risk/ },
  { what: 'Luma: the generation is moderated', body: { model: 'luma/ray-3.2', prompt: 'x [[mock job_ms=50 task_fail=content_moderated]]' }, code: 'content_moderated', message: /content_moderated/ },
];

t.test('a failed task shows the vendor reason and releases its hold', async (t) => {
  for (const c of FAILURES) {
    const { user, key } = await newUser();
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, c.body);
    t.equal(submitted.status, 200, `${c.what}: accepted`);
    const task = await pollToEnd(new OpenAI({ apiKey: key, baseURL: gateway.v1 }), submitted.body.id);
    t.equal(task.status, 'failed', c.what);
    t.equal(task.error?.code, c.code, `${c.what}: ${c.code}`);
    t.match(task.error?.message, c.message, `${c.what}: says why`);
    const money = await usageOf(user);
    t.same(money.usage, [], `${c.what}: nothing charged`);
    t.equal(money.credits, NANO('10'), `${c.what}: credits as before`);
  }
});

const INVALID: [string, Record<string, unknown>, string, RegExp][] = [
  ['Hailuo: 8 seconds', { model: 'minimax/hailuo-2.3', prompt: 'x', duration: 8 }, 'duration', /6, 10/],
  ['Hailuo: the duration as a string', { model: 'minimax/hailuo-2.3', prompt: 'x', duration: '6' }, 'duration', /6, 10/],
  ['Hailuo: 1080P', { model: 'minimax/hailuo-2.3', prompt: 'x', resolution: '1080P' }, 'resolution', /'768P'/],
  ['Hailuo: an aspect ratio', { model: 'minimax/hailuo-2.3', prompt: 'x', aspect_ratio: '16:9' }, 'aspect_ratio', /no aspect ratio/],
  ['Hailuo: neither prompt nor image', { model: 'minimax/hailuo-2.3' }, 'prompt', /prompt.*image_urls/],
  ['Hailuo: two images', { model: 'minimax/hailuo-2.3', prompt: 'x', image_urls: [REF, REF] }, 'image_urls', /at most 1 entr/],
  ['Hailuo: a prompt over 2000 characters', { model: 'minimax/hailuo-2.3', prompt: 'x'.repeat(2001) }, 'prompt', /at most 2000 characters/],
  ['Hailuo: prompt_optimizer not a boolean', { model: 'minimax/hailuo-2.3', prompt: 'x', prompt_optimizer: 'yes' }, 'prompt_optimizer', /true or false/],
  ['Hailuo: a field it does not take', { model: 'minimax/hailuo-2.3', prompt: 'x', seed: 3 }, 'seed', /./],
  ['Hailuo: a private image URL', { model: 'minimax/hailuo-2.3', prompt: 'x', image_urls: ['https://10.0.0.7/a.png'] }, 'image_urls[0]', /./],
  ['Runway: no image', { model: 'runway/gen4-turbo', prompt: 'x' }, 'image_urls', /required|array/],
  ['Runway: 11 seconds', { model: 'runway/gen4-turbo', image_urls: [REF], duration: 11 }, 'duration', /2 to 10/],
  ['Runway: 1 second', { model: 'runway/gen4-turbo', image_urls: [REF], duration: 1 }, 'duration', /2 to 10/],
  ['Runway: an aspect ratio it does not make', { model: 'runway/gen4-turbo', image_urls: [REF], aspect_ratio: '2:1' }, 'aspect_ratio', /'16:9', '9:16', '4:3', '3:4', '1:1', '21:9'/],
  ['Runway: a prompt over 1000 characters', { model: 'runway/gen4-turbo', image_urls: [REF], prompt: 'x'.repeat(1001) }, 'prompt', /at most 1000 characters/],
  ['Runway: a negative seed', { model: 'runway/gen4-turbo', image_urls: [REF], seed: -1 }, 'seed', /whole number from 0 to 4294967295/],
  ['Runway: a resolution', { model: 'runway/gen4-turbo', image_urls: [REF], resolution: '720p' }, 'resolution', /./],
  ['Luma: no prompt', { model: 'luma/ray-3.2', image_urls: [REF] }, 'prompt', /./],
  ['Luma: 7 seconds', { model: 'luma/ray-3.2', prompt: 'x', duration: 7 }, 'duration', /5, 10/],
  ['Luma: 10 seconds from a first frame', { model: 'luma/ray-3.2', prompt: 'x', image_urls: [REF], duration: 10 }, 'duration', /first frame/],
  ['Luma: 4K', { model: 'luma/ray-3.2', prompt: 'x', resolution: '4k' }, 'resolution', /'540p', '720p', '1080p'/],
  ['Luma: HDR at 540p', { model: 'luma/ray-3.2', prompt: 'x', resolution: '540p', dynamic_range: 'hdr' }, 'dynamic_range', /720p/],
  ['Luma: an unknown dynamic range', { model: 'luma/ray-3.2', prompt: 'x', dynamic_range: 'dolby' }, 'dynamic_range', /'sdr', 'hdr'/],
  ['Luma: two first frames', { model: 'luma/ray-3.2', prompt: 'x', image_urls: [REF, REF] }, 'image_urls', /at most 1 entr/],
];

t.test('each invalid parameter is a 400 naming the field and what it may be; nothing is held', async (t) => {
  const { user, key } = await newUser();
  for (const [what, body, param, message] of INVALID) {
    const answer = await postJson(`${gateway.v1}/videos/generations`, key, body);
    t.equal(answer.status, 400, `${what}: 400`);
    t.equal(answer.body.error?.param, param, `${what}: names ${param}`);
    t.match(answer.body.error?.message, message, `${what}: ${answer.body.error?.message}`);
  }
  t.equal((await gateway.balanceNano(user)).held, 0n, 'nothing held');
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0, 'no task row');
});

// ---- Runway Aleph: video-to-video, priced by the input video's length ----

const ALEPH = 'runway/gen4-aleph';
const sample = (name: string) => `${gateway.mock.url}/samples/${name}`;

t.test('Runway Aleph: the longest input held, the input video measured, charged whole seconds of it at 0.15 USD', async (t) => {
  for (const c of [
    { clip: 'clip-3.4.mp4', usd: '0.60', body: { aspect_ratio: '9:16', seed: 7 }, sent: { ratio: '720:1280', seed: 7 } },
    { clip: 'clip-2-v1.mp4', usd: '0.30', body: {}, sent: { ratio: '1280:720' } },
    { clip: 'clip-5.mp4', usd: '0.75', body: { aspect_ratio: '1:1' }, sent: { ratio: '960:960' } },
  ]) {
    await t.test(`${c.clip}: ${c.usd} USD`, async (t) => {
      const { user, key } = await newUser();
      const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
      const submitted = await client.post('/videos/generations', { body: { model: ALEPH, prompt: 'make it winter [[mock job_ms=150]]', video_urls: [sample(c.clip)], ...c.body } }) as Task;
      t.match(submitted, { status: 'pending', model: ALEPH });
      t.equal((await gateway.balanceNano(user)).held, NANO('0.75'), 'the longest input\'s price held while it runs (5 s, 0.75 USD)');
      const task = await pollToEnd(client, submitted.id);
      t.equal(task.status, 'success', JSON.stringify(task));
      const url = task.data![0]!.url;
      t.ok(url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
      const video = Buffer.from(await (await fetch(url)).arrayBuffer());
      t.ok(mp4DurationSeconds(video)! > 0, 'an MP4 file');
      t.match(sentTo('/runway/v1/video_to_video').at(-1)?.body, { model: 'gen4_aleph', videoUri: sample(c.clip), promptText: /^make it winter/, ...c.sent }, 'video_to_video got the job in its wire format');
      t.notOk('duration' in (sentTo('/runway/v1/video_to_video').at(-1)?.body as object), 'no duration sent: the clip follows its input');
      const money = await usageOf(user);
      t.equal(money.held, 0n, 'nothing held after it ended');
      t.same(money.usage.map((u) => [u.id, u.credits_nano]), [[submitted.id, -NANO(c.usd)]], `one charge of ${c.usd} USD`);
      t.equal(money.credits, NANO('10') - NANO(c.usd), 'credits moved by the charge only');
    });
  }
});

t.test('Runway Aleph: an upload on this media host is read from storage and priced by its length', async (t) => {
  const { user, key } = await newUser();
  const upload = await rawRequest(`${gateway.url}/v1/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'video/mp4' }, body: mockMp4(2.5, 'my clip') });
  t.equal(upload.status, 201, upload.text);
  const videoUrl = upload.body.url as string;
  t.ok(videoUrl.startsWith(`${gateway.url}/media/`), 'an address on the media host');
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, prompt: 'x [[mock job_ms=50]]', video_urls: [videoUrl] });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  t.equal((await gateway.balanceNano(user)).held, NANO('0.75'), 'the longest input\'s price held while it runs');
  const task = await pollToEnd(new OpenAI({ apiKey: key, baseURL: gateway.v1 }), submitted.body.id);
  t.equal(task.status, 'success');
  t.equal((sentTo('/runway/v1/video_to_video').at(-1)?.body as { videoUri: string }).videoUri, videoUrl, 'Runway is given the hosted address');
  t.same((await usageOf(user)).usage.map((u) => u.credits_nano), [-NANO('0.45')], 'charged 0.45 USD');
});

t.test('Runway Aleph: a submit refused for credit fetches nothing (the input is read only once the hold is taken)', async (t) => {
  const { user, key } = await newUser('0.50');
  const clip = sample('clip-1.mp4');
  const fetches = () => gateway.mock.requests().filter((r) => r.path === '/samples/clip-1.mp4').length;
  const fetchedBefore = fetches();
  const answer = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, prompt: 'x', video_urls: [clip] });
  t.equal(answer.status, 402, 'less credit than the longest input costs: 402');
  t.equal(fetches(), fetchedBefore, 'the input was never fetched');
  t.equal((await gateway.balanceNano(user)).held, 0n, 'nothing held');
  const { key: richer } = await newUser();
  const accepted = await postJson(`${gateway.v1}/videos/generations`, richer, { model: ALEPH, prompt: 'x [[mock job_ms=50]]', video_urls: [clip] });
  t.equal(accepted.status, 200, 'with the credit: accepted');
  t.equal(fetches(), fetchedBefore + 1, 'and its input fetched once');
});

t.test('Runway Aleph: a failed task releases its hold', async (t) => {
  const { user, key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, prompt: 'x [[mock job_ms=50 task_fail=SAFETY.INPUT.VIDEO]]', video_urls: [sample('clip-4.mp4')] });
  t.equal(submitted.status, 200, 'accepted');
  t.equal((await gateway.balanceNano(user)).held, NANO('0.75'), 'held while it runs');
  const task = await pollToEnd(new OpenAI({ apiKey: key, baseURL: gateway.v1 }), submitted.body.id);
  t.match(task, { status: 'failed', error: { code: 'SAFETY.INPUT.VIDEO', message: /SAFETY/ } });
  const money = await usageOf(user);
  t.same(money.usage, [], 'nothing charged');
  t.equal(money.credits, NANO('10'), 'credits as before');
});

t.test('Runway Aleph: an input that is not an MP4, has no length, is too long or cannot be fetched is a 400 naming video_urls[0] (over MEDIA_MAX_BYTES a 413); nothing is held', async (t) => {
  const { user, key } = await newUser();
  for (const [what, url, message] of [
    ['a PNG', sample('picture'), /not an MP4 video/],
    ['6 seconds (Aleph takes at most 5)', sample('clip-6.mp4'), /6 seconds long; runway\/gen4-aleph takes an input video of at most 5 seconds/],
    ['5.001 seconds', sample('clip-5.001.mp4'), /5.001 seconds long/],
    ['0 seconds', sample('clip-0.mp4'), /no readable length/],
    ['a missing file', sample('nothing.mp4'), /could not be fetched/],
  ] as const) {
    const answer = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, prompt: 'x', video_urls: [url] });
    t.equal(answer.status, 400, `${what}: 400`);
    t.match(answer.body.error, { param: 'video_urls[0]', code: 'invalid_video_url', message }, `${what}: ${answer.body.error?.message}`);
  }
  for (const [what, body, param, message] of [
    ['no video', { prompt: 'x' }, 'video_urls', /required|array/],
    ['two videos', { prompt: 'x', video_urls: [sample('clip-1.mp4'), sample('clip-2.mp4')] }, 'video_urls', /exactly 1 entry/],
    ['a .mov file', { prompt: 'x', video_urls: ['https://localhost/a.mov'] }, 'video_urls[0]', /MP4 video; this URL names a .mov file/],
    ['no prompt', { video_urls: [sample('clip-1.mp4')] }, 'prompt', /./],
    ['a prompt over 1000 characters', { prompt: 'x'.repeat(1001), video_urls: [sample('clip-1.mp4')] }, 'prompt', /at most 1000 characters/],
    ['a duration', { prompt: 'x', video_urls: [sample('clip-1.mp4')], duration: 5 }, 'duration', /as long as its input video/],
    ['an aspect ratio it does not make', { prompt: 'x', video_urls: [sample('clip-1.mp4')], aspect_ratio: '2:1' }, 'aspect_ratio', /'16:9', '9:16', '4:3', '3:4', '1:1', '21:9'/],
    ['a private address', { prompt: 'x', video_urls: ['https://10.0.0.7/a.mp4'] }, 'video_urls[0]', /./],
  ] as const) {
    const answer = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, ...body });
    t.equal(answer.status, 400, `${what}: 400`);
    t.equal(answer.body.error?.param, param, `${what}: names ${param}`);
    t.match(answer.body.error?.message, message, `${what}: ${answer.body.error?.message}`);
  }
  const big = await postJson(`${gateway.v1}/videos/generations`, key, { model: ALEPH, prompt: 'x', video_urls: [sample('big-clip.mp4')] });
  t.equal(big.status, 413, 'an input over MEDIA_MAX_BYTES (1 MiB here): 413');
  t.match(big.body.error, { code: 'payload_too_large', param: 'video_urls[0]' });
  t.equal((await gateway.balanceNano(user)).held, 0n, 'nothing held');
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0, 'no task row');
});

// ---- Kling: the adapter against the mock vendor ----

const KLING_JOB: VideoJob = { profile: 'KLING', model: 'kuaishou/kling-v3', upstreamModel: 'kling-v3', prompt: 'a kite', imageUrls: [], videoUrls: [], duration: 4, mode: 'std', aspectRatio: '16:9', audio: false };

/** Submits `job` with the Kling adapter to the mock and polls it to its end, as the task workers do. */
async function klingRun(job: VideoJob, target: VendorTarget) {
  const sent = await exchange(KLING_VIDEO.submit(job, target), 5000);
  if (sent.kind !== 'answer') return sent;
  const submitted = KLING_VIDEO.submitted(sent.status, sent.body, job);
  if (submitted.kind !== 'submitted') return submitted;
  for (let i = 0; i < 200; i++) {
    const polled = await exchange(KLING_VIDEO.poll(submitted.upstreamId, target), 5000);
    if (polled.kind !== 'answer') return polled;
    const state = KLING_VIDEO.polled(polled.status, polled.body);
    if (state.kind !== 'running') return { ...state, upstreamId: submitted.upstreamId };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the Kling task did not end');
}

t.test('Kling: the adapter and the mock vendor agree on the wire (token, paths, statuses, result, failure)', async (t) => {
  const target: VendorTarget = { baseUrl: `${gateway.mock.url}/kuaishou/v1`, apiKey: 'mock-key' };
  const text = await klingRun({ ...KLING_JOB, prompt: 'a kite [[mock job_ms=60]]' }, target);
  t.match(text, { kind: 'succeeded', status: 'succeed', seconds: 4, upstreamId: /^text2video:\d{18}$/ }, 'text2video: succeed');
  const video = Buffer.from(await (await fetch((text as { resultUrl: string }).resultUrl)).arrayBuffer());
  t.equal(mp4DurationSeconds(video), 4, 'an MP4 of the asked length');
  t.match(sentTo('/kuaishou/v1/videos/text2video').at(-1)?.body, { model_name: 'kling-v3', duration: '4', mode: 'std', aspect_ratio: '16:9', sound: 'off' });

  const image = await klingRun({ ...KLING_JOB, prompt: 'it flies [[mock job_ms=60]]', aspectRatio: undefined, imageUrls: [PNG_URI] }, target);
  t.match(image, { kind: 'succeeded', upstreamId: /^image2video:/ }, 'image2video: polled on its own path');
  t.equal((sentTo('/kuaishou/v1/videos/image2video').at(-1)?.body as { image: string }).image, PNG_URI.slice(PNG_URI.indexOf(',') + 1), 'the image as bare base64');

  t.match(await klingRun({ ...KLING_JOB, prompt: 'x [[mock job_ms=40 task_fail=risk]]' }, target), { kind: 'failed', status: 'failed', code: 'upstream_failed', message: /risk/ }, 'a failed task says why');
  t.match(await klingRun({ ...KLING_JOB, prompt: 'x [[mock submit_fail=429]]' }, target), { kind: 'refused', retryable: true, code: 'kling_1302' }, 'a rate limit is retried');
  t.match(await klingRun(KLING_JOB, { ...target, apiKey: 'ak-test:sk-other' }), { kind: 'refused', retryable: false, code: 'kling_1002', httpStatus: 401 }, 'a token signed with the wrong secret key is refused');
});

t.test('Kling is active with its profile, priced per second by mode and audio', async (t) => {
  const { token } = await newUser();
  const response = await fetch(`${gateway.url}/api/v1/models/kuaishou/kling-v3/pricing`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(response.status, 200);
  const pricing = await response.json() as { prices: { tier: string; usd_per_unit: string }[] };
  t.same(Object.fromEntries(pricing.prices.map((p) => [p.tier, p.usd_per_unit])), {
    'audio=false,mode=std': '0.084', 'audio=false,mode=pro': '0.112', 'audio=true,mode=std': '0.126', 'audio=true,mode=pro': '0.168',
  }, 'four per-second tiers');
  const { user, key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'kuaishou/kling-v3', prompt: 'x [[mock job_ms=3000]]', duration: 15, mode: 'pro' });
  t.equal(submitted.status, 200);
  t.equal((await gateway.balanceNano(user)).held, NANO('1.68'), 'pro without audio, 15 s: 15 × 0.112 USD held');
});

t.test('Runway: a cancel reaches the vendor (DELETE of its task) and is free when it confirms', async (t) => {
  const { user, key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'runway/gen4-turbo', prompt: 'x [[mock job_ms=4000]]', image_urls: [REF] });
  t.equal(submitted.status, 200);
  const id = submitted.body.id as string;
  let upstreamId: string | null = null;
  t.ok(await eventually(async () => {
    const [row] = await gateway.sql<{ upstream_id: string | null }[]>`select upstream_id from tasks where id = ${id}`;
    upstreamId = row?.upstream_id ?? null;
    return upstreamId !== null;
  }, 5000), 'the vendor has the job');
  const cancelled = await fetch(`${gateway.v1}/videos/generations/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
  t.equal(cancelled.status, 200);
  t.match(await cancelled.json(), { status: 'failed', error: { code: 'cancelled' } });
  t.ok(gateway.mock.videos.list('runway').some((task) => task.cancelled), 'the vendor cancelled its task');
  t.ok(sentTo(`/runway/v1/tasks/${upstreamId}`).length > 0, 'through DELETE /v1/tasks/{id}');
  const money = await usageOf(user);
  t.same(money.usage, [], 'nothing charged');
  t.equal(money.credits, NANO('10'), 'credits as before');
});

t.test("Kling's credential must be '<access key>:<secret key>', in the environment and in a routing file", async (t) => {
  t.throws(() => loadConfig({ KUAISHOU_API_KEY: 'only-an-access-key-test' }), new ConfigError('invalid KUAISHOU_API_KEY: must be <access key>:<secret key>'));
  t.equal(loadConfig({ KUAISHOU_API_KEY: 'ak-test:sk-test' }).vendors.kuaishou.apiKey, 'ak-test:sk-test', 'both keys in one setting');
  t.equal(loadConfig({ KUAISHOU_API_KEY: 'ak-test:sk-test' }).vendors.kuaishou.baseUrl, 'https://api-singapore.klingai.com/v1', 'the real base');
  const file = join(mediaDir, 'routing.yaml');
  await writeFile(file, 'vendors:\n  kuaishou:\n    targets:\n      - { name: kling-a, api_key: no-colon-test }\n');
  t.throws(() => loadConfig({ ROUTING_FILE: file }), /invalid ROUTING_FILE: .*:4: a kuaishou key must be <access key>:<secret key>/);
  await writeFile(file, 'vendors:\n  kuaishou:\n    targets:\n      - { name: kling-a, api_key: ak-test:sk-test }\n');
  t.equal(loadConfig({ ROUTING_FILE: file }).routing.table?.vendors.kuaishou?.[0]?.apiKey, 'ak-test:sk-test', 'a routing target with both keys');
});

t.test('Runway Gen-4 Image through images.generate: a PNG on the media host, charged its resolution tier', async (t) => {
  for (const c of [
    { what: '720p 9:16 with a reference', body: { resolution: '720p', aspect_ratio: '9:16', image_urls: [PNG_URI] }, usd: '0.05', ratio: '720:1280', references: 1 },
    { what: 'no resolution: 1080p, the tier reserved', body: {}, usd: '0.08', ratio: '1920:1080', references: 0 },
  ]) {
    const { user, key } = await newUser();
    const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
    const answer = await client.images.generate({ model: 'runway/gen4-image', prompt: 'a paper crane', ...c.body } as unknown as OpenAI.ImageGenerateParamsNonStreaming);
    const url = answer.data?.[0]?.url ?? '';
    t.ok(url.startsWith(`${gateway.url}/media/`), `${c.what}: the image is on the media host`);
    const png = Buffer.from(await (await fetch(url)).arrayBuffer());
    t.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${c.what}: a PNG`);
    const sent = sentTo('/runway/v1/text_to_image').at(-1)?.body as { model: string; promptText: string; ratio: string; referenceImages?: { uri: string }[] };
    t.match(sent, { model: 'gen4_image', promptText: 'a paper crane', ratio: c.ratio }, `${c.what}: Runway's pixel ratio`);
    t.equal(sent.referenceImages?.length ?? 0, c.references, `${c.what}: its references`);
    // An image call's usage transaction is written after its answer: wait for it.
    await eventually(async () => (await usageOf(user)).usage.length > 0, 5000);
    const money = await usageOf(user);
    t.same(money.usage.map((u) => u.credits_nano), [-NANO(c.usd)], `${c.what}: charged ${c.usd} USD`);
  }
  const { key } = await newUser();
  const refused = await postJson(`${gateway.v1}/images/generations`, key, { model: 'runway/gen4-image', prompt: 'x', resolution: '4k' });
  t.equal(refused.status, 400);
  t.equal(refused.body.error?.param, 'resolution', 'a resolution it does not make names the field');
  const ratio = await postJson(`${gateway.v1}/images/generations`, key, { model: 'runway/gen4-image', prompt: 'x', aspect_ratio: '2:1' });
  t.equal(ratio.body.error?.param, 'aspect_ratio', 'so does an aspect ratio');
  const moderated = await postJson(`${gateway.v1}/images/generations`, key, { model: 'runway/gen4-image', prompt: 'x [[mock job_ms=30 task_fail=SAFETY.INPUT.TEXT]]' });
  t.equal(moderated.status, 400, 'a prompt Runway refuses');
  t.equal(moderated.body.error?.code, 'content_policy_violation');
});

t.test('Luma UNI-1 through images.generate: text to image, and an edit with references charged per extra reference', async (t) => {
  for (const c of [
    { what: 'generate at 3:2', body: { aspect_ratio: '3:2' }, usd: '0.0404', sent: { model: 'uni-1', type: 'image', prompt: 'a paper crane', aspect_ratio: '3:2', output_format: 'png' }, refs: 0 },
    { what: 'edit with two more references', body: { image_urls: [PNG_URI, PNG_URI, PNG_URI] }, usd: '0.0494', sent: { model: 'uni-1', type: 'image_edit', source: { media_type: 'image/png', data: /^iVBOR/ } }, refs: 2 },
  ]) {
    const { user, key } = await newUser();
    const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
    const answer = await client.images.generate({ model: 'luma/uni-1', prompt: 'a paper crane', ...c.body } as unknown as OpenAI.ImageGenerateParamsNonStreaming);
    const url = answer.data?.[0]?.url ?? '';
    t.ok(url.startsWith(`${gateway.url}/media/`), `${c.what}: the image is on the media host`);
    t.equal(Buffer.from(await (await fetch(url)).arrayBuffer()).subarray(1, 4).toString('latin1'), 'PNG', `${c.what}: a PNG`);
    const sent = sentTo('/luma/v1/generations').at(-1)?.body as { image_ref?: unknown[] };
    t.match(sent, c.sent, `${c.what}: Luma's generation body`);
    t.equal(sent.image_ref?.length ?? 0, c.refs, `${c.what}: the other images as image_ref`);
    await eventually(async () => (await usageOf(user)).usage.length > 0, 5000);
    t.same((await usageOf(user)).usage.map((u) => u.credits_nano), [-NANO(c.usd)], `${c.what}: charged ${c.usd} USD`);
  }
  const { key } = await newUser();
  const ratio = await postJson(`${gateway.v1}/images/generations`, key, { model: 'luma/uni-1', prompt: 'x', aspect_ratio: '5:4' });
  t.equal(ratio.status, 400);
  t.equal(ratio.body.error?.param, 'aspect_ratio', 'an aspect ratio it does not make names the field');
  const moderated = await postJson(`${gateway.v1}/images/generations`, key, { model: 'luma/uni-1', prompt: 'x [[mock job_ms=30 task_fail=content_moderated]]' });
  t.equal(moderated.status, 400, 'a moderated prompt');
  t.equal(moderated.body.error?.code, 'content_policy_violation');
});

t.test("Kling's request profile, checked directly", async (t) => {
  const rows = catalogRows();
  const row = rows.models.find((m) => m.id === 'kuaishou/kling-v3')!;
  const model = {
    id: row.id, name: row.name, provider: row.provider, modality: 'video', family: row.family, upstreamVendor: row.upstream_vendor, upstreamModel: row.upstream_model,
    capabilities: row.capabilities, sheet: priceSheetFromRows(row.id, row.capabilities, []),
  } as MediaModel;
  const parse = (body: Record<string, unknown>) => parseVideoRequest({ model: row.id, ...body }, model);
  t.match(parse({ prompt: 'a kite' }), { profile: 'KLING', prompt: 'a kite', duration: 5, mode: 'std', aspectRatio: '16:9', audio: false, imageUrls: [] }, 'text-to-video defaults');
  const withImage = parse({ image_urls: [PNG_URI], duration: 15, mode: 'pro', audio: true, negative_prompt: 'blur' });
  t.match(withImage, { duration: 15, mode: 'pro', audio: true, negativePrompt: 'blur' }, 'image-to-video, 15 s, pro, with sound');
  t.equal(withImage.aspectRatio, undefined, 'no aspect ratio with a first frame');
  const refused = (body: Record<string, unknown>, param: string, message: RegExp) => {
    try {
      parse(body);
      t.fail(`${param}: accepted`);
    } catch (error) {
      t.type(error, ApiError);
      t.equal((error as ApiError).param, param, `names ${param}`);
      t.match((error as ApiError).message, message);
    }
  };
  refused({ prompt: 'x', duration: 16 }, 'duration', /3 to 15/);
  refused({ prompt: 'x', duration: 2 }, 'duration', /3 to 15/);
  refused({ prompt: 'x', mode: 'master' }, 'mode', /'std', 'pro'/);
  refused({ prompt: 'x', aspect_ratio: '4:3' }, 'aspect_ratio', /'16:9', '9:16', '1:1'/);
  refused({ image_urls: [PNG_URI], aspect_ratio: '16:9' }, 'aspect_ratio', /image's shape/);
  refused({}, 'prompt', /prompt.*image_urls/);
  refused({ prompt: 'x'.repeat(2501) }, 'prompt', /at most 2500/);
  refused({ prompt: 'x', image_urls: ['data:image/webp;base64,UklGRg=='] }, 'image_urls[0]', /png or jpeg/i);
});
