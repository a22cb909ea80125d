import type { RedisKeys } from './keys.js';
import { expireLease, type ScriptedRedis } from './scripts.js';
import { keyIdOfLease } from './admission.js';
import { scanKeys } from '../store/redis-connect.js';

/**
 * Cleans up after gateways that died: each pass first runs `settleDead` (the replay of dead
 * threads' settlement journals, which charges what they served and closes their leases), then
 * releases leases past their deadline: a gateway that died (or lost Redis for longer than the
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
    private readonly settleDead: () => Promise<void> = async () => {},
  ) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.pass(), intervalMs);
    this.timer.unref();
  }

  /** One pass (or the one already running); failures go to `onError` and the next pass tries again. */
  pass(): Promise<unknown> {
    this.running ??= this.settleDead().catch(this.onError)
      .then(() => this.sweep()).catch(this.onError)
      .finally(() => { this.running = undefined; });
    return this.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass over every user's reservation deadlines; returns the leases released. */
  async sweep(): Promise<number> {
    let released = 0;
    for await (const found of scanKeys(this.redis, this.keys.deadlinesScanPattern())) {
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
    }
    return released;
  }
}
