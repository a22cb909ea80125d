// Summarises V8 .cpuprofile files, one per thread (as the gateway writes them when the bench runs it
// with BENCH_GATEWAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR"):
//   node dist/bench/profile-top.js DIR/*.cpuprofile [--top N]
// Per profile: busy time, the top functions by self time, and busy time by area, where a sample
// belongs to the nearest frame on its stack from a known area (so a socket write made by ioredis
// counts as Redis, not as "native").
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const AREAS: readonly (readonly [string, RegExp])[] = [
  ['redis (ioredis)', /node_modules\/(ioredis|redis-parser|standard-as-callback|cluster-key-slot)\//],
  ['upstream (undici)', /node_modules\/undici\//],
  ['postgres (postgres.js)', /node_modules\/postgres\//],
  ['metrics (prom-client)', /node_modules\/prom-client\//],
  ['validation (valibot)', /node_modules\/valibot\//],
  ['tokenizer', /node_modules\/gpt-tokenizer\//],
  ['src/http/reply (uWS writes)', /\/src\/http\/reply\.js/],
  ['src/providers', /\/src\/providers\//],
  ['src/auth', /\/src\/auth\//],
  ['src/ledger', /\/src\/ledger\//],
  ['src/http (router, body, routes)', /\/src\/http\//],
  ['src (other)', /\/src\//],
];

function frameName(frame: CallFrame): string {
  const where = frame.url.replace(/^.*\/(node_modules\/|dist\/)/, '$1');
  return `${frame.functionName || '(anonymous)'} ${where}${where ? `:${frame.lineNumber + 1}` : ''}`;
}

function summarise(file: string, top: number): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

  const bySelf = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const micros = profile.timeDeltas[i] ?? 0;
    const leaf = nodes.get(id)!.callFrame;
    if (leaf.functionName === '(idle)') return;
    busy += micros;
    bySelf.set(frameName(leaf), (bySelf.get(frameName(leaf)) ?? 0) + micros);
    let area = leaf.functionName === '(garbage collector)' ? 'GC' : undefined;
    for (let at: number | undefined = id; area === undefined && at !== undefined; at = parents.get(at)) {
      area = AREAS.find(([, pattern]) => pattern.test(nodes.get(at!)!.callFrame.url))?.[0];
    }
    area ??= 'node core / native / other';
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
  });

  const share = (micros: number) => `${((100 * micros) / busy).toFixed(1).padStart(5)}%`;
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  console.log(`\n${basename(file)}: busy ${(busy / 1e6).toFixed(2)} s`);
  console.log('  by area:');
  for (const [area, micros] of sorted(byArea)) console.log(`  ${share(micros)}  ${area}`);
  console.log(`  top ${top} by self time:`);
  for (const [name, micros] of sorted(bySelf).slice(0, top)) console.log(`  ${share(micros)}  ${name}`);
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt === -1 ? 20 : Number(args.splice(topAt, 2)[1]);
if (args.length === 0) {
  console.error('usage: node dist/bench/profile-top.js FILE.cpuprofile... [--top N]');
  process.exit(2);
}
for (const file of args) summarise(file, top);
