import { appendFileSync, closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import type { Balances } from '../billing/balances.js';
import type { ScriptBatcher } from './script-batcher.js';
import type { SettledCall, SettleInput } from './scripts.js';
import { JOURNAL_FILE } from './settlement-journal.js';
import { settleReplayed, type AcknowledgedCall, type LedgerRecovery } from './ledger-recovery.js';
import { log } from '../log.js';

/** A claim older than this belongs to a replay that died; the next pass may claim the files again. */
const CLAIM_STALE_MS = 10 * 60_000;
/** How long a replay waits for the ledger writer to commit a dead journal's calls before leaving it to the next pass. */
const COMMIT_WAIT_MS = 10_000;

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
  /** Acknowledged calls whose ledger entries Redis had lost, charged again. */
  readonly recovered: number;
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

/** The calls of the journal whose batch Redis acknowledged (a call record whose file is gone was in Postgres already). */
export function acknowledgedCalls(leases: ReadonlyMap<string, LeaseRecord>): AcknowledgedCall[] {
  const calls: AcknowledgedCall[] = [];
  for (const lease of leases.values()) {
    for (const batch of lease.batches) {
      if (!lease.acknowledged.has(batch.batch)) continue;
      for (const callId of batch.calls) {
        const call = lease.calls.get(callId);
        if (call) calls.push({ userId: lease.userId, keyId: lease.keyId, epoch: lease.epoch, call });
      }
    }
  }
  return calls;
}

/**
 * The leases of one owner's journal files, read oldest first (only those of `users` when given); a
 * line that does not parse (a torn write) is skipped.
 */
export function readJournal(paths: readonly string[], users?: ReadonlySet<string>): Map<string, LeaseRecord> {
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
      if (users && record.type !== 'ack' && !users.has(record.user)) continue;
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
 * The journal lines saying that Redis applied `input`, replayed from `lease`'s records: its ack, and
 * first its batch record when the journal had none (the batch closing the lease with the calls that
 * never left).
 */
function appliedRecords(lease: LeaseRecord, input: SettleInput): string {
  const ack = `${JSON.stringify({ type: 'ack', lease: lease.id, batch: input.batch })}\n`;
  if (lease.batches.some((recorded) => recorded.batch === input.batch)) return ack;
  return `${JSON.stringify({
    type: 'batch', lease: lease.id, user: lease.userId, key: lease.keyId, epoch: lease.epoch, batch: input.batch,
    calls: input.calls.map((call) => call.callId), release: input.releaseNano.toString(), close: input.close, unusedSlots: input.unusedSlots,
  })}\n${ack}`;
}

/**
 * Waits until the ledger entries of `calls` are in Postgres, charging again those Redis lost (see
 * LedgerRecovery); false when some are still in Redis after COMMIT_WAIT_MS (Postgres away).
 */
async function untilCommitted(recovery: LedgerRecovery, calls: readonly AcknowledgedCall[], onRecovered: (count: number) => void): Promise<boolean> {
  const byUser = new Map<string, AcknowledgedCall[]>();
  for (const call of calls) {
    const userCalls = byUser.get(call.userId);
    if (userCalls) userCalls.push(call);
    else byUser.set(call.userId, [call]);
  }
  const until = Date.now() + COMMIT_WAIT_MS;
  for (;;) {
    for (const [userId, userCalls] of byUser) {
      const outcome = await recovery.recover(userId, userCalls);
      if (outcome.recovered > 0) onRecovered(outcome.recovered);
      if (outcome.inStream === 0 && outcome.recovered === 0) byUser.delete(userId);
    }
    if (byUser.size === 0) return true;
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Sends to Redis what the journals of dead HTTP threads (in `dir`, of this Redis and prefix) hold
 * and Redis never acknowledged, then (with `recovery`) waits until every call's ledger entry is in
 * Postgres, charging again those Redis lost with its data, and deletes them. Safe to run anywhere any
 * number of times: a claim file keeps two replays off one journal, a batch Redis applied before
 * changes nothing, and the batches replayed are recorded as applied in the journal, so a journal
 * left for a later pass (Postgres away) is only looked through again.
 */
export async function replayJournals(dir: string, scripts: ScriptBatcher, balances: Balances, ttlMs: number, staleMs: number, recovery?: LedgerRecovery): Promise<ReplayReport> {
  let journals = 0;
  let batches = 0;
  let recovered = 0;
  const nowMs = Date.now();
  for (const [owner, paths] of orphanedJournals(dir, staleMs, nowMs)) {
    const claimPath = join(dir, `settle-${owner}.claim`);
    if (!claim(claimPath, nowMs)) continue;
    try {
      for (const lease of readJournal(paths).values()) {
        let applied = '';
        for (const input of batchesToReplay(lease, ttlMs)) {
          await settleReplayed(scripts, balances, input);
          applied += appliedRecords(lease, input);
          batches++;
        }
        // Recorded as applied, after a line a crash may have cut short (so that both are read apart).
        if (applied) appendFileSync(paths[paths.length - 1]!, `\n${applied}`);
      }
      let charged = 0;
      if (recovery && !(await untilCommitted(recovery, acknowledgedCalls(readJournal(paths)), (count) => { charged += count; }))) {
        recovered += charged;
        // Stale again at once: the next pass looks through it again.
        const stale = new Date(Date.now() - staleMs - 1000);
        for (const path of paths) utimesSync(path, stale, stale);
        log.warn('calls of a dead HTTP thread\'s journal are not in Postgres yet; its journal is kept for the next pass', { owner, files: paths.length });
        continue;
      }
      recovered += charged;
      for (const path of paths) rmSync(path, { force: true });
      journals++;
      log.warn('settlements of a dead HTTP thread replayed from its journal', { owner, files: paths.length, lost_entries_charged_again: charged });
    } finally {
      unlinkSync(claimPath);
    }
  }
  return { journals, batches, recovered };
}
