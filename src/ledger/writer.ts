import type { Redis } from 'ioredis';
import type { Sql } from '../store/db.js';
import type { RedisKeys } from '../admission/keys.js';
import type { LedgerEvent } from './event.js';

const BATCH = 500;

export interface LedgerWriterOptions {
  readonly idleMs?: number;
  readonly sweepMs?: number;
  readonly onError: (error: unknown) => void;
  readonly onWritten?: (events: number) => void;
}

/**
 * Drains the users' ledger streams into Postgres. Idempotent: a usage transaction's id is the
 * reservation id and request logs are keyed by it, so a replayed event inserts nothing. Entries are
 * deleted from Redis only after their Postgres transaction committed, so a crash or a Postgres
 * outage loses nothing; the dirty set is a hint, and a periodic scan finds streams it missed.
 */
export class LedgerWriter {
  private running = false;
  private loop: Promise<void> | undefined;
  private lastSweep = 0;
  private wake: (() => void) | undefined;

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
    await this.drainAll(true);
  }

  private async run(): Promise<void> {
    const idleMs = this.options.idleMs ?? 50;
    while (this.running) {
      let written = 0;
      try {
        const sweep = Date.now() - this.lastSweep > (this.options.sweepMs ?? 30_000);
        written = await this.drainAll(sweep);
      } catch (error) {
        this.options.onError(error);
        await this.sleep(1000); // Postgres or Redis is down: back off, the events wait in Redis
        continue;
      }
      if (written === 0) await this.sleep(idleMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** One pass over the dirty users (and, when `sweep`, every ledger stream). Returns events written. */
  async drainAll(sweep = false): Promise<number> {
    const users = new Set<string>((await this.redis.spop(this.keys.ledgerDirty(), 1000)) ?? []);
    if (sweep) {
      this.lastSweep = Date.now();
      for (const userId of await this.scanLedgerUsers()) users.add(userId);
    }
    let written = 0;
    for (const userId of users) {
      try {
        written += await this.drainUser(userId);
      } catch (error) {
        await this.redis.sadd(this.keys.ledgerDirty(), userId); // try again on the next pass
        throw error;
      }
    }
    if (written > 0) this.options.onWritten?.(written);
    return written;
  }

  private async scanLedgerUsers(): Promise<string[]> {
    const users: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', this.keys.ledgerScanPattern(), 'COUNT', 1000);
      cursor = next;
      for (const key of found) {
        const userId = this.keys.userIdOfLedgerKey(key);
        if (userId) users.push(userId);
      }
    } while (cursor !== '0');
    return users;
  }

  async drainUser(userId: string): Promise<number> {
    const streamKey = this.keys.ledger(userId);
    let total = 0;
    for (;;) {
      const entries = await this.redis.xrange(streamKey, '-', '+', 'COUNT', BATCH);
      if (entries.length === 0) return total;
      await this.write(entries);
      await this.redis.xdel(streamKey, ...entries.map(([id]) => id));
      total += entries.length;
      if (entries.length < BATCH) return total;
    }
  }

  private async write(entries: [string, string[]][]): Promise<void> {
    const transactions: Record<string, unknown>[] = [];
    const logs: Record<string, unknown>[] = [];
    for (const [, fields] of entries) {
      const field = (name: string) => fields[fields.indexOf(name) + 1]!;
      const reservationId = field('r');
      const charged = BigInt(field('c'));
      const event = JSON.parse(field('e')) as LedgerEvent;
      const createdAt = new Date(event.startedAtMs);
      if (charged > 0n) {
        transactions.push({
          id: reservationId, user_id: event.userId, credits_nano: (-charged).toString(), payment_method: 'usage',
          status: 'completed', api_key_id: event.keyId, model: event.model, created_at: new Date(event.startedAtMs + event.durationMs),
        });
      }
      logs.push({
        id: reservationId, created_at: createdAt, user_id: event.userId, api_key_id: event.keyId, model: event.model,
        endpoint: event.endpoint, stream: event.stream, status: event.status, error_code: event.errorCode,
        prompt_tokens: event.promptTokens, completion_tokens: event.completionTokens, cached_tokens: event.cachedTokens,
        reasoning_tokens: event.reasoningTokens, cost_nano: charged.toString(), reserved_nano: event.reservedNano,
        duration_ms: event.durationMs, ttfb_ms: event.ttfbMs, client_aborted: event.clientAborted,
      });
    }
    await this.sql.begin(async (tx) => {
      if (transactions.length > 0) await tx`insert into transactions ${tx(transactions as never[])} on conflict (id) do nothing`;
      if (logs.length > 0) await tx`insert into request_logs ${tx(logs as never[])} on conflict (id, created_at) do nothing`;
    });
  }
}
