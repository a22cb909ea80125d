// `node dist/bench/usage-api.js`: the two read endpoints of issue 28 at volume. A gateway in its own
// process on a scratch database; 1,000,000 request-log rows of one user over the last 30 days (and the
// rollup rows they make, as the ledger writer would have written them); then GET /api/v1/usage for
// 30 days by day and model, and the first page of GET /api/v1/requests, each timed over HTTP.
// Prints one JSON line (targets: usage p50 < 50 ms, requests p50 < 20 ms). BENCH_SCALE scales the rows.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { request } from 'undici';
import { runMain } from './cleanup.js';
import { startGatewayProcess } from './gateway-process.js';
import { percentile, round } from './stats.js';
import { connect } from '../src/store/db.js';
import { ensureRequestLogPartitions } from '../src/store/request-logs.js';

const ROWS = Math.round(1_000_000 * Number(process.env.BENCH_SCALE || '1'));
const SAMPLES = 30;
const WARMUP = 5;
const DAY_MS = 86_400_000;
const USER = 'bench';
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));

async function timed(url: string, token: string): Promise<{ ms: number[]; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const started = process.hrtime.bigint();
    const response = await request(url, { headers: { authorization: `Bearer ${token}` } });
    const text = await response.body.text();
    const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
    if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${text}`);
    if (i >= WARMUP) ms.push(elapsed);
    bytes = text.length;
  }
  return { ms, bytes };
}

const summary = ({ ms, bytes }: { ms: number[]; bytes: number }) => ({
  p50_ms: round(percentile(ms, 50), 2), p95_ms: round(percentile(ms, 95), 2), max_ms: round(Math.max(...ms), 2), bytes,
});

await runMain('usage-api', async () => {
  const gateway = await startGatewayProcess({ mockUrl: 'http://127.0.0.1:9', threads: 1 });
  const sql = connect(gateway.env.DATABASE_URL!, 2);
  try {
    const now = Date.now();
    await ensureRequestLogPartitions(sql, new Date(now - 31 * DAY_MS), 2);
    const keys = (await sql<{ id: string }[]>`select id::text from api_keys where user_id = ${USER}`).map((row) => row.id);
    const filled = process.hrtime.bigint();
    // One user's calls spread evenly over 30 days: 5 models, its keys, one in 20 failed.
    await sql`
      insert into request_logs (id, created_at, user_id, api_key_id, model, endpoint, stream, status, error_code, prompt_tokens,
                                completion_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms)
      select gen_random_uuid(), ${new Date(now - 30 * DAY_MS)}::timestamptz + (i * ${30 * DAY_MS / ROWS}::float8) * interval '1 millisecond', ${USER},
             (${sql.array(keys)}::uuid[])[1 + i % ${keys.length}], 'openai/model-' || (i % 5), 'chat.completions', i % 2 = 0,
             case when i % 20 = 0 then 502 else 200 end, case when i % 20 = 0 then 'upstream_error' else null end,
             25 + i % 100, 16 + i % 50, case when i % 20 = 0 then 0 else 13350 end, 9876543, 40 + i % 300, 10
      from generate_series(1, ${ROWS}) as i`;
    // The rollup the ledger writer keeps as these calls settle (counted in the hour each ended).
    await sql`
      insert into usage_rollup (user_id, bucket, model, api_key_id, requests, errors, prompt_tokens, completion_tokens, cost_nano)
      select user_id, date_trunc('hour', created_at + duration_ms * interval '1 millisecond', 'UTC'), model, api_key_id,
             count(*), count(*) filter (where status >= 400), sum(prompt_tokens), sum(completion_tokens), sum(cost_nano)
      from request_logs where user_id = ${USER} group by 1, 2, 3, 4`;
    await sql`analyze request_logs`;
    await sql`analyze usage_rollup`;
    const fillSeconds = Number(process.hrtime.bigint() - filled) / 1e9;
    const [{ rollup }] = await sql<{ rollup: bigint }[]>`select count(*)::bigint as rollup from usage_rollup` as unknown as [{ rollup: bigint }];
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'token', '--user', USER], { env: { ...process.env, ...gateway.env } });
    const token = stdout.trim();
    const from = new Date(now - 30 * DAY_MS).toISOString();
    const usage = await timed(`${gateway.url}/api/v1/usage?interval=day&group_by=model&from=${from}`, token);
    const requests = await timed(`${gateway.url}/api/v1/requests?limit=20`, token);
    const filtered = await timed(`${gateway.url}/api/v1/requests?limit=20&model=openai%2Fmodel-0&status=error`, token);
    process.stdout.write(`${JSON.stringify({
      bench: 'usage-api', request_log_rows: ROWS, rollup_rows: Number(rollup), fill_seconds: round(fillSeconds, 1), samples: SAMPLES,
      usage_30_days_by_day_and_model: summary(usage),
      requests_first_page: summary(requests),
      requests_first_page_model_and_errors: summary(filtered),
      targets_ms: { usage: 50, requests: 20 },
    })}\n`);
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
  }
});
