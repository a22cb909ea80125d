// Settlements that wait to leave for Redis (SETTLE_FLUSH_MS) are journaled first: the journal's
// records and what a replay makes of them, then a gateway killed (SIGKILL) while its last
// settlements waited, whose journal a second gateway replays: every served call charged exactly once,
// and a second replay of the same journal changes nothing. (What the journal does when Redis loses
// its data: test/redis-data-loss.test.ts.)
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { SettlementJournal, JOURNAL_FILE, type JournalLease } from '../src/admission/settlement-journal.js';
import { batchesToReplay, readJournal } from '../src/admission/journal-replay.js';
import type { SettledCall } from '../src/admission/scripts.js';
import { journalDirOf, startGateway, type Gateway } from './helpers/harness.js';
import { chatBody, costNano, eventually, jwtFor, postChat } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { ledgerSnapshot, logMark, usageRows } from './helpers/money-invariants.js';

const USD = 1_000_000_000n;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const journalFiles = (dir: string) => readdirSync(dir).filter((name) => JOURNAL_FILE.test(name)).sort();

function settled(callId: string, chargeNano: bigint): SettledCall {
  return { callId, chargeNano, tokens: 10, event: JSON.stringify({ keyId: 'k1', model: 'm', note: 'quote " and \\ kept' }) };
}

t.test('the journal: calls, batches and acknowledgements; a replay resends what Redis did not acknowledge, then closes the lease', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'journal-unit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const journal = new SettlementJournal(dir, 'abc.1');
  const lease = { id: 'k1:lease', userId: 'u1', keyId: 'k1', epoch: '7', batch: 0, sending: false };
  const [c1, c2, c3, c4] = [settled('c1', 100n), settled('c2', 200n), settled('c3', 300n), settled('c4', 400n)];

  const files = journalFiles(dir);
  t.equal(files.length, 1, 'one file');
  const records = () => readFileSync(join(dir, files[0]!), 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  journal.call(lease, c1);
  journal.call(lease, c2);
  const first = journal.batch(lease, 1, [c1, c2], 5n, false, 0);
  t.same(records().map((r) => r.type), ['call', 'call', 'batch'], 'calls and batches are on disk at once, before a response or a batch leaves');
  journal.acknowledged(first);
  t.equal(records().length, 3, 'an acknowledgement waits for the end of the turn');
  const acked: JournalLease = { ...lease, batch: 1 };
  journal.call(acked, c3);
  journal.batch({ ...acked, sending: true }, 2, [c3], 0n, false, 0); // sent, never acknowledged
  journal.call({ ...acked, sending: true }, c4); // settled while batch 2 was on its way: never sent
  await nextTurn();
  const lines = records();
  t.same(lines.map((r) => r.type), ['call', 'call', 'batch', 'call', 'batch', 'call', 'ack'], 'every record, in order');
  t.same(lines[0].event, JSON.parse(c1.event), 'the ledger event is kept as JSON');

  const leases = readJournal(files.map((name) => join(dir, name)));
  t.same([...leases.keys()], ['k1:lease']);
  const replay = batchesToReplay(leases.get('k1:lease')!, 60_000);
  t.same(replay.map((b) => ({ batch: b.batch, calls: b.calls.map((c) => c.callId), close: b.close })), [
    { batch: 2, calls: ['c3'], close: false },
    { batch: 3, calls: ['c4'], close: true },
  ], 'the acknowledged batch is skipped, the unacknowledged one resent as it was, the unsent call closes the lease in a batch numbered above both');
  t.same(replay[1]!.calls[0], c4, 'the unsent call comes back whole: charge, tokens and event');
  t.same({ userId: replay[0]!.userId, keyId: replay[0]!.keyId, leaseId: replay[0]!.leaseId, epoch: replay[0]!.epoch }, { userId: 'u1', keyId: 'k1', leaseId: 'k1:lease', epoch: '7' });

  // A torn last line (a write cut short) is skipped; the rest still reads.
  appendFileSync(join(dir, files[0]!), '{"type":"call","lease":"k1:le');
  t.equal(readJournal(files.map((name) => join(dir, name))).get('k1:lease')!.calls.size, 4, 'a torn line is skipped');

  t.equal(journal.unconfirmedByUser.get('u1')?.length, 1, 'the calls of the acknowledged batch wait for Postgres');
  journal.close();
  t.same(journalFiles(dir), files, 'a journal with unacknowledged batches is kept at shutdown');
});

t.test('the journal keeps an acknowledged call until its ledger entry is in Postgres, and deletes its files at shutdown once everything is', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'journal-unit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const journal = new SettlementJournal(join(dir, 'ns'), 'def.2');
  const lease = { id: 'k2:lease', userId: 'u2', keyId: 'k2', epoch: '1', batch: 0, sending: false };
  const call = settled('c9', 900n);
  let told = 0;
  journal.onUnconfirmed = () => { told++; };
  journal.call(lease, call);
  journal.acknowledged(journal.batch(lease, 1, [call], 0n, true, 3));
  await nextTurn();
  t.equal(journalFiles(join(dir, 'ns')).length, 1, 'written while the lease was open');
  const replay = batchesToReplay(readJournal(journalFiles(join(dir, 'ns')).map((name) => join(dir, 'ns', name))).get('k2:lease')!, 60_000);
  t.same(replay, [], 'a closed and acknowledged lease needs no replay');
  const waiting = journal.unconfirmedByUser.get('u2') ?? [];
  t.same(waiting.map((group) => ({ userId: group.userId, epoch: group.epoch, calls: [...group.files.values()] })), [{ userId: 'u2', epoch: '1', calls: [1] }],
    "Redis acknowledged it, but its ledger entry may not be in Postgres yet: it waits, under its lease's balance epoch");
  t.equal(told, 1, 'the confirmer is told that calls wait');
  journal.confirmed(waiting);
  t.equal(journal.unconfirmedByUser.size, 0);
  journal.close();
  t.same(readdirSync(dir), [], 'the files and the empty folder are gone');
});

let first: Gateway | undefined;
let second: Gateway | undefined;
t.teardown(async () => {
  await second?.close();
  await first?.close();
});

t.test('a gateway killed while its settlements wait: a second gateway replays its journal, every call charged once', async (t) => {
  const env = { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10', RESERVATION_JANITOR_SECONDS: '3600' };
  // Settlements wait a whole second to leave: the kill comes while the last ones wait.
  first = await startGateway({ env: { ...env, SETTLE_FLUSH_MS: '1000' } });
  const user = 'journal-kill';
  const initial = 5n * USD;
  await first.topup(user, '5');
  const key = await first.createKey(jwtFor(first, user));

  const calls: { id: string; charge: bigint }[] = [];
  for (let i = 0; i < 20; i++) {
    const response = await postChat(first, key, chatBody(`call ${i} [[mock chunks=3]]`, { max_tokens: 20 }));
    t.equal(response.status, 200, `call ${i} served`);
    const usage = JSON.parse(response.text).usage;
    calls.push({ id: response.headers.get('x-request-id')!, charge: costNano(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0) });
  }
  const owed = calls.reduce((sum, call) => sum + call.charge, 0n);
  t.equal(await first.stop('SIGKILL'), null, 'the gateway process was killed');

  const dir = journalDirOf(first.prefix);
  const namespace = readdirSync(dir);
  t.equal(namespace.length, 1, 'one journal folder for this Redis and prefix');
  const journalDir = join(dir, namespace[0]!);
  const files = journalFiles(journalDir);
  t.ok(files.length >= 1, `the dead thread's journal is left behind (${files.join(', ')})`);
  const before = await ledgerSnapshot(first, user);
  t.ok(before.credits > initial - owed, `Redis lacks charges that only the journal holds (${initial - before.credits} of ${owed} nano-USD applied)`);
  t.ok(before.held > 0n, 'the dead lease still holds credit');

  // A copy of the journal, replayed again at the end.
  const backup = mkdtempSync(join(tmpdir(), 'journal-copy-'));
  t.teardown(() => rmSync(backup, { recursive: true, force: true }));
  for (const name of files) copyFileSync(join(journalDir, name), join(backup, name));

  second = await startGateway({
    mock: first.mock, shared: { database: first.database, prefix: first.prefix },
    env: { ...env, RESERVATION_JANITOR_SECONDS: '1', SETTLE_JOURNAL_STALE_SECONDS: '2' },
  });
  const unexpected = logMark([second]);
  const survivor = second;
  // The survivor's own live journal is in the same folder; the dead thread's files go once replayed.
  const gone = (names: string[]) => async () => (journalFiles(journalDir).some((name) => names.includes(name)) ? undefined : true);
  await eventually('the journal to be replayed', gone(files), 15_000);
  await survivor.ledgerSettled(user, 10_000);
  const after = await ledgerSnapshot(survivor, user);
  t.equal(after.credits, initial - owed, 'Redis credits = $5 - the 20 charges');
  t.equal(after.held, 0n, 'the dead lease was closed: nothing held');
  t.equal(after.openReservations, 0, 'no open reservation');
  t.equal(after.ledgerSum, after.credits, 'Postgres ledger sum = Redis credits');
  const rows = await usageRows(survivor, user);
  t.same([...rows.keys()].sort(), calls.map((call) => call.id).sort(), 'one usage transaction per served call, under its x-request-id');
  t.same(calls.map((call) => rows.get(call.id)?.chargeNano), calls.map((call) => call.charge), 'each charged exactly its cost');
  const metrics = parsePrometheus(await (await fetch(`${survivor.url}/metrics`)).text());
  t.ok(sumSamples(metrics, 'gateway_settlement_journal_batches_replayed_total') >= 1, 'the replayed batches are counted');

  // The same journal again, under another owner's name and long untouched: nothing changes.
  const old = new Date(Date.now() - 60_000);
  const copies = files.map((name) => name.replace(JOURNAL_FILE, (_all, owner: string, sequence: string) => `settle-${owner.split('.')[0]}0.9-${sequence}.jsonl`));
  files.forEach((name, i) => {
    const copy = join(journalDir, copies[i]!);
    writeFileSync(copy, readFileSync(join(backup, name)));
    utimesSync(copy, old, old);
  });
  await eventually('the copy to be replayed', gone(copies), 15_000);
  await survivor.ledgerSettled(user, 10_000);
  const again = await ledgerSnapshot(survivor, user);
  t.same({ credits: again.credits, held: again.held, usage: again.usageTransactions, ledgerSum: again.ledgerSum },
    { credits: after.credits, held: 0n, usage: 20, ledgerSum: after.ledgerSum }, 'a second replay of the same journal charges nothing twice');
  t.match(await survivor.cli('ledger', 'check'), /^ledger check: ok \(1 user,/, '`gateway ledger check` passes');
  t.same(unexpected(), [], "no 'unexpected error' in the survivor's log");
});
