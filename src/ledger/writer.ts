import { pipelineAcrossSlots, scanKeys, type RedisClient } from '../store/redis-connect.js';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import type { LedgerEvent } from './event.js';
import { UsageRecords, insertUsageRecords } from '../store/usage-records.js';
import { lockLedgers } from './locks.js';
import { DIRTY_SHARDS, dirtyMarks } from './dirty-set.js';

/** Events read per user per pass; a user with more is marked dirty again for the next pass. */
const PER_USER = 1000;
/** Users popped from each dirty set per pass; the rest wait for the next pass. */
const PER_DIRTY_SET = 1000;

type StreamEntry = [id: string, fields: string[]];

/** The pause between passes while events keep coming. */
export const LEDGER_INTERVAL_MS = 100;

export interface LedgerWriterOptions {
  /** Pause between passes while events keep coming: every event of that window goes to Postgres in one transaction. */
  readonly intervalMs?: number;
  /** The longest pause: each pass that finds nothing doubles the pause up to this, and `nudge` ends it. */
  readonly idleIntervalMs?: number;
  readonly sweepMs?: number;
  readonly onError: (error: unknown) => void;
  readonly onWritten?: (events: number) => void;
  /** The users whose events were just committed to Postgres (balance alerts evaluate them). */
  readonly onUsersWritten?: (userIds: string[]) => void;
  /** An entry whose event cannot be read: its charge is written, its request log is not. */
  readonly onUnreadable?: (entry: { userId: string; streamId: string }) => void;
  /**
   * Redis lost the data of these users (their balance epoch changed) while a pass held entries it had
   * read from it: the pass wrote nothing, and the HTTP threads' settlement journals bring back what was lost.
   */
  readonly onEpochChanged?: (userIds: string[]) => void;
}

/**
 * XTRIM MINID of the user's ledger stream, only while the balance epoch is still the one the trimmed
 * entries were read under: after a loss, entries of the new data with ids in the same millisecond as
 * the old ones must stay. A read and a trim, not a decision: it lives here rather than in lua/.
 * KEYS[1] balance, KEYS[2] ledger stream; ARGV[1] epoch ('' for none), ARGV[2] MINID.
 */
const TRIM_LUA = `
local epoch = redis.call('HGET', KEYS[1], 'epoch') or ''
if epoch ~= ARGV[1] then return -1 end
return redis.call('XTRIM', KEYS[2], 'MINID', ARGV[2])
`;

type TrimPipeline = { ledgerTrim(balanceKey: string, ledgerKey: string, epoch: string, minId: string): unknown };

/** A user's balance epoch changed during a pass (see `LedgerWriter.write`). */
class EpochChanged extends Error {
  constructor(readonly userIds: string[]) {
    super(`balance epoch changed during a ledger pass: ${userIds.join(', ')}`);
  }
}

/**
 * Drains the users' ledger streams into Postgres. Idempotent: a usage transaction's id is the
 * reservation id and request logs are keyed by it, so a replayed event inserts nothing. Entries are
 * deleted from Redis only after their Postgres transaction committed, so a crash or a Postgres
 * outage loses nothing; the dirty sets (ledger/dirty-set.ts) are a hint, and a periodic scan finds
 * streams they missed. Writers of several processes share the work: SPOP hands each marked user to one.
 * Passes run at a fixed pace while events come, so under load one transaction carries many events;
 * an idle writer slows down to one Redis round trip per `idleIntervalMs`, and `nudge` wakes it.
 *
 * A Redis that loses its data (a restart without persistence, FLUSHALL) rebuilds each balance from
 * Postgres with a new epoch. A pass reads each user's balance epoch just before the user's stream,
 * and commits only if every epoch is the same after its insert, under the users' ledger locks
 * (see ledger/locks.ts): entries read from data that is gone are never committed after a balance
 * was rebuilt without them. They are not lost: the settlement journals keep every call until its
 * entry left the stream (see SettlementJournal), and bring back the ones Redis lost.
 */
export class LedgerWriter {
  private running = false;
  private loop: Promise<void> | undefined;
  private lastSweep = 0;
  private wake: (() => void) | undefined;
  /** The current pause is an idle one (longer than `intervalMs`): a nudge ends it. */
  private pausedIdle = false;
  private nudged = false;

  constructor(private readonly sql: Sql, private readonly redis: RedisClient, private readonly keys: RedisKeys, private readonly options: LedgerWriterOptions) {
    redis.defineCommand('ledgerTrim', { numberOfKeys: 2, lua: TRIM_LUA });
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops the loop after draining everything that is pending now. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    while ((await this.drainAll(true)) > 0);
  }

  /** New events are in Redis (settlements after a quiet spell): an idle pause ends now. */
  nudge(): void {
    this.nudged = true;
    if (this.pausedIdle) this.wake?.();
  }

  private async run(): Promise<void> {
    const intervalMs = this.options.intervalMs ?? LEDGER_INTERVAL_MS;
    const idleIntervalMs = Math.max(intervalMs, this.options.idleIntervalMs ?? 1000);
    let pauseMs = intervalMs;
    while (this.running) {
      const started = Date.now();
      this.nudged = false;
      let written: number;
      try {
        written = await this.drainAll(started - this.lastSweep > (this.options.sweepMs ?? 30_000));
      } catch (error) {
        this.options.onError(error);
        await this.sleep(1000, false); // Postgres or Redis is down: back off, the events wait in Redis
        continue;
      }
      pauseMs = written > 0 || this.nudged ? intervalMs : Math.min(idleIntervalMs, pauseMs * 2);
      await this.sleep(Math.max(0, pauseMs - (Date.now() - started)), pauseMs > intervalMs);
    }
  }

  private sleep(ms: number, idle: boolean): Promise<void> {
    return new Promise((resolve) => {
      this.pausedIdle = idle;
      const done = () => {
        this.pausedIdle = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = () => {
        clearTimeout(timer);
        done();
      };
    });
  }

  /** One pass over the dirty users (and, when `sweep`, every ledger stream). Returns events written. */
  async drainAll(sweep = false): Promise<number> {
    const users = new Set<string>(await this.popDirty());
    if (sweep) {
      this.lastSweep = Date.now();
      for (const userId of await this.scanLedgerUsers()) users.add(userId);
    }
    if (users.size === 0) return 0;
    const userIds = [...users];
    try {
      // Each user's balance epoch just before the stream: what the pass read is of that epoch's data.
      const results = await pipelineAcrossSlots(this.redis, userIds, (userId) => this.keys.balance(userId), (pipeline, userId) => pipeline
        .hget(this.keys.balance(userId), 'epoch')
        .xrange(this.keys.ledger(userId), '-', '+', 'COUNT', PER_USER));
      const entries: { userId: string; entry: StreamEntry }[] = [];
      const epochs = new Map<string, string | null>();
      const trims: { userId: string; epoch: string; minId: string }[] = [];
      const again: string[] = [];
      userIds.forEach((userId, index) => {
        const [epochError, epoch] = results[2 * index] ?? [new Error('no reply')];
        const [error, found] = results[2 * index + 1] ?? [new Error('no reply')];
        if (epochError) throw epochError;
        if (error) throw error;
        const userEntries = found as StreamEntry[];
        if (userEntries.length === 0) return;
        epochs.set(userId, epoch as string | null);
        for (const entry of userEntries) entries.push({ userId, entry });
        // What was read is the stream's oldest entries (ids only grow): trimming below the next id takes
        // exactly those, and a writer in another process that read more trims more, after writing them too.
        trims.push({ userId, epoch: (epoch as string | null) ?? '', minId: idAfter(userEntries[userEntries.length - 1]![0]) });
        if (userEntries.length === PER_USER) again.push(userId);
      });
      if (entries.length === 0) return 0;
      const changed = await this.write(entries, epochs);
      if (changed.length > 0) {
        // Nothing was written or trimmed; the streams now hold the new data's entries only, read next pass.
        this.options.onEpochChanged?.(changed);
        this.nudged = true;
        await this.markDirty(userIds);
        return 0;
      }
      this.options.onUsersWritten?.([...epochs.keys()]);
      // The dirty sets are in slots of their own: not in the trims' pipelines on a cluster.
      await Promise.all([
        pipelineAcrossSlots(this.redis, trims, ({ userId }) => this.keys.balance(userId),
          (pipeline, { userId, epoch, minId }) => (pipeline as unknown as TrimPipeline).ledgerTrim(this.keys.balance(userId), this.keys.ledger(userId), epoch, minId)),
        this.markDirty(again),
      ]);
      this.options.onWritten?.(entries.length);
      return entries.length;
    } catch (error) {
      await this.markDirty(userIds).catch(() => {}); // the periodic scan covers a failure here too
      throw error;
    }
  }

  /**
   * Users popped from every dirty set, one pipeline per node. When a set's node fails, the users
   * popped from the others are marked again and the pass fails (the periodic scan covers a failure
   * of that mark too).
   */
  private async popDirty(): Promise<string[]> {
    const replies = await pipelineAcrossSlots(this.redis, DIRTY_SHARDS, (shard) => this.keys.ledgerDirty(shard),
      (pipeline, shard) => pipeline.spop(this.keys.ledgerDirty(shard), PER_DIRTY_SET));
    const users = replies.flatMap(([error, found]) => (error ? [] : (found as string[] | null) ?? []));
    const failed = replies.find(([error]) => error);
    if (failed) {
      await this.markDirty(users).catch(() => {});
      throw failed[0];
    }
    return users;
  }

  /** Marks `userIds` in their dirty sets (one SADD per set, one pipeline per node). */
  private async markDirty(userIds: Iterable<string>): Promise<void> {
    const marks = [...dirtyMarks(this.keys, userIds)];
    if (marks.length === 0) return;
    const replies = await pipelineAcrossSlots(this.redis, marks, ([key]) => key, (pipeline, [key, users]) => pipeline.sadd(key, ...users));
    for (const [error] of replies) if (error) throw error;
  }

  private async scanLedgerUsers(): Promise<string[]> {
    const users: string[] = [];
    for await (const found of scanKeys(this.redis, this.keys.ledgerScanPattern())) {
      for (const key of found) {
        const userId = this.keys.userIdOf(key);
        if (userId) users.push(userId);
      }
    }
    return users;
  }

  /**
   * Writes the entries in one transaction, which holds their users' ledger locks (shared) from the
   * insert to the commit and commits only if no user's balance epoch changed since their entries
   * were read. Returns the users whose epoch changed (then nothing is written).
   */
  private async write(entries: { userId: string; entry: StreamEntry }[], epochs: ReadonlyMap<string, string | null>): Promise<string[]> {
    const r = new UsageRecords();
    for (const { userId, entry: [streamId, fields] } of entries) {
      // settle.lua writes the fields in this order; anything else is looked up by name.
      const inOrder = fields[0] === 'r' && fields[2] === 'c' && fields[4] === 'e';
      const field = (name: string) => fields[fields.indexOf(name) + 1]!;
      const event = parseEvent(inOrder ? fields[5]! : field('e'));
      if (!event) this.options.onUnreadable?.({ userId, streamId });
      // The charge lives in the entry itself, not in the event: it is written whatever the event holds.
      r.add(inOrder ? fields[1]! : field('r'), userId, inOrder ? fields[3]! : field('c'), event);
    }
    const userIds = [...epochs.keys()];
    try {
      await this.sql.begin(async (tx) => {
        await lockLedgers(tx, userIds, 'shared');
        await insertUsageRecords(tx, r);
        const now = await pipelineAcrossSlots(this.redis, userIds, (userId) => this.keys.balance(userId), (pipeline, userId) => pipeline.hget(this.keys.balance(userId), 'epoch'));
        const changed = userIds.filter((userId, index) => {
          const [error, epoch] = now[index] ?? [new Error('no reply')];
          if (error) throw error;
          return epoch !== epochs.get(userId);
        });
        if (changed.length > 0) throw new EpochChanged(changed);
      });
      return [];
    } catch (error) {
      if (error instanceof EpochChanged) return error.userIds;
      throw error;
    }
  }
}

/** The stream id right after `id` (`<ms>-<seq>`). */
function idAfter(id: string): string {
  const dash = id.indexOf('-');
  return `${id.slice(0, dash)}-${BigInt(id.slice(dash + 1)) + 1n}`;
}

const isCount = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
/** request_logs.attempts is a smallint: a larger count would fail the whole batch's insert. */
const MAX_ATTEMPTS = 32_767;

const TRACE_ID = /^[0-9a-f]{32}$/;

/** The event of a stream entry, or undefined when it is not one (a poison entry must not stop the writer). */
function parseEvent(text: string): LedgerEvent | undefined {
  let event: LedgerEvent;
  try {
    event = JSON.parse(text) as LedgerEvent;
  } catch {
    return undefined;
  }
  const valid = typeof event === 'object' && event !== null &&
    typeof event.keyId === 'string' && typeof event.model === 'string' && typeof event.endpoint === 'string' &&
    typeof event.stream === 'boolean' && typeof event.clientAborted === 'boolean' && isCount(event.status) &&
    (event.errorCode === null || typeof event.errorCode === 'string') &&
    isCount(event.promptTokens) && isCount(event.completionTokens) && isCount(event.cachedTokens) && isCount(event.reasoningTokens) &&
    typeof event.reservedNano === 'string' && /^\d+$/.test(event.reservedNano) &&
    isCount(event.startedAtMs) && isCount(event.durationMs) && (event.ttfbMs === null || isCount(event.ttfbMs)) &&
    (event.attempts === undefined || (isCount(event.attempts) && event.attempts <= MAX_ATTEMPTS)) &&
    (event.ownCredential === undefined || typeof event.ownCredential === 'boolean') &&
    (event.traceId === undefined || (typeof event.traceId === 'string' && TRACE_ID.test(event.traceId)));
  return valid ? event : undefined;
}
