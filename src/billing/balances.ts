import { randomUUID } from 'node:crypto';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import { credit, hydrate, loadSpend, type ScriptedRedis } from '../admission/scripts.js';
import { ensureAccount } from '../store/accounts.js';
import { balanceFigures, insertDeposit, insertDepositOnce, keySpendSince, ledgerTotals } from '../store/ledger.js';
import { pendingKeyHold } from '../store/tasks.js';
import { lockLedgers } from '../ledger/locks.js';
import { evaluateAlerts } from './alerts.js';
import { log } from '../log.js';

export interface BalanceNano {
  readonly credits: bigint;
  /**
   * The sum of the pending reservations: calls in flight and pending tasks. Credit an admission
   * lease holds beyond its calls (its slack: Redis `held` counts it, in the balance's `slack` field)
   * is not held for anything, and admission recalls it for a call that needs it, so it is not here.
   */
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
   * (its charge committed with its row) is counted in exactly one of them. The read holds the user's
   * ledger lock (exclusive; see ledger/locks.ts): a ledger pass that read the user's stream before
   * Redis lost its data has either committed before this read or will not commit, so a rebuilt
   * balance never misses a charge that Postgres gets later.
   */
  async load(userId: string): Promise<void> {
    const figures = await this.sql.begin('isolation level read committed read only', async (tx) => {
      await lockLedgers(tx, [userId], 'exclusive');
      return balanceFigures(tx, userId); // one statement: one snapshot, taken after the lock
    });
    await hydrate(this.redis, this.keys, userId, figures.credits, figures.deposits, figures.holds);
  }

  /** Loads a key's spend since its credit period began (and what its pending tasks hold) into Redis from Postgres unless it is already there. */
  async loadKeySpend(userId: string, keyId: string, periodStartMs: number): Promise<void> {
    const { spent, held } = await this.sql.begin('isolation level repeatable read read only', async (tx) => ({
      spent: await keySpendSince(tx, keyId, new Date(periodStartMs)),
      held: await pendingKeyHold(tx, keyId),
    }));
    await loadSpend(this.redis, this.keys, userId, keyId, periodStartMs, spent, held);
  }

  /** The balance as its user reads it: `held` without lease slack (see BalanceNano). */
  async get(userId: string): Promise<BalanceNano> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const [credits, held, slack] = await this.redis.hmget(this.keys.balance(userId), 'credits', 'held', 'slack');
      if (credits != null) {
        const all = BigInt(held ?? '0');
        const pending = all - BigInt(slack ?? '0');
        return { credits: BigInt(credits), held: pending < 0n ? 0n : pending > all ? all : pending };
      }
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

  /**
   * A processor's payment confirmed on the server side, under an id derived from the payment (see
   * payments/transaction-id.ts): the row is inserted at most once, however often the payment is
   * reported. Redis is brought up to the ledger every time (credit.lua adds only deposits it has not
   * seen), so a report retried after a crash between the insert and Redis still lands it. Returns
   * whether this call inserted it, and the credits after.
   */
  async depositOnce(userId: string, id: string, amountNano: bigint, method: string, reference: string): Promise<{ inserted: boolean; credits: bigint }> {
    await ensureAccount(this.sql, userId);
    const inserted = await insertDepositOnce(this.sql, { id, userId, creditsNano: amountNano, method, reference });
    const credits = inserted ? await this.applyCommittedDeposit(userId) : await this.creditCommitted(userId);
    return { inserted, credits };
  }

  /** Server-side top-up confirmation (the payment flow's last step). Returns the credits after it. */
  async topUp(userId: string, amountNano: bigint, method: string, reference: string | null = null): Promise<bigint> {
    await ensureAccount(this.sql, userId);
    await insertDeposit(this.sql, { id: randomUUID(), userId, creditsNano: amountNano, method, reference });
    return this.applyCommittedDeposit(userId);
  }
}
