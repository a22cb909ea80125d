import type { RedisClient } from '../store/redis-connect.js';
import type { Sql } from '../store/db.js';
import type { Balances } from '../billing/balances.js';
import type { RedisKeys } from './keys.js';
import type { ScriptBatcher } from './script-batcher.js';
import type { SettledCall, SettleInput, SettleResult } from './scripts.js';
import { lockLedgers } from '../ledger/locks.js';
import { log } from '../log.js';
import { UUID } from '../store/ids.js';

/** Ids per Postgres lookup. */
const LOOKUP_CHUNK = 5000;

/** A journaled call whose batch Redis acknowledged: what it takes to charge it again. */
export interface AcknowledgedCall {
  readonly userId: string;
  readonly keyId: string;
  /** The balance epoch of the lease it was settled on. */
  readonly epoch: string;
  readonly call: SettledCall;
}

export interface RecoveryOutcome {
  /** The user's balance epoch when the stream was read (null: Redis has no balance for the user). */
  readonly epoch: string | null;
  /** Calls whose entries are in the user's ledger stream: the ledger writer has them to commit. */
  readonly inStream: number;
  /** Calls already in Postgres. */
  readonly committed: number;
  /** Calls in neither, charged again now (each with a new ledger entry, so they are in the stream too). */
  readonly recovered: number;
}

export interface LedgerRecoveryDeps {
  readonly sql: Sql;
  readonly redis: RedisClient;
  readonly keys: RedisKeys;
  /** Where the calls Redis lost are settled again (settle.lua). */
  readonly scripts: ScriptBatcher;
  readonly balances: Balances;
  readonly ttlMs: number;
}

/** The lease a lost call is charged again on: one per call, so settle.lua applies it once per Redis data (its batch is 1). */
export const recoveryLeaseId = (keyId: string, callId: string) => `${keyId}:lost-${callId}`;

/** settle.lua, hydrating the user's balance from Postgres first when Redis has none. */
export async function settleReplayed(scripts: ScriptBatcher, balances: Balances, input: SettleInput): Promise<SettleResult> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const result = await scripts.settle(input);
    if (result.kind !== 'not_loaded') return result;
    await balances.load(input.userId);
  }
  throw new Error(`balance of ${input.userId} did not load`);
}

/**
 * Finds out where the ledger entries of acknowledged calls are after Redis may have lost its data,
 * and charges again those that are nowhere: Redis applied their settlement (so they were charged in
 * its balance and had an entry in the user's stream), then lost both before the ledger writer put
 * the entry into Postgres. The balance Redis rebuilt from Postgres therefore lacks them too, so
 * charging them again (settle.lua, which also appends their entries again) charges each exactly once.
 *
 * The order of the reads makes "nowhere" exact: the stream first (an entry leaves it only after its
 * Postgres transaction committed), then Postgres under the user's ledger lock (a writer pass that
 * read the entry before the loss has committed by then, or will find the epoch changed and commit
 * nothing; see LedgerWriter). A call is charged again on a lease of its own with batch number 1, so
 * doing this twice in one Redis's data charges it once; in another Redis's data it is checked again.
 */
export class LedgerRecovery {
  constructor(private readonly deps: LedgerRecoveryDeps) {}

  async recover(userId: string, calls: readonly AcknowledgedCall[]): Promise<RecoveryOutcome> {
    const { redis, keys } = this.deps;
    // One MULTI: an entry seen in the stream is in the data of the epoch read with it.
    const replies = await redis.multi().hmget(keys.balance(userId), 'credits', 'epoch').xrange(keys.ledger(userId), '-', '+').exec();
    if (!replies) throw new Error(`the Redis transaction reading the ledger of ${userId} was aborted`);
    for (const [error] of replies) if (error) throw error;
    const [credits, epochField] = replies[0]![1] as (string | null)[];
    // As settle.lua and admit.lua read it: a balance without an epoch field is epoch '0'.
    const epoch = credits == null ? null : epochField ?? '0';
    const inStream = new Set<string>();
    for (const [, fields] of replies[1]![1] as [string, string[]][]) {
      const at = fields.indexOf('r');
      if (at >= 0 && at % 2 === 0) inStream.add(fields[at + 1]!.toLowerCase());
    }

    const unique = new Map<string, AcknowledgedCall>();
    for (const call of calls) unique.set(call.call.callId.toLowerCase(), call);
    const rest = [...unique].filter(([id]) => !inStream.has(id));
    const committed = await this.committedIds(userId, rest.map(([id]) => id));
    const lost = rest.filter(([id]) => !committed.has(id)).map(([, call]) => call);

    let recovered = 0;
    await Promise.all(lost.map(async ({ keyId, epoch: leaseEpoch, call }) => {
      const result = await settleReplayed(this.deps.scripts, this.deps.balances, {
        userId, keyId, leaseId: recoveryLeaseId(keyId, call.callId), epoch: leaseEpoch, batch: 1, ttlMs: this.deps.ttlMs,
        close: true, unusedSlots: 0, releaseNano: 0n, calls: [call],
      });
      // 'resent': charged again before, in this Redis's data. 'closed': the balance has the call's own epoch,
      // so Redis kept its data and the call was never charged there (a batch Redis refused as closed): left as it was.
      if (result.kind === 'outside' || result.kind === 'applied') recovered++;
      else if (result.kind === 'closed') log.error('acknowledged call in neither the ledger stream nor Postgres, under the epoch it was settled in; not charged', { userId, callId: call.callId });
    }));
    return { epoch, inStream: unique.size - rest.length, committed: committed.size, recovered };
  }

  /** Which of `ids` Postgres has (a usage transaction or a request log), read under the user's ledger lock. */
  private async committedIds(userId: string, ids: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const uuids = ids.filter((id) => UUID.test(id));
    for (let i = 0; i < uuids.length; i += LOOKUP_CHUNK) {
      const literal = `{${uuids.slice(i, i + LOOKUP_CHUNK).join(',')}}`;
      const rows = await this.deps.sql.begin(async (tx) => {
        await lockLedgers(tx, [userId], 'exclusive');
        return tx<{ id: string }[]>`
          select id::text as id from transactions where id = any(${literal}::text::uuid[])
          union
          select id::text as id from request_logs where id = any(${literal}::text::uuid[])`;
      });
      for (const row of rows) found.add(row.id.toLowerCase());
    }
    return found;
  }
}
