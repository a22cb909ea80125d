// The settlement journal's folder: created owner-only by default (not in the shared /tmp), and refused
// when another user owns it, when group or others may write to it, or when it is a symbolic link:
// whoever can write there could plant settlements a replay charges, or delete the record of calls not
// yet charged. Journal files are never opened through a symbolic link. (Tests run as root: `nobody`
// plays the other user.)
import t from 'tap';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SettlementJournal, prepareJournalDir } from '../src/admission/settlement-journal.js';
import { EnvSchema, loadConfig } from '../src/config.js';
import * as v from 'valibot';
import { runUntilExit } from './helpers/startup-refusal.js';
import { startGateway } from './helpers/harness.js';

const NOBODY = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
const root = mkdtempSync(join(tmpdir(), 'journal-dir-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const fresh = () => join(root, randomBytes(4).toString('hex'));
const mode = (path: string) => statSync(path).mode & 0o777;

t.test('the default folder is under the working directory, not /tmp', async (t) => {
  const fallback = v.parse(EnvSchema, {}).SETTLE_JOURNAL_DIR;
  t.equal(fallback, './state/settlements');
  t.notOk(loadConfig({}).settleJournalDir.startsWith(tmpdir()), 'not in the shared temporary folder');
});

t.test('a missing folder is created 0700, with its parent', async (t) => {
  const base = fresh();
  const dir = join(base, 'ns');
  prepareJournalDir(dir);
  t.equal(mode(base).toString(8), '700', 'SETTLE_JOURNAL_DIR');
  t.equal(mode(dir).toString(8), '700', 'the namespace folder');
  const journal = new SettlementJournal(dir, 'abc.1');
  t.equal(mode(journal.paths[0]!).toString(8), '600', 'a journal file is the owner\'s only');
  journal.close();
});

t.test('refused: another user\'s folder, a group- or world-writable one, a symbolic link', async (t) => {
  const refused = (dir: string, expected: RegExp, what: string) => t.throws(() => prepareJournalDir(dir), expected, what);

  const theirs = fresh();
  mkdirSync(join(theirs, 'ns'), { recursive: true, mode: 0o700 });
  chownSync(join(theirs, 'ns'), NOBODY, NOBODY);
  refused(join(theirs, 'ns'), new RegExp(`ns is owned by uid ${NOBODY}, not by this process's 0`), 'the namespace folder owned by nobody');
  t.throws(() => new SettlementJournal(join(theirs, 'ns'), 'abc.1'), /owned by uid/, 'and no journal is opened in it');

  const theirRoot = fresh();
  mkdirSync(theirRoot, { mode: 0o700 });
  chownSync(theirRoot, NOBODY, NOBODY);
  refused(join(theirRoot, 'ns'), new RegExp(`${theirRoot} is owned by uid ${NOBODY}`), 'SETTLE_JOURNAL_DIR owned by nobody (it could swap the namespace folder)');

  const group = fresh();
  mkdirSync(join(group, 'ns'), { recursive: true, mode: 0o700 });
  chmodSync(join(group, 'ns'), 0o770);
  refused(join(group, 'ns'), /ns is writable by its group \(mode 770; chmod 700 it\)/, 'group-writable');

  const world = fresh();
  mkdirSync(join(world, 'ns'), { recursive: true, mode: 0o700 });
  chmodSync(join(world, 'ns'), 0o707);
  refused(join(world, 'ns'), /ns is writable by others \(mode 707/, 'world-writable');

  const worldRoot = fresh();
  mkdirSync(worldRoot, { mode: 0o700 });
  chmodSync(worldRoot, 0o777);
  refused(join(worldRoot, 'ns'), /is writable by its group \(mode 777/, 'SETTLE_JOURNAL_DIR world-writable without the sticky bit');

  const link = fresh();
  const elsewhere = fresh();
  mkdirSync(elsewhere, { mode: 0o700 });
  mkdirSync(link, { mode: 0o700 });
  symlinkSync(elsewhere, join(link, 'ns'));
  refused(join(link, 'ns'), /ns is not a folder \(a symbolic link\?\)/, 'a symbolic link in place of the namespace folder');

  // /tmp itself is root's, world-writable with the sticky bit: nobody else can rename a folder in it.
  const sticky = fresh();
  mkdirSync(sticky, { mode: 0o700 });
  chmodSync(sticky, 0o1777);
  t.doesNotThrow(() => prepareJournalDir(join(sticky, 'ns')), 'a sticky, world-writable SETTLE_JOURNAL_DIR (as /tmp) with a namespace folder of our own');
});

t.test('a journal file is never opened through a symbolic link planted in its place', async (t) => {
  const dir = join(fresh(), 'ns');
  prepareJournalDir(dir);
  const target = join(root, `victim-${randomBytes(4).toString('hex')}`);
  writeFileSync(target, 'untouched\n');
  symlinkSync(target, join(dir, 'settle-abc.1-1.jsonl'));
  t.throws(() => new SettlementJournal(dir, 'abc.1'), { code: 'ELOOP' }, 'refused');
  t.equal(readFileSync(target, 'utf8'), 'untouched\n', 'the link\'s target is not written');
});

t.test('a gateway refuses to start on a journal folder another user owns', async (t) => {
  const base = fresh();
  mkdirSync(base, { mode: 0o700 });
  chownSync(base, NOBODY, NOBODY);
  const { code, output } = await runUntilExit({ SETTLE_JOURNAL_DIR: base, MOCK_VENDOR: 'off', LOG_LEVEL: 'warn', PORT: '0', HTTP_THREADS: '1', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unused' });
  t.equal(code, 1, 'exit status 1');
  t.match(output, new RegExp(`settlement journal folder ${base} is owned by uid ${NOBODY}`), 'the log says which folder and why');
  t.notOk(existsSync(join(base, 'settle')), 'nothing written');
});

t.test('a gateway creates its journal folder 0700 and serves', async (t) => {
  const base = fresh();
  const gateway = await startGateway({ env: { SETTLE_JOURNAL_DIR: base } });
  t.teardown(() => gateway.close());
  t.equal(mode(base).toString(8), '700', 'SETTLE_JOURNAL_DIR created 0700');
  t.ok(lstatSync(base).isDirectory());
  t.equal((await fetch(`${gateway.url}/readyz`)).status, 200);
});
