// Veo through Vertex AI: a routing-file target with `cloud: vertex` (the platform's service account)
// takes Veo tasks. The mock vendor plays Google's token endpoint and Vertex AI's Veo endpoints over
// TLS: the submit goes to the project's publisher model with the access token, the operation is polled
// with fetchPredictOperation, and the finished operation's base64 MP4 is stored on the media host
// before the task succeeds, charged exactly its price; a failed or filtered operation releases the
// hold; the access token never shows in a task object or the logs. Image-to-video: the first frame
// (a data: URI, or an https URL the gateway fetches through the URL guard) goes to Google as bytes;
// an input that is not a PNG or JPEG, or is larger than MEDIA_MAX_BYTES, is a 4xx naming the field
// (the gateway reads it when it takes the request), with the hold released.
import t, { type Test } from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { TEST_JWT_SECRET, fastUser } from './helpers/http-tools.js';
import { selfSignedCert } from './helpers/self-signed-cert.js';
import { serviceAccountKeyFile } from './helpers/service-account.js';
import { usageSettled } from './helpers/billing-checks.js';
import { mp4DurationSeconds } from '../src/mock-vendor/mp4.js';
import { mockPng } from '../src/mock-vendor/png.js';
import { MEDIA_KEY } from '../src/media/storage.js';

const account = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const CLIENT_EMAIL = 'gateway-veo@proj-1.iam.gserviceaccount.com';
const NANO = (usd: string) => BigInt(Math.round(Number(usd) * 1e9));
const VERTEX_MODEL_PATH = '/v1/projects/proj-1/locations/us-central1/publishers/google/models';
const MEDIA_MAX_BYTES = 64 * 1024;
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const tls = selfSignedCert('veo-vertex');
const dir = tls.dir;

let mock: MockVendor;
let gateway: Gateway;
let users = 0;

t.before(async () => {
  mock = await startMockVendor({
    tls: { key: tls.key, cert: tls.cert },
    cloud: { serviceAccounts: { [CLIENT_EMAIL]: account.publicKey } },
  });
  const file = join(dir, 'routing.yaml');
  const vertex = (name: string, model: string) => `
    targets:
      - name: ${name}
        vendor: gemini
        model: ${model}
        base_url: ${mock.url}
        cloud: { kind: vertex, region: us-central1, service_account_json_env: VERTEX_SA }`;
  writeFileSync(file, `
models:
  google/veo-3.1:${vertex('veo-vertex', 'veo-3.1-generate-001')}
  google/veo-3.1-fast:${vertex('veo-fast-vertex', 'veo-3.1-fast-generate-001')}
`);
  const serviceAccount = serviceAccountKeyFile(account.privateKey, CLIENT_EMAIL, `${mock.url}/token`);
  gateway = await startGateway({
    mock,
    env: {
      ROUTING_FILE: file, VERTEX_SA: JSON.stringify(serviceAccount), NODE_EXTRA_CA_CERTS: tls.certPath, FETCH_ALLOW_LOOPBACK: 'true',
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: join(dir, 'media'), MEDIA_MAX_BYTES: String(MEDIA_MAX_BYTES), RATE_LIMIT_DEFAULT: '1000/10', TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', LOG_LEVEL: 'info',
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await mock?.close();
  tls.remove();
});

interface Task { id: string; status: string; data?: { url: string }[]; error?: { code: string; message: string } }

async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `veo-vertex-${++users}`;
  return { user, key: (await fastUser(gateway, user, usd)).key };
}

async function polled(key: string, id: string): Promise<Task> {
  const read = async () => (await (await fetch(`${gateway.v1}/videos/generations/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Task;
  let task = await read();
  for (let i = 0; i < 400 && task.status === 'pending'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 30));
    task = await read();
  }
  return task;
}

/** The access tokens the mock's Vertex AI endpoints were sent (Bearer values). */
const tokensSent = () => mock.requests().filter((r) => r.path.startsWith('/v1/projects/')).map((r) => r.authorization?.replace(/^Bearer /, '') ?? '');

async function nothingCharged(t: Test, user: string): Promise<void> {
  const money = await usageSettled(gateway, user);
  t.equal(money.charged, 0n, 'nothing charged');
  t.equal(money.held, 0n, 'every hold released');
}

t.test('a Veo task through a Vertex AI target: submitted and polled with the access token, the base64 video stored on the media host, charged its price', async (t) => {
  const { user, key } = await newUser();
  const mark = mock.requests().length;
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1', prompt: 'waves at dusk [[mock job_ms=150]]', duration: 8, aspect_ratio: '9:16' });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  t.equal((await gateway.balanceNano(user)).held, NANO('3.20'), 'the price of 8 seconds at 720p is held');
  const task = await polled(key, (submitted.body as Task).id);
  t.equal(task.status, 'success', JSON.stringify(task));
  const url = task.data?.[0]?.url ?? '';
  t.ok(url.startsWith(`${gateway.url}/media/`), 'the video is on the media host');
  t.match(url.slice(url.lastIndexOf('/') + 1), MEDIA_KEY);
  const video = Buffer.from(await (await fetch(url)).arrayBuffer());
  t.equal(video.subarray(4, 8).toString('latin1'), 'ftyp', 'an MP4 file');
  t.equal(mp4DurationSeconds(video), 8, 'of the requested length');

  const calls = mock.requests().slice(mark);
  const submit = calls.find((r) => r.path === `${VERTEX_MODEL_PATH}/veo-3.1-generate-001:predictLongRunning`);
  t.ok(submit, 'submitted to the project\'s publisher model, by its Vertex AI id');
  t.match(submit?.authorization, /^Bearer ya29\.mock-/, 'with the service account\'s access token');
  t.same(submit?.body, { instances: [{ prompt: 'waves at dusk [[mock job_ms=150]]' }], parameters: { aspectRatio: '9:16', durationSeconds: 8, resolution: '720p' } });
  const poll = calls.find((r) => r.path === `${VERTEX_MODEL_PATH}/veo-3.1-generate-001:fetchPredictOperation`);
  t.match(poll?.body, { operationName: new RegExp(`^${VERTEX_MODEL_PATH.slice(4)}/veo-3.1-generate-001/operations/[0-9a-f]+$`) }, 'polled with fetchPredictOperation and the operation\'s name');
  t.notOk(calls.some((r) => r.path.includes('/gemini/')), 'the Gemini API never called');

  const money = await usageSettled(gateway, user);
  t.equal(money.charged, NANO('3.20'), 'charged 3.20 USD');
  t.equal(money.held, 0n, 'nothing left held');
  const shown = JSON.stringify(task) + JSON.stringify(await (await fetch(`${gateway.v1}/videos/generations`, { headers: { authorization: `Bearer ${key}` } })).json());
  for (const token of new Set(tokensSent())) {
    t.notOk(shown.includes(token), 'the access token is in no task object');
    t.notOk(gateway.output.includes(token), 'nor in the logs');
  }
});

t.test('a failed or filtered Vertex AI operation, or a refused submit, fails the task and releases the hold', async (t) => {
  const { user, key } = await newUser();
  const cases = [
    { directive: 'task_fail=13', code: '13', message: /failed \(mock\)/ },
    { directive: 'filtered', code: 'content_filtered', message: /safety filters withheld/ },
    { directive: 'submit_fail=400', code: 'INVALID_ARGUMENT', message: /Mock failure/ },
  ];
  for (const c of cases) {
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1-fast', prompt: `x [[mock job_ms=50 ${c.directive}]]`, duration: 4 });
    t.equal(submitted.status, 200);
    const task = await polled(key, (submitted.body as Task).id);
    t.equal(task.status, 'failed', `${c.directive}: failed`);
    t.equal(task.error?.code, c.code, `${c.directive}: code ${c.code}`);
    t.match(task.error?.message, c.message);
  }
  await nothingCharged(t, user);
});

t.test('image-to-video: the first frame goes to Vertex AI as bytes, from a data: URI or a URL the gateway fetched', async (t) => {
  const { user, key } = await newUser();
  const picture = mockPng('picture').toString('base64');
  for (const [entry, base64] of [[`data:image/png;base64,${PNG_BASE64}`, PNG_BASE64], [`${mock.url}/samples/picture`, picture]] as const) {
    const mark = mock.requests().length;
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1-fast', prompt: 'the picture comes alive [[mock job_ms=50]]', image_urls: [entry], duration: 4 });
    t.equal(submitted.status, 200, JSON.stringify(submitted.body));
    const task = await polled(key, (submitted.body as Task).id);
    t.equal(task.status, 'success', JSON.stringify(task));
    const submit = mock.requests().slice(mark).find((r) => r.path === `${VERTEX_MODEL_PATH}/veo-3.1-fast-generate-001:predictLongRunning`);
    t.same((submit?.body as any)?.instances, [{ prompt: 'the picture comes alive [[mock job_ms=50]]', image: { bytesBase64Encoded: base64, mimeType: 'image/png' } }],
      `${entry.slice(0, 20)}: the first frame inline, its type sniffed`);
  }
  const money = await usageSettled(gateway, user);
  t.equal(money.charged, 2n * NANO('0.40'), 'each charged 4 seconds at 0.10');
  t.equal(money.held, 0n);
});

t.test('image-to-video: an input that is not a PNG or JPEG, or is too large, is a 4xx naming the field, never sent, the hold released', async (t) => {
  const { user, key } = await newUser();
  const mark = mock.requests().length;
  const oversized = Buffer.concat([Buffer.from(PNG_BASE64, 'base64'), Buffer.alloc(MEDIA_MAX_BYTES)]).toString('base64');
  const cases = [
    { entry: `${mock.url}/samples/movie`, status: 415, code: 'unsupported_media_type', message: /not an image/ },
    { entry: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=', status: 400, code: 'invalid_request', message: /png\|jpeg/ },
    { entry: `data:image/png;base64,${oversized}`, status: 413, code: 'payload_too_large', message: new RegExp(`${MEDIA_MAX_BYTES}`) },
  ];
  for (const c of cases) {
    const response = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'google/veo-3.1', prompt: 'x', image_urls: [c.entry], duration: 4 });
    t.equal(response.status, c.status, JSON.stringify(response.body).slice(0, 300));
    const error = (response.body as any).error;
    t.equal(error?.code, c.code);
    t.match(error?.param, /^image_urls/, 'naming the field');
    t.match(error?.message, c.message);
  }
  t.notOk(mock.requests().slice(mark).some((r) => r.path.endsWith(':predictLongRunning')), 'none reached Vertex AI');
  await nothingCharged(t, user);
});
