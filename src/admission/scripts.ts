import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { RedisKeys } from './keys.js';

const LUA_DIR = new URL('../../../lua/', import.meta.url);

/** name -> number of KEYS; a test pins these counts. */
export const SCRIPT_KEY_COUNTS = { admit: 7, settle: 10, hydrate: 1, credit: 1 } as const;
export type ScriptName = keyof typeof SCRIPT_KEY_COUNTS;

export type Reply = number[];
interface ScriptCommands {
  hydrate(k1: string, ...argv: (string | number)[]): Promise<number>;
  credit(k1: string, ...argv: (string | number)[]): Promise<Reply>;
}
export type ScriptedRedis = Redis & ScriptCommands;

declare module 'ioredis' {
  interface ChainableCommander {
    admit(...keysThenArgv: (string | number)[]): ChainableCommander;
    settle(...keysThenArgv: (string | number)[]): ChainableCommander;
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

/** What admit.lua granted: credit and slots, the asking call's share included. */
export interface LeaseGrant {
  readonly creditNano: bigint;
  readonly slots: number;
  readonly available: number;
  readonly window: RateWindow;
}

export type AdmitResult =
  | { readonly kind: 'admitted'; readonly grant: LeaseGrant }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number; readonly perMinute: boolean }
  | { readonly kind: 'insufficient_credits'; readonly available: number }
  | { readonly kind: 'not_loaded' };

export interface AdmitInput {
  readonly userId: string;
  readonly keyId: string;
  readonly leaseId: string;
  /** The asking call's worst-case cost: the least the lease must hold. */
  readonly callNano: bigint;
  readonly wantCreditNano: bigint;
  readonly wantSlots: number;
  readonly limit: number;
  readonly windowMs: number;
  readonly ttlMs: number;
  /** A lease of more than one slot admits nothing after this long. */
  readonly leaseLifeMs: number;
  /** The key's `rate_limit_rpm`; null or absent for none. */
  readonly rpm?: number | null;
}

/** The one mapping from admit.lua's numeric codes to typed results. */
export function admitResultOf([code, value = 0, slots = 0, available = 0, remaining = 0, resetMs = 0]: Reply, limit: number): AdmitResult {
  switch (code) {
    case 0: return { kind: 'admitted', grant: { creditNano: BigInt(value), slots, available, window: { limit, remaining, resetMs } } };
    // For a refusal the third field says which window refused: 1 for the key's per-minute one.
    case 1: return { kind: 'rate_limited', retryAfterMs: value, perMinute: slots === 1 };
    case 2: return { kind: 'insufficient_credits', available: value };
    case 3: return { kind: 'not_loaded' };
    default: throw new Error(`admit.lua returned unknown code ${String(code)}`);
  }
}

/** One settled call inside a settlement batch. */
export interface SettledCall {
  readonly callId: string;
  readonly chargeNano: bigint;
  /** JSON of the ledger event; the writer turns it into Postgres rows. */
  readonly event: string;
}

export interface SettleInput {
  readonly userId: string;
  readonly keyId: string;
  readonly leaseId: string;
  /** From 1, one more per batch of the lease; a resent number changes nothing. */
  readonly batch: number;
  readonly ttlMs: number;
  readonly close: boolean;
  readonly unusedSlots: number;
  readonly releaseNano: bigint;
  readonly calls: readonly SettledCall[];
}

export interface SettleResult {
  /** `lease_unknown`: not open in Redis (already closed, or lost with Redis's data); `resent`: applied before. */
  readonly kind: 'applied' | 'lease_unknown' | 'resent';
  readonly chargedNano: bigint;
}

export function hydrate(redis: ScriptedRedis, keys: RedisKeys, userId: string, creditsNano: bigint, depositsNano: bigint): Promise<number> {
  return redis.hydrate(keys.balance(userId), creditsNano.toString(), depositsNano.toString());
}

/** Returns the credits after the deposit, or undefined when the balance is not loaded in Redis. */
export async function credit(redis: ScriptedRedis, keys: RedisKeys, userId: string, depositsTotalNano: bigint): Promise<bigint | undefined> {
  const [code, credits = 0] = await redis.credit(keys.balance(userId), depositsTotalNano.toString());
  return code === 0 ? BigInt(credits) : undefined;
}
