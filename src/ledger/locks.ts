import type { TransactionSql } from '../store/db.js';

/**
 * Postgres advisory locks that order the ledger against a Redis data loss. A user's ledger lock is
 * one of `LEDGER_LOCK_BUCKETS` transaction-scoped locks (users share them by a hash of their id).
 *
 * - The ledger writer holds the locks of a pass's users *shared* from its insert to its commit, and
 *   commits only if none of their balance epochs changed since it read their streams (see
 *   LedgerWriter): a pass that read a stream before Redis lost it never commits after the loss
 *   became visible.
 * - A balance load (hydrate) and the check for ledger events lost with Redis take a user's lock
 *   *exclusive* before they read Postgres: a pass that checked its epochs before the loss has
 *   committed by then, so what they read is all a pass of the old data will ever add.
 *
 * Locks are taken in ascending order, and the exclusive takers take one bucket, or several in
 * ascending order too, so no two takers wait on each other in a cycle.
 */
export const LEDGER_LOCK_CLASS = 0x4c454447; // 'LEDG'
export const LEDGER_LOCK_BUCKETS = 64;

/** The lock bucket of a user (FNV-1a of the id). */
export function ledgerBucket(userId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash ^= userId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % LEDGER_LOCK_BUCKETS;
}

/** Takes the ledger locks of `userIds` for the rest of the transaction, in ascending bucket order. */
export async function lockLedgers(tx: TransactionSql, userIds: Iterable<string>, mode: 'shared' | 'exclusive'): Promise<void> {
  const buckets = [...new Set([...userIds].map(ledgerBucket))].sort((a, b) => a - b);
  if (buckets.length === 0) return;
  const literal = `{${buckets.join(',')}}`;
  // unnest yields the array in order, so the locks are taken in that order.
  if (mode === 'shared') await tx`select pg_advisory_xact_lock_shared(${LEDGER_LOCK_CLASS}::int, b) from unnest(${literal}::text::int[]) as b`;
  else await tx`select pg_advisory_xact_lock(${LEDGER_LOCK_CLASS}::int, b) from unnest(${literal}::text::int[]) as b`;
}
