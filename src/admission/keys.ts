import { keySlot } from '../store/cluster-slot.js';
import { dirtyShardOfSlot, dirtyShardTag } from '../ledger/dirty-set.js';

/**
 * Every Redis key the gateway uses, built in one place. A user's keys share the hash tag
 * `{u:<user id>}`, so each Lua script touches one Cluster slot.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {}

  private user(userId: string): string {
    return `${this.prefix}{u:${userId}}`;
  }
  balance(userId: string): string {
    return `${this.user(userId)}:bal`;
  }
  reservations(userId: string): string {
    return `${this.user(userId)}:res`;
  }
  reservationDeadlines(userId: string): string {
    return `${this.user(userId)}:resexp`;
  }
  ledger(userId: string): string {
    return `${this.user(userId)}:ledger`;
  }
  rateWindow(userId: string, keyId: string): string {
    return `${this.user(userId)}:rl:${keyId}`;
  }
  /** Weights of the rate window's members (the slots each lease holds) and their sum. */
  rateWeights(userId: string, keyId: string): string {
    return `${this.user(userId)}:rlw:${keyId}`;
  }
  /** The key's per-minute window (its `rate_limit_rpm`), weighted like the default window. */
  minuteWindow(userId: string, keyId: string): string {
    return `${this.user(userId)}:rpm:${keyId}`;
  }
  minuteWeights(userId: string, keyId: string): string {
    return `${this.user(userId)}:rpmw:${keyId}`;
  }
  /** The key's read window (GET and HEAD requests, RATE_LIMIT_READS), weighted like the default window. */
  readWindow(userId: string, keyId: string): string {
    return `${this.user(userId)}:rd:${keyId}`;
  }
  readWeights(userId: string, keyId: string): string {
    return `${this.user(userId)}:rdw:${keyId}`;
  }
  /** The key's spend in its credit period (hash: period start ms, spent, held by its open leases; nano-USD). */
  keySpend(userId: string, keyId: string): string {
    return `${this.user(userId)}:kspend:${keyId}`;
  }
  /** Tokens the key used, in minute and quarter-hour buckets, for its `rate_limit_tph`/`rate_limit_tpd`. */
  keyTokens(userId: string, keyId: string): string {
    return `${this.user(userId)}:ktok:${keyId}`;
  }
  /** The user's live uploads (zset: `<bytes>:<stored name>` -> expiry ms), for the storage quota. */
  uploads(userId: string): string {
    return `${this.user(userId)}:uploads`;
  }
  /** Bytes the user's live uploads hold (the uploads zset's running total). */
  uploadBytes(userId: string): string {
    return `${this.user(userId)}:upload-bytes`;
  }
  /**
   * Open leases granted more credit than their asking call (hash: lease id -> the unused credit it
   * held at its last report): what a recall may free. A lease leaves it once retired or closed.
   */
  leaseSlack(userId: string): string {
    return `${this.user(userId)}:lslack`;
  }
  /** Present (with a short expiry) while a recall of the user's leases runs: leases are granted without slack meanwhile. */
  leaseRecall(userId: string): string {
    return `${this.user(userId)}:recall`;
  }
  /** An output item of a Responses answer, for a later `item_reference` of the same user (string, expiring). */
  responseItem(userId: string, itemId: string): string {
    return `${this.user(userId)}:ritem:${itemId}`;
  }
  /** Last settlement batch applied to each open lease. */
  leaseBatches(userId: string): string {
    return `${this.user(userId)}:lbatch`;
  }
  /** Leases released at their deadline (the janitor's mark; their late calls are still charged). */
  expiredLeases(userId: string): string {
    return `${this.user(userId)}:lexp`;
  }
  /**
   * One of the sets of users whose ledger stream has undrained events (a hint; a periodic scan backs
   * it up). The sets are spread over the Cluster's slots: see ledger/dirty-set.ts.
   */
  ledgerDirty(shard: number): string {
    return `${this.prefix}ledger:dirty:{${dirtyShardTag(shard)}}`;
  }
  /** The dirty set a user is marked in: the one whose slot range holds the user's slot. */
  ledgerDirtyOf(userId: string): string {
    return this.ledgerDirty(dirtyShardOfSlot(keySlot(this.balance(userId))));
  }
  ledgerScanPattern(): string {
    return `${this.prefix}{u:*}:ledger`;
  }
  /** Every user's reservation deadlines, for the janitor's scan. */
  deadlinesScanPattern(): string {
    return `${this.prefix}{u:*}:resexp`;
  }
  /** The user a per-user key belongs to (user ids never contain '}'). */
  userIdOf(key: string): string | undefined {
    const match = /^\{u:([^}]+)\}:/.exec(key.slice(this.prefix.length));
    return match?.[1];
  }
  /**
   * The sign-in window of one client address (zset: request -> ms, RATE_LIMIT_SIGNIN) and its weights:
   * under the address's own hash tag, one Cluster slot per address.
   */
  signInWindow(address: string): string {
    return `${this.prefix}{ip:${address}}:signin`;
  }
  signInWeights(address: string): string {
    return `${this.prefix}{ip:${address}}:signinw`;
  }
  /** A task shard's keys share one hash tag, so each shard script touches one Cluster slot. */
  private shard(shard: number): string {
    return `${this.prefix}{ts:${shard}}`;
  }
  /** The shard's messages for its actors (stream, consumer group `actors`). */
  taskStream(shard: number): string {
    return `${this.shard(shard)}:stream`;
  }
  /** The shard's timers (zset: `<kind>:<task id>:<user id>` -> due ms), moved into its stream when due. */
  taskTimers(shard: number): string {
    return `${this.shard(shard)}:timers`;
  }
  /** The shard's owner (`<process id>|<fencing token>`, expiring unless renewed). */
  taskLease(shard: number): string {
    return `${this.shard(shard)}:lease`;
  }
  /** The shard's last fencing token. */
  taskFence(shard: number): string {
    return `${this.shard(shard)}:fence`;
  }
  /** Live gateway processes of the task runtime (zset: process id -> ms its heartbeat lasts until). */
  taskMembers(): string {
    return `${this.prefix}tasks:members`;
  }
  /**
   * Pub/sub channel of lease recalls: `r<user id>` asks every HTTP thread to give back the unused
   * credit of its leases of that user now; `d<user id>` says no lease of the user holds slack any more.
   */
  leaseRecallChannel(): string {
    return `${this.prefix}leases:recall`;
  }
  // Idempotency-Key records (src/routing/idempotency.ts).
  /**
   * A paid request's Idempotency-Key (hash: its claim, then the kept answer; expiring), named by the
   * SHA-256 of the key's text: a client's text could otherwise end like another key (`…}:ledger`)
   * and be found by the scans above.
   */
  idempotency(userId: string, keyDigest: string): string {
    return `${this.user(userId)}:idem:${keyDigest}`;
  }
  /** Pub/sub channel announcing API key changes (revocation, disable), so caches drop them at once. */
  keyEvents(): string {
    return `${this.prefix}keys:events`;
  }
  /** A list each subscriber of a key event pushes to once it has applied the event (the change answers after them). */
  keyEventAcks(nonce: string): string {
    return `${this.prefix}keys:acks:${nonce}`;
  }
}
