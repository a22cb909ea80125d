// Direct-vs-gateway measurement of one load, made fair on a shared 2-core machine: both sides are
// warmed up, then measured in interleaved blocks (D G, G D, D G, ...) so that drift in the
// machine's load (other processes, thermal, GC) hits both alike. With floors (floors.ts: the bare
// proxy, nginx), they are sides too, and the order rotates over all of them (rotation.ts). The serving
// process's CPU (mock, gateway or floor) is read from /proc around each block of its side, the load
// generator's from cpuUsage().
import type { Floor, FloorName } from './floors.js';
import type { Call, LoadPlan, SideResult, Target } from './load.js';
import { processCpuMicros } from './proc-cpu.js';
import { fairRounds, measureRotating, SETTLE_MS, type RotatingSide } from './rotation.js';

export interface Comparison {
  /** serverCpuUs: the mock's CPU over the direct blocks. */
  readonly direct: SideResult;
  /** serverCpuUs: the gateway's CPU over its blocks, each including its settle time. */
  readonly gateway: SideResult;
  /** Each floor's figures (sent the direct side's call), when the comparison had floors. */
  readonly floors: Partial<Record<FloorName, SideResult>>;
  /** Total settle time included in the gateway's CPU figure. */
  readonly settleMs: number;
  /** Rounds measured: the number asked for, raised to a multiple of the sides. */
  readonly rounds: number;
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
  /** Raised to a multiple of the sides (2, or 2 + the floors), so each takes each place equally often. */
  readonly rounds: number;
  /** Both sides are the gateway (two of its paths): each block gets the settle time. */
  readonly settleBoth?: boolean;
  /** Runs once both sides are warm, before the first measured block (e.g. to read counters the blocks then move). */
  readonly afterWarmup?: () => Promise<void>;
  /** Floors measured beside the two sides, in the same rotation. */
  readonly floors?: readonly Floor[];
}

export async function compare(options: CompareOptions): Promise<Comparison> {
  const floors = options.floors ?? [];
  const sides: Record<string, RotatingSide> = {
    direct: { target: options.direct, call: options.call.direct, cpuUs: () => processCpuMicros(options.pids.direct), settles: options.settleBoth === true },
    gateway: { target: options.gateway, call: options.call.gateway, cpuUs: () => processCpuMicros(options.pids.gateway), settles: true },
  };
  for (const floor of floors) sides[floor.name] = { target: floor.target, call: options.call.direct, cpuUs: floor.cpuUs, settles: false };
  const rounds = fairRounds(options.rounds, Object.keys(sides).length);
  const measured = await measureRotating(sides, { warmup: options.warmup, block: options.block, rounds, ...(options.afterWarmup ? { afterWarmup: options.afterWarmup } : {}) });
  return {
    direct: measured.sides.direct!,
    gateway: measured.sides.gateway!,
    floors: Object.fromEntries(floors.map((floor) => [floor.name, measured.sides[floor.name]!])),
    settleMs: SETTLE_MS * rounds,
    rounds,
  };
}
