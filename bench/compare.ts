// Direct-vs-gateway measurement of one load, made fair on a shared 2-core machine: both sides are
// warmed up, then measured in interleaved blocks (D G, G D, D G, ...) so that drift in the
// machine's load (other processes, thermal, GC) hits both alike. The serving process's CPU (mock or
// gateway) is read from /proc around each block of its side, the load generator's from cpuUsage().
import type { Dispatcher } from 'undici';
import { connect, runLoad, SideResult, type Call, type LoadPlan, type Side, type Target } from './load.js';
import { processCpuMicros } from './proc-cpu.js';

/** Time after a gateway block before its CPU is read: settlement and the asynchronous ledger
 * writer (Redis stream -> Postgres) finish in it, so their work is counted too; it also keeps
 * that work out of the next direct block. */
export const SETTLE_MS = 1000;

export interface Comparison {
  /** serverCpuUs: the mock's CPU over the direct blocks. */
  readonly direct: SideResult;
  /** serverCpuUs: the gateway's CPU over its blocks, each including its settle time. */
  readonly gateway: SideResult;
  /** Total settle time included in the gateway's CPU figure. */
  readonly settleMs: number;
}

export interface CompareOptions {
  readonly direct: Target;
  readonly gateway: Target;
  /** The processes serving each side, whose CPU is read around that side's blocks. */
  readonly pids: { readonly direct: number; readonly gateway: number };
  readonly call: { readonly direct: Call; readonly gateway: Call };
  readonly warmup: LoadPlan;
  /** One measured block per side and round. */
  readonly block: LoadPlan;
  readonly rounds: number;
  /** Both sides are the gateway (two of its paths): each block gets the settle time. */
  readonly settleBoth?: boolean;
  /** Runs once both sides are warm, before the first measured block (e.g. to read counters the blocks then move). */
  readonly afterWarmup?: () => Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clientCpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

export async function compare(options: CompareOptions): Promise<Comparison> {
  const connections = Math.max(options.warmup.concurrency, options.block.concurrency);
  const dispatchers: Record<Side, Dispatcher> = {
    direct: connect(options.direct, connections),
    gateway: connect(options.gateway, connections),
  };
  const warm = (side: Side): Promise<SideResult> => runLoad(dispatchers[side], options[side], options.call[side], options.warmup);

  /** One measured block, with the serving process's and the load generator's CPU around it. */
  const block = async (side: Side): Promise<SideResult> => {
    const pid = options.pids[side];
    const serverBefore = processCpuMicros(pid);
    const clientBefore = clientCpuMicros();
    const result = await runLoad(dispatchers[side], options[side], options.call[side], options.block);
    result.clientCpuUs = clientCpuMicros() - clientBefore;
    if (side === 'gateway' || options.settleBoth) await sleep(SETTLE_MS);
    result.serverCpuUs = processCpuMicros(pid) - serverBefore;
    return result;
  };

  try {
    await warm('direct');
    await warm('gateway');
    await sleep(SETTLE_MS);
    await options.afterWarmup?.();
    const results: Record<Side, SideResult> = { direct: new SideResult(), gateway: new SideResult() };
    for (let round = 0; round < options.rounds; round++) {
      const order: Side[] = round % 2 === 0 ? ['direct', 'gateway'] : ['gateway', 'direct'];
      for (const side of order) results[side].merge(await block(side));
    }
    return { ...results, settleMs: SETTLE_MS * options.rounds };
  } finally {
    await Promise.all(Object.values(dispatchers).map((d) => d.close()));
  }
}
