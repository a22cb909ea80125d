/**
 * The ledger's dirty set (users whose ledger stream has events to drain), spread over
 * LEDGER_DIRTY_SHARDS sets so that no one Redis Cluster node takes part in every settlement batch.
 * The 16,384 Cluster slots are cut into LEDGER_DIRTY_SHARDS equal ranges; a user is marked in the
 * set of the range holding the user's own slot, and each set's hash tag is chosen to fall in that
 * same range. Clusters give nodes contiguous slot ranges, so a user's mark mostly goes to the node
 * that already ran the user's settle.lua. The tags depend on nothing but the shard number: every
 * gateway process builds the same keys.
 */
import { SLOT_COUNT, keySlot } from '../store/cluster-slot.js';

export const LEDGER_DIRTY_SHARDS = 16;

/** Slots per shard's range (16,384 is a multiple of the shard count). */
const SLOTS_PER_SHARD = SLOT_COUNT / LEDGER_DIRTY_SHARDS;

/** The shard whose slot range holds `slot`. */
export function dirtyShardOfSlot(slot: number): number {
  return Math.floor(slot / SLOTS_PER_SHARD);
}

/** For each shard, the first tag `d<shard>.<n>` whose slot is in the shard's range (about 16 tries each). */
const TAGS: readonly string[] = Array.from({ length: LEDGER_DIRTY_SHARDS }, (_, shard) => {
  for (let n = 0; ; n++) {
    const tag = `d${shard}.${n}`;
    if (dirtyShardOfSlot(keySlot(`{${tag}}`)) === shard) return tag;
  }
});

/** The hash tag (without braces) of a shard's set. */
export function dirtyShardTag(shard: number): string {
  const tag = TAGS[shard];
  if (tag === undefined) throw new RangeError(`no ledger dirty shard ${shard}`);
  return tag;
}

/** Every shard number, in order (what a writer pass drains). */
export const DIRTY_SHARDS: readonly number[] = Array.from({ length: LEDGER_DIRTY_SHARDS }, (_, shard) => shard);

/** `userIds` grouped by the dirty set each is marked in (`keys` is a RedisKeys; keys.ts imports this module): set key -> users. */
export function dirtyMarks(keys: { ledgerDirtyOf(userId: string): string }, userIds: Iterable<string>): Map<string, string[]> {
  const marks = new Map<string, string[]>();
  for (const userId of userIds) {
    const key = keys.ledgerDirtyOf(userId);
    const users = marks.get(key);
    if (users) users.push(userId);
    else marks.set(key, [userId]);
  }
  return marks;
}
