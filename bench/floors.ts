// The floors a gateway figure is read against, in the same run (`npm run bench` and `ab.js --floor`):
// the bare proxy (bench/bare-proxy.ts: the same uWS front end and upstream client with nothing in
// between, what one extra hop costs) and nginx as a plain reverse proxy (bench/nginx-process.ts: the
// external floor every SRE knows). Both are sent what the mock is sent directly.
import { startBareProxyProcess } from './bare-proxy-process.js';
import type { Child } from './child.js';
import type { SideResult, Target } from './load.js';
import { startNginxProcess } from './nginx-process.js';
import { processCpuMicros, processTreeCpuMicros } from './proc-cpu.js';
import { percentile, ratio, round } from './stats.js';

export const FLOOR_NAMES = ['bare_proxy', 'nginx'] as const;
export type FloorName = (typeof FLOOR_NAMES)[number];

export interface Floor {
  readonly name: FloorName;
  readonly target: Target;
  readonly child: Child;
  /** The floor's CPU so far, µs: nginx's is its master's and its workers'. */
  cpuUs(): number;
}

/** Starts the named floors in front of the mock at `mockUrl`, each on `threads` threads (nginx: worker processes). */
export async function startFloors(mockUrl: string, threads: number, note: (message: string) => void, names: readonly FloorName[] = FLOOR_NAMES): Promise<Floor[]> {
  const floors: Floor[] = [];
  for (const name of names) {
    if (name === 'bare_proxy') {
      const bare = await startBareProxyProcess(mockUrl, threads);
      floors.push({ name, child: bare.child, target: { side: 'direct', origin: bare.url, path: '/v1/chat/completions', apiKey: 'bench' }, cpuUs: () => processCpuMicros(bare.child.pid) });
    } else {
      const nginx = await startNginxProcess(mockUrl, threads, note);
      // nginx passes the vendor's own request through, as the mock is called directly.
      floors.push({ name, child: nginx.child, target: { side: 'direct', origin: nginx.url, path: '/openai/v1/chat/completions', apiKey: 'bench' }, cpuUs: () => processTreeCpuMicros(nginx.child.pid) });
    }
  }
  return floors;
}

/** Units a side's figures are per: requests, or streamed events (chunks). */
export type Unit = 'req' | 'chunk';
export const unitsOf = (side: SideResult, unit: Unit): number => (unit === 'req' ? side.requests : side.events);

/**
 * A gateway's figures over a floor's, measured in the same run: throughput and CPU per unit as ratios
 * (gateway / floor), median latency and time to first byte as differences in ms (the gateway's added
 * time less the floor's, the direct side being the same for both, named after the floor). Each side's
 * `serverCpuUs` must be set.
 */
export function overFloor(gateway: SideResult, floor: SideResult, unit: Unit, floorName: FloorName | 'direct'): Record<string, number> {
  const perS = (s: SideResult) => unitsOf(s, unit) / s.seconds;
  const cpu = (s: SideResult) => s.serverCpuUs / unitsOf(s, unit);
  return {
    per_s: ratio(perS(gateway), perS(floor)),
    cpu: ratio(cpu(gateway), cpu(floor)),
    [`added_p50_ms_minus_${floorName}`]: round(percentile(gateway.latenciesMs, 50) - percentile(floor.latenciesMs, 50)),
    [`added_ttfb_p50_ms_minus_${floorName}`]: round(percentile(gateway.ttfbMs, 50) - percentile(floor.ttfbMs, 50)),
  };
}
