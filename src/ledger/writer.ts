import type { Redis } from 'ioredis';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import type { LedgerEvent } from './event.js';
import { UsageRecords, insertUsageRecords } from '../store/usage-records.js';

/** Events read per user per pass; a user with more is marked dirty again for the next pass. */
const PER_USER = 1000;

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
}

/**
 * Drains the users' ledger streams into Postgres. Idempotent: a usage transaction's id is the
 * reservation id and request logs are keyed by it, so a replayed event inserts nothing. Entries are
 * deleted from Redis only after their Postgres transaction committed, so a crash or a Postgres
 * outage loses nothing; the dirty set is a hint, and a periodic scan finds streams it missed.
 * Passes run at a fixed pace while events come, so under load one transaction carries many events;
 * an idle writer slows down to one Redis round trip per `idleIntervalMs`, and `nudge` wakes it.
 */
export class LedgerWriter {
  private running = false;
  private loop: Promise<void> | undefined;
  private lastSweep = 0;
  private wake: (() => void) | undefined;
  /** The current pause is an idle one (longer than `intervalMs`): a nudge ends it. */
  private pausedIdle = false;
  private nudged = false;

  constructor(private readonly sql: Sql, private readonly redis: Redis, private readonly keys: RedisKeys, private readonly options: LedgerWriterOptions) {}

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
    const users = new Set<string>((await this.redis.spop(this.keys.ledgerDirty(), 10_000)) ?? []);
    if (sweep) {
      this.lastSweep = Date.now();
      for (const userId of await this.scanLedgerUsers()) users.add(userId);
    }
    if (users.size === 0) return 0;
    const userIds = [...users];
    try {
      const reads = userIds.reduce((pipeline, userId) => pipeline.xrange(this.keys.ledger(userId), '-', '+', 'COUNT', PER_USER), this.redis.pipeline());
      const results = (await reads.exec()) ?? [];
      const entries: { userId: string; entry: StreamEntry }[] = [];
      const deletions = this.redis.pipeline();
      const again: string[] = [];
      results.forEach(([error, found], index) => {
        if (error) throw error;
        const userEntries = found as StreamEntry[];
        if (userEntries.length === 0) return;
        for (const entry of userEntries) entries.push({ userId: userIds[index]!, entry });
        // What was read is the stream's oldest entries (ids only grow): trimming below the next id takes
        // exactly those, and a writer in another process that read more trims more, after writing them too.
        deletions.xtrim(this.keys.ledger(userIds[index]!), 'MINID', idAfter(userEntries[userEntries.length - 1]![0]));
        if (userEntries.length === PER_USER) again.push(userIds[index]!);
      });
      if (entries.length === 0) return 0;
      await this.write(entries);
      this.options.onUsersWritten?.([...new Set(entries.map((e) => e.userId))]);
      if (again.length) deletions.sadd(this.keys.ledgerDirty(), ...again);
      await deletions.exec();
      this.options.onWritten?.(entries.length);
      return entries.length;
    } catch (error) {
      await this.redis.sadd(this.keys.ledgerDirty(), ...userIds).catch(() => {}); // the periodic scan covers a failure here too
      throw error;
    }
  }

  private async scanLedgerUsers(): Promise<string[]> {
    const users: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', this.keys.ledgerScanPattern(), 'COUNT', 1000);
      cursor = next;
      for (const key of found) {
        const userId = this.keys.userIdOf(key);
        if (userId) users.push(userId);
      }
    } while (cursor !== '0');
    return users;
  }

  private async write(entries: { userId: string; entry: StreamEntry }[]): Promise<void> {
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
    await insertUsageRecords(this.sql, r);
  }
}

/** The stream id right after `id` (`<ms>-<seq>`). */
function idAfter(id: string): string {
  const dash = id.indexOf('-');
  return `${id.slice(0, dash)}-${BigInt(id.slice(dash + 1)) + 1n}`;
}

const isCount = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

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
    isCount(event.startedAtMs) && isCount(event.durationMs) && (event.ttfbMs === null || isCount(event.ttfbMs));
  return valid ? event : undefined;
}
