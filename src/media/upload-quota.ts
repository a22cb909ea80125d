import { randomUUID } from 'node:crypto';
import { ApiError } from '../http/errors.js';
import type { ScriptedRedis } from '../admission/scripts.js';
import type { StoredMedia } from './storage.js';

/** A reservation made before an upload is stored; kept under the stored name, or released. */
export interface UploadReservation {
  readonly userId: string;
  readonly bytes: number;
  readonly member: string;
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
 * Whoever removes a member (ZREM answers 1 to one caller only) takes its bytes off the total, so
 * concurrent uploads and clean-ups never count a member twice; an upload reserves its bytes before it
 * is stored, so two at once cannot both pass the quota.
 */
export class UploadQuota {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly prefix: string,
    readonly quotaBytes: number,
    private readonly retentionMs: number,
  ) {}

  private setKey(userId: string) {
    return `${this.prefix}{u:${userId}}:uploads`;
  }

  private totalKey(userId: string) {
    return `${this.prefix}{u:${userId}}:upload-bytes`;
  }

  /** Counts `bytes` for the user, or throws 413 `upload_quota_exceeded` when they would pass the quota. */
  async reserve(userId: string, bytes: number): Promise<UploadReservation> {
    await this.dropExpired(userId, Date.now());
    const reservation = { userId, bytes, member: `${bytes}:pending-${randomUUID()}` };
    const replies = await this.redis.multi()
      .zadd(this.setKey(userId), Date.now() + PENDING_MS, reservation.member)
      .incrby(this.totalKey(userId), bytes)
      .pexpire(this.setKey(userId), this.retentionMs + PENDING_MS)
      .pexpire(this.totalKey(userId), this.retentionMs + PENDING_MS)
      .exec();
    const total = Number(replies?.[1]?.[1]);
    if (total > this.quotaBytes) {
      await this.release(reservation);
      throw quotaExceeded(this.quotaBytes, total - bytes, bytes);
    }
    return reservation;
  }

  /** The upload is stored: it counts under its stored name until it expires (the same bytes again count once). */
  async keep(reservation: UploadReservation, stored: StoredMedia): Promise<void> {
    const { userId } = reservation;
    const replies = await this.redis.multi()
      .zrem(this.setKey(userId), reservation.member)
      .zadd(this.setKey(userId), stored.expiresAt.getTime(), `${stored.bytes}:${stored.key}`)
      .exec();
    const removed = Number(replies?.[0]?.[1]) === 1 ? reservation.bytes : 0;
    const added = Number(replies?.[1]?.[1]) === 1 ? stored.bytes : 0;
    if (added !== removed) await this.redis.incrby(this.totalKey(userId), added - removed);
  }

  /** The upload was not stored: its bytes stop counting. */
  async release(reservation: UploadReservation): Promise<void> {
    const removed = await this.redis.zrem(this.setKey(reservation.userId), reservation.member);
    if (removed === 1) await this.redis.decrby(this.totalKey(reservation.userId), reservation.bytes);
  }

  private async dropExpired(userId: string, nowMs: number): Promise<void> {
    const expired = await this.redis.zrangebyscore(this.setKey(userId), '-inf', nowMs, 'LIMIT', 0, EXPIRED_BATCH);
    if (expired.length === 0) return;
    const pipeline = this.redis.multi();
    for (const member of expired) pipeline.zrem(this.setKey(userId), member);
    const replies = (await pipeline.exec()) ?? [];
    let freed = 0;
    expired.forEach((member, index) => {
      if (Number(replies[index]?.[1]) === 1) freed += bytesOf(member);
    });
    if (freed > 0) await this.redis.decrby(this.totalKey(userId), freed);
  }
}
