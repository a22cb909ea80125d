import { pipelineAcrossSlots, type RedisClient } from '../store/redis-connect.js';
import type { RedisKeys } from './keys.js';
import { UNKNOWN_EPOCH, type SettlementJournal, type UnconfirmedCalls } from './settlement-journal.js';
import { acknowledgedCalls, readJournal } from './journal-replay.js';
import type { AcknowledgedCall, LedgerRecovery } from './ledger-recovery.js';
import { log } from '../log.js';

/** Pause between checks while calls wait for Postgres. */
export const CONFIRM_INTERVAL_MS = 250;
/** Users looked through at once after a loss (each: a stream read, a Postgres lookup, the settlements). */
const RECOVERY_CONCURRENCY = 8;

/**
 * The user's balance epoch and the ids of the oldest and newest entries of the user's ledger stream,
 * at one instant (both keys share the user's hash tag). A read, not a decision: it lives here rather
 * than in lua/. Returns {epoch or false (no balance), oldest id or '', newest id or ''}.
 */
const LEDGER_SPAN_LUA = `
local balance = redis.call('HMGET', KEYS[1], 'credits', 'epoch')
local epoch = false
if balance[1] then epoch = balance[2] or '0' end
local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
local newest = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
return {epoch, oldest[1] and oldest[1][1] or '', newest[1] and newest[1][1] or ''}
`;

type LedgerSpanPipeline = { ledgerSpan(balanceKey: string, ledgerKey: string): unknown };

/** Orders two stream ids (`<ms>-<seq>`). */
export function compareStreamIds(a: string, b: string): number {
  const [aMs = 0n, aSeq = 0n] = a.split('-').map(BigInt);
  const [bMs = 0n, bSeq = 0n] = b.split('-').map(BigInt);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  return aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

/**
 * Keeps an HTTP thread's journal records of settled calls until their ledger entries are in Postgres,
 * and charges again those Redis lost with its data before the ledger writer committed them.
 *
 * The writer takes a user's entries out of the stream (XTRIM) only after committing them, and stream
 * ids only grow. So for calls Redis acknowledged, a check reads the newest id of the user's stream
 * (their entries are at or below it, as they were appended before the acknowledgement), and once a
 * later check finds the oldest id above it, or the stream empty, their entries are in Postgres: the
 * records may go. Both checks also read the user's balance epoch in the same instant: a balance
 * rebuilt since (another epoch) or missing means Redis lost the data the entries were in. Then the
 * calls are looked for in the stream and in Postgres, and those in neither are charged again (see
 * LedgerRecovery). No Postgres on this path unless Redis lost data; one small script per user with
 * calls waiting, every `CONFIRM_INTERVAL_MS`.
 */
export class LedgerConfirmer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private failures = 0;

  constructor(
    private readonly journal: SettlementJournal,
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly recovery: LedgerRecovery,
    private readonly intervalMs = CONFIRM_INTERVAL_MS,
  ) {
    redis.defineCommand('ledgerSpan', { numberOfKeys: 2, lua: LEDGER_SPAN_LUA });
    journal.onUnconfirmed = () => this.schedule();
    if (journal.unconfirmedByUser.size > 0) this.schedule();
  }

  /** Waits (at most `timeoutMs`) until every acknowledged call of the journal is in Postgres; false if some are not. */
  async drain(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.journal.unconfirmedByUser.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 20));
    return this.journal.unconfirmedByUser.size === 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(delayMs = this.intervalMs): void {
    if (this.timer || this.running || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.check()
        .then(() => { this.failures = 0; }, (error: unknown) => {
          // Redis or Postgres is away: the records stay, and the next check tries again.
          if (this.failures++ % 20 === 0) log.warn('ledger confirmation check failed; the journal keeps the calls and retries', { error });
        })
        .finally(() => {
          this.running = undefined;
          if (this.journal.unconfirmedByUser.size > 0) this.schedule(this.failures > 0 ? Math.min(5000, this.intervalMs * 2 ** Math.min(this.failures, 5)) : this.intervalMs);
        });
    }, delayMs);
    this.timer.unref();
  }

  /** One check of every user with calls waiting; recovers the users whose Redis data was lost. */
  async check(): Promise<void> {
    const users = [...this.journal.unconfirmedByUser].map(([userId, groups]) => {
      const all = [...groups];
      // Calls acknowledged from now on were appended after this check, so they are not bound by it.
      const binding = all.filter((group) => group.bound === undefined);
      for (const group of binding) group.sealed = true;
      return { userId, all, binding };
    });
    if (users.length === 0) return;
    const replies = await pipelineAcrossSlots(this.redis, users, ({ userId }) => this.keys.balance(userId),
      (pipeline, { userId }) => (pipeline as unknown as LedgerSpanPipeline).ledgerSpan(this.keys.balance(userId), this.keys.ledger(userId)));
    const lost: string[] = [];
    users.forEach(({ userId, all, binding }, index) => {
      const [error, reply] = replies[index] ?? [new Error('no reply')];
      if (error) throw error;
      const [epoch, oldest, newest] = reply as [string | null, string, string];
      const done: UnconfirmedCalls[] = [];
      let suspect = false;
      for (const group of all) {
        if (group.epoch !== epoch) suspect = true;
        else if (group.bound === undefined) {
          if (!binding.includes(group)) continue;
          if (newest === '') done.push(group); // the stream is empty: already taken out, so committed
          else group.bound = newest;
        } else if (oldest === '' || compareStreamIds(oldest, group.bound) > 0) done.push(group);
      }
      this.journal.confirmed(done);
      if (suspect) lost.push(userId);
    });
    if (lost.length > 0) await this.recoverUsers(lost);
  }

  /**
   * These users' balance epochs are not the ones their calls were settled in: every acknowledged call
   * of theirs is looked for (their journal records read once for all), and the lost ones charged again.
   */
  private async recoverUsers(userIds: readonly string[]): Promise<void> {
    this.journal.flush(); // this turn's acknowledgements on disk: the calls read below are the acknowledged ones
    const taken = new Map(userIds.map((userId) => [userId, this.journal.take(userId)]));
    const callsOf = new Map<string, AcknowledgedCall[]>();
    let failure: unknown;
    try {
      for (const call of acknowledgedCalls(readJournal(this.journal.paths, new Set(userIds)))) {
        const calls = callsOf.get(call.userId);
        if (calls) calls.push(call);
        else callsOf.set(call.userId, [call]);
      }
    } catch (error) {
      for (const [userId, groups] of taken) this.journal.restore(userId, UNKNOWN_EPOCH, groups);
      throw error;
    }
    const queue = [...taken];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [userId, groups] = next;
        try {
          const outcome = await this.recovery.recover(userId, callsOf.get(userId) ?? []);
          if (outcome.recovered > 0) {
            log.warn('ledger entries lost with Redis\'s data charged again from the settlement journal', {
              userId, recovered: outcome.recovered, in_stream: outcome.inStream, committed: outcome.committed,
            });
          }
          // Every call is in Postgres: nothing of this user's waits any more. Otherwise the rest are in the
          // data of the epoch read with the stream (a call charged again may have gone into a later one:
          // then the next check finds the epoch differs and looks again).
          if (outcome.inStream === 0 && outcome.recovered === 0) this.journal.release(groups);
          else this.journal.restore(userId, outcome.epoch ?? UNKNOWN_EPOCH, groups);
        } catch (error) {
          this.journal.restore(userId, UNKNOWN_EPOCH, groups); // looked at again at the next check
          failure ??= error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(RECOVERY_CONCURRENCY, queue.length) }, worker));
    if (failure !== undefined) throw failure;
  }
}
