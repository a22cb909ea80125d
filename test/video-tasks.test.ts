// Video generation as async tasks, end to end over real HTTP: the official OpenAI client submits a task
// of each profile's model and polls it to success through the mock vendor's DashScope, Vidu and Ark
// task APIs; the video is downloaded from the media host; the money of success, failure and refusal;
// callbacks signed the Standard Webhooks way and retried; who may see a task.
import t from 'tap';
import OpenAI from 'openai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { verifyWebhook } from '../src/tasks/webhook-signature.js';
import { mp4DurationSeconds } from '../src/mock-vendor/mp4.js';

const PNG_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
/** A public-looking https address the URL guard accepts in tests (loopback is allowed there); the mock vendor never fetches it. */
const REF = 'https://localhost/reference.png';
const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'video-test-'));
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500',
      TASK_CALLBACK_RETRY_MS: '100', TASK_CALLBACK_MAX_DELAY_MS: '200',
    },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

async function newUser(usd = '10'): Promise<{ user: string; key: string; token: string }> {
  const user = `video-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

interface Task { id: string; object: string; status: string; model: string; created: number; data?: { url: string }[]; error?: { code: string; message: string } }

async function getTask(key: string, id: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.v1}/videos/generations/${id}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: await response.json() };
}

async function finished(key: string, id: string, timeoutMs = 15_000): Promise<Task> {
  let last: Task | undefined;
  const ok = await eventually(async () => {
    last = (await getTask(key, id)).body as Task;
    return last.status !== 'pending';
  }, timeoutMs, 30);
  if (!ok) throw new Error(`task ${id} still pending: ${JSON.stringify(last)}`);
  return last!;
}

/** Usage transactions of the user in Postgres and what Redis holds for them. */
async function money(user: string) {
  const usage = await gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  const { credits, held } = await gateway.balanceNano(user);
  return { usage, credits, held };
}

const PROFILES = [
  { profile: 'R2V-A', model: 'alibaba/wan2.6-r2v', body: { prompt: 'two friends wave', video_urls: ['https://localhost/ref.mp4'] }, usd: '0.75', seconds: 5, vendor: '/alibaba/' },
  { profile: 'R2V-B', model: 'bytedance/seedance-1.0-lite-r2v-2k', body: { prompt: 'a cat explores', image_urls: [REF] }, usd: '1.296', seconds: 6, vendor: '/bytedance/' },
  { profile: 'R2V-C', model: 'shengshu/viduq2-r2v', body: { prompt: '@1 and @2 dance', image_urls: [PNG_URI, REF] }, usd: '0.50', seconds: 5, vendor: '/shengshu/' },
  { profile: 'R2V-D', model: 'shengshu/viduq1-r2v', body: { prompt: '@1 walks', image_urls: [PNG_URI] }, usd: '0.34', seconds: 5, vendor: '/shengshu/' },
  { profile: 'I2V-A', model: 'shengshu/viduq3-pro-i2v', body: { image_urls: [PNG_URI], duration: 4 }, usd: '0.60', seconds: 4, vendor: '/shengshu/' },
  { profile: 'I2V-B', model: 'bytedance/seedance-1.0-pro-fast', body: { prompt: 'waves roll in', image_urls: [REF] }, usd: '0.075', seconds: 5, vendor: '/bytedance/' },
] as const;

/** The models of the vendor schemas on these adapters, with what their submit must carry at the vendor. */
const VENDOR_SCHEMAS = [
  { profile: 'WAN-R2V-FLASH', model: 'alibaba/wan2.6-r2v-flash', body: { prompt: 'two friends wave', image_urls: [REF], resolution: '720p', audio: false },
    usd: '0.125', seconds: 5, vendor: '/alibaba/', wire: { model: 'wan2.6-r2v-flash', input: { reference_urls: [REF] }, parameters: { size: '1280*720', audio: false, duration: 5 } } },
  { profile: 'VIDU-Q3-R2V', model: 'shengshu/viduq3-r2v', body: { prompt: '@1 meets @2', image_urls: [REF, REF], duration: 3, resolution: '1080p' },
    usd: '0.375', seconds: 3, vendor: '/shengshu/v1/ent/v2/reference2video',
    wire: { model: 'viduq3', subjects: [{ id: '1', images: [REF] }, { id: '2', images: [REF] }], audio: true, duration: 3, resolution: '1080p', aspect_ratio: '16:9' } },
  { profile: 'VIDU-Q3-I2V', model: 'shengshu/viduq3-turbo-i2v', body: { image_urls: [REF], duration: 4, resolution: '540p' },
    usd: '0.16', seconds: 4, vendor: '/shengshu/v1/ent/v2/img2video', wire: { model: 'viduq3-turbo', images: [REF], audio: true, duration: 4, resolution: '540p' } },
  { profile: 'SEEDANCE-1.0-PRO', model: 'bytedance/seedance-1.0-pro', body: { prompt: 'a lighthouse at night', duration: 2, resolution: '1080p', camera_fixed: true },
    usd: '0.24', seconds: 2, vendor: '/bytedance/',
    wire: { model: 'seedance-1-0-pro-250528', content: [{ type: 'text' }], ratio: '16:9', duration: 2, resolution: '1080p', camera_fixed: true } },
  { profile: 'SEEDANCE-1.5-PRO', model: 'bytedance/seedance-1.5-pro', body: { prompt: 'from dawn to dusk', image_urls: [REF, 'https://localhost/last.png'], duration: 4 },
    usd: '0.208', seconds: 4, vendor: '/bytedance/',
    wire: {
      model: 'seedance-1-5-pro-251215', ratio: 'adaptive', duration: 4, resolution: '720p', generate_audio: true,
      content: [{ type: 'text' }, { type: 'image_url', image_url: { url: REF }, role: 'first_frame' }, { type: 'image_url', image_url: { url: 'https://localhost/last.png' }, role: 'last_frame' }],
    } },
] as const;

t.test('each profile and vendor schema: the OpenAI client submits, polls to success, downloads the video; one charge at the price', async (t) => {
  for (const c of [...PROFILES, ...VENDOR_SCHEMAS]) {
    await t.test(c.profile, async (t) => {
      const { user, key } = await newUser();
      const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
      const mark = gateway.mock.requests().length;
      const prompt = 'prompt' in c.body ? { prompt: `${c.body.prompt} [[mock job_ms=150]]` } : {};
      const submitted = await client.post('/videos/generations', { body: { model: c.model, ...c.body, ...prompt } }) as Task;
      t.match(submitted, { object: 'video.generation', status: 'pending', model: c.model }, 'answered at once, pending');
      t.match(submitted.id, /^[0-9a-f-]{36}$/);
      t.ok(Number.isInteger(submitted.created) && Math.abs(submitted.created - Date.now() / 1000) < 60, 'created is Unix seconds');
      const during = await gateway.balanceNano(user);
      t.equal(during.held, NANO(c.usd), 'the profile price is held while it runs');

      let task = submitted;
      for (let i = 0; i < 400 && task.status === 'pending'; i++) {
        await new Promise((r) => setTimeout(r, 30));
        task = await client.get(`/videos/generations/${submitted.id}`) as Task;
      }
      t.equal(task.status, 'success', JSON.stringify(task));
      t.equal(task.data?.length, 1);
      const url = task.data![0]!.url;
      t.ok(url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
      t.notOk(JSON.stringify(task).includes(gateway.mock.url), 'no vendor address in the task');
      const video = Buffer.from(await (await fetch(url)).arrayBuffer());
      t.equal(video.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
      t.equal(mp4DurationSeconds(video), c.seconds, 'of the requested length');
      t.ok(gateway.mock.requests().some((r) => r.path.includes(c.vendor)), `the ${c.vendor} vendor was called`);
      if ('wire' in c) {
        const submit = gateway.mock.requests().slice(mark).find((r) => r.path.includes(c.vendor) && typeof r.body === 'object' && r.body !== null);
        t.match(submit?.body, c.wire, 'the submit carries the vendor\'s parameters');
      }

      await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
      const after = await money(user);
      t.equal(after.held, 0n, 'nothing held after it ended');
      t.equal(after.usage.length, 1, 'one usage transaction');
      t.equal(after.usage[0]!.id, submitted.id, 'the transaction id is the task id');
      t.equal(after.usage[0]!.credits_nano, -NANO(c.usd), `charged ${c.usd} USD`);
      t.equal(after.credits, NANO('10') - NANO(c.usd), 'credits moved by the charge only');
    });
  }
});

/** One model per vendor API, with a body of its profile that carries the mock directives `extra`. */
const PER_VENDOR = [
  { vendor: 'DashScope', code: 'DataInspectionFailed', body: (extra: string) => ({ model: 'alibaba/wan2.6-r2v', prompt: `x ${extra}`, video_urls: ['https://localhost/ref.mp4'] }) },
  { vendor: 'Vidu', code: 'CreationPolicyViolation', body: (extra: string) => ({ model: 'shengshu/viduq2-r2v', prompt: `@1 ${extra}`, image_urls: [REF] }) },
  { vendor: 'Ark', code: 'OutputImageRiskDetection', body: (extra: string) => ({ model: 'bytedance/seedance-1.0-pro-fast', prompt: `x ${extra}`, image_urls: [REF] }) },
];

t.test('a failing task shows its error and leaves the balance as before (each vendor)', async (t) => {
  for (const { vendor, code, body } of PER_VENDOR) {
    const { user, key } = await newUser();
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, body(`[[mock job_ms=50 task_fail=${code}]]`));
    t.equal(submitted.status, 200, vendor);
    const task = await finished(key, submitted.body.id);
    t.equal(task.status, 'failed', `${vendor}: failed`);
    t.equal(task.error?.code, code, `${vendor}: the vendor code is kept`);
    t.type(task.error?.message, 'string');
    t.notOk('data' in task, `${vendor}: no data on a failed task`);
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    const after = await money(user);
    t.same(after.usage, [], `${vendor}: no transaction`);
    t.equal(after.credits, NANO('10'), `${vendor}: credits as before`);
  }
});

t.test('a failing task of each vendor schema leaves the balance as before', async (t) => {
  const codes: Record<string, string> = { '/alibaba/': 'DataInspectionFailed', '/shengshu/': 'CreationPolicyViolation', '/bytedance/': 'OutputImageRiskDetection' };
  for (const c of VENDOR_SCHEMAS) {
    const { user, key } = await newUser();
    const code = Object.entries(codes).find(([path]) => c.vendor.startsWith(path))![1];
    const prompt = 'prompt' in c.body ? c.body.prompt : 'x';
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: c.model, ...c.body, prompt: `${prompt} [[mock job_ms=50 task_fail=${code}]]` });
    t.equal(submitted.status, 200, c.model);
    t.equal((await gateway.balanceNano(user)).held, NANO(c.usd), `${c.model}: its price held`);
    const task = await finished(key, submitted.body.id);
    t.match(task, { status: 'failed', error: { code } }, `${c.model}: failed with the vendor's code`);
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    const after = await money(user);
    t.same(after.usage, [], `${c.model}: no transaction`);
    t.equal(after.credits, NANO('10'), `${c.model}: credits as before`);
    t.equal(after.held, 0n, `${c.model}: the hold released`);
  }
});

t.test('a result URL that expired before the download fails the task, released, never showing the vendor URL (each vendor)', async (t) => {
  for (const { vendor, body } of PER_VENDOR) {
    const { user, key } = await newUser();
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, body('[[mock job_ms=30 url_ttl_ms=0]]'));
    const task = await finished(key, submitted.body.id);
    t.equal(task.status, 'failed', vendor);
    t.equal(task.error?.code, 'result_unavailable', `${vendor}: result_unavailable`);
    t.notOk(JSON.stringify(task).includes(gateway.mock.url), `${vendor}: the vendor URL is not leaked`);
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    t.same((await money(user)).usage, [], `${vendor}: nothing charged`);
  }
});

t.test("an upload's media-host URL serves as a reference image, even where only https URLs are taken", async (t) => {
  const { key } = await newUser();
  const png = Buffer.from(PNG_URI.slice(PNG_URI.indexOf(',') + 1), 'base64');
  const upload = await fetch(`${gateway.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'image/png' }, body: png });
  t.equal(upload.status, 201);
  const { url } = await upload.json() as { url: string };
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x [[mock job_ms=30]]', image_urls: [url] });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  t.equal((await finished(key, submitted.body.id)).status, 'success');
  const sent = gateway.mock.requests().filter((r) => r.path === '/bytedance/v1/contents/generations/tasks').at(-1)!.body as { content: { image_url?: { url: string } }[] };
  t.match(sent.content[1]?.image_url?.url, /^data:image\/png;base64,/, 'a local media host is not reachable by vendors: the image goes inline');
});

t.test('transient poll failures are retried, not a failed task', async (t) => {
  const { key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, {
    model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x [[mock job_ms=50 poll_fail=503 poll_fail_times=3]]', image_urls: [REF],
  });
  t.equal((await finished(key, submitted.body.id)).status, 'success');
  const unknown = await postJson(`${gateway.v1}/videos/generations`, key, {
    model: 'alibaba/wan2.6-r2v', prompt: 'x [[mock job_ms=50 unknown_status=3]]', video_urls: ['https://localhost/ref.mp4'],
  });
  t.equal((await finished(key, unknown.body.id)).status, 'success', 'a status the adapter does not know is polled again');
});

t.test('402 when the price exceeds available; nothing is created or held', async (t) => {
  const { user, key } = await newUser('0.10');
  const refused = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'alibaba/wan2.6-r2v', prompt: 'x', video_urls: ['https://localhost/ref.mp4'] });
  t.equal(refused.status, 402);
  t.equal(refused.body.error.code, 'insufficient_credits');
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0, 'no task row');
  t.equal((await gateway.balanceNano(user)).held, 0n, 'nothing held');
});

t.test('validation, unknown models and URL rules answer 4xx in the envelope', async (t) => {
  const { key } = await newUser();
  const post = (body: unknown) => postJson(`${gateway.v1}/videos/generations`, key, body);
  const cases: [string, unknown, number, string | null][] = [
    ['malformed JSON', '{"model":', 400, null],
    ['unknown model', { model: 'nobody/nothing', prompt: 'x' }, 404, 'model'],
    ['a chat model', { model: 'openai/gpt-4o-mini', prompt: 'x' }, 400, 'model'],
    ['1080p on I2V-B', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x', image_urls: [REF], resolution: '1080p' }, 400, 'resolution'],
    ['private callback_url', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x', image_urls: [REF], callback_url: 'https://10.1.2.3/hook' }, 400, 'callback_url'],
    ['plain-http callback to a public host', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x', image_urls: [REF], callback_url: 'http://example.com/hook' }, 400, 'callback_url'],
    ['private image URL', { model: 'shengshu/viduq2-r2v', prompt: '@1', image_urls: ['https://192.168.1.1/a.png'] }, 400, 'image_urls[0]'],
    ['plain-http image URL', { model: 'shengshu/viduq2-r2v', prompt: '@1', image_urls: ['http://example.com/a.png'] }, 400, 'image_urls[0]'],
    ['plain-http video URL', { model: 'alibaba/wan2.6-r2v', prompt: 'x', video_urls: ['http://example.com/a.mp4'] }, 400, 'video_urls[0]'],
    ['Wan R2V Flash without a reference', { model: 'alibaba/wan2.6-r2v-flash', prompt: 'x' }, 400, 'image_urls'],
    ['Vidu Q3 R2V for 2 seconds', { model: 'shengshu/viduq3-r2v', prompt: '@1', image_urls: [REF], duration: 2 }, 400, 'duration'],
    ['Vidu Q3 Turbo with background music', { model: 'shengshu/viduq3-turbo-i2v', image_urls: [REF], bgm: true }, 400, 'bgm'],
    ['Seedance 1.0 Pro at 480p', { model: 'bytedance/seedance-1.0-pro', prompt: 'x', resolution: '480p' }, 400, 'resolution'],
    ['Seedance 1.5 Pro with three images', { model: 'bytedance/seedance-1.5-pro', prompt: 'x', image_urls: [REF, REF, REF] }, 400, 'image_urls'],
  ];
  for (const [name, body, status, param] of cases) {
    const response = await post(body);
    t.equal(response.status, status, name);
    t.equal(response.body.code, status, `${name}: envelope code`);
    if (param) t.equal(response.body.error.param, param, `${name}: names ${param}`);
  }
});

t.test('a task is visible only to its owner; the list is newest first and paginated', async (t) => {
  const a = await newUser();
  const b = await newUser();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const submitted = await postJson(`${gateway.v1}/videos/generations`, a.key, { model: 'bytedance/seedance-1.0-pro-fast', prompt: `n${i} [[mock job_ms=20]]`, image_urls: [REF] });
    ids.push(submitted.body.id);
  }
  t.equal((await getTask(b.key, ids[0]!)).status, 404, "another user's task is not found");
  t.equal((await getTask(a.key, 'not-a-uuid')).status, 404);
  const list = await (await fetch(`${gateway.v1}/videos/generations?per_page=2`, { headers: { authorization: `Bearer ${a.key}` } })).json() as any;
  t.equal(list.total, 3);
  t.same(list.data.map((task: Task) => task.id), [ids[2], ids[1]], 'newest first, two a page');
  const second = await (await fetch(`${gateway.v1}/videos/generations?per_page=2&page=2`, { headers: { authorization: `Bearer ${a.key}` } })).json() as any;
  t.same(second.data.map((task: Task) => task.id), [ids[0]]);
  const other = await (await fetch(`${gateway.v1}/videos/generations`, { headers: { authorization: `Bearer ${b.key}` } })).json() as any;
  t.equal(other.total, 0, "the other user's list is empty");
  for (const id of ids) await finished(a.key, id);
});

t.test('callback_url: a receiver failing three times gets the same signed event on the fourth attempt', async (t) => {
  const { key, token } = await newUser();
  const deliveries: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body });
      res.statusCode = deliveries.length <= 3 ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, {
    model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x [[mock job_ms=30]]', image_urls: [REF], callback_url: callbackUrl,
  });
  t.equal(submitted.status, 200);
  const task = await finished(key, submitted.body.id);
  t.ok(await eventually(() => deliveries.length >= 4, 10_000), 'four attempts');
  await new Promise((r) => setTimeout(r, 400));
  t.equal(deliveries.length, 4, 'no attempt after the one that succeeded');
  const ids = new Set(deliveries.map((d) => d.headers['webhook-id']));
  t.equal(ids.size, 1, 'the same webhook-id on every attempt');
  const secretResponse = await fetch(`${gateway.url}/api/v1/webhook-secret`, { headers: { authorization: `Bearer ${token}` } });
  const { secret } = await secretResponse.json() as { secret: string };
  t.match(secret, /^whsec_/);
  const last = deliveries[3]!;
  t.ok(verifyWebhook(secret, {
    id: String(last.headers['webhook-id']), timestamp: String(last.headers['webhook-timestamp']), signature: String(last.headers['webhook-signature']),
  }, last.body, Math.floor(Date.now() / 1000)), 'the signature verifies with the user secret');
  t.same(JSON.parse(last.body), task, 'the body is the final task object');
  const [row] = await gateway.sql<{ callback_status: string; callback_attempts: number }[]>`select callback_status, callback_attempts from tasks where id = ${task.id}`;
  t.same(row, { callback_status: 'delivered', callback_attempts: 4 });
});

t.test("vendors' callbacks are hints: with PUBLIC_URL set, a task ends long before its next poll", async (t) => {
  const port = await freePort();
  const hinted = await startGateway({
    mock: gateway.mock,
    port,
    env: {
      PUBLIC_URL: `http://127.0.0.1:${port}`, JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '600000', TASK_TIMER_TICK_MS: '20',
    },
  });
  t.teardown(() => hinted.close());
  for (const model of [{ model: 'shengshu/viduq2-r2v', prompt: '@1 [[mock job_ms=200]]', image_urls: [REF] }, { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x [[mock job_ms=200]]', image_urls: [REF] }]) {
    const { key } = await fastUser(hinted, `hinted-${model.model.replace('/', '-')}`, '10');
    const submitted = await postJson(`${hinted.v1}/videos/generations`, key, model);
    let task: any;
    const ended = await eventually(async () => {
      task = (await (await fetch(`${hinted.v1}/videos/generations/${submitted.body.id}`, { headers: { authorization: `Bearer ${key}` } })).json());
      return task.status !== 'pending';
    }, 10_000, 50);
    t.ok(ended && task.status === 'success', `${model.model}: ended by the vendor's callback, not a poll 10 minutes later`);
  }
  t.ok(hinted.mock.videos.callbacks.some((c) => c.ok && c.url.startsWith(`http://127.0.0.1:${port}/hooks/vendor-task/`)), 'the vendor called the hint URL');
  const forged = await fetch(`http://127.0.0.1:${port}/hooks/vendor-task/${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}?token=nope`, { method: 'POST', body: '{}' });
  t.equal(forged.status, 404, 'a hint without the right token is refused');
});

t.test('/metrics shows the tasks, the actors and the HTTP threads\' event-loop delay', async (t) => {
  const samples = parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text());
  t.ok(sumSamples(samples, 'gateway_tasks_submitted_total', { model: 'alibaba/wan2.6-r2v' }) >= 3, 'submitted, by model');
  t.ok(sumSamples(samples, 'gateway_tasks_ended_total', { model: 'shengshu/viduq1-r2v', status: 'success' }) >= 1, 'ended, by model and status');
  t.ok(sumSamples(samples, 'gateway_tasks_ended_total', { status: 'failed' }) >= 6, 'failures counted');
  t.ok(sumSamples(samples, 'gateway_task_duration_seconds_count') >= 10, 'durations observed');
  t.ok(sumSamples(samples, 'gateway_task_callbacks_total', { outcome: 'retry' }) >= 3, 'callback retries');
  t.equal(sumSamples(samples, 'gateway_task_callbacks_total', { outcome: 'delivered' }), 1, 'one delivery');
  t.ok(sumSamples(samples, 'gateway_task_shard_moves_total', { event: 'acquired' }) >= 16, 'shards acquired');
  t.ok(sumSamples(samples, 'gateway_task_steps_total', { kind: 'poll', outcome: 'retry' }) >= 3, 'transient poll failures retried');
  for (const name of ['gateway_task_shards_owned', 'gateway_task_mailbox_depth', 'gateway_task_worker_utilization', 'gateway_task_timers']) {
    t.ok(samples.some((sample) => sample.name === name), `${name} is exported`);
  }
  t.equal(samples.filter((sample) => sample.name === 'gateway_http_event_loop_delay_seconds').length, 3, 'event-loop delay: p50, p99, max');
});

t.test('the ledger check passes after all of the above', async (t) => {
  const out = await gateway.cli('ledger', 'check');
  t.match(out, /^ledger check: ok/);
});
