// `npm run bench`: the gateway's overhead against the mock vendor, measured directly and through
// the gateway in the same run (the 2 cores are shared by the load generator, the mock and the
// gateway, so only ratios and differences from one run mean anything). Prints one JSON line per
// scenario on stdout and nothing else; progress and errors go to stderr. Exit 1 on any error.
// Options: BENCH_SCALE, BENCH_THREADS, BENCH_SCENARIOS, BENCH_GATEWAY_NODE_ARGS, BENCH_GATEWAY_ENV,
// BENCH_FLOORS (see options.ts); profiles taken with BENCH_GATEWAY_NODE_ARGS are summarised by profile-top.ts.
// The hot-path scenarios (FLOOR_SCENARIOS) also run the floors beside the two sides (floors.ts: the bare
// proxy and nginx as a plain reverse proxy, in the same rotation), and print the gateway over each.
// The gateway has a routing file that pools one model over two mock keys (routing-pool.ts), for the
// routing scenario; every other model keeps its one target.
import { runMain } from './cleanup.js';
import { startFloors } from './floors.js';
import { startGatewayProcess } from './gateway-process.js';
import { startMockProcess } from './mock-process.js';
import { readOptions } from './options.js';
import { processCpuMicros } from './proc-cpu.js';
import { SETTLE_MS } from './rotation.js';
import { writeRoutingFile } from './routing-pool.js';
import { FLOOR_SCENARIOS, SCENARIOS, type ScenarioContext } from './scenarios.js';
import type { Target } from './load.js';
import { warmUpServers } from './warmup.js';

const IDLE_PROBE_MS = 3000;
const CHAT_PATH = '/chat/completions';

const note = (message: string) => process.stderr.write(`bench: ${message}\n`);

/** CPU the gateway burns doing nothing (ledger writer polling, V8 housekeeping), µs per second. */
async function idleCpuUsPerS(pid: number): Promise<number> {
  await new Promise((r) => setTimeout(r, SETTLE_MS)); // let the ledger writer finish what came before
  const before = processCpuMicros(pid);
  await new Promise((r) => setTimeout(r, IDLE_PROBE_MS));
  return ((processCpuMicros(pid) - before) * 1000) / IDLE_PROBE_MS;
}

async function main(): Promise<number> {
  const options = readOptions();
  const extra = Object.entries(options.gatewayEnv).map(([name, value]) => `${name}=${value}`).join(' ');
  note(`scale ${options.scale}, gateway threads ${options.threads}${extra ? `, gateway settings ${extra}` : ''}, scenarios ${options.scenarios.join(', ')}`);

  const mock = await startMockProcess();
  const gateway = await startGatewayProcess({
    mockUrl: mock.url, threads: options.threads, nodeArgs: options.gatewayNodeArgs,
    env: { ROUTING_FILE: writeRoutingFile(), ...options.gatewayEnv },
  });
  note(`mock ${mock.url} (pid ${mock.child.pid}), gateway ${gateway.url} (pid ${gateway.child.pid})`);
  const floors = options.scenarios.some((name) => FLOOR_SCENARIOS.includes(name)) ? await startFloors(mock.url, options.threads, note, options.floors) : [];
  for (const floor of floors) note(`floor ${floor.name} ${floor.target.origin} (pid ${floor.child.pid})`);

  const direct: Target = { side: 'direct', origin: mock.url, path: `/openai/v1${CHAT_PATH}`, apiKey: 'bench' };
  const viaGateway: Target = { side: 'gateway', origin: gateway.url, path: `/v1${CHAT_PATH}`, apiKey: gateway.apiKey };
  const viaGatewayLimited: Target = { ...viaGateway, apiKey: gateway.limitedApiKey };
  note('warming up both sides');
  const warmupErrors = await warmUpServers([direct, viaGateway, ...floors.map((floor) => floor.target)], options.scale);
  if (warmupErrors > 0) note(`warm-up: ${warmupErrors} failed requests`);

  const ctx: ScenarioContext = {
    direct,
    gateway: viaGateway,
    gatewayLimited: viaGatewayLimited,
    pids: { direct: mock.child.pid, gateway: gateway.child.pid },
    scale: options.scale,
    gatewayIdleCpuUsPerS: await idleCpuUsPerS(gateway.child.pid),
    floors,
  };

  let failed = false;
  for (const name of options.scenarios) {
    note(`${name}: running`);
    const started = Date.now();
    const result = await SCENARIOS[name](ctx);
    process.stdout.write(`${JSON.stringify(result.line)}\n`);
    note(`${name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s, ${result.errors} errors`);
    if (result.errors > 0) {
      failed = true;
      for (const sample of result.errorSamples) note(`${name}: ${sample}`);
    }
    if (gateway.child.exited) throw new Error(`the gateway died during ${name}:\n${gateway.child.output}`);
    for (const floor of floors) if (floor.child.exited) throw new Error(`${floor.name} died during ${name}:\n${floor.child.output}`);
  }
  return failed ? 1 : 0;
}

await runMain('bench', main);
