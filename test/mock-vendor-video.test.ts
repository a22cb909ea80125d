// The mock vendor's video task APIs on their own, over real HTTP: each vendor's auth refusals and
// status spellings, cancel where allowed, and the callbacks Vidu (signed) and Ark send.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac } from 'node:crypto';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { mp4DurationSeconds } from '../src/mock-vendor/mp4.js';
import { eventually } from './helpers/http-tools.js';

let mock: MockVendor;
t.before(async () => { mock = await startMockVendor({ port: 0 }); });
t.teardown(() => mock.close());

const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
  const response = await fetch(`${mock.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: await response.json() as any };
};
const DS = { authorization: 'Bearer k', 'x-dashscope-async': 'enable' };
const VIDU = { authorization: 'Token k' };
const ARK = { authorization: 'Bearer k' };

t.test('auth: each vendor refuses a missing or wrong credential in its own shape', async (t) => {
  const ds = await call('POST', '/alibaba/v1/services/aigc/video-generation/video-synthesis', {}, { model: 'wan2.6-r2v', input: { prompt: 'x' } });
  t.match(ds, { status: 401, body: { code: 'InvalidApiKey' } });
  const sync = await call('POST', '/alibaba/v1/services/aigc/video-generation/video-synthesis', { authorization: 'Bearer k' }, { model: 'wan2.6-r2v', input: { prompt: 'x' } });
  t.match(sync, { status: 403, body: { code: 'AccessDenied' } }, 'DashScope video is async-only');
  t.match(await call('POST', '/shengshu/v1/ent/v2/img2video', { authorization: 'Bearer k' }, { model: 'viduq3-pro', images: ['x'] }), { status: 401 }, 'Vidu wants Token, not Bearer');
  t.match(await call('POST', '/bytedance/v1/contents/generations/tasks', {}, { model: 'm', content: [] }), { status: 401, body: { error: { code: 'AuthenticationError' } } });
});

t.test('a DashScope task goes PENDING/RUNNING to SUCCEEDED with a video of the asked length; transient poll failures first', async (t) => {
  const submitted = await call('POST', '/alibaba/v1/services/aigc/video-generation/video-synthesis', DS,
    // The job runs long enough to be seen running after the two failing polls, however slow those are on a busy machine.
    { model: 'wan2.6-r2v', input: { prompt: 'x [[mock job_ms=2000 poll_fail=503 poll_fail_times=2]]' }, parameters: { duration: 7 } });
  const id = submitted.body.output.task_id;
  t.equal(submitted.body.output.task_status, 'PENDING');
  const statuses: (string | number)[] = [];
  let last: any;
  await eventually(async () => {
    const polled = await call('GET', `/alibaba/v1/tasks/${id}`, DS);
    last = polled.body;
    statuses.push(polled.status === 200 ? polled.body.output.task_status : polled.status);
    return polled.status === 200 && polled.body.output.task_status === 'SUCCEEDED';
  }, 15_000, 20);
  t.same(statuses.slice(0, 2), [503, 503], 'the first two polls fail');
  t.ok(statuses.includes('RUNNING') || statuses.includes('PENDING'), 'running on the way');
  const video = Buffer.from(await (await fetch(last.output.video_url)).arrayBuffer());
  t.equal(mp4DurationSeconds(video), 7);
  t.equal(last.usage.video_duration, 7);
  t.match((await call('GET', '/alibaba/v1/tasks/no-such-task', DS)).body, { output: { task_status: 'UNKNOWN' } });
});

t.test('cancel: a queued task is cancelled in each dialect; an ended one is refused', async (t) => {
  const ds = (await call('POST', '/alibaba/v1/services/aigc/video-generation/video-synthesis', DS, { model: 'm', input: { prompt: '[[mock job_ms=5000]]' } })).body.output.task_id;
  t.equal((await call('POST', `/alibaba/v1/tasks/${ds}/cancel`, DS)).status, 200);
  t.equal((await call('GET', `/alibaba/v1/tasks/${ds}`, DS)).body.output.task_status, 'CANCELED');
  const vidu = (await call('POST', '/shengshu/v1/ent/v2/img2video', VIDU, { model: 'viduq3-pro', images: ['x'], prompt: '[[mock job_ms=5000]]' })).body.task_id;
  t.equal((await call('POST', `/shengshu/v1/ent/v2/tasks/${vidu}/cancel`, VIDU)).status, 200);
  t.match((await call('GET', `/shengshu/v1/ent/v2/tasks/${vidu}/creations`, VIDU)).body, { state: 'failed', err_code: 'UserCancelled' });
  const ark = (await call('POST', '/bytedance/v1/contents/generations/tasks', ARK, { model: 'm', content: [{ type: 'text', text: '[[mock job_ms=20]]' }] })).body.id;
  await new Promise((r) => setTimeout(r, 60));
  t.match(await call('DELETE', `/bytedance/v1/contents/generations/tasks/${ark}`, ARK), { status: 400, body: { error: { code: 'UnsupportedOperation' } } }, 'an ended task cannot be cancelled');
  t.equal((await call('GET', `/bytedance/v1/contents/generations/tasks/${ark}`, ARK)).body.status, 'succeeded');
});

t.test('callbacks: Vidu signs with the API token; Ark retries a failing receiver', async (t) => {
  const received: { path: string; headers: http.IncomingHttpHeaders; body: any }[] = [];
  let arkFailures = 2;
  const receiver = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => { text += chunk; });
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      const failing = req.url === '/ark' && JSON.parse(text).status === 'succeeded' && arkFailures-- > 0;
      res.writeHead(failing ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => receiver.close());
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  await call('POST', '/shengshu/v1/ent/v2/img2video', { authorization: 'Token vidu-secret-token' }, { model: 'viduq3-pro', images: ['x'], prompt: '[[mock job_ms=60]]', callback_url: `${base}/vidu?x=1` });
  await call('POST', '/bytedance/v1/contents/generations/tasks', ARK, { model: 'm', content: [{ type: 'text', text: '[[mock job_ms=60]]' }], callback_url: `${base}/ark` });
  t.ok(await eventually(() => received.filter((r) => r.path === '/ark' && r.body.status === 'succeeded').length === 3, 3000), 'Ark: the final callback retried until answered');
  const vidu = received.filter((r) => r.path === '/vidu?x=1');
  t.same(vidu.map((r) => r.body.state), ['processing', 'success'], 'Vidu: processing, then the end');
  const h = vidu[1]!.headers;
  const signing = ['POST', '/vidu', 'x=1', 'vidu', String(h.date), `Date:${h.date}\nx-request-nonce:${h['x-request-nonce']}\n`].join('\n');
  t.equal(h['x-hmac-signature'], createHmac('sha256', 'vidu-secret-token').update(signing).digest('base64'), 'the signature is the token\'s HMAC of the signing string');
  t.match(h, { 'x-hmac-algorithm': 'hmac-sha256', 'x-hmac-access-key': 'vidu', 'x-hmac-signed-headers': 'Date;x-request-nonce' });
  t.notOk(received.find((r) => r.path === '/ark')!.headers['x-hmac-signature'], 'Ark does not sign');
});
