// `node dist/bench/upstream-client.js`: the upstream leg alone. The same chat calls against the mock
// vendor through undici's Pool and through the gateway's own client, in one process, alternating;
// prints one JSON line per concurrency with the CPU per call of each (this process's user+system).
// `node dist/bench/upstream-client.js <other checkout>` adds that build's client (built, its
// dist/src/providers/upstream-client.js) as `other_client`, alternating with ours in the same process.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Pool } from 'undici';
import { installSignalHandlers, runCleanup } from './cleanup.js';
import { startMockProcess } from './mock-process.js';
import { UpstreamAbort, UpstreamClient, endpointOf } from '../src/providers/upstream-client.js';

const CALLS = Math.round(20_000 * Number(process.env.BENCH_SCALE || '1'));
/** Rounds per concurrency (the median is printed): more rounds steady a busy machine's figures. */
const ROUNDS = Number(process.env.BENCH_ROUNDS || '3');
const headers = { authorization: 'Bearer bench', 'content-type': 'application/json' };
const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello there.' }], max_tokens: 16 });

type Caller = () => Promise<number>;

async function measure(call: Caller, concurrency: number, calls: number): Promise<{ cpu_us_per_call: number; calls_per_s: number }> {
  let started = 0;
  const worker = async () => {
    while (started < calls) {
      started++;
      await call();
    }
  };
  const cpu = process.cpuUsage();
  const wall = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - wall) / 1000;
  return { cpu_us_per_call: Math.round(((used.user + used.system) / calls) * 10) / 10, calls_per_s: Math.round(calls / seconds) };
}

async function main(): Promise<void> {
  installSignalHandlers();
  const mock = await startMockProcess();
  const endpoint = endpointOf(`${mock.url}/openai/v1`, '/chat/completions');
  const pool = new Pool(endpoint.origin, { connections: 256, pipelining: 1 });
  const ours = new UpstreamClient({ timeoutMs: 30_000 });
  const callers: Record<string, Caller> = {
    undici: async () => (await (await pool.request({ method: 'POST', path: endpoint.path, headers, body })).body.text()).length,
    // With an abort per call, as the chat route passes one.
    gateway_client: async () => (await (await ours.post(endpoint, headers, body, new UpstreamAbort())).text()).length,
  };
  const otherCheckout = process.argv[2];
  let other: { close(): Promise<void> } | undefined;
  if (otherCheckout) {
    const module = await import(pathToFileURL(path.resolve(otherCheckout, 'dist/src/providers/upstream-client.js')).href) as {
      UpstreamClient: new (options: { timeoutMs: number }) => UpstreamClient; endpointOf: typeof endpointOf;
    };
    const client = new module.UpstreamClient({ timeoutMs: 30_000 });
    const otherEndpoint = module.endpointOf(`${mock.url}/openai/v1`, '/chat/completions');
    other = client;
    callers.other_client = async () => (await (await client.post(otherEndpoint, headers, body)).text()).length;
  }
  for (const caller of Object.values(callers)) await measure(caller, 32, 2000); // warm-up
  for (const concurrency of [1, 32]) {
    const results: Record<string, { cpu_us_per_call: number; calls_per_s: number }[]> = Object.fromEntries(Object.keys(callers).map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, caller] of Object.entries(callers)) results[name]!.push(await measure(caller, concurrency, Math.round(CALLS / (concurrency === 1 ? 4 : 1))));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const line: Record<string, unknown> = { scenario: `upstream_leg_c${concurrency}` };
    for (const [name, rounds] of Object.entries(results)) {
      line[name] = { cpu_us_per_call: median(rounds.map((r) => r.cpu_us_per_call)), calls_per_s: median(rounds.map((r) => r.calls_per_s)) };
    }
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }
  await pool.close();
  await ours.close();
  await other?.close();
}

try {
  await main();
} finally {
  await runCleanup();
}
