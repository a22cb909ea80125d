// `npm run bench:memory`: does the gateway's resident memory come back after load (issue 31, item 5)?
// One gateway (BENCH_THREADS HTTP threads) in front of the mock vendor, warmed up (bench/warmup.ts), then
// its VmRSS (all threads, /proc/<pid>/status) read, each idle figure after MEMORY_SETTLE_MS (25 s: a quiet
// thread's collection, src/idle-gc.ts) and after 90 s (past the token counter's idle minute):
//   1. idle after the warm-up (`idle_after_warmup_rss_mb`);
//   2. idle after MEMORY_WARMUP_SECONDS (30) of the mixed load below, so that every path it takes has
//      been compiled and every module it loads lazily is loaded: the baseline (`idle_rss_mb`);
//   3. while 64 streams of 256 chunks run (MEMORY_STREAMS_SECONDS, 20 s: the median and the peak of
//      one reading a second);
//   4. during MEMORY_SOAK_MINUTES (10) of mixed load: non-streamed chat on a key with every limit,
//      long and short streams, /v1/responses, Anthropic's /v1/messages streamed, upstream errors
//      (503) and streams the upstream cuts before their usage (the token counter's path); a reading
//      every 5 s, printed as each minute's peak;
//   5. idle again, read as the baseline was.
// Prints one JSON line: the readings, and whether the last idle reading is within 10 % of the baseline
// (`returned_within_10_percent`; also given against the first idle figure). Calls that are meant to
// fail (the 503s and the cut streams) are counted apart; any other failure makes the exit code 1.
// Progress goes to stderr.
import { loadavg } from 'node:os';
import { runMain } from './cleanup.js';
import { anthropicAuthHeaders, chatCall, chatCalls, messagesCall, responsesCalls } from './calls.js';
import { startGatewayProcess } from './gateway-process.js';
import { connect, runLoad, type Call, type LoadPlan, type SideResult, type Target } from './load.js';
import { startMockProcess } from './mock-process.js';
import { positiveNumber } from './options.js';
import { rssMb, settledRss } from './rss.js';
import { percentile, round } from './stats.js';
import { warmUpServers } from './warmup.js';

/** How far above its first idle reading the gateway may settle after the soak (issue 31). */
const RETURN_TOLERANCE = 0.1;
/** The second idle reading: past the token counter's idle minute (src/worker-pool.ts), as stream-memory.ts reads it. */
const AFTER_LOAD_LONG_MS = 90_000;
const SOAK_SAMPLE_MS = 5_000;
const MODEL = 'openai/gpt-4o-mini';

const note = (message: string) => process.stderr.write(`memory-soak: ${message}\n`);

interface Load {
  readonly name: string;
  readonly target: Target;
  readonly call: Call;
  readonly concurrency: number;
  /** Calls of this load fail on purpose (an upstream error, a cut stream): their failures are expected. */
  readonly failsOnPurpose?: boolean;
}

/** Runs `plan` against `load`'s target on connections of its own. */
async function run(load: Load, plan: Omit<LoadPlan, 'concurrency'>): Promise<SideResult> {
  const dispatcher = connect(load.target, load.concurrency);
  try {
    return await runLoad(dispatcher, load.target, load.call, { ...plan, concurrency: load.concurrency });
  } finally {
    await dispatcher.close();
  }
}

/** Reads the RSS of `pid` every `everyMs` while `work` runs; returns the readings (MiB, with seconds since start). */
async function sampled<T>(pid: number, everyMs: number, work: Promise<T>): Promise<{ result: T; readings: { s: number; mb: number }[] }> {
  const started = Date.now();
  const readings: { s: number; mb: number }[] = [];
  const timer = setInterval(() => readings.push({ s: (Date.now() - started) / 1000, mb: rssMb(pid) }), everyMs);
  try {
    return { result: await work, readings };
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<number> {
  const minutes = positiveNumber('MEMORY_SOAK_MINUTES', '10');
  const settleMs = positiveNumber('MEMORY_SETTLE_MS', '25000');
  const mixedWarmupMs = positiveNumber('MEMORY_WARMUP_SECONDS', '30') * 1000;
  const streamsMs = positiveNumber('MEMORY_STREAMS_SECONDS', '20') * 1000;
  const threads = positiveNumber('BENCH_THREADS', '2');

  const mock = await startMockProcess();
  const gateway = await startGatewayProcess({ mockUrl: mock.url, threads });
  const pid = gateway.child.pid;
  note(`mock ${mock.url}, gateway ${gateway.url} (pid ${pid}), ${threads} HTTP threads, soak ${minutes} min`);

  const chat: Target = { side: 'gateway', origin: gateway.url, path: '/v1/chat/completions', apiKey: gateway.apiKey };
  const stream = (chunks: number) => chatCalls({ prompt: `Stream an answer. [[mock chunks=${chunks} delay_ms=0]]`, stream: true, maxTokens: 512 }).gateway;
  const longStreams: Load = { name: 'chat_stream_256', target: chat, call: stream(256), concurrency: 64 };
  const mixed: Load[] = [
    { name: 'chat_limited_key', target: { ...chat, apiKey: gateway.limitedApiKey }, call: chatCall({ model: MODEL, prompt: 'Say hello to the soak.', stream: false, maxTokens: 64 }), concurrency: 8 },
    { ...longStreams, concurrency: 8 },
    { name: 'chat_stream_20', target: chat, call: stream(20), concurrency: 8 },
    { name: 'responses', target: { ...chat, path: '/v1/responses' }, call: responsesCalls({ model: MODEL, prompt: 'Say hello to the soak.', stream: false, maxTokens: 64 }).gateway, concurrency: 4 },
    {
      name: 'messages_stream', target: { ...chat, path: '/v1/messages', authHeaders: anthropicAuthHeaders(gateway.apiKey) },
      call: messagesCall({ model: 'claude-haiku-4-5', prompt: 'Stream an answer. [[mock chunks=64]]', stream: true, maxTokens: 512 }), concurrency: 4,
    },
    { name: 'upstream_503', target: chat, call: chatCall({ model: MODEL, prompt: 'Fail. [[mock fail=503]]', stream: false, maxTokens: 64 }), concurrency: 2, failsOnPurpose: true },
    { name: 'stream_cut', target: chat, call: chatCall({ model: MODEL, prompt: 'Cut. [[mock chunks=32 disconnect_after=8]]', stream: true, maxTokens: 64 }), concurrency: 2, failsOnPurpose: true },
  ];

  /** Two idle readings: after `settleMs`, and after AFTER_LOAD_LONG_MS in all. */
  const idleReadings = async (): Promise<[number, number]> => {
    const early = await settledRss(pid, settleMs);
    return [early, await settledRss(pid, Math.max(0, AFTER_LOAD_LONG_MS - settleMs))];
  };
  const runMixed = (durationMs: number) => Promise.all(mixed.map((load) => run(load, { requests: Number.MAX_SAFE_INTEGER, durationMs })));

  const warmupErrors = await warmUpServers([chat], 1);
  if (warmupErrors > 0) note(`warm-up: ${warmupErrors} failed requests`);
  const [, idleAfterWarmup] = await idleReadings();
  note(`idle after the warm-up: ${round(idleAfterWarmup, 1)} MiB`);
  const mixedWarmup = await runMixed(mixedWarmupMs);
  const [, idle] = await idleReadings();
  note(`idle after ${mixedWarmupMs / 1000} s of the mixed load (the baseline): ${round(idle, 1)} MiB`);

  const streams = await sampled(pid, 1000, run(longStreams, { requests: Number.MAX_SAFE_INTEGER, durationMs: streamsMs }));
  // The first seconds are the streams opening: read once all 64 run.
  const streamReadings = streams.readings.filter((r) => r.s >= 5).map((r) => r.mb);
  note(`64 streams: ${round(percentile(streamReadings, 50), 1)} MiB (median), ${streams.result.requests} streams, ${streams.result.errors} failed`);

  const soakMs = minutes * 60_000;
  const soak = await sampled(pid, SOAK_SAMPLE_MS, runMixed(soakMs));
  const byMinute: number[] = [];
  for (const reading of soak.readings) {
    const minute = Math.floor(reading.s / 60);
    byMinute[minute] = Math.max(byMinute[minute] ?? 0, reading.mb);
  }
  note(`soak: peak ${round(Math.max(...soak.readings.map((r) => r.mb)), 1)} MiB`);

  const [afterSettle, afterLong] = await idleReadings();
  const returned = afterLong <= idle * (1 + RETURN_TOLERANCE);

  let unexpectedFailures = streams.result.errors;
  mixed.forEach((load, i) => { if (!load.failsOnPurpose) unexpectedFailures += mixedWarmup[i]!.errors; });
  const loads = Object.fromEntries(mixed.map((load, i) => {
    const result = soak.result[i]!;
    if (!load.failsOnPurpose) unexpectedFailures += result.errors;
    return [load.name, { concurrency: load.concurrency, calls: result.requests, failed: result.errors, ...(load.failsOnPurpose ? { fails_on_purpose: true } : {}) }];
  }));
  if (unexpectedFailures > 0) note(`failures: ${[...streams.result.errorSamples, ...soak.result.flatMap((r) => r.errorSamples)].slice(0, 5).join('; ')}`);

  process.stdout.write(`${JSON.stringify({
    scenario: 'memory_soak',
    http_threads: threads,
    soak_minutes: minutes,
    idle_after_warmup_rss_mb: round(idleAfterWarmup, 1),
    mixed_warmup_seconds: mixedWarmupMs / 1000,
    idle_rss_mb: round(idle, 1),
    streams_64: { rss_mb_median: round(percentile(streamReadings, 50), 1), rss_mb_peak: round(Math.max(...streamReadings), 1), streams: streams.result.requests },
    soak: { rss_mb_peak_by_minute: byMinute.map((mb) => round(mb, 1)), rss_mb_last: round(soak.readings[soak.readings.length - 1]?.mb ?? NaN, 1), loads },
    idle_after_rss_mb: { [`${Math.round(settleMs / 1000)}s`]: round(afterSettle, 1), [`${Math.round(Math.max(settleMs, AFTER_LOAD_LONG_MS) / 1000)}s`]: round(afterLong, 1) },
    growth_after_soak_percent: round(((afterLong - idle) / idle) * 100, 1),
    returned_within_10_percent: returned,
    growth_over_idle_after_warmup_percent: round(((afterLong - idleAfterWarmup) / idleAfterWarmup) * 100, 1),
    loadavg_1m: round(loadavg()[0] ?? NaN, 2),
    unexpected_failures: unexpectedFailures,
  })}\n`);
  if (gateway.child.exited) throw new Error(`the gateway died:\n${gateway.child.output}`);
  return unexpectedFailures > 0 ? 1 : 0;
}

await runMain('memory-soak', main);
