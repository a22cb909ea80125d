// Summarises V8 .cpuprofile files, one per thread (as the gateway writes them when the bench runs it
// with BENCH_GATEWAY_NODE_ARGS="--cpu-prof --cpu-prof-interval 100 --cpu-prof-dir=DIR"):
//   node dist/bench/profile-top.js DIR/*.cpuprofile [--top N] [--phase-top N] [--merge]
// Per profile (or, with --merge, per kind of thread: HTTP threads summed): busy time, the busy time by
// phase of a call (with --phase-top, each phase's own top functions), and the top functions by self time. Shares count samples: V8 takes one per
// interval while the thread runs, so a sample is a fixed slice of CPU. (Weighting samples by their
// time deltas instead credits a long idle gap to whatever ran first after it.)
// A sample belongs to the phase of the nearest frame on its stack that names one, so a socket write
// made by ioredis counts as the Redis client, not as "native".
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

/** The phases of a call (issue 31's breakdown), each by the code that does it; first match from the leaf wins. */
const PHASES: readonly (readonly [string, RegExp])[] = [
  ['start-up (module loading)', /^node:internal\/modules\//],
  ['Redis client (ioredis)', /node_modules\/(ioredis|redis-parser|standard-as-callback|cluster-key-slot)\//],
  ['Postgres client (postgres.js)', /node_modules\/postgres\//],
  ['metrics (prom-client, src/metrics)', /node_modules\/prom-client\/|\/src\/metrics\.js/],
  ['logging (src/log)', /\/src\/log\.js/],
  ['ledger writer (src/ledger)', /\/src\/ledger\//],
  ['settle (src/billing)', /\/src\/billing\//],
  ['admit (src/admission)', /\/src\/admission\//],
  ['authenticate (src/auth)', /\/src\/auth\//],
  ['parse and validate (schemas, valibot)', /\/src\/http\/(schemas|body)|node_modules\/valibot\//],
  ['client writes (src/http/reply: uWS)', /\/src\/http\/reply\.js/],
  ['upstream I/O (request out, answer in)', /\/src\/providers\/upstream-client\.js/],
  ['relay and answer rewrite (src/providers, sse)', /\/src\/providers\/|\/src\/http\/sse\.js/],
  ['routing and the call pipeline (routes, routing)', /\/src\/(http|routing)\//],
  ['tasks and workers (src/tasks, worker pool)', /\/src\/tasks\/|\/src\/worker-pool\.js|\/worker_pool\//],
  ['other gateway code (src)', /\/src\//],
];

function frameName(frame: CallFrame): string {
  const where = frame.url.replace(/^.*\/(node_modules\/|dist\/)/, '$1');
  return `${frame.functionName || '(anonymous)'} ${where}${where ? `:${frame.lineNumber + 1}` : ''}`;
}

interface Summary { samples: number; busyMicros: number; byPhase: Map<string, number>; bySelf: Map<string, number>; byPhaseSelf: Map<string, Map<string, number>> }

function summarise(file: string): Summary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const phaseOf = new Map<number, string>();
  const phase = (id: number): string => {
    const known = phaseOf.get(id);
    if (known !== undefined) return known;
    const leaf = nodes.get(id)!.callFrame;
    let found = leaf.functionName === '(garbage collector)' ? 'GC' : leaf.functionName === '(program)' ? 'V8 and native, no JS frame' : undefined;
    for (let at: number | undefined = id; found === undefined && at !== undefined; at = parents.get(at)) {
      found = PHASES.find(([, pattern]) => pattern.test(nodes.get(at!)!.callFrame.url))?.[0];
    }
    found ??= 'node core and uWS, no gateway frame';
    phaseOf.set(id, found);
    return found;
  };

  const summary: Summary = { samples: 0, busyMicros: 0, byPhase: new Map(), bySelf: new Map(), byPhaseSelf: new Map() };
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const phaseSelf = (name: string) => summary.byPhaseSelf.get(name) ?? summary.byPhaseSelf.set(name, new Map()).get(name)!;
  profile.samples.forEach((id, i) => {
    const leaf = nodes.get(id)!.callFrame;
    if (leaf.functionName === '(idle)') return;
    summary.samples++;
    summary.busyMicros += profile.timeDeltas[i + 1] ?? 0;
    add(summary.byPhase, phase(id));
    add(summary.bySelf, frameName(leaf));
    add(phaseSelf(phase(id)), frameName(leaf));
  });
  return summary;
}

function merged(summaries: readonly Summary[]): Summary {
  const total: Summary = { samples: 0, busyMicros: 0, byPhase: new Map(), bySelf: new Map(), byPhaseSelf: new Map() };
  for (const summary of summaries) {
    total.samples += summary.samples;
    total.busyMicros += summary.busyMicros;
    for (const [key, n] of summary.byPhase) total.byPhase.set(key, (total.byPhase.get(key) ?? 0) + n);
    for (const [key, n] of summary.bySelf) total.bySelf.set(key, (total.bySelf.get(key) ?? 0) + n);
    for (const [name, selfs] of summary.byPhaseSelf) {
      const into = total.byPhaseSelf.get(name) ?? total.byPhaseSelf.set(name, new Map()).get(name)!;
      for (const [key, n] of selfs) into.set(key, (into.get(key) ?? 0) + n);
    }
  }
  return total;
}

function print(title: string, summary: Summary, top: number): void {
  const share = (n: number) => `${((100 * n) / summary.samples).toFixed(1).padStart(5)}%`;
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  console.log(`\n${title}: ${summary.samples} busy samples, about ${(summary.busyMicros / 1e6).toFixed(2)} s`);
  console.log('  by phase:');
  for (const [name, n] of sorted(summary.byPhase)) {
    console.log(`  ${share(n)}  ${name}`);
    if (phaseTop > 0) for (const [self, m] of sorted(summary.byPhaseSelf.get(name)!).slice(0, phaseTop)) console.log(`           ${share(m)}  ${self}`);
  }
  console.log(`  top ${top} by self samples:`);
  for (const [name, n] of sorted(summary.bySelf).slice(0, top)) console.log(`  ${share(n)}  ${name}`);
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt === -1 ? 20 : Number(args.splice(topAt, 2)[1]);
const phaseTopAt = args.indexOf('--phase-top');
const phaseTop = phaseTopAt === -1 ? 0 : Number(args.splice(phaseTopAt, 2)[1]);
const mergeAt = args.indexOf('--merge');
if (mergeAt !== -1) args.splice(mergeAt, 1);
if (args.length === 0) {
  console.error('usage: node dist/bench/profile-top.js FILE.cpuprofile... [--top N] [--phase-top N] [--merge]');
  process.exit(2);
}
const summaries = args.map((file) => ({ file, summary: summarise(file) }));
if (mergeAt === -1) for (const { file, summary } of summaries) print(basename(file), summary, top);
else {
  // The main thread (thread id 0 in the file name: CPU.<date>.<time>.<pid>.0.<seq>) runs the ledger
  // writer and the timers; the others are HTTP threads and workers, summed.
  const isMain = (file: string) => /\.\d+\.0\.\d+\.cpuprofile$/.test(file);
  const main = summaries.filter(({ file }) => isMain(file)).map(({ summary }) => summary);
  const others = summaries.filter(({ file }) => !isMain(file)).map(({ summary }) => summary);
  if (main.length > 0) print('main thread', merged(main), top);
  if (others.length > 0) print(`the other ${others.length} threads`, merged(others), top);
}
