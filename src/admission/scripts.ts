import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';

const LUA_DIR = new URL('../../../lua/', import.meta.url);

/** name -> number of KEYS; a test pins these counts. */
export const SCRIPT_KEY_COUNTS = { admit: 4, settle: 4, hydrate: 1, credit: 1 } as const;
export type ScriptName = keyof typeof SCRIPT_KEY_COUNTS;

export type Reply = number[];
interface ScriptCommands {
  admit(k1: string, k2: string, k3: string, k4: string, ...argv: (string | number)[]): Promise<Reply>;
  settle(k1: string, k2: string, k3: string, k4: string, ...argv: (string | number)[]): Promise<Reply>;
  hydrate(k1: string, ...argv: (string | number)[]): Promise<number>;
  credit(k1: string, ...argv: (string | number)[]): Promise<Reply>;
}
export type ScriptedRedis = Redis & ScriptCommands;

declare module 'ioredis' {
  interface ChainableCommander {
    admit(k1: string, k2: string, k3: string, k4: string, ...argv: (string | number)[]): ChainableCommander;
    settle(k1: string, k2: string, k3: string, k4: string, ...argv: (string | number)[]): ChainableCommander;
  }
}

/** Registers the Lua scripts as ioredis commands (EVALSHA, falling back to EVAL once per connection). */
export function defineScripts(redis: Redis): ScriptedRedis {
  for (const [name, numberOfKeys] of Object.entries(SCRIPT_KEY_COUNTS)) {
    redis.defineCommand(name, { numberOfKeys, lua: readFileSync(new URL(`${name}.lua`, LUA_DIR), 'utf8') });
  }
  return redis as ScriptedRedis;
}

/** Where the key stands in its rate window after an admission. */
export interface RateWindow {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

export type AdmitResult =
  | { readonly kind: 'admitted'; readonly available: number; readonly window?: RateWindow }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number }
  | { readonly kind: 'insufficient_credits'; readonly available: number }
  | { readonly kind: 'not_loaded' };

export interface AdmitInput {
  readonly userId: string;
  readonly keyId: string;
  readonly reservationId: string;
  readonly amountNano: bigint;
  readonly limit: number;
  readonly windowMs: number;
  readonly ttlMs: number;
}

/** The one mapping from admit.lua's numeric codes to typed results. */
export function admitResultOf([code, value = 0, remaining, resetMs]: Reply, limit: number): AdmitResult {
  switch (code) {
    case 0: return remaining === undefined || resetMs === undefined
      ? { kind: 'admitted', available: value }
      : { kind: 'admitted', available: value, window: { limit, remaining, resetMs } };
    case 1: return { kind: 'rate_limited', retryAfterMs: value };
    case 2: return { kind: 'insufficient_credits', available: value };
    case 3: return { kind: 'not_loaded' };
    default: throw new Error(`admit.lua returned unknown code ${String(code)}`);
  }
}

export interface SettleInput {
  readonly userId: string;
  readonly reservationId: string;
  readonly chargeNano: bigint;
  /** JSON of the ledger event; the writer turns it into Postgres rows. */
  readonly event: string;
}

export function hydrate(redis: ScriptedRedis, keys: RedisKeys, userId: string, creditsNano: bigint, depositsNano: bigint): Promise<number> {
  return redis.hydrate(keys.balance(userId), creditsNano.toString(), depositsNano.toString());
}

/** Returns the credits after the deposit, or undefined when the balance is not loaded in Redis. */
export async function credit(redis: ScriptedRedis, keys: RedisKeys, userId: string, depositsTotalNano: bigint): Promise<bigint | undefined> {
  const [code, credits = 0] = await redis.credit(keys.balance(userId), depositsTotalNano.toString());
  return code === 0 ? BigInt(credits) : undefined;
}
