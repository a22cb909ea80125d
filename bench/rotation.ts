// More than two sides of one scenario measured in one run (compare.ts has two): each side is warmed
// up, then measured in one block per round, the order rotated every round so that each side goes
// first, second, ... equally often over as many rounds as there are sides, and the machine's drift
// hits all of them alike. The serving process's CPU is read around each block, and the load generator's
// (this process's); a side served by the gateway gets a settle window after its block, inside its CPU
// figure. compare.ts (direct against gateway, with the floors) is built on it.
import type { Dispatcher } from 'undici';
import { connect, runLoad, SideResult, type Call, type LoadPlan, type Target } from './load.js';

/** Time after a gateway block before its CPU is read: settlement and the asynchronous ledger
 * writer (Redis stream -> Postgres) finish in it, so their work is counted too; it also keeps
 * that work out of the next side's block. */
export const SETTLE_MS = 1000;

export interface RotatingSide {
  readonly target: Target;
  readonly call: Call;
  /** CPU time of what serves the side so far, µs (processCpuMicros of its pid, or of a process tree). */
  readonly cpuUs: () => number;
  /** The gateway serves it: settlement and the ledger writer finish inside its figure. */
  readonly settles: boolean;
}

export interface RotationPlan {
  readonly warmup: LoadPlan;
  /** One measured block per side and round. */
  readonly block: LoadPlan;
  /** A multiple of the number of sides, so that each takes each place in the order equally often. */
  readonly rounds: number;
  /** Runs once every side is warm, before the first measured block (e.g. to read counters the blocks then move). */
  readonly afterWarmup?: () => Promise<void>;
}

export interface Rotation<Name extends string> {
  /** serverCpuUs: the serving process's CPU over the side's blocks, settle windows included. */
  readonly sides: Record<Name, SideResult>;
  /** Each round's blocks, by side: how far a figure strays between rounds is the run's noise. */
  readonly rounds: Record<Name, SideResult>[];
  /** Settle time included in the CPU figure of each side that settles. */
  readonly settleMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clientCpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** The least number of rounds, at least `wanted`, in which each of `sides` sides takes each place equally often. */
export const fairRounds = (wanted: number, sides: number): number => Math.ceil(wanted / sides) * sides;

export async function measureRotating<Name extends string>(sides: Record<Name, RotatingSide>, plan: RotationPlan): Promise<Rotation<Name>> {
  const names = Object.keys(sides) as Name[];
  if (plan.rounds % names.length !== 0) throw new Error(`rounds (${plan.rounds}) must be a multiple of the ${names.length} sides`);
  const connections = Math.max(plan.warmup.concurrency, plan.block.concurrency);
  const dispatchers = new Map<Name, Dispatcher>(names.map((name) => [name, connect(sides[name].target, connections)]));
  const load = (name: Name, loadPlan: LoadPlan): Promise<SideResult> => runLoad(dispatchers.get(name)!, sides[name].target, sides[name].call, loadPlan);

  try {
    for (const name of names) await load(name, plan.warmup);
    await sleep(SETTLE_MS);
    await plan.afterWarmup?.();
    const results = new Map<Name, SideResult>(names.map((name) => [name, new SideResult()]));
    const rounds: Record<Name, SideResult>[] = [];
    for (let round = 0; round < plan.rounds; round++) {
      const blocks = {} as Record<Name, SideResult>;
      rounds.push(blocks);
      const shift = round % names.length;
      for (const name of [...names.slice(shift), ...names.slice(0, shift)]) {
        const side = sides[name];
        const before = side.cpuUs();
        const clientBefore = clientCpuMicros();
        const result = await load(name, plan.block);
        result.clientCpuUs = clientCpuMicros() - clientBefore;
        if (side.settles) await sleep(SETTLE_MS);
        result.serverCpuUs = side.cpuUs() - before;
        results.get(name)!.merge(result);
        blocks[name] = result;
      }
    }
    return { sides: Object.fromEntries(results) as Record<Name, SideResult>, rounds, settleMs: SETTLE_MS * plan.rounds };
  } finally {
    await Promise.all([...dispatchers.values()].map((d) => d.close()));
  }
}
