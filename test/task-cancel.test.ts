// Cancelling tasks and keeping their records: DELETE on a pending video, speech or music task ends it
// failed with code `cancelled` and settles its hold at once: free when the vendor's own cancel stops
// the job, charged the hold when the vendor runs it to its end (see task-cancel-charge.test.ts), and
// sends the signed callback; an ended task is 409; a cancel racing success ends one way only, charged
// once; media past retention is gone while the task record stays, marked expired.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';
import { ledgerCleanOnceTasksEnd } from './helpers/task-checks.js';
import { verifyWebhook } from '../src/tasks/webhook-signature.js';

let gateway: Gateway;
let mediaDir: string;
let users = 0;
const REF = 'https://localhost/reference.png';
const TEN_USD = 10_000_000_000n;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'cancel-test-'));
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, MEDIA_SWEEP_MS: '200', RATE_LIMIT_DEFAULT: '5000/10', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '30', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500', TASK_USER_CONCURRENCY: '50',
      TASK_CALLBACK_RETRY_MS: '100', TASK_CALLBACK_MAX_DELAY_MS: '200',
    },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

async function newUser(usd = '10') {
  const user = `cancel-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

const call = async (method: string, url: string, key: string) => {
  const response = await fetch(url, { method, headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: await response.json() as any };
};

/** DELETE, asked again while the task is being submitted to its vendor (409 `task_starting`: neither free nor chargeable yet). */
async function cancelWhenPossible(url: string, key: string) {
  for (;;) {
    const cancel = await call('DELETE', url, key);
    if (cancel.status !== 409 || cancel.body.error.code !== 'task_starting') return cancel;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function finished(key: string, url: string, timeoutMs = 15_000) {
  let last: any;
  const ok = await eventually(async () => {
    last = (await call('GET', url, key)).body;
    return last.status !== 'pending';
  }, timeoutMs, 25);
  if (!ok) throw new Error(`still pending: ${JSON.stringify(last)}`);
  return last;
}

/** The vendor's id of the task once the vendor has it ('made-at-once' for vendors that answer with the result). */
async function startedAtVendor(id: string): Promise<string | undefined> {
  let upstream: string | undefined;
  await eventually(async () => {
    const [row] = await gateway.sql<{ upstream_id: string | null }[]>`select upstream_id from tasks where id = ${id}`;
    upstream = row?.upstream_id ?? undefined;
    return upstream !== undefined;
  }, 10_000, 20);
  return upstream;
}

const usageOf = (user: string) => gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;

/** A long job on each kind of endpoint, with the vendor cancel the mock should see (none: the vendor runs it to its end, and the cancel is charged). */
const LONG = [
  { name: 'video on DashScope', path: 'videos/generations', body: { model: 'alibaba/wan2.6-r2v', prompt: 'x [[mock job_ms=60000]]', video_urls: ['https://localhost/r.mp4'] }, vendor: 'alibaba' },
  { name: 'video on Ark', path: 'videos/generations', body: { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'x [[mock job_ms=60000]]', image_urls: [REF] }, vendor: 'bytedance' },
  { name: 'speech on MiniMax (no vendor cancel)', path: 'audio/speech', body: { model: 'minimax/speech-2.6-hd', input: 'x [[mock job_ms=60000]]' }, vendor: undefined },
  { name: 'music made at once (ElevenLabs)', path: 'audio/generations', body: { model: 'elevenlabs/eleven-music', prompt: 'x [[mock latency_ms=3000]]', duration: 5 }, vendor: undefined },
] as const;

t.test('cancel a task its vendor accepted: failed `cancelled`, the hold settled at once (free only when the vendor cancelled it), 409 after', async (t) => {
  for (const c of LONG) {
    await t.test(c.name, async (t) => {
      const { user, key } = await newUser();
      const submitted = await postJson(`${gateway.v1}/${c.path}`, key, c.body);
      t.equal(submitted.status, 200, JSON.stringify(submitted.body));
      t.ok((await gateway.balanceNano(user)).held > 0n, 'held while pending');
      const upstreamId = await startedAtVendor(submitted.body.id);
      t.ok(upstreamId, 'running at the vendor');

      const url = `${gateway.v1}/${c.path}/${submitted.body.id}`;
      const holdNano = (await gateway.balanceNano(user)).held;
      const cancelled = await call('DELETE', url, key);
      t.equal(cancelled.status, 200);
      t.match(cancelled.body, { id: submitted.body.id, status: 'failed', error: { code: 'cancelled' } });
      const now = await gateway.balanceNano(user);
      t.equal(now.held, 0n, 'the hold is settled when the DELETE answers');
      const chargeNano = c.vendor ? 0n : holdNano;
      t.equal(now.credits, TEN_USD - chargeNano, c.vendor ? 'nothing charged: the vendor cancelled the job' : 'charged the hold: the vendor runs the job to its end');

      t.match((await call('GET', url, key)).body, { status: 'failed', error: { code: 'cancelled' } }, 'GET shows it cancelled');
      const again = await call('DELETE', url, key);
      t.equal(again.status, 409, 'cancelling it again is 409');
      t.equal(again.body.error.code, 'task_ended');
      if (c.vendor) {
        t.ok(await eventually(() => gateway.mock.videos.list(c.vendor).some((task) => task.id === upstreamId && task.cancelled), 5000), 'the vendor cancelled its task');
      }
      // A late result (the music call finishing) must not bring a charge.
      await new Promise((r) => setTimeout(r, c.name.startsWith('music') ? 3500 : 200));
      t.match((await call('GET', url, key)).body, { status: 'failed', error: { code: 'cancelled' } }, 'still cancelled later');
      t.same(await usageOf(user), c.vendor ? [] : [{ id: submitted.body.id, credits_nano: -holdNano }], c.vendor ? 'no usage transaction' : 'one usage transaction, the hold');
      t.same(await gateway.balanceNano(user), { credits: TEN_USD - chargeNano, held: 0n });
    });
  }
});

t.test('cancelling an ended task is 409; an unknown one 404', async (t) => {
  const { key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/audio/speech`, key, { model: 'openai/tts-1-hd', input: 'done', voice: 'alloy' });
  const url = `${gateway.v1}/audio/speech/${submitted.body.id}`;
  t.equal((await finished(key, url)).status, 'success');
  const refused = await call('DELETE', url, key);
  t.equal(refused.status, 409);
  t.match(refused.body.error, { code: 'task_ended', type: 'conflict_error' });
  t.equal((await call('DELETE', `${gateway.v1}/audio/speech/00000000-0000-4000-8000-000000000000`, key)).status, 404);
});

t.test('a cancelled task with a callback_url gets the signed final object', async (t) => {
  const { key, token } = await newUser();
  const deliveries: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => { deliveries.push({ headers: req.headers, body }); res.writeHead(204).end(); });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const submitted = await postJson(`${gateway.v1}/audio/speech`, key, {
    model: 'minimax/speech-2.6-hd', input: 'x [[mock job_ms=60000]]', callback_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
  });
  const cancelled = await cancelWhenPossible(`${gateway.v1}/audio/speech/${submitted.body.id}`, key);
  t.equal(cancelled.status, 200);
  t.ok(await eventually(() => deliveries.length === 1, 5000), 'one delivery');
  const { secret } = await (await fetch(`${gateway.url}/api/v1/webhook-secret`, { headers: { authorization: `Bearer ${token}` } })).json() as { secret: string };
  const [delivery] = deliveries;
  t.ok(verifyWebhook(secret, {
    id: String(delivery!.headers['webhook-id']), timestamp: String(delivery!.headers['webhook-timestamp']), signature: String(delivery!.headers['webhook-signature']),
  }, delivery!.body, Math.floor(Date.now() / 1000)), 'signed');
  t.match(JSON.parse(delivery!.body), { id: submitted.body.id, status: 'failed', error: { code: 'cancelled' } });
});

t.test('a cancel racing success ends one way only: cancelled (free before the vendor has the job, else its hold), or succeeded, charged once (many repetitions)', async (t) => {
  const ROUNDS = 60;
  const outcomes = { cancelled: 0, succeeded: 0 };
  const round = async (i: number) => {
    const { user, key } = await newUser();
    // Half on a vendor task (MiniMax, polled), half made at once (OpenAI); the cancel lands around the end.
    const onTask = i % 2 === 0;
    const jobMs = 20 + (i * 7) % 120;
    const path = 'audio/speech';
    const body = onTask
      ? { model: 'minimax/speech-2.6-hd', input: `race ${i} [[mock job_ms=${jobMs}]]` }
      : { model: 'openai/tts-1-hd', input: `race ${i} [[mock latency_ms=${jobMs}]]`, voice: 'alloy' };
    const submitted = await postJson(`${gateway.v1}/${path}`, key, body);
    if (submitted.status !== 200) throw new Error(JSON.stringify(submitted.body));
    await new Promise((r) => setTimeout(r, jobMs + ((i * 13) % 90) - 30));
    const url = `${gateway.v1}/${path}/${submitted.body.id}`;
    const holdNano = (await gateway.sql<{ hold_nano: bigint }[]>`select hold_nano from tasks where id = ${submitted.body.id}`)[0]!.hold_nano;
    const cancel = await cancelWhenPossible(url, key);
    const task = await finished(key, url);
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n, 5000);
    const usage = await usageOf(user);
    const balance = await gateway.balanceNano(user);
    if (cancel.status === 200) {
      outcomes.cancelled++;
      t.match(task, { status: 'failed', error: { code: 'cancelled' } }, `round ${i}: cancelled`);
      // Neither vendor here has a cancel: once it has the job, the cancel is charged the hold.
      const charged = usage.length > 0;
      if (charged) t.same(usage, [{ id: submitted.body.id, credits_nano: -holdNano }], `round ${i}: cancelled after the vendor had it, charged its hold once`);
      t.match(task.error.message, charged ? /its price was charged/ : /nothing was charged/, `round ${i}: the message says which`);
      t.same(balance, { credits: charged ? TEN_USD - holdNano : TEN_USD, held: 0n }, `round ${i}: balance down by the charge only`);
    } else {
      outcomes.succeeded++;
      t.equal(cancel.status, 409, `round ${i}: the cancel lost to success`);
      t.equal(task.status, 'success', `round ${i}: succeeded`);
      t.equal(usage.length, 1, `round ${i}: charged once`);
      t.equal(balance.credits, TEN_USD + usage[0]!.credits_nano, `round ${i}: by that charge only`);
      t.equal(balance.held, 0n);
    }
  };
  for (let i = 0; i < ROUNDS; i += 6) await Promise.all([0, 1, 2, 3, 4, 5].map((k) => round(i + k)));
  t.ok(outcomes.cancelled > 0 && outcomes.succeeded > 0, `both outcomes happened (${JSON.stringify(outcomes)})`);
});

t.test('retention: media past 14 days is gone (404, deleted); the task record stays, its URL marked expired', async (t) => {
  const { key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/audio/speech`, key, { model: 'openai/tts-1-hd', input: 'keep me', voice: 'alloy' });
  const url = `${gateway.v1}/audio/speech/${submitted.body.id}`;
  const task = await finished(key, url);
  const media = task.data[0].url as string;
  t.equal(task.data[0].expired, false, 'fresh: not expired');
  t.ok(task.data[0].expires_at - Date.now() / 1000 > 13.9 * 86_400, 'expires in 14 days');
  t.equal((await fetch(media)).status, 200);

  // Fifteen days pass: the file's age and the task's end move back together.
  const name = media.slice(media.lastIndexOf('/') + 1);
  const old = new Date(Date.now() - 15 * 86_400_000);
  await utimes(join(mediaDir, name), old, old);
  await gateway.sql`update tasks set ended_at = ${old}, created_at = ${old} where id = ${submitted.body.id}`;
  t.equal((await fetch(media)).status, 404, 'the media host no longer serves it');
  t.ok(await eventually(async () => !(await readdir(mediaDir)).includes(name), 5000), 'the janitor deleted the file');
  const kept = (await call('GET', url, key)).body;
  t.match(kept, { id: submitted.body.id, status: 'success', data: [{ url: media, expired: true }] }, 'the record stays, marked expired');
});

t.test('once every task has ended, the ledger check passes', (t) => ledgerCleanOnceTasksEnd(t, gateway));
