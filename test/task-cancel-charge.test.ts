// Cancelling a task its vendor has accepted is not free unless the vendor's own cancel stops the job
// (issue 24, item 9): a loop of submit and cancel must not spend the operator's money. And a
// non-string `callback_url` is a 400, not silently ignored (item 15).
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser } from './helpers/http-tools.js';
import { ledgerCleanOnceTasksEnd } from './helpers/task-checks.js';
import { callbackUrlOf } from '../src/http/routes/tasks.js';
import { ApiError } from '../src/http/errors.js';

let gateway: Gateway;
let users = 0;
const TEN_USD = 10_000_000_000n;

t.before(async () => {
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_STORAGE: 'off', RATE_LIMIT_DEFAULT: '5000/10', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '30', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_USER_CONCURRENCY: '50',
    },
  });
});
t.teardown(() => gateway.close());

async function newUser() {
  const user = `cancel-charge-${++users}`;
  return { user, ...(await fastUser(gateway, user, '10')) };
}

const video = (jobMs: number) => ({ model: 'alibaba/wan2.6-r2v', prompt: `x [[mock job_ms=${jobMs}]]`, video_urls: ['https://localhost/r.mp4'] });
const urlOf = (id: string) => `${gateway.v1}/videos/generations/${id}`;

/** DELETE, asked again while the task is being submitted to its vendor (409 `task_starting`). */
async function cancel(key: string, id: string): Promise<{ status: number; body: any }> {
  for (;;) {
    const response = await fetch(urlOf(id), { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
    const body = await response.json() as any;
    if (response.status !== 409 || body.error?.code !== 'task_starting') return { status: response.status, body };
    t.equal(response.headers.get('retry-after'), '1');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const taskRow = async (id: string) => (await gateway.sql<{ upstream_id: string | null; upstream_status: string | null; hold_nano: bigint; charged_nano: bigint | null }[]>`
  select upstream_id, upstream_status, hold_nano, charged_nano from tasks where id = ${id}`)[0]!;
const usageOf = (user: string) => gateway.sql<{ id: string; credits_nano: bigint }[]>`
  select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by id`;

t.test('a cancel the vendor refuses (the job is already running) is charged the hold, once', async (t) => {
  const { user, key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, video(8000));
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const id = submitted.body.id as string;
  // The mock's DashScope queues a job for 30% of job_ms, then runs it; its cancel takes queued jobs only.
  t.ok(await eventually(async () => (await taskRow(id)).upstream_status === 'RUNNING', 10_000), 'the vendor runs the job');
  const { hold_nano: holdNano, upstream_id: upstreamId } = await taskRow(id);
  const cancelled = await cancel(key, id);
  t.equal(cancelled.status, 200);
  t.match(cancelled.body, { status: 'failed', error: { code: 'cancelled', message: /did not confirm the cancel.*charged/ } });
  t.notOk(gateway.mock.videos.list('alibaba').find((job) => job.id === upstreamId)?.cancelled, 'the vendor did not cancel it');
  t.same(await usageOf(user), [{ id, credits_nano: -holdNano }], 'one usage transaction: the hold');
  t.same(await gateway.balanceNano(user), { credits: TEN_USD - holdNano, held: 0n }, 'charged when the DELETE answers');
  t.equal((await taskRow(id)).charged_nano, holdNano);
  t.equal(BigInt(Math.round(cancelled.body.usage?.cost * 1e9)), holdNano, 'the cancel answer\'s usage.cost is the charge');
  t.equal((await cancel(key, id)).status, 409, 'a second cancel changes nothing');
  t.same(await usageOf(user), [{ id, credits_nano: -holdNano }], 'still charged once');
});

t.test('a loop of submit and cancel leaves no vendor job unpaid: each is cancelled at the vendor or charged', async (t) => {
  const { user, key } = await newUser();
  const before = new Set(gateway.mock.videos.list('alibaba').map((job) => job.id));
  const ids: string[] = [];
  for (let i = 0; i < 24; i++) {
    // A short queue at the vendor (90 ms), and cancels landing before the actor, during the submit, while queued and while running.
    const submitted = await postJson(`${gateway.v1}/videos/generations`, key, video(300));
    t.equal(submitted.status, 200);
    const id = submitted.body.id as string;
    ids.push(id);
    await new Promise((r) => setTimeout(r, (i * 17) % 160));
    const cancelled = await cancel(key, id);
    t.ok(cancelled.status === 200 || (cancelled.status === 409 && cancelled.body.error.code === 'task_ended'), `round ${i}: cancelled, or it had ended`);
  }
  t.ok(await eventually(async () => {
    const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user} and status = 'pending'`;
    return row!.n === 0;
  }, 20_000), 'every task ended');

  const rows = await gateway.sql<{ id: string; status: string; upstream_id: string | null; hold_nano: bigint; charged_nano: bigint | null }[]>`
    select id, status, upstream_id, hold_nano, charged_nano from tasks where user_id = ${user}`;
  const byUpstream = new Map(rows.filter((row) => row.upstream_id).map((row) => [row.upstream_id!, row]));
  const usage = new Map((await usageOf(user)).map((row) => [row.id, -row.credits_nano]));
  const jobs = gateway.mock.videos.list('alibaba').filter((job) => !before.has(job.id));
  t.ok(jobs.length > 0, `the vendor got ${jobs.length} of the ${ids.length} jobs`);
  const outcomes = { freeBeforeVendor: rows.length - jobs.length, cancelledAtVendor: 0, charged: 0 };
  for (const job of jobs) {
    const row = byUpstream.get(job.id);
    t.ok(row, `vendor job ${job.id} is recorded on its task`);
    if (!row) continue;
    if (job.cancelled) {
      outcomes.cancelledAtVendor++;
      t.notOk(usage.has(row.id), `task ${row.id}: cancelled at the vendor, not charged`);
    } else {
      outcomes.charged++;
      t.ok((usage.get(row.id) ?? 0n) > 0n, `task ${row.id}: the vendor ran its job (${row.status}), so it is charged`);
    }
  }
  for (const row of rows) t.equal(usage.get(row.id) ?? 0n, row.charged_nano ?? 0n, `task ${row.id}: charged what its row says, once`);
  t.comment(JSON.stringify(outcomes));
  const spent = [...usage.values()].reduce((a, b) => a + b, 0n);
  t.same(await gateway.balanceNano(user), { credits: TEN_USD - spent, held: 0n }, 'the balance moved by the charges only');
});

t.test('a callback_url that is not a string is a 400 naming it, and nothing is held', async (t) => {
  const { user, key } = await newUser();
  for (const callbackUrl of [42, true, {}, ['https://example.com/hook']]) {
    const response = await postJson(`${gateway.v1}/videos/generations`, key, { ...video(300), callback_url: callbackUrl });
    assertEnvelope(t, response, 400, 'invalid_request', JSON.stringify(callbackUrl));
    t.equal(response.body.error.param, 'callback_url');
    // The shared helper refuses it too, whatever a route's schema lets through.
    t.throws(() => callbackUrlOf({ callback_url: callbackUrl }), new ApiError(400, 'invalid_request', "Invalid value for 'callback_url': must be a string.", 'callback_url'));
  }
  t.equal(callbackUrlOf({ callback_url: null }), null);
  t.same(await gateway.balanceNano(user), { credits: TEN_USD, held: 0n }, 'nothing held');
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0, 'no task written');
  const withNull = await postJson(`${gateway.v1}/videos/generations`, key, { ...video(300), callback_url: null });
  t.equal(withNull.status, 200, 'null means no callback');
});

t.test('once every task has ended, the ledger check passes', (t) => ledgerCleanOnceTasksEnd(t, gateway));
