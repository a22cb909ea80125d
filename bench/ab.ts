// `node dist/bench/ab.js <other checkout>`: this build of the gateway against another build (a
// worktree of an earlier commit, built), both in front of one mock vendor, in one run. Blocks of the
// same load go to the mock directly (D) and to each gateway (A: this build, B: the other), the order
// rotated every round, so the machine's drift (±30 % over minutes here) hits all three alike: a change
// smaller than the drift between two separate `npm run bench` runs still shows. Prints one JSON line
// per scenario (A and B figures and B/A ratios: per_s_b_over_a, throughput; cpu_b_over_a, the gateway
// process's CPU per request or chunk, its Redis not counted; cpu_a_minus_b_us_per_req (or _chunk), the
// same as a difference, with the spread of that difference over the rounds; machine_cpu_us_per_req (or
// _chunk), the whole machine's busy CPU per unit, Redis and Postgres included, meaningful on an idle
// machine; the load average at the scenario's start and end); progress goes to stderr.
// With `--floor` instead of a checkout, B is bench/bare-proxy.ts: the same uWS front end and upstream
// client with nothing in between, so A's figures above B's are what the gateway's own work adds; and a
// fourth side, N, is nginx as a plain reverse proxy (bench/nginx-process.ts: Debian's nginx-light, one
// worker per gateway thread, no buffering, kept-alive upstream connections), the external floor: each
// line then also has nginx's figures and A's over them (`a_over_nginx`).
// Options: AB_SCENARIOS (nonstream_c1,nonstream_c32,nonstream_c32_limits,stream_ttfb_c1,stream_c64,stream_c64_short), AB_ROUNDS (6), AB_SCALE
// (1: multiplies the blocks and the warm-up, so a busy machine fits more, shorter rounds), BENCH_THREADS,
// AB_A_ENV and AB_B_ENV ("NAME=value,NAME=value": settings for one gateway only, to compare settings;
// the other checkout may then be this one), AB_A_NODE_ARGS and AB_B_NODE_ARGS (node flags for one gateway).
// AB_B_CLUSTER=1: B runs on a Redis Cluster of three primaries that this run starts on spare local
// ports (test/helpers/redis-cluster.ts: redis-server and redis-cli on the PATH; AB_B_CLUSTER_REPLICAS
// replicas per primary, 0 by default) and stops at the end, while A stays on the single-node Redis
// (redis://127.0.0.1:6379): with this checkout as the other one, B/A is the cluster's cost:
//   AB_B_CLUSTER=1 node dist/bench/ab.js .
// AB_A_CLUSTER=1 with it puts A on that same cluster too (each gateway on a prefix of its own), to
// compare two builds on a cluster: AB_A_CLUSTER=1 AB_B_CLUSTER=1 node dist/bench/ab.js <other checkout>.
// (AB_B_ENV cannot carry a cluster URL, whose node list has commas.)

import { loadavg } from 'node:os';
import path from 'node:path';
import { onCleanup, runMain, trackChild } from './cleanup.js';
import { startRedisCluster } from '../test/helpers/redis-cluster.js';
import { chatCalls } from './calls.js';
import { overFloor, startFloors, unitsOf, type Unit } from './floors.js';
import { startGatewayProcess } from './gateway-process.js';
import { connect, runLoad, SideResult, type Call, type LoadPlan, type Target } from './load.js';
import { startMockProcess } from './mock-process.js';
import { envPairs } from './options.js';
import { machineCpuMicros, processCpuMicros } from './proc-cpu.js';
import { SETTLE_MS } from './rotation.js';
import { percentile, round, spread } from './stats.js';
import { warmUpServers } from './warmup.js';

interface AbScenario {
  readonly calls: { direct: Call; gateway: Call };
  readonly block: LoadPlan;
  /** What a block's figures are per: requests, or streamed events. */
  readonly unit: Unit;
  /** The gateways are called with their key that carries every limit (bench/gateway-process.ts), not with the plain one. */
  readonly limited?: boolean;
}

const SCENARIOS: Record<string, AbScenario> = {
  nonstream_c1: { calls: chatCalls({ prompt: 'Say hello to the benchmark.', stream: false, maxTokens: 64 }), block: { concurrency: 1, requests: 1500 }, unit: 'req' },
  nonstream_c32: { calls: chatCalls({ prompt: 'Say hello to the benchmark.', stream: false, maxTokens: 64 }), block: { concurrency: 32, requests: 8000 }, unit: 'req' },
  // The same on a key with every limit set (its token budget counts each prompt at admission).
  nonstream_c32_limits: { calls: chatCalls({ prompt: 'Say hello to the benchmark.', stream: false, maxTokens: 64 }), block: { concurrency: 32, requests: 8000 }, unit: 'req', limited: true },
  stream_ttfb_c1: { calls: chatCalls({ prompt: 'Stream a short answer. [[mock chunks=16 delay_ms=0]]', stream: true, maxTokens: 64 }), block: { concurrency: 1, requests: 800 }, unit: 'req' },
  stream_c64: { calls: chatCalls({ prompt: 'Stream a long answer. [[mock chunks=256]]', stream: true, maxTokens: 512 }), block: { concurrency: 64, requests: Number.MAX_SAFE_INTEGER, durationMs: 2500 }, unit: 'chunk' },
  // Short streams written by the upstream all at once: where each call's own cost shows beside its chunks'.
  stream_c64_short: { calls: chatCalls({ prompt: 'Stream a short answer. [[mock chunks=20 delay_ms=0]]', stream: true, maxTokens: 64 }), block: { concurrency: 64, requests: Number.MAX_SAFE_INTEGER, durationMs: 2500 }, unit: 'chunk' },
};

/** "NAME=value,NAME=value" from the environment variable `name`. */
const envOption = (name: string): Record<string, string> => envPairs(name, process.env[name]);

const note = (message: string) => process.stderr.write(`ab: ${message}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type SideName = 'D' | 'A' | 'B' | 'N';

function figures(side: SideResult, unit: Unit): Record<string, number> {
  const units = unitsOf(side, unit);
  return {
    p50_ms: round(percentile(side.latenciesMs, 50)),
    ttfb_p50_ms: round(percentile(side.ttfbMs, 50)),
    per_s: round(units / side.seconds, 0),
    [`server_cpu_us_per_${unit}`]: round(side.serverCpuUs / units, 2),
    // Everything the machine did meanwhile (Redis, Postgres, the mock, the load generator included): on a quiet machine, what a unit costs in all.
    [`machine_cpu_us_per_${unit}`]: round(side.machineCpuUs / units, 2),
  };
}

async function main(): Promise<number> {
  const other = process.argv[2];
  if (!other) throw new Error('usage: node dist/bench/ab.js <path of another built checkout> | --floor');
  const floor = other === '--floor';
  // By default the five of the hot path, which the floors have too.
  const scenarios = (process.env.AB_SCENARIOS || Object.keys(SCENARIOS).filter((name) => !SCENARIOS[name]!.limited).join(',')).split(',').filter(Boolean);
  for (const name of scenarios) if (!SCENARIOS[name]) throw new Error(`AB_SCENARIOS: unknown ${name}`);
  if (floor && scenarios.some((name) => SCENARIOS[name]!.limited)) throw new Error('AB_SCENARIOS: the bare proxy (--floor) has no key limits to compare');
  const rounds = Number(process.env.AB_ROUNDS || '6');
  const scale = Number(process.env.AB_SCALE || '1');
  if (!Number.isFinite(scale) || scale <= 0) throw new Error(`AB_SCALE must be a positive number, got ${process.env.AB_SCALE}`);
  const threads = Number(process.env.BENCH_THREADS || '2');

  const onCluster = process.env.AB_B_CLUSTER === '1';
  if (onCluster && floor) throw new Error('AB_B_CLUSTER: the bare proxy (--floor) uses no Redis');
  const bothOnCluster = process.env.AB_A_CLUSTER === '1';
  if (bothOnCluster && !onCluster) throw new Error('AB_A_CLUSTER: only with AB_B_CLUSTER=1 (A joins B\'s cluster)');
  let clusterUrl: string | undefined;
  if (onCluster) {
    const replicasPerPrimary = Number(process.env.AB_B_CLUSTER_REPLICAS || '0');
    const cluster = await startRedisCluster({ primaries: 3, replicasPerPrimary });
    // Registered before B's gateway starts, so it stops after that gateway (cleanup runs newest first).
    onCleanup(() => cluster.stop());
    for (const node of cluster.nodes) trackChild(node.process);
    clusterUrl = cluster.url;
    note(`B's Redis Cluster: 3 primaries, ${replicasPerPrimary} replicas each, ${clusterUrl}`);
  }

  const mock = await startMockProcess();
  const nodeArgs = (name: string) => (process.env[name] ?? '').split(/\s+/).filter(Boolean);
  const a = await startGatewayProcess({
    mockUrl: mock.url, threads, env: { ...envOption('AB_A_ENV'), ...(bothOnCluster && clusterUrl ? { REDIS_URL: clusterUrl } : {}) }, nodeArgs: nodeArgs('AB_A_NODE_ARGS'),
  });
  const floors = floor ? await startFloors(mock.url, threads, note) : [];
  const bare = floors.find((f) => f.name === 'bare_proxy');
  const nginx = floors.find((f) => f.name === 'nginx');
  const b = bare
    ? { child: bare.child, url: bare.target.origin, apiKey: bare.target.apiKey, limitedApiKey: bare.target.apiKey }
    : await startGatewayProcess({
      mockUrl: mock.url, threads, main: path.resolve(other, 'dist/src/main.js'),
      env: { ...envOption('AB_B_ENV'), ...(clusterUrl ? { REDIS_URL: clusterUrl } : {}) }, nodeArgs: nodeArgs('AB_B_NODE_ARGS'),
    });
  const targets: Partial<Record<SideName, Target>> = {
    D: { side: 'direct', origin: mock.url, path: '/openai/v1/chat/completions', apiKey: 'bench' },
    A: { side: 'gateway', origin: a.url, path: '/v1/chat/completions', apiKey: a.apiKey },
    B: bare?.target ?? { side: 'gateway', origin: b.url, path: '/v1/chat/completions', apiKey: b.apiKey },
    ...(nginx ? { N: nginx.target } : {}),
  };
  const sides = Object.keys(targets) as SideName[];
  const children: Partial<Record<SideName, { pid: number; output: string }>> = { D: mock.child, A: a.child, B: b.child, ...(nginx ? { N: nginx.child } : {}) };
  const cpuOf = (s: SideName) => (s === 'N' ? nginx!.cpuUs() : processCpuMicros(children[s]!.pid));
  const described = floor ? 'the bare proxy' : `${other}${clusterUrl ? ' on the Redis Cluster' : ''} ${process.env.AB_B_ENV ?? ''} ${process.env.AB_B_NODE_ARGS ?? ''}`;
  note(`mock ${mock.url}, A (this build${bothOnCluster ? ' on the Redis Cluster' : ''} ${process.env.AB_A_ENV ?? ''} ${process.env.AB_A_NODE_ARGS ?? ''}) ${a.url}, B (${described}) ${b.url}${nginx ? `, N (nginx) ${nginx.target.origin}` : ''}`);
  const warmupErrors = await warmUpServers(Object.values(targets), scale);
  if (warmupErrors > 0) note(`warm-up: ${warmupErrors} failed requests`);

  let failed = false;
  for (const name of scenarios) {
    const base = SCENARIOS[name]!;
    const scenario: AbScenario = {
      ...base,
      block: { ...base.block, requests: Math.max(10, Math.round(base.block.requests * scale)), ...(base.block.durationMs === undefined ? {} : { durationMs: base.block.durationMs * scale }) },
    };
    // A limited scenario calls both gateways with their key that carries every limit.
    const targetOf = (s: SideName): Target => (scenario.limited && (s === 'A' || s === 'B') ? { ...targets[s]!, apiKey: (s === 'A' ? a : b).limitedApiKey } : targets[s]!);
    const dispatchers = Object.fromEntries(sides.map((s) => [s, connect(targetOf(s), scenario.block.concurrency)]));
    const results = Object.fromEntries(sides.map((s) => [s, new SideResult()])) as Record<SideName, SideResult>;
    /** Each side's CPU per unit, round by round: how far A's less B's strays between rounds is the run's noise. */
    const roundCpu = Object.fromEntries(sides.map((s) => [s, [] as number[]])) as Record<SideName, number[]>;
    const loadStart = loadavg()[0] ?? NaN;
    // The bare proxy relays the body as it is: it gets what the mock is sent directly.
    const call = (s: SideName) => scenario.calls[s === 'D' || s === 'N' || (s === 'B' && floor) ? 'direct' : 'gateway'];
    for (const s of sides) await runLoad(dispatchers[s]!, targetOf(s), call(s), { ...scenario.block, requests: Math.min(scenario.block.requests, 2000), durationMs: 1000 });
    await sleep(SETTLE_MS);
    for (let r = 0; r < rounds; r++) {
      // Every side takes every place in the order equally often over as many rounds as there are sides.
      const order = [...sides.slice(r % sides.length), ...sides.slice(0, r % sides.length)];
      for (const s of order) {
        const before = cpuOf(s);
        const machineBefore = machineCpuMicros();
        const result = await runLoad(dispatchers[s]!, targetOf(s), call(s), scenario.block);
        if (s === 'A' || s === 'B') await sleep(SETTLE_MS); // settlement and the ledger writer finish inside the gateway's figure
        result.serverCpuUs = cpuOf(s) - before;
        result.machineCpuUs = machineCpuMicros() - machineBefore;
        roundCpu[s].push(result.serverCpuUs / unitsOf(result, scenario.unit));
        results[s].merge(result);
      }
    }
    await Promise.all(Object.values(dispatchers).map((d) => d!.close()));
    const f = Object.fromEntries(sides.map((s) => [s, figures(results[s], scenario.unit)])) as Record<SideName, Record<string, number>>;
    const cpuKey = `server_cpu_us_per_${scenario.unit}`;
    process.stdout.write(`${JSON.stringify({
      scenario: name, rounds, b_is: floor ? 'bare proxy' : clusterUrl ? `${other} on a Redis Cluster (A: ${bothOnCluster ? 'this build on the same cluster' : 'single-node Redis'})` : other, direct: f.D, a: f.A, b: f.B,
      added_p50_ms: { a: round(f.A.p50_ms! - f.D.p50_ms!), b: round(f.B.p50_ms! - f.D.p50_ms!) },
      added_ttfb_p50_ms: { a: round(f.A.ttfb_p50_ms! - f.D.ttfb_p50_ms!), b: round(f.B.ttfb_p50_ms! - f.D.ttfb_p50_ms!) },
      per_s_vs_direct: { a: round(f.A.per_s! / f.D.per_s!, 4), b: round(f.B.per_s! / f.D.per_s!, 4) },
      per_s_b_over_a: round(f.B.per_s! / f.A.per_s!, 4),
      cpu_b_over_a: round(f.B[cpuKey]! / f.A[cpuKey]!, 4),
      [`cpu_a_minus_b_us_per_${scenario.unit}`]: round(f.A[cpuKey]! - f.B[cpuKey]!, 2),
      cpu_a_minus_b_by_round: spread(roundCpu.A.map((a, r) => a - roundCpu.B[r]!)),
      [`machine_cpu_a_minus_b_us_per_${scenario.unit}`]: round(f.A[`machine_cpu_us_per_${scenario.unit}`]! - f.B[`machine_cpu_us_per_${scenario.unit}`]!, 2),
      loadavg_1m: { start: round(loadStart, 2), end: round(loadavg()[0] ?? NaN, 2) },
      ...(f.N ? {
        nginx: f.N,
        // A against the external floor: throughput and CPU as ratios, added median latency and TTFB as differences (ms).
        a_over_nginx: overFloor(results.A, results.N, scenario.unit, 'nginx'),
        per_s_nginx_vs_direct: round(f.N.per_s! / f.D.per_s!, 4),
      } : {}),
      errors: Object.fromEntries(sides.map((s) => [s, results[s].errors])),
    })}\n`);
    for (const s of sides) if (results[s].errors > 0) {
      failed = true;
      note(`${name} ${s}: ${results[s].errorSamples.join('; ')}\n${children[s]!.output.slice(-3000)}`);
    }
  }
  return failed ? 1 : 0;
}

await runMain('ab', main);
