// Bench options from the environment.
import { FLOOR_NAMES, type FloorName } from './floors.js';
import { SCENARIO_NAMES, type ScenarioName } from './scenarios.js';

export interface BenchOptions {
  /** BENCH_SCALE (default 1): multiplies request counts and durations; 0.1 for a smoke run. */
  readonly scale: number;
  /** BENCH_THREADS (default 2): the gateway's HTTP_THREADS. */
  readonly threads: number;
  /** BENCH_SCENARIOS (comma list, default all), run in the canonical order. */
  readonly scenarios: ScenarioName[];
  /** BENCH_GATEWAY_NODE_ARGS: extra node flags for the gateway, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof". */
  readonly gatewayNodeArgs: string[];
  /** BENCH_GATEWAY_ENV ("NAME=value,NAME=value"): extra settings for the gateway, e.g. ROUTING_BREAKER_FAILURES=1000. */
  readonly gatewayEnv: Record<string, string>;
  /** BENCH_FLOORS (comma list, default bare_proxy,nginx; `none`): measured beside the hot-path scenarios. */
  readonly floors: FloorName[];
}

/** "NAME=value,NAME=value" (a value may hold "=", not ","), as the variable `name` holds it; empty when unset. */
export function envPairs(name: string, raw: string | undefined): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',').filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`${name}: "${pair}" is not NAME=value`);
    pairs[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return pairs;
}

/** A positive number from the environment variable `name`, `fallback` when unset or empty. */
export function positiveNumber(name: string, fallback: string, env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env[name] || fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${env[name]}`);
  return value;
}

export function readOptions(env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const scale = positiveNumber('BENCH_SCALE', '1', env);
  const threads = Number(env.BENCH_THREADS || '2');
  if (!Number.isInteger(threads) || threads < 1) throw new Error(`BENCH_THREADS must be a whole number >= 1, got ${env.BENCH_THREADS}`);
  const wanted = (env.BENCH_SCENARIOS || SCENARIO_NAMES.join(',')).split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = wanted.filter((name) => !(SCENARIO_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`BENCH_SCENARIOS: unknown ${unknown.join(', ')} (known: ${SCENARIO_NAMES.join(', ')})`);
  const floors = (env.BENCH_FLOORS ?? FLOOR_NAMES.join(',')).split(',').map((s) => s.trim()).filter((s) => s && s !== 'none');
  const unknownFloors = floors.filter((name) => !(FLOOR_NAMES as readonly string[]).includes(name));
  if (unknownFloors.length > 0) throw new Error(`BENCH_FLOORS: unknown ${unknownFloors.join(', ')} (known: ${FLOOR_NAMES.join(', ')}, or none)`);
  return {
    scale,
    threads,
    scenarios: SCENARIO_NAMES.filter((name) => wanted.includes(name)),
    gatewayNodeArgs: (env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    gatewayEnv: envPairs('BENCH_GATEWAY_ENV', env.BENCH_GATEWAY_ENV),
    floors: FLOOR_NAMES.filter((name) => floors.includes(name)),
  };
}
