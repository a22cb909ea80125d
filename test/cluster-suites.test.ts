// The money, admission, ledger and task test files once more, on a Redis Cluster (issue 19): `npm test`
// runs each of them on the single Redis; this file starts a local cluster of three primaries and runs
// them again as child processes with TEST_REDIS_URL naming it, and each must exit 0. They run one or two
// at a time (tap runs another file beside this one: Postgres has 100 connections, the CPU two cores),
// the heaviest alone. Run by hand on a cluster of your own:
// `TEST_REDIS_URL=redis-cluster://host:port,... npx tap dist/test/money-races.test.js ...`.
import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseRedisUrl } from '../src/store/redis-url.js';
import { startRedisCluster, type LocalCluster } from './helpers/redis-cluster.js';

/** The files, heaviest first; `alone` ones run with no other beside them (the most gateway processes and Postgres connections). */
const SUITES: readonly { readonly name: string; readonly alone?: boolean }[] = [
  { name: 'money-races', alone: true },
  { name: 'lease-recall', alone: true },
  { name: 'task-cancel' },
  { name: 'task-actors' },
  { name: 'ledger-writer' },
  { name: 'video-tasks' },
  { name: 'ledger-check' },
  { name: 'audio-tasks' },
  { name: 'coupons' },
  { name: 'admission' },
  { name: 'leases' },
  { name: 'key-limits' },
  { name: 'token-budgets' },
  { name: 'settlement-journal' },
  { name: 'abort' },
  { name: 'ledger-outage' },
  { name: 'task-scripts' },
];
/** At most this many files at once. */
const JOBS = 2;
/** Each file's own tap timeout, seconds (package.json's 180, with room for the two running beside it). */
const FILE_TIMEOUT_S = 240;
/** A file still running this long after its own timeout is killed with its gateways. */
const KILL_AFTER_MS = (FILE_TIMEOUT_S + 30) * 1000;

const current = process.env.TEST_REDIS_URL;
if (current !== undefined && parseRedisUrl(current).cluster) {
  t.plan(0, 'TEST_REDIS_URL already names a Redis Cluster: the files run on it by themselves');
} else {
  // The files' own time and some for the cluster; tap's per-file 180 s would cut it short.
  t.setTimeout(12 * 60_000);
  let cluster: LocalCluster | undefined;
  t.before(async () => {
    cluster = await startRedisCluster({ primaries: 3 });
  });
  t.teardown(async () => {
    await cluster?.stop();
  });

  t.test('the money, admission, ledger and task files pass on a Redis Cluster', async (t) => {
    const started = Date.now();
    const queue = [...SUITES];
    const running = new Set<Promise<void>>();
    let aloneRunning = false;
    const runOne = async (name: string) => {
      const result = await runFile(name, cluster!.url);
      const seconds = (result.ms / 1000).toFixed(1);
      if (result.code === 0) {
        t.pass(`${name}.test.js on the cluster (${seconds} s)`);
        return;
      }
      const failed = failedAssertions(result.output);
      t.fail(`${name}.test.js on the cluster exits 0 (${result.signal ?? `exit ${result.code}`} after ${seconds} s)`, {
        ...(failed === '' ? {} : { failed }), tail: result.output.split('\n').slice(-60).join('\n'),
      });
    };
    while (queue.length > 0 || running.size > 0) {
      const next = queue[0];
      const canStart = next !== undefined && !aloneRunning && running.size < JOBS && (!next.alone || running.size === 0);
      if (!canStart) {
        await Promise.race(running);
        continue;
      }
      queue.shift();
      aloneRunning = next.alone === true;
      const job: Promise<void> = runOne(next.name).finally(() => {
        running.delete(job);
        if (next.alone) aloneRunning = false;
      });
      running.add(job);
    }
    t.comment(`${SUITES.length} files on the cluster in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
}

interface FileResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly output: string;
  readonly ms: number;
}

/** One test file as a process of its own (a process group with its gateways, killed whole when it hangs). */
function runFile(name: string, redisUrl: string): Promise<FileResult> {
  const file = fileURLToPath(new URL(`./${name}.test.js`, import.meta.url));
  // Not this runner's tap settings (its child id, IPC key, process-info hooks): the file is a tap root of its own.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key, value]) =>
    !/^(TAP|_TAPJS_)/.test(key) && !(key === 'NODE_OPTIONS' && value?.includes('@tapjs/'))));
  const started = Date.now();
  const child = spawn(process.execPath, ['--enable-source-maps', file], {
    env: { ...env, TEST_REDIS_URL: redisUrl, TAP_TIMEOUT: String(FILE_TIMEOUT_S) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch { /* gone already */ }
  };
  const timer = setTimeout(() => {
    output += `\n[cluster-suites] ${name} still running after ${KILL_AFTER_MS / 1000} s: killed with its gateways\n`;
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 5000).unref();
  }, KILL_AFTER_MS);
  // Should this runner end first, its files' processes go with it.
  const onExit = () => killGroup('SIGKILL');
  process.once('exit', onExit);
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      process.off('exit', onExit);
      resolve({ code, signal, output, ms: Date.now() - started });
    });
  });
}

/** Each `not ok` line of a file's TAP output with the lines of diagnostics after it. */
function failedAssertions(output: string): string {
  const lines = output.split('\n');
  const picked: string[] = [];
  lines.forEach((line, i) => {
    if (/^\s*not ok /.test(line)) picked.push(...lines.slice(i, i + 25), '');
  });
  return picked.slice(0, 200).join('\n');
}
