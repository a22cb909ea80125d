import type { RedisKeys } from './keys.js';
import { expireLease, type ScriptedRedis } from './scripts.js';
import { keyIdOfLease } from './admission.js';

/**
 * Releases leases past their deadline: a gateway that died (or lost Redis for longer than the
 * reservation TTL) leaves credit held that nobody will settle. Every process runs one; expire.lua
 * re-checks the deadline on the Redis clock, so two janitors, or a settlement that extended the
 * lease meanwhile, never release anything twice.
 */
export class ReservationJanitor {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    private readonly onReleased: (leaseId: string, userId: string, releasedNano: bigint) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweep().catch(this.onError).finally(() => { this.running = undefined; });
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass over every user's reservation deadlines; returns the leases released. */
  async sweep(): Promise<number> {
    let released = 0;
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', this.keys.deadlinesScanPattern(), 'COUNT', 1000);
      cursor = next;
      for (const deadlinesKey of found) {
        const userId = this.keys.userIdOf(deadlinesKey);
        if (!userId) continue;
        for (const leaseId of await this.redis.zrangebyscore(deadlinesKey, '-inf', Date.now())) {
          const amount = await expireLease(this.redis, this.keys, userId, keyIdOfLease(leaseId), leaseId);
          if (amount === undefined) continue;
          released++;
          this.onReleased(leaseId, userId, amount);
        }
      }
    } while (cursor !== '0');
    return released;
  }
}
