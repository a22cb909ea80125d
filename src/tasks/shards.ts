import { createHash } from 'node:crypto';
import type { ScriptedRedis } from '../admission/scripts.js';
import type { RedisKeys } from '../admission/keys.js';

/** A shard this process owns, under the fencing token its lease was claimed with. */
export interface OwnedShard {
  readonly shard: number;
  readonly token: bigint;
}

export interface ShardEvents {
  /** A shard became this process's (claimed, or claimed again after its lease was lost). */
  acquired(owned: OwnedShard): void;
  /** This process no longer owns the shard: it must stop working on it at once. */
  lost(shard: number, reason: 'released' | 'expired'): void;
}

/** The user's shard: a stable hash, so every process agrees without asking anyone. */
export function shardOf(userId: string, shards: number): number {
  return createHash('sha256').update(userId).digest().readUInt32BE(0) % shards;
}

/**
 * Which live member should own `shard`: the highest rendezvous score. Every process computes the same
 * answer from the same member list, so shards spread evenly and only the shards of a member that
 * comes or goes move.
 */
export function preferredOwner(shard: number, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1n;
  for (const member of members) {
    const score = createHash('sha256').update(`${member}\n${shard}`).digest().readBigUInt64BE(0);
    if (score > bestScore || (score === bestScore && member < best!)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

/**
 * The shard leases of one process. Each tick it heartbeats in the member list, claims the shards it
 * should own (free ones only: a lease is never taken from a live owner), renews those it holds, and
 * gives up the ones another live member should own now. A lease it cannot renew (expired, or Redis
 * lost its data) is reported lost at once; claiming it again later makes a new fencing token.
 */
export class ShardLeases {
  private readonly owned = new Map<number, bigint>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    readonly owner: string,
    private readonly options: { readonly shards: number; readonly leaseMs: number },
    private readonly events: ShardEvents,
    private readonly onError: (error: unknown) => void,
  ) {
    if (owner.includes('|')) throw new Error('a shard owner id must not contain |');
  }

  get tokens(): ReadonlyMap<number, bigint> {
    return this.owned;
  }

  /** Whether `token` is still this process's lease on `shard`. */
  holds(shard: number, token: bigint): boolean {
    return this.owned.get(shard) === token;
  }

  start(): void {
    const run = () => {
      this.ticking = this.tick().catch(this.onError).finally(() => {
        this.ticking = undefined;
        if (!this.stopped) this.timer = setTimeout(run, Math.max(50, Math.floor(this.options.leaseMs / 3)));
      });
    };
    run();
  }

  /** One round: heartbeat, claim, renew, hand over. */
  async tick(): Promise<void> {
    const now = Date.now();
    const members = this.keys.taskMembers();
    const [, , [, live]] = (await this.redis.multi()
      .zadd(members, now + this.options.leaseMs, this.owner)
      .zremrangebyscore(members, '-inf', now)
      .zrange(members, 0, -1)
      .exec()) as [unknown, unknown, [unknown, string[]]];
    // Every shard at once: the claims leave together instead of one round trip after another.
    await Promise.all(Array.from({ length: this.options.shards }, (_, shard) => this.round(shard, preferredOwner(shard, live))));
  }

  private async round(shard: number, preferred: string | undefined): Promise<void> {
    if (this.stopped) return;
    const mine = this.owned.get(shard);
    if (mine !== undefined && preferred !== this.owner) return this.release(shard);
    if (mine === undefined && preferred !== this.owner) return;
    const token = BigInt(await this.redis.shard_claim(this.keys.taskLease(shard), this.keys.taskFence(shard), this.owner, this.options.leaseMs));
    if (mine !== undefined && token !== mine) {
      // Not renewed: the lease expired (this process stalled) or Redis lost it.
      this.owned.delete(shard);
      this.events.lost(shard, 'expired');
    }
    if (token > 0n && this.owned.get(shard) === undefined && !this.stopped) {
      this.owned.set(shard, token);
      this.events.acquired({ shard, token });
    }
  }

  /** Gives a held shard up now (it could not be opened); the next round claims it again with a new token. */
  giveUp(shard: number): Promise<void> {
    return this.release(shard);
  }

  private async release(shard: number): Promise<void> {
    const token = this.owned.get(shard);
    if (token === undefined) return;
    this.owned.delete(shard);
    this.events.lost(shard, 'released');
    await this.redis.shard_release(this.keys.taskLease(shard), `${this.owner}|${token}`);
  }

  /** Stops claiming, releases every lease (so other processes take the shards over at once) and leaves the member list. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    for (const shard of [...this.owned.keys()]) await this.release(shard);
    await this.redis.zrem(this.keys.taskMembers(), this.owner);
  }
}
