// The output items this gateway issued, kept for a while so a later request of the same user may
// name them by `{type: "item_reference", id}` (what the Vercel AI SDK's Responses model sends for
// earlier assistant turns at its default `store: true`). Nothing else is kept: no responses, no
// `previous_response_id`, no conversations.
import type { RedisClient } from '../../store/redis-connect.js';
import type { RedisKeys } from '../../admission/keys.js';
import { ApiError } from '../errors.js';
import { log } from '../../log.js';
import type { OutputItem } from './response-object.js';

/** How long an issued item can be referred to: from its response, renewed by each request that refers to it. */
export const ITEM_TTL_SECONDS = 3600;
/** An item whose JSON is larger is not kept (a reference to it is refused like an unknown one). */
export const MAX_ITEM_BYTES = 1024 * 1024;
/** References in one request. */
export const MAX_ITEM_REFERENCES = 1000;
/** How long an answer waits for its items to be written before it is sent anyway. */
const KEEP_TIMEOUT_MS = 2000;

/** The ids this gateway gives output items: `msg_<32 hex>[_n]`, `fc_<32 hex>_<n>`. */
export const ISSUED_ITEM_ID = /^(?:msg_[0-9a-f]{32}(?:_\d{1,6})?|fc_[0-9a-f]{32}_\d{1,6})$/;

/**
 * Items in Redis, one string key per item under the user's hash tag (`{u:<user>}:ritem:<id>`, so a
 * lookup only ever sees the caller's own items and all of a request's keys share one Cluster slot),
 * each expiring `ITEM_TTL_SECONDS` after it was written or last referred to.
 */
export class ItemStore {
  constructor(private readonly redis: RedisClient, private readonly keys: RedisKeys) {}

  private key(userId: string, id: string): string {
    return this.keys.responseItem(userId, id);
  }

  /**
   * Keeps a finished response's items. Never throws: a failure (or Redis slower than
   * KEEP_TIMEOUT_MS) is logged and the answer goes out; a later reference to these items is refused.
   */
  async keep(userId: string, items: readonly OutputItem[]): Promise<void> {
    const pipeline = this.redis.pipeline();
    let kept = 0;
    for (const item of items) {
      const json = JSON.stringify(item);
      if (Buffer.byteLength(json) > MAX_ITEM_BYTES) continue;
      pipeline.set(this.key(userId, item.id), json, 'EX', ITEM_TTL_SECONDS);
      kept++;
    }
    if (kept === 0) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        pipeline.exec().then((replies) => {
          const failed = replies?.find(([error]) => error);
          if (failed) throw failed[0];
        }),
        new Promise<void>((_, reject) => { timer = setTimeout(() => reject(new Error(`not written in ${KEEP_TIMEOUT_MS} ms`)), KEEP_TIMEOUT_MS); }),
      ]);
    } catch (error) {
      log.warn('responses: output items not kept', { error: (error as Error).message });
    } finally {
      clearTimeout(timer);
    }
  }

  /** The JSON of each item (null when unknown, expired or another user's), renewing the TTL of those found. */
  async fetch(userId: string, ids: readonly string[]): Promise<(string | null)[]> {
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.getex(this.key(userId, id), 'EX', ITEM_TTL_SECONDS);
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await pipeline.exec();
    } catch (error) {
      throw unavailable(error);
    }
    if (!replies) throw unavailable(new Error('no reply'));
    return replies.map(([error, value]) => {
      if (error) throw unavailable(error);
      return typeof value === 'string' ? value : null;
    });
  }
}

function unavailable(error: unknown): ApiError {
  return new ApiError(503, 'item_store_unavailable', `The items referred to by 'input' could not be read right now (${(error as Error).message}); retry shortly.`, 'input', { 'retry-after': '1' });
}
