// `node dist/bench/tasks.js`: the task runtime under load. 1,000 video tasks from 100 users against the
// mock vendor's Ark task API with 2-second jobs, while one connection sends chat calls beside them.
// Prints one JSON line: task throughput, each task's end-to-end time over the vendor's own job time
// (p50/p99, so the poll pacing and every step of the gateway), the HTTP threads' event-loop delay
// during the run, and the chat p50 during the tasks against the chat p50 without them (measured
// before and after, alternating, in the same run). Progress goes to stderr.
// Options: BENCH_TASKS (1000), BENCH_TASK_USERS (100), BENCH_TASK_JOB_MS (2000), BENCH_TASK_RATE
// (submits per second, 100), BENCH_TASK_POLL_MS (the gateway's TASK_POLL_MS, 3000 as in production),
// BENCH_THREADS (HTTP threads, 2).
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { Pool, request } from 'undici';
import { rm } from 'node:fs/promises';
import { onCleanup, runMain } from './cleanup.js';
import { createBenchKey, startGatewayProcess } from './gateway-process.js';
import { startMockProcess } from './mock-process.js';
import { chatCalls } from './calls.js';
import { runLoad, type Target } from './load.js';
import { percentile, round } from './stats.js';
import { signJwt } from '../src/auth/jwt.js';

const note = (message: string) => process.stderr.write(`bench tasks: ${message}\n`);
const envInt = (name: string, fallback: number) => {
  const raw = process.env[name];
  return raw && /^\d+$/.test(raw) ? Number(raw) : fallback;
};

const TASKS = envInt('BENCH_TASKS', 1000);
const USERS = envInt('BENCH_TASK_USERS', 100);
const JOB_MS = envInt('BENCH_TASK_JOB_MS', 2000);
const POLL_MS = envInt('BENCH_TASK_POLL_MS', 3000);
const RATE = envInt('BENCH_TASK_RATE', 100);
const THREADS = envInt('BENCH_THREADS', 2);
/** Submits in flight at once. */
const SUBMITTERS = 20;
/** Chat calls per quiet measurement. */
const QUIET_CALLS = 1500;
const MODEL = 'bytedance/seedance-1.0-pro-fast';

/** `gateway_http_event_loop_delay_seconds{quantile=…}` of a scrape (the worst HTTP thread since the previous scrape). */
async function loopDelay(url: string): Promise<{ p99Ms: number; maxMs: number }> {
  const text = await (await request(`${url}/metrics`)).body.text();
  const read = (quantile: string) => Number(new RegExp(`^gateway_http_event_loop_delay_seconds\\{quantile="${quantile}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99Ms: round(read('0.99')), maxMs: round(read('1')) };
}

async function main(): Promise<number> {
  note(`${TASKS} tasks from ${USERS} users at ${RATE}/s, ${JOB_MS} ms jobs, TASK_POLL_MS ${POLL_MS}, ${THREADS} HTTP threads`);
  const mock = await startMockProcess({ MOCK_VIDEO_JOB_MS: String(JOB_MS) });
  const jwtSecret = `bench-${randomBytes(24).toString('hex')}`;
  const mediaDir = `/tmp/gateway-bench-media-${randomBytes(4).toString('hex')}`;
  onCleanup(() => rm(mediaDir, { recursive: true, force: true }));
  const gateway = await startGatewayProcess({
    mockUrl: mock.url, threads: THREADS,
    env: {
      JWT_SECRET: jwtSecret, BYTEDANCE_BASE_URL: `${mock.url}/bytedance/v1`, BYTEDANCE_API_KEY: 'bench', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: String(POLL_MS), TASK_USER_CONCURRENCY: String(Math.ceil(TASKS / USERS)), MEDIA_DIR: mediaDir,
    },
  });
  const sql = postgres(gateway.env.DATABASE_URL!, { max: 2, onnotice: () => {} });
  try {
    // Users with credit: deposits written as the payment flow's confirmation would, then a key each.
    const users = Array.from({ length: USERS }, (_, i) => `bench-task-user-${i}`);
    await sql`insert into accounts (id) select unnest(${users}::text[]) on conflict do nothing`;
    await sql`insert into transactions (id, user_id, credits_nano, payment_method)
      select gen_random_uuid(), u, 1000000000000, 'bench' from unnest(${users}::text[]) as u`;
    const keys = await Promise.all(users.map((user) => createBenchKey(gateway.url, signJwt(jwtSecret, { sub: user, exp: Math.floor(Date.now() / 1000) + 3600 }), { name: 'bench' })));

    const chat = new Pool(gateway.url, { connections: 1 });
    const target: Target = { side: 'gateway', origin: gateway.url, path: '/v1/chat/completions', apiKey: gateway.apiKey };
    const call = chatCalls({ prompt: 'bench [[mock chunks=16]]', stream: false, maxTokens: 64 }).gateway;
    const quietP50 = async () => percentile((await runLoad(chat, target, call, { concurrency: 1, requests: QUIET_CALLS })).latenciesMs, 50);
    await quietP50(); // warm-up
    const quietBefore = await quietP50();

    await loopDelay(gateway.url); // starts the event-loop window
    const started = Date.now();
    let submitted = 0;
    let refused = 0;
    const submitter = async () => {
      while (submitted < TASKS) {
        const n = submitted++;
        // Paced: task n leaves no earlier than n / RATE seconds after the start.
        const due = started + (n * 1000) / RATE;
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
        const response = await request(`${gateway.url}/v1/videos/generations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${keys[n % USERS]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, prompt: `bench task ${n}`, image_urls: ['https://localhost/bench.png'] }),
        });
        await response.body.text();
        if (response.statusCode !== 200) refused++;
      }
    };
    let running = true;
    const busy: number[] = [];
    const chatDuring = (async () => {
      while (running) busy.push(...(await runLoad(chat, target, call, { concurrency: 1, requests: 200 })).latenciesMs);
    })();
    await Promise.all(Array.from({ length: SUBMITTERS }, submitter));
    const submitSeconds = (Date.now() - started) / 1000;
    for (;;) {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from tasks where status = 'pending'`;
      if (row!.n === 0) break;
      if (Date.now() - started > 10 * 60_000) throw new Error(`${row!.n} tasks still pending after 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    running = false;
    await chatDuring;
    const delay = await loopDelay(gateway.url);
    const quietAfter = await quietP50();

    const rows = await sql<{ status: string; created_at: Date; ended_at: Date }[]>`select status, created_at, ended_at from tasks`;
    const overheadMs = rows.map((row) => row.ended_at.getTime() - row.created_at.getTime() - JOB_MS);
    const lastEnd = Math.max(...rows.map((row) => row.ended_at.getTime()));
    const quiet = (quietBefore + quietAfter) / 2;
    const duringP50 = percentile(busy, 50);
    const line = {
      scenario: 'tasks',
      tasks: rows.length, succeeded: rows.filter((row) => row.status === 'success').length, refused_submits: refused,
      users: USERS, submit_rate: RATE, job_ms: JOB_MS, poll_ms: POLL_MS, http_threads: THREADS,
      submit_seconds: round(submitSeconds), tasks_per_second: round(rows.length / ((lastEnd - started) / 1000)),
      overhead_p50_ms: round(percentile(overheadMs, 50)), overhead_p99_ms: round(percentile(overheadMs, 99)),
      http_loop_delay_p99_ms: delay.p99Ms, http_loop_delay_max_ms: delay.maxMs,
      chat_p50_quiet_ms: round(quiet), chat_p50_during_ms: round(duringP50), chat_p50_rise: round(duringP50 / quiet - 1),
      chat_p50_rise_met: duringP50 / quiet - 1 <= 0.10, chat_calls_during: busy.length,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    await chat.close();
    return line.succeeded === TASKS && refused === 0 ? 0 : 1;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

await runMain('bench tasks', main);
