import { randomUUID } from 'node:crypto';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import { credit, hydrate, loadSpend, type ScriptedRedis } from '../admission/scripts.js';
import { ensureAccount } from '../store/accounts.js';
import { insertDeposit, keySpendSince, ledgerTotals } from '../store/ledger.js';
import { pendingKeyHold, pendingTaskHolds } from '../store/tasks.js';
import { evaluateAlerts } from './alerts.js';
import { log } from '../log.js';

export interface BalanceNano {
  readonly credits: bigint;
  readonly held: bigint;
}

/**
 * Hot balances live in Redis; Postgres is the truth they are loaded from. Deposits are written to
 * Postgres first and then brought into Redis by their running total (see lua/credit.lua).
 */
export class Balances {
  constructor(private readonly sql: Sql, private readonly redis: ScriptedRedis, private readonly keys: RedisKeys) {}

  /**
   * Loads the user's balance into Redis from Postgres unless it is already there: the ledger's totals
   * and the holds of the user's pending tasks, read in one snapshot so that a task ending meanwhile
   * (its charge committed with its row) is counted in exactly one of them.
   */
  async load(userId: string): Promise<void> {
    const { totals, holds } = await this.sql.begin('isolation level repeatable read read only', async (tx) => ({
      totals: await ledgerTotals(tx, userId),
      holds: await pendingTaskHolds(tx, userId),
    }));
    await hydrate(this.redis, this.keys, userId, totals.credits, totals.deposits, holds);
  }

  /** Loads a key's spend since its credit period began (and what its pending tasks hold) into Redis from Postgres unless it is already there. */
  async loadKeySpend(userId: string, keyId: string, periodStartMs: number): Promise<void> {
    const { spent, held } = await this.sql.begin('isolation level repeatable read read only', async (tx) => ({
      spent: await keySpendSince(tx, keyId, new Date(periodStartMs)),
      held: await pendingKeyHold(tx, keyId),
    }));
    await loadSpend(this.redis, this.keys, userId, keyId, periodStartMs, spent, held);
  }

  async get(userId: string): Promise<BalanceNano> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [credits, held] = await this.redis.hmget(this.keys.balance(userId), 'credits', 'held');
      if (credits != null) return { credits: BigInt(credits), held: BigInt(held ?? '0') };
      await this.load(userId);
    }
    throw new Error(`balance of ${userId} could not be loaded`);
  }

  /** A top-up or coupon already committed in Postgres: bring it into Redis exactly once, and re-arm balance alerts. */
  async applyCommittedDeposit(userId: string): Promise<bigint> {
    const credits = await this.creditCommitted(userId);
    // The deposit stands whatever happens to the alerts: a failure here is left to the periodic sweep.
    await evaluateAlerts(this.sql, [userId]).catch((error) => log.error('balance alert evaluation after a deposit failed', { user: userId, error }));
    return credits;
  }

  private async creditCommitted(userId: string): Promise<bigint> {
    const totals = await ledgerTotals(this.sql, userId);
    const credited = await credit(this.redis, this.keys, userId, totals.deposits);
    if (credited !== undefined) return credited;
    await this.load(userId);
    return (await credit(this.redis, this.keys, userId, totals.deposits)) ?? totals.credits;
  }

  /** Server-side top-up confirmation (the payment flow's last step). Returns the credits after it. */
  async topUp(userId: string, amountNano: bigint, method: string, reference: string | null = null): Promise<bigint> {
    await ensureAccount(this.sql, userId);
    await insertDeposit(this.sql, { id: randomUUID(), userId, creditsNano: amountNano, method, reference });
    return this.applyCommittedDeposit(userId);
  }
}
