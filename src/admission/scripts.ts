import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from '../store/redis-connect.js';
import type { RedisKeys } from './keys.js';

const LUA_DIR = new URL('../../../lua/', import.meta.url);

/** name -> number of KEYS; a test pins these counts. */
export const SCRIPT_KEY_COUNTS = { admit: 11, settle: 14, count: 4, hydrate: 2, credit: 1, loadspend: 1, expire: 8, task_settle: 4, shard_claim: 2, shard_release: 1, timers_due: 2,
  idempotency_claim: 1, idempotency_complete: 1, idempotency_release: 1 } as const;
export type ScriptName = keyof typeof SCRIPT_KEY_COUNTS;

export type Reply = number[];
interface ScriptCommands {
  hydrate(k1: string, k2: string, ...argv: (string | number)[]): Promise<number>;
  credit(k1: string, ...argv: (string | number)[]): Promise<Reply>;
  loadspend(k1: string, ...argv: (string | number)[]): Promise<number>;
  expire(...keysThenArgv: string[]): Promise<Reply>;
  task_settle(...keysThenArgv: string[]): Promise<Reply>;
  shard_claim(k1: string, k2: string, owner: string, lifeMs: number): Promise<number>;
  shard_release(k1: string, value: string): Promise<number>;
  timers_due(k1: string, k2: string, limit: number): Promise<Reply>;
  /** See src/routing/idempotency-store.ts. */
  idempotency_claim(k1: string, fingerprint: string, owner: string, lifeMs: number): Promise<(number | string | null)[]>;
  idempotency_complete(k1: string, owner: string, fingerprint: string, keepMs: number, state: string, status: number, head: string, body: Buffer | string): Promise<number>;
  idempotency_release(k1: string, owner: string): Promise<number>;
}
export type ScriptedRedis = RedisClient & ScriptCommands;

/** A Lua script as Redis runs it: by its SHA-1, or by its source when Redis does not have it cached. */
export interface LuaScript {
  readonly lua: string;
  readonly sha: string;
  readonly numberOfKeys: number;
}

export function loadScript(name: ScriptName): LuaScript {
  const lua = readFileSync(new URL(`${name}.lua`, LUA_DIR), 'utf8');
  return Object.freeze({ lua, sha: createHash('sha1').update(lua).digest('hex'), numberOfKeys: SCRIPT_KEY_COUNTS[name] });
}

/** Registers the Lua scripts as ioredis commands (EVALSHA, falling back to EVAL once per connection). */
export function defineScripts(redis: RedisClient): ScriptedRedis {
  for (const name of Object.keys(SCRIPT_KEY_COUNTS) as ScriptName[]) {
    const { lua, numberOfKeys } = loadScript(name);
    redis.defineCommand(name, { numberOfKeys, lua });
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
  /** The balance's epoch: settle.lua tells by it whether Redis lost the lease with its data. */
  readonly epoch: string;
}

/** Which of a key's rate limits refused a call. */
export type RateLimitName = 'window' | 'rpm' | 'tph' | 'tpd';
const RATE_LIMIT_NAMES: readonly RateLimitName[] = ['window', 'rpm', 'tph', 'tpd'];

export type AdmitResult =
  | { readonly kind: 'admitted'; readonly grant: LeaseGrant }
  | { readonly kind: 'rate_limited'; readonly retryAfterMs: number; readonly limit: RateLimitName }
  | { readonly kind: 'insufficient_credits'; readonly available: number }
  | { readonly kind: 'not_loaded' }
  | { readonly kind: 'credit_limit_reached'; readonly capLeftNano: number }
  | { readonly kind: 'spend_not_loaded' }
  /**
   * Not covered now, but leases of the user hold slack that may cover it: they were recalled (see
   * lua/admit.lua); retry shortly. `refused` and `value` say what the refusal would be without them.
   */
  | { readonly kind: 'recalling'; readonly refused: 'insufficient_credits' | 'credit_limit_reached'; readonly value: number }
  /** The call's worst-case tokens exceed the whole of one of the key's token budgets. */
  | { readonly kind: 'too_large'; readonly limit: 'tph' | 'tpd'; readonly budget: number };

/** A key's own limits, as admit.lua applies them. */
export interface KeyLimits {
  readonly rpm: number | null;
  readonly tph: number | null;
  readonly tpd: number | null;
  /** `credit_limit` in nano-USD; null for none. */
  readonly capNano: bigint | null;
  /** Start of the key's current credit period (see credit-period.ts); only read with a cap. */
  readonly periodStartMs: number;
}

export const NO_KEY_LIMITS: KeyLimits = Object.freeze({ rpm: null, tph: null, tpd: null, capNano: null, periodStartMs: 0 });

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
  readonly keyLimits: KeyLimits;
  /**
   * The asking call's worst-case tokens (prompt bound plus output allowance): under the key's token
   * budgets each slot of the lease reserves this many. 0 for a call that spends no tokens.
   */
  readonly callTokens: number;
  /**
   * Above 0: a refusal that recalling other leases' unused credit may avert answers `recalling` (and
   * recalls them), and no lease gets slack for this long. 0 or absent: refused at once.
   */
  readonly recallMs?: number;
}

/** Which of a key's windows count.lua counts in: the default window (admit.lua's) or the read window. */
export type CountWindow = 'default' | 'reads';

export interface CountInput {
  readonly userId: string;
  readonly keyId: string;
  /** Unique per request (a resent command counts once). */
  readonly memberId: string;
  /** Absent: the default window. */
  readonly window?: CountWindow;
  readonly windowMs: number;
  readonly leaseLifeMs: number;
  /** The per-minute window (the key's rate_limit_rpm) counts the request too; only with the default window. */
  readonly rpm: boolean;
  /** Requests the window allows: counted only while it holds fewer. Absent: counted whatever it holds. */
  readonly limit?: number;
}

/** count.lua's answer: counted, or refused (the window is full) with when one more request would fit. */
export type CountResult = { readonly counted: true } | { readonly counted: false; readonly retryAfterMs: number };

export function countResultOf([code, retryAfterMs = 0]: Reply): CountResult {
  return code === 1 ? { counted: true } : { counted: false, retryAfterMs };
}

/** The one mapping from admit.lua's numeric codes to typed results. */
export function admitResultOf([code, value = 0, slots = 0, available = 0, remaining = 0, resetMs = 0, epoch = 0]: Reply, limit: number): AdmitResult {
  switch (code) {
    case 0: return { kind: 'admitted', grant: { creditNano: BigInt(value), slots, available, window: { limit, remaining, resetMs }, epoch: String(epoch) } };
    // For a refusal the third field says which limit refused.
    case 1: return { kind: 'rate_limited', retryAfterMs: value, limit: RATE_LIMIT_NAMES[slots] ?? 'window' };
    case 2: return { kind: 'insufficient_credits', available: value };
    case 3: return { kind: 'not_loaded' };
    case 4: return { kind: 'credit_limit_reached', capLeftNano: value };
    case 5: return { kind: 'spend_not_loaded' };
    case 6: return { kind: 'recalling', refused: slots === 1 ? 'credit_limit_reached' : 'insufficient_credits', value };
    case 7: return { kind: 'too_large', limit: slots === 3 ? 'tpd' : 'tph', budget: value };
    default: throw new Error(`admit.lua returned unknown code ${String(code)}`);
  }
}

/** One settled call inside a settlement batch. */
export interface SettledCall {
  readonly callId: string;
  readonly chargeNano: bigint;
  /** Tokens the call used (prompt and completion), for the key's token budgets. */
  readonly tokens: number;
  /** JSON of the ledger event; the writer turns it into Postgres rows. */
  readonly event: string;
}

export interface SettleInput {
  readonly userId: string;
  readonly keyId: string;
  readonly leaseId: string;
  readonly epoch: string;
  /** From 1, one more per batch of the lease; a resent number changes nothing. */
  readonly batch: number;
  readonly ttlMs: number;
  readonly close: boolean;
  readonly unusedSlots: number;
  readonly releaseNano: bigint;
  readonly calls: readonly SettledCall[];
  /** Unused credit the lease holds after this batch (its slack); absent when not known (a replay). */
  readonly slackNano?: bigint;
  /** The lease admits no more calls (retired): it holds no slack any more. */
  readonly retired?: boolean;
  /** Tokens the lease stops reserving with this batch (see lua/settle.lua); 0 when absent. */
  readonly tokensFreed?: number;
}

export interface SettleResult {
  /**
   * `closed`: closed before (this is a resend); `resent`: applied before; `not_loaded`: the balance
   * must be hydrated and the batch sent again; `outside`: charged without the lease's reservation
   * (the janitor released it, or Redis lost it).
   */
  readonly kind: 'applied' | 'closed' | 'resent' | 'not_loaded' | 'outside';
  readonly chargedNano: bigint;
}

const SETTLE_KINDS: readonly SettleResult['kind'][] = ['applied', 'closed', 'resent', 'not_loaded', 'outside'];

export function settleResultOf([code, charged = 0]: Reply): SettleResult {
  const kind = SETTLE_KINDS[code!];
  if (!kind) throw new Error(`settle.lua returned unknown code ${String(code)}`);
  return { kind, chargedNano: BigInt(charged) };
}

/** A pending task's reservation: `held` until the task ends (see lua/task_settle.lua). */
export interface TaskHold {
  readonly holdId: string;
  readonly nano: bigint;
}

/** Loads a balance (and its pending tasks' holds) from Postgres figures unless Redis already has it. */
export function hydrate(redis: ScriptedRedis, keys: RedisKeys, userId: string, creditsNano: bigint, depositsNano: bigint, holds: readonly TaskHold[] = []): Promise<number> {
  return redis.hydrate(keys.balance(userId), keys.reservations(userId), creditsNano.toString(), depositsNano.toString(), ...holds.flatMap((hold) => [hold.holdId, hold.nano.toString()]));
}

/** Loads a key's period spend (and what its pending tasks hold) from Postgres figures unless Redis already has it. */
export function loadSpend(redis: ScriptedRedis, keys: RedisKeys, userId: string, keyId: string, periodStartMs: number, spentNano: bigint, heldNano = 0n): Promise<number> {
  return redis.loadspend(keys.keySpend(userId, keyId), periodStartMs, spentNano.toString(), heldNano.toString());
}

/**
 * Ends a task's hold after Postgres recorded how the task ended: charges `chargeNano` (at most the
 * hold) and releases the rest. Returns what was charged, or undefined when the hold was not there
 * (settled before, or its task had already ended when the balance was rebuilt).
 */
export async function settleTaskHold(redis: ScriptedRedis, keys: RedisKeys, userId: string, keyId: string, holdId: string, chargeNano: bigint): Promise<bigint | undefined> {
  const [code, charged = 0] = await redis.task_settle(
    keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.keySpend(userId, keyId), holdId, chargeNano.toString(),
  );
  return code === 0 ? BigInt(charged) : undefined;
}

/** Releases a lease past its deadline (expire.lua); returns the nano-USD released, or undefined when it was not due. */
export async function expireLease(redis: ScriptedRedis, keys: RedisKeys, userId: string, keyId: string, leaseId: string): Promise<bigint | undefined> {
  const [released, amount = 0] = await redis.expire(
    keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.leaseBatches(userId),
    keys.expiredLeases(userId), keys.keySpend(userId, keyId), keys.leaseSlack(userId), keys.keyTokens(userId, keyId), leaseId,
  );
  return released === 1 ? BigInt(amount) : undefined;
}

/** Returns the credits after the deposit, or undefined when the balance is not loaded in Redis. */
export async function credit(redis: ScriptedRedis, keys: RedisKeys, userId: string, depositsTotalNano: bigint): Promise<bigint | undefined> {
  const [code, credits = 0] = await redis.credit(keys.balance(userId), depositsTotalNano.toString());
  return code === 0 ? BigInt(credits) : undefined;
}
