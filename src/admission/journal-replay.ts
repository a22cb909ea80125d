import { closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Balances } from '../billing/balances.js';
import type { ScriptBatcher } from './script-batcher.js';
import type { SettledCall, SettleInput } from './scripts.js';
import { JOURNAL_FILE } from './settlement-journal.js';
import { log } from '../log.js';

/** A claim older than this belongs to a replay that died; the next pass may claim the files again. */
const CLAIM_STALE_MS = 10 * 60_000;

interface JournaledBatch {
  readonly batch: number;
  readonly calls: readonly string[];
  readonly releaseNano: bigint;
  readonly close: boolean;
  readonly unusedSlots: number;
}

/** What the journal of one owner says about one of its leases. */
export interface LeaseRecord {
  readonly id: string;
  readonly userId: string;
  readonly keyId: string;
  readonly epoch: string;
  /** The highest batch number the lease may have sent (recorded batches and calls' `after`). */
  highestBatch: number;
  readonly calls: Map<string, SettledCall>;
  readonly batches: JournaledBatch[];
  readonly acknowledged: Set<number>;
}

export interface ReplayReport {
  /** Journals (dead HTTP threads) replayed. */
  readonly journals: number;
  /** Settlement batches sent to Redis. */
  readonly batches: number;
}

/** The batches to send for one lease: those recorded and not acknowledged, then one closing it with the calls never sent. */
export function batchesToReplay(lease: LeaseRecord, ttlMs: number): SettleInput[] {
  const base = { userId: lease.userId, keyId: lease.keyId, leaseId: lease.id, epoch: lease.epoch, ttlMs };
  const inputs: SettleInput[] = [];
  const batched = new Set<string>();
  let closed = false;
  for (const recorded of [...lease.batches].sort((a, b) => a.batch - b.batch)) {
    for (const callId of recorded.calls) batched.add(callId);
    if (recorded.close) closed = true;
    if (lease.acknowledged.has(recorded.batch)) continue;
    const calls = recorded.calls.map((callId) => lease.calls.get(callId));
    // Files go oldest first and only once acknowledged, so a batch whose calls are gone was applied.
    if (calls.some((call) => call === undefined)) continue;
    inputs.push({ ...base, batch: recorded.batch, close: recorded.close, unusedSlots: recorded.unusedSlots, releaseNano: recorded.releaseNano, calls: calls as SettledCall[] });
  }
  const unsent = [...lease.calls.values()].filter((call) => !batched.has(call.callId));
  // Closing releases the rest of the lease's credit; its unused slots age out of the windows.
  if (unsent.length > 0 || !closed) {
    inputs.push({ ...base, batch: lease.highestBatch + 1, close: true, unusedSlots: 0, releaseNano: 0n, calls: unsent });
  }
  return inputs;
}

/** The leases of one owner's journal files, read oldest first; a line that does not parse (a torn write) is skipped. */
export function readJournal(paths: readonly string[]): Map<string, LeaseRecord> {
  const leases = new Map<string, LeaseRecord>();
  const leaseOf = (record: { lease: string; user: string; key: string; epoch: string }): LeaseRecord => {
    let lease = leases.get(record.lease);
    if (!lease) {
      lease = { id: record.lease, userId: record.user, keyId: record.key, epoch: record.epoch, highestBatch: 0, calls: new Map(), batches: [], acknowledged: new Set() };
      leases.set(record.lease, lease);
    }
    return lease;
  };
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // replayed and deleted meanwhile
      throw error;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      let record;
      try {
        record = JSON.parse(line);
      } catch {
        log.warn('settlement journal line unreadable; skipped', { path, line: line.slice(0, 200) });
        continue;
      }
      if (record.type === 'call') {
        const lease = leaseOf(record);
        lease.highestBatch = Math.max(lease.highestBatch, record.after);
        lease.calls.set(record.call, { callId: record.call, chargeNano: BigInt(record.charge), tokens: record.tokens, event: JSON.stringify(record.event) });
      } else if (record.type === 'batch') {
        const lease = leaseOf(record);
        lease.highestBatch = Math.max(lease.highestBatch, record.batch);
        lease.batches.push({ batch: record.batch, calls: record.calls, releaseNano: BigInt(record.release), close: record.close, unusedSlots: record.unusedSlots });
      } else if (record.type === 'ack') {
        leases.get(record.lease)?.acknowledged.add(record.batch);
      }
    }
  }
  return leases;
}

/**
 * Journal files by owner, oldest first, of owners none of whose files was touched in `staleMs`
 * (a live thread touches its files every second, so this must be far longer than any stall of its loop).
 */
function orphanedJournals(dir: string, staleMs: number, nowMs: number): Map<string, string[]> {
  const byOwner = new Map<string, { sequence: number; path: string }[]>();
  const fresh = new Set<string>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw error;
  }
  for (const name of names) {
    const match = JOURNAL_FILE.exec(name);
    if (!match) continue;
    const owner = match[1]!;
    const path = join(dir, name);
    if (nowMs - statSync(path).mtimeMs < staleMs) fresh.add(owner);
    const files = byOwner.get(owner) ?? [];
    files.push({ sequence: Number(match[2]), path });
    byOwner.set(owner, files);
  }
  const orphaned = new Map<string, string[]>();
  for (const [owner, files] of byOwner) {
    if (!fresh.has(owner)) orphaned.set(owner, files.sort((a, b) => a.sequence - b.sequence).map((file) => file.path));
  }
  return orphaned;
}

/** Takes an owner's files for this replay alone; false when another replay holds them. */
function claim(path: string, nowMs: number): boolean {
  try {
    closeSync(openSync(path, 'wx'));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    if (nowMs - statSync(path).mtimeMs > CLAIM_STALE_MS) unlinkSync(path);
    return false;
  }
}

/**
 * Sends to Redis what the journals of dead HTTP threads (in `dir`, of this Redis and prefix) hold
 * and Redis never acknowledged, then deletes them. Safe to run anywhere any number of times: a
 * claim file keeps two replays off one journal, and a batch Redis applied before changes nothing.
 */
export async function replayJournals(dir: string, scripts: ScriptBatcher, balances: Balances, ttlMs: number, staleMs: number): Promise<ReplayReport> {
  let journals = 0;
  let batches = 0;
  const nowMs = Date.now();
  for (const [owner, paths] of orphanedJournals(dir, staleMs, nowMs)) {
    const claimPath = join(dir, `settle-${owner}.claim`);
    if (!claim(claimPath, nowMs)) continue;
    try {
      for (const lease of readJournal(paths).values()) {
        for (const input of batchesToReplay(lease, ttlMs)) {
          await settleReplayed(scripts, balances, input);
          batches++;
        }
      }
      for (const path of paths) rmSync(path, { force: true });
      journals++;
      log.warn('settlements of a dead HTTP thread replayed from its journal', { owner, files: paths.length });
    } finally {
      unlinkSync(claimPath);
    }
  }
  return { journals, batches };
}

async function settleReplayed(scripts: ScriptBatcher, balances: Balances, input: SettleInput): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const result = await scripts.settle(input);
    if (result.kind !== 'not_loaded') return;
    await balances.load(input.userId);
  }
  throw new Error(`balance of ${input.userId} did not load`);
}
