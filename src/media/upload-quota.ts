import { randomUUID } from 'node:crypto';
import { ApiError } from '../http/errors.js';
import type { ScriptedRedis } from '../admission/scripts.js';
import type { RedisKeys } from '../admission/keys.js';

/** An upload counted before it is stored; kept once stored, or released. */
export interface UploadReservation {
  readonly userId: string;
  readonly member: string;
  readonly bytes: number;
  /** Whether this reservation added the upload (false: the same bytes were counted already). */
  readonly added: boolean;
}

/** A reservation not kept by then was left by a crash mid-store: it stops counting. */
const PENDING_MS = 5 * 60_000;
/** Expired uploads dropped from the count per reservation (the rest at the next ones). */
const EXPIRED_BATCH = 1000;

const bytesOf = (member: string) => Number(member.slice(0, member.indexOf(':')));

export const quotaExceeded = (quota: number, held: number, bytes: number) => new ApiError(413, 'upload_quota_exceeded',
  `This account's unexpired uploads hold ${held} bytes; ${bytes} more would pass its storage quota of ${quota} bytes (MEDIA_USER_QUOTA_BYTES). Uploads stop counting when they expire.`, 'file');

/**
 * Bytes each user's live uploads hold in media storage, in Redis under the user's hash tag: a sorted
 * set of uploads (member `<bytes>:<stored name>`, scored by when it expires) and their running total.
 * Whoever adds a member (ZADD answers 1 to one caller only) adds its bytes to the total, and whoever
 * removes one (ZREM, likewise) takes them off, so concurrent uploads and clean-ups never count a
 * member twice. An upload is counted before it is stored, so two at once cannot both pass the quota;
 * the same bytes uploaded again count once.
 */
export class UploadQuota {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    readonly quotaBytes: number,
    private readonly retentionMs: number,
  ) {}

  /** Counts the upload `key` of `bytes`, or throws 413 `upload_quota_exceeded` when it would pass the quota. */
  async reserve(userId: string, key: string, bytes: number): Promise<UploadReservation> {
    await this.dropExpired(userId, Date.now());
    const member = `${bytes}:${key}`;
    const replies = await this.redis.multi()
      .zadd(this.keys.uploads(userId), 'NX', Date.now() + PENDING_MS, member)
      .pexpire(this.keys.uploads(userId), this.retentionMs + PENDING_MS)
      .exec();
    const reservation = { userId, member, bytes, added: Number(replies?.[0]?.[1]) === 1 };
    if (!reservation.added) return reservation;
    const total = await this.add(userId, bytes);
    if (total > this.quotaBytes) {
      await this.release(reservation);
      throw quotaExceeded(this.quotaBytes, total - bytes, bytes);
    }
    return reservation;
  }

  /** The upload is stored: it counts until it expires. */
  async keep(reservation: UploadReservation, expiresAt: Date): Promise<void> {
    // Added again if a concurrent upload of the same bytes released it meanwhile.
    const added = await this.redis.zadd(this.keys.uploads(reservation.userId), expiresAt.getTime(), reservation.member);
    if (Number(added) === 1) await this.add(reservation.userId, reservation.bytes);
  }

  /** The upload was not stored: its bytes stop counting (when this reservation counted them). */
  async release(reservation: UploadReservation): Promise<void> {
    if (!reservation.added) return;
    const removed = await this.redis.zrem(this.keys.uploads(reservation.userId), reservation.member);
    if (removed === 1) await this.redis.decrby(this.keys.uploadBytes(reservation.userId), reservation.bytes);
  }

  private async add(userId: string, bytes: number): Promise<number> {
    const replies = await this.redis.multi()
      .incrby(this.keys.uploadBytes(userId), bytes)
      .pexpire(this.keys.uploadBytes(userId), this.retentionMs + PENDING_MS)
      .exec();
    return Number(replies?.[0]?.[1]);
  }

  private async dropExpired(userId: string, nowMs: number): Promise<void> {
    const expired = await this.redis.zrangebyscore(this.keys.uploads(userId), '-inf', nowMs, 'LIMIT', 0, EXPIRED_BATCH);
    if (expired.length === 0) return;
    const pipeline = this.redis.multi();
    for (const member of expired) pipeline.zrem(this.keys.uploads(userId), member);
    const replies = (await pipeline.exec()) ?? [];
    let freed = 0;
    expired.forEach((member, index) => {
      if (Number(replies[index]?.[1]) === 1) freed += bytesOf(member);
    });
    if (freed > 0) await this.redis.decrby(this.keys.uploadBytes(userId), freed);
  }
}
