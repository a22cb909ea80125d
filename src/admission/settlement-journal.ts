import { closeSync, constants, ftruncateSync, futimesSync, lstatSync, mkdirSync, openSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SettledCall } from './scripts.js';
import { log } from '../log.js';

/** How often a live journal's files are touched: a file left untouched far longer has no owner. */
export const JOURNAL_HEARTBEAT_MS = 1000;
/** Past this size the next records go to a new file, and the old one is deleted once acknowledged. */
const ROTATE_BYTES = 4 * 1024 * 1024;
/** A sole file whose every record is acknowledged is emptied past this size (low load never rotates). */
const EMPTY_BYTES = 64 * 1024;

/** The lease fields a journal record needs to settle its calls again without the process that served them. */
export interface JournalLease {
  readonly id: string;
  readonly userId: string;
  readonly keyId: string;
  readonly epoch: string;
  /** Number of the last batch Redis applied. */
  readonly batch: number;
  /** A batch (number `batch + 1`) is on its way. */
  readonly sending: boolean;
}

/** `settle-<owner>-<sequence>.jsonl`: owner is `<instance>.<thread>`, sequence orders one owner's files. */
export const JOURNAL_FILE = /^settle-([A-Za-z0-9]+\.[0-9]+)-([0-9]+)\.jsonl$/;

interface JournalFile {
  readonly path: string;
  readonly fd: number;
  bytes: number;
  /**
   * Records in this file still needed: batches Redis has not acknowledged yet, and calls whose ledger
   * entry is not known to be in Postgres yet (not acknowledged, or still in the user's ledger stream).
   */
  open: number;
}

/** A batch as recorded: the file of its record, freed by its acknowledgement, and those of its calls. */
export interface JournaledBatch {
  readonly leaseId: string;
  readonly userId: string;
  /** The balance epoch of its lease. */
  readonly epoch: string;
  readonly batch: number;
  readonly file: JournalFile;
  /** One per call: freed once the call's ledger entry is in Postgres (see UnconfirmedCalls). */
  readonly callFiles: readonly JournalFile[];
}

/** Journal files: appended to, created owner-only, never through a symbolic link planted in their place. */
const JOURNAL_OPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

const STICKY_BIT = 0o1000;

export class JournalDirError extends Error {}

/**
 * Creates `dir` (a journal namespace under SETTLE_JOURNAL_DIR) owner-only (0700) if missing, and
 * refuses it when it is a symbolic link, another user's, or writable by group or others: whoever can
 * write there can plant settlements that a replay charges, or delete the record of calls not yet
 * charged. Its parent (SETTLE_JOURNAL_DIR itself) may also be root's, and world-writable only with the
 * sticky bit (as /tmp): nobody else can then rename or replace the folder.
 */
export function prepareJournalDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const uid = process.getuid?.();
  const problemOf = (folder: string, parent: boolean): string | undefined => {
    const stat = lstatSync(folder);
    if (!stat.isDirectory()) return 'is not a folder (a symbolic link?)';
    if (uid !== undefined && stat.uid !== uid && !(parent && stat.uid === 0)) return `is owned by uid ${stat.uid}, not by this process's ${uid}`;
    const mode = (stat.mode & 0o777).toString(8);
    if ((stat.mode & 0o022) !== 0 && !(parent && (stat.mode & STICKY_BIT) !== 0)) return `is writable by ${stat.mode & 0o020 ? 'its group' : 'others'} (mode ${mode}; chmod 700 it)`;
    return undefined;
  };
  for (const [folder, parent] of [[dirname(dir), true], [dir, false]] as const) {
    const problem = problemOf(folder, parent);
    if (problem) throw new JournalDirError(`settlement journal folder ${folder} ${problem}: set SETTLE_JOURNAL_DIR to a folder of the gateway's own user`);
  }
}

/** The tag of calls whose balance epoch is not known (no balance epoch is ever this). */
export const UNKNOWN_EPOCH = '?';

/**
 * Calls of one user that Redis acknowledged and whose ledger entries may not be in Postgres yet:
 * their records stay in the journal until the ledger writer took their entries out of the user's
 * stream (see LedgerConfirmer), so that entries Redis loses with its data before the writer
 * committed them can be charged again from here.
 */
export interface UnconfirmedCalls {
  readonly userId: string;
  /**
   * The balance epoch of the data their entries went into (their lease's: an entry charged outside
   * its lease went into a later one, which the confirmer finds out). A different epoch in Redis means
   * that Redis lost that data since.
   */
  readonly epoch: string;
  /** The newest id in the user's stream at a check after their acknowledgement: every entry of theirs is at or below it. */
  bound: string | undefined;
  /** A check is taking its bound: calls acknowledged from now on go to another group. */
  sealed: boolean;
  /** How many of the calls each file holds. */
  readonly files: Map<JournalFile, number>;
}

/**
 * The write-ahead record of one HTTP thread's settlements, so they may wait a few milliseconds to
 * leave for Redis together (see Admission's `flushMs`) without a crash losing them, and so that a
 * Redis that loses its data loses no charge. Each settled call is written when it settles (before the
 * response's last bytes) and each batch before it is sent, one `write` each into the page cache; that
 * Redis applied a batch is written at the end of the turn (a lost acknowledgement only makes a replay
 * send an applied batch again, which changes nothing). A process that dies leaves its files behind,
 * and `replayJournals` sends whatever they hold that Redis did not acknowledge; settle.lua's batch
 * numbers make a resent batch change nothing. A call's record is needed until its ledger entry is in
 * Postgres, not only in Redis (see UnconfirmedCalls): a file is deleted once that holds for everything
 * in it and in every older file, so a live journal holds the last second or so.
 */
export class SettlementJournal {
  /** Oldest first; the last one is written to. */
  private readonly files: JournalFile[] = [];
  private readonly fileOfCall = new Map<string, JournalFile>();
  /** The fields of a call record its lease fixes, serialised once per lease. */
  private readonly callHeads = new WeakMap<JournalLease, string>();
  /** Acknowledged calls whose ledger entries may not be in Postgres yet, by user. */
  private readonly unconfirmed = new Map<string, UnconfirmedCalls[]>();
  /** Called when calls start waiting for Postgres (none waited). */
  onUnconfirmed: (() => void) | undefined;
  /** Acknowledgements of this turn, written at its end. */
  private acknowledgements = '';
  private scheduled = false;
  private sequence = 0;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly dir: string, readonly owner: string) {
    prepareJournalDir(dir);
    this.startFile();
    this.heartbeat = setInterval(() => this.touch(), JOURNAL_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Records a settled call of `lease`. */
  call(lease: JournalLease, call: SettledCall): void {
    const file = this.current;
    file.open++;
    this.fileOfCall.set(call.callId, file);
    let head = this.callHeads.get(lease);
    if (head === undefined) {
      head = JSON.stringify({ type: 'call', lease: lease.id, user: lease.userId, key: lease.keyId, epoch: lease.epoch }).slice(0, -1);
      this.callHeads.set(lease, head);
    }
    // Every batch this lease sent so far is numbered at most `after`: a replay numbers its own above it.
    // The event is JSON already: it goes in as a value, not escaped again as a string.
    this.write(`${head},"after":${lease.batch + (lease.sending ? 1 : 0)},"call":${JSON.stringify(call.callId)},"charge":"${call.chargeNano}","tokens":${call.tokens},"event":${call.event}}\n`);
  }

  /** Records batch `batch` of `lease` before it is sent. */
  batch(lease: JournalLease, batch: number, calls: readonly SettledCall[], releaseNano: bigint, close: boolean, unusedSlots: number): JournaledBatch {
    const callFiles: JournalFile[] = [];
    for (const call of calls) {
      const file = this.fileOfCall.get(call.callId);
      if (file) callFiles.push(file);
      this.fileOfCall.delete(call.callId);
    }
    const file = this.current;
    file.open++;
    this.write(`${JSON.stringify({
      type: 'batch', lease: lease.id, user: lease.userId, key: lease.keyId, epoch: lease.epoch, batch,
      calls: calls.map((call) => call.callId), release: releaseNano.toString(), close, unusedSlots,
    })}\n`);
    return { leaseId: lease.id, userId: lease.userId, epoch: lease.epoch, batch, file, callFiles };
  }

  /**
   * Redis applied `entry` (or had before): a replay need not send it, and its record may go. Its
   * calls' records wait until their ledger entries are in Postgres (see `confirmed`).
   */
  acknowledged(entry: JournaledBatch): void {
    entry.file.open--;
    if (entry.callFiles.length > 0) this.addUnconfirmed(entry.userId, entry.epoch, entry.callFiles.map((file) => [file, 1]));
    this.acknowledgements += `${JSON.stringify({ type: 'ack', lease: entry.leaseId, batch: entry.batch })}\n`;
    this.scheduleFlush();
  }

  /** Users with acknowledged calls whose ledger entries may not be in Postgres yet, with those calls. */
  get unconfirmedByUser(): ReadonlyMap<string, readonly UnconfirmedCalls[]> {
    return this.unconfirmed;
  }

  /** Paths of the journal's files, oldest first. */
  get paths(): string[] {
    return this.files.map((file) => file.path);
  }

  /** The ledger entries of these calls are in Postgres: their records may go. */
  confirmed(groups: readonly UnconfirmedCalls[]): void {
    const taken: UnconfirmedCalls[] = [];
    for (const group of groups) {
      const userGroups = this.unconfirmed.get(group.userId);
      const at = userGroups?.indexOf(group) ?? -1;
      if (at < 0) continue;
      userGroups!.splice(at, 1);
      if (userGroups!.length === 0) this.unconfirmed.delete(group.userId);
      taken.push(group);
    }
    this.release(taken);
  }

  /** Frees the records of groups taken out with `take` whose calls are all in Postgres. */
  release(groups: readonly UnconfirmedCalls[]): void {
    for (const group of groups) for (const [file, count] of group.files) file.open -= count;
    if (groups.length > 0) this.scheduleFlush();
  }

  /** Takes every unconfirmed group of `userId` out (to be checked against Redis and Postgres, then given back). */
  take(userId: string): UnconfirmedCalls[] {
    const groups = this.unconfirmed.get(userId) ?? [];
    this.unconfirmed.delete(userId);
    return groups;
  }

  /** Gives back `groups` taken from `userId`, as one group of calls whose entries went into balance epoch `epoch`. */
  restore(userId: string, epoch: string, groups: readonly UnconfirmedCalls[]): void {
    const files: [JournalFile, number][] = [];
    for (const group of groups) files.push(...group.files);
    if (files.length > 0) this.addUnconfirmed(userId, epoch, files);
  }

  private addUnconfirmed(userId: string, epoch: string, files: Iterable<[JournalFile, number]>): void {
    let groups = this.unconfirmed.get(userId);
    if (!groups) {
      groups = [];
      this.unconfirmed.set(userId, groups);
      if (this.unconfirmed.size === 1) this.onUnconfirmed?.();
    }
    let group = groups.find((g) => !g.sealed && g.epoch === epoch);
    if (!group) {
      group = { userId, epoch, bound: undefined, sealed: false, files: new Map() };
      groups.push(group);
    }
    for (const [file, count] of files) group.files.set(file, (group.files.get(file) ?? 0) + count);
  }

  private scheduleFlush(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Writes this turn's acknowledgements, then deletes the files nothing needs any more. */
  flush(): void {
    this.scheduled = false;
    if (this.acknowledgements) {
      this.write(this.acknowledgements);
      this.acknowledgements = '';
    }
    this.prune();
    const only = this.files.length === 1 ? this.current : undefined;
    if (only && only.open === 0 && only.bytes >= EMPTY_BYTES) {
      ftruncateSync(only.fd, 0);
      only.bytes = 0;
    }
  }

  /** Shutdown, once every lease is closed: deletes the files if everything in them is in Postgres. */
  close(): void {
    clearInterval(this.heartbeat);
    this.flush();
    const settled = this.files.every((file) => file.open === 0);
    for (const file of this.files.splice(0)) {
      closeSync(file.fd);
      if (settled) unlinkSync(file.path);
    }
    if (!settled) {
      log.warn('settlements not yet in Postgres at shutdown stay in the journal for the next start', { dir: this.dir, owner: this.owner });
      return;
    }
    try {
      rmdirSync(this.dir);
    } catch {
      // Another thread's journal is still in it.
    }
  }

  private get current(): JournalFile {
    return this.files[this.files.length - 1]!;
  }

  private write(text: string): void {
    const file = this.current;
    try {
      writeSync(file.fd, text);
      file.bytes += text.length;
    } catch (error) {
      // The settlements still leave for Redis; only a crash before they arrive would lose them now.
      log.error('settlement journal write failed', { file: file.path, error });
    }
    if (file.bytes >= ROTATE_BYTES) this.startFile();
  }

  private startFile(): void {
    const path = join(this.dir, `settle-${this.owner}-${++this.sequence}.jsonl`);
    this.files.push({ path, fd: openSync(path, JOURNAL_OPEN_FLAGS, 0o600), bytes: 0, open: 0 });
  }

  /** Oldest first, so what survives is self-contained: a batch's calls are in its file or an older one. */
  private prune(): void {
    while (this.files.length > 1 && this.files[0]!.open === 0) {
      const file = this.files.shift()!;
      closeSync(file.fd);
      unlinkSync(file.path);
    }
  }

  private touch(): void {
    const now = new Date();
    for (const file of this.files) futimesSync(file.fd, now, now);
  }
}
