/**
 * The money invariants, checked against live state (`gateway ledger check`): for each user, the Redis
 * balance agrees with the Postgres ledger (credits and deposits), `held` is the sum of the open
 * reservations, no balance is below zero, nothing was charged outside a lease (settle.lua counts such
 * charges in the balance's `outside` field), and no live key spent more than its credit limit in its
 * current period.
 *
 * Races with a live gateway: each user's Redis figures are read in one MULTI/EXEC (atomic with
 * settle.lua and credit.lua), then Postgres in one repeatable-read snapshot, which also says which
 * entries still in the ledger stream are already committed (the writer deletes them just after its
 * commit). What can still move between the two reads (a settlement the writer commits in between, a
 * deposit committed but not yet applied) makes a user's comparison fail transiently, so a user with a
 * difference is read again a few times and reported only when every attempt disagrees.
 */
import type { RedisClient } from '../store/redis-connect.js';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import { keyPeriodStartMs } from '../billing/credit-period.js';
import { keyPeriodSpend, ledgerSnapshot, listAccountIds, listLimitedKeys, type LedgerSnapshot } from '../store/ledger-check.js';
import { UUID } from '../store/ids.js';

export type LedgerDifference =
  /** Redis credits differ from the Postgres sum minus the charges still pending in the ledger stream. */
  | { readonly kind: 'credits'; readonly userId: string; readonly expectedNano: bigint; readonly actualNano: bigint; readonly postgresNano: bigint; readonly pendingNano: bigint }
  /** Redis `deposits` differ from the Postgres sum of positive transactions (e.g. a deposit committed, not applied). */
  | { readonly kind: 'deposits'; readonly userId: string; readonly expectedNano: bigint; readonly actualNano: bigint }
  /** Redis `held` differs from the sum of the open reservations (or leases). */
  | { readonly kind: 'held'; readonly userId: string; readonly expectedNano: bigint; readonly actualNano: bigint; readonly reservations: number }
  /** Redis `held` or an open reservation is negative. */
  | { readonly kind: 'negative_held'; readonly userId: string; readonly actualNano: bigint; readonly what: string }
  /** The user's credits are below zero (Redis, or Postgres for a balance Redis does not have). */
  | { readonly kind: 'negative_balance'; readonly userId: string; readonly actualNano: bigint; readonly where: 'redis' | 'postgres' }
  /** Calls were charged without their lease's reservation (released at its deadline, or lost with Redis's data). */
  | { readonly kind: 'outside_lease'; readonly userId: string; readonly chargedNano: bigint }
  /** A Redis figure that is not an integer. */
  | { readonly kind: 'unreadable'; readonly userId: string; readonly what: string; readonly raw: string }
  /** A pending task's hold (Postgres) is not open in Redis at its amount, or Redis holds for a task that is not pending. */
  | { readonly kind: 'task_hold'; readonly userId: string; readonly holdId: string; readonly expectedNano: bigint; readonly actualNano: bigint }
  /** A live key whose spend in its current period (Postgres) is above its credit limit. */
  | { readonly kind: 'key_spend'; readonly userId: string; readonly keyId: string; readonly limitNano: bigint; readonly spentNano: bigint; readonly periodStart: Date };

export interface LedgerCheckResult {
  readonly users: number;
  readonly limitedKeys: number;
  readonly differences: LedgerDifference[];
}

export interface LedgerCheckOptions {
  /** Check one user instead of every account. */
  readonly userId?: string;
  /** Reads of a user that disagrees before it is reported (default 4). */
  readonly attempts?: number;
  /** Pause before reading a disagreeing user again (default 250 ms; the writer runs every 100 ms). */
  readonly retryDelayMs?: number;
  /** Clock for the keys' credit periods. */
  readonly nowMs?: number;
  /** Users read per round trip (default 500). */
  readonly batchSize?: number;
}

/** One user's money in Redis, read atomically. */
interface RedisMoney {
  readonly loaded: boolean;
  readonly credits: string | null;
  readonly held: string | null;
  readonly deposits: string | null;
  /** nano-USD charged outside a lease (settle.lua); null when none ever was. */
  readonly outside: string | null;
  readonly reservations: [id: string, nano: string][];
  /** Ledger-stream entries: transaction id and charge. */
  readonly pending: [id: string, charge: string][];
}

const INTEGER = /^-?\d+$/;
/** A task's hold id (store/tasks.ts `holdIdOf`). */
const TASK_HOLD = /:task-[0-9a-f-]{36}$/;

export async function checkLedger(sql: Sql, redis: RedisClient, keys: RedisKeys, options: LedgerCheckOptions = {}): Promise<LedgerCheckResult> {
  const attempts = Math.max(1, options.attempts ?? 4);
  const retryDelayMs = options.retryDelayMs ?? 250;
  const batchSize = options.batchSize ?? 500;
  const differences: LedgerDifference[] = [];
  let users = 0;

  const checkBatch = async (userIds: string[]) => {
    users += userIds.length;
    let disagreeing = new Map<string, LedgerDifference[]>();
    for (let attempt = 1; attempt <= attempts && (attempt === 1 || disagreeing.size > 0); attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
      const asked = attempt === 1 ? userIds : [...disagreeing.keys()];
      disagreeing = await compareUsers(sql, redis, keys, asked);
    }
    for (const found of disagreeing.values()) differences.push(...found);
  };

  if (options.userId !== undefined) {
    await checkBatch([options.userId]);
  } else {
    let after: string | null = null;
    for (;;) {
      const userIds = await listAccountIds(sql, after, batchSize);
      if (userIds.length === 0) break;
      await checkBatch(userIds);
      after = userIds[userIds.length - 1]!;
    }
  }

  const limited = await listLimitedKeys(sql, options.userId ?? null);
  const nowMs = options.nowMs ?? Date.now();
  const periods = limited.map((key) => ({
    key,
    since: new Date(keyPeriodStartMs(key, nowMs)),
  }));
  const spent = await keyPeriodSpend(sql, periods.map(({ key, since }) => ({ keyId: key.id, since })));
  for (const { key, since } of periods) {
    const spentNano = spent.get(key.id) ?? 0n;
    if (spentNano > key.credit_limit_nano) {
      differences.push({ kind: 'key_spend', userId: key.user_id, keyId: key.id, limitNano: key.credit_limit_nano, spentNano, periodStart: since });
    }
  }
  return { users, limitedKeys: limited.length, differences };
}

/** Reads Redis (each user atomically), then Postgres, and returns the differences of the users that have some. */
async function compareUsers(sql: Sql, redis: RedisClient, keys: RedisKeys, userIds: readonly string[]): Promise<Map<string, LedgerDifference[]>> {
  const money = await Promise.all(userIds.map((userId) => readRedisMoney(redis, keys, userId)));
  const pendingIds = money.flatMap((m) => m.pending.map(([id]) => id)).filter((id) => UUID.test(id));
  const snapshot = await ledgerSnapshot(sql, userIds, pendingIds);
  const result = new Map<string, LedgerDifference[]>();
  userIds.forEach((userId, index) => {
    const found = compareUser(userId, money[index]!, snapshot);
    if (found.length > 0) result.set(userId, found);
  });
  return result;
}

async function readRedisMoney(redis: RedisClient, keys: RedisKeys, userId: string): Promise<RedisMoney> {
  // One MULTI/EXEC: the balance, the reservations and the stream as of one instant between scripts.
  const replies = await redis.multi()
    .hmget(keys.balance(userId), 'credits', 'held', 'deposits', 'outside')
    .hgetall(keys.reservations(userId))
    .xrange(keys.ledger(userId), '-', '+')
    .exec();
  if (!replies) throw new Error(`the Redis transaction reading ${userId} was aborted`);
  for (const [error] of replies) if (error) throw error;
  const [credits, held, deposits, outside] = replies[0]![1] as (string | null)[];
  const reservations = Object.entries(replies[1]![1] as Record<string, string>);
  const pending = (replies[2]![1] as [string, string[]][]).map(([, fields]): [string, string] => {
    const field = (name: string) => {
      const at = fields.indexOf(name);
      return at >= 0 && at % 2 === 0 ? fields[at + 1] ?? '' : '';
    };
    return [field('r'), field('c')];
  });
  return { loaded: credits != null, credits: credits ?? null, held: held ?? null, deposits: deposits ?? null, outside: outside ?? null, reservations, pending };
}

function compareUser(userId: string, money: RedisMoney, snapshot: LedgerSnapshot): LedgerDifference[] {
  const found: LedgerDifference[] = [];
  const integer = (what: string, raw: string | null): bigint | undefined => {
    if (raw !== null && INTEGER.test(raw)) return BigInt(raw);
    found.push({ kind: 'unreadable', userId, what, raw: String(raw) });
    return undefined;
  };

  // held = sum of the open reservations, never negative (a user without a balance holds nothing).
  let reserved: bigint | undefined = 0n;
  for (const [id, raw] of money.reservations) {
    const nano = integer(`open reservation ${id}`, raw);
    if (nano === undefined) reserved = undefined;
    else {
      if (nano < 0n) found.push({ kind: 'negative_held', userId, actualNano: nano, what: `open reservation ${id}` });
      if (reserved !== undefined) reserved += nano;
    }
  }
  const held = money.loaded ? integer('held', money.held ?? '0') : 0n;
  if (held !== undefined) {
    if (held < 0n) found.push({ kind: 'negative_held', userId, actualNano: held, what: 'held' });
    if (reserved !== undefined && held !== reserved) {
      found.push({ kind: 'held', userId, expectedNano: reserved, actualNano: held, reservations: money.reservations.length });
    }
  }

  const totals = snapshot.totals.get(userId) ?? { credits: 0n, deposits: 0n };
  // A balance Redis does not have is loaded from Postgres on first use: nothing to compare, but it must not be below zero.
  if (!money.loaded) {
    if (totals.credits < 0n) found.push({ kind: 'negative_balance', userId, actualNano: totals.credits, where: 'postgres' });
    return found;
  }
  if (money.outside !== null) {
    const outside = integer('outside', money.outside);
    if (outside !== undefined && outside !== 0n) found.push({ kind: 'outside_lease', userId, chargedNano: outside });
  }
  // Pending tasks hold their cost in Redis for as long as they run, and nothing else holds for a task.
  const taskHolds = snapshot.taskHolds.get(userId) ?? new Map<string, bigint>();
  const open = new Map(money.reservations);
  for (const [holdId, expectedNano] of taskHolds) {
    const raw = open.get(holdId);
    const actualNano = raw !== undefined && INTEGER.test(raw) ? BigInt(raw) : 0n;
    if (actualNano !== expectedNano) found.push({ kind: 'task_hold', userId, holdId, expectedNano, actualNano });
  }
  for (const [holdId, raw] of money.reservations) {
    if (TASK_HOLD.test(holdId) && !taskHolds.has(holdId)) {
      found.push({ kind: 'task_hold', userId, holdId, expectedNano: 0n, actualNano: INTEGER.test(raw) ? BigInt(raw) : 0n });
    }
  }
  let pendingNano: bigint | undefined = 0n;
  for (const [id, raw] of money.pending) {
    const charge = integer(`charge of ledger entry ${id}`, raw);
    if (charge === undefined) pendingNano = undefined;
    // An entry already committed (the writer deletes it right after) is in the Postgres sum already.
    else if (pendingNano !== undefined && !snapshot.committed.has(id)) pendingNano += charge;
  }
  const credits = integer('credits', money.credits);
  if (credits !== undefined && credits < 0n) found.push({ kind: 'negative_balance', userId, actualNano: credits, where: 'redis' });
  if (credits !== undefined && pendingNano !== undefined) {
    const expectedNano = totals.credits - pendingNano;
    if (credits !== expectedNano) {
      found.push({ kind: 'credits', userId, expectedNano, actualNano: credits, postgresNano: totals.credits, pendingNano });
    }
  }
  const deposits = integer('deposits', money.deposits);
  if (deposits !== undefined && deposits !== totals.deposits) {
    found.push({ kind: 'deposits', userId, expectedNano: totals.deposits, actualNano: deposits });
  }
  return found;
}

/** Exact USD text of a nano-USD amount: `-1.5`, `0.000000001`. */
export function usdText(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  const fraction = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}${abs / 1_000_000_000n}${fraction ? `.${fraction}` : ''}`;
}

const money = (nano: bigint) => `${usdText(nano)} USD (${nano} nano)`;

/** One human-readable line per difference. */
export function describeDifference(d: LedgerDifference): string {
  switch (d.kind) {
    case 'credits':
      return `user ${d.userId}: credits: Redis has ${money(d.actualNano)}, expected ${money(d.expectedNano)} ` +
        `(Postgres ${money(d.postgresNano)} minus ${money(d.pendingNano)} pending in the ledger stream); off by ${money(d.actualNano - d.expectedNano)}`;
    case 'deposits':
      return `user ${d.userId}: deposits: Redis has ${money(d.actualNano)}, expected ${money(d.expectedNano)} ` +
        `(sum of positive Postgres transactions)${d.actualNano < d.expectedNano ? '; a deposit committed in Postgres is not applied in Redis' : ''}`;
    case 'held':
      return `user ${d.userId}: held: Redis has ${money(d.actualNano)}, expected ${money(d.expectedNano)} ` +
        `(sum of ${d.reservations} open reservation${d.reservations === 1 ? '' : 's'}); off by ${money(d.actualNano - d.expectedNano)}`;
    case 'negative_held':
      return `user ${d.userId}: ${d.what} is negative: ${money(d.actualNano)}`;
    case 'negative_balance':
      return `user ${d.userId}: balance is below zero in ${d.where === 'redis' ? 'Redis' : 'Postgres'}: ${money(d.actualNano)}`;
    case 'outside_lease':
      return `user ${d.userId}: ${money(d.chargedNano)} charged outside a lease (calls settled after their reservation was released or lost)`;
    case 'unreadable':
      return `user ${d.userId}: ${d.what} in Redis is not an integer: ${JSON.stringify(d.raw)}`;
    case 'task_hold':
      return `user ${d.userId}: task hold ${d.holdId}: Redis holds ${money(d.actualNano)}, expected ${money(d.expectedNano)} ` +
        `(${d.expectedNano === 0n ? 'its task is not pending' : 'the pending task\'s reservation in Postgres'})`;
    case 'key_spend':
      return `user ${d.userId}: key ${d.keyId}: spend since ${d.periodStart.toISOString()} is ${money(d.spentNano)}, ` +
        `above its credit limit ${money(d.limitNano)} by ${money(d.spentNano - d.limitNano)}`;
  }
}

/** A difference as a JSON-safe object (nano-USD as strings, since they are bigints). */
export function differenceJson(d: LedgerDifference): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(d)) {
    const key = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    out[key] = typeof value === 'bigint' ? value.toString() : value instanceof Date ? value.toISOString() : value;
  }
  return out;
}
