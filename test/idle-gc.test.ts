// Quiet-time collections (src/idle-gc.ts): every thread gets V8's gc without --expose-gc, the flag is
// off again afterwards, and a quiet thread that grew collects once and gives the memory back.
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { runInNewContext } from 'node:vm';
import { collectWhenIdle } from '../src/idle-gc.js';

const IDLE_GC = new URL('../src/idle-gc.js', import.meta.url).href;

t.test('threads starting together each get a collector, and later contexts get no global gc', async (t) => {
  // Each thread reports its collector, then, once every thread has started (the flag is process-wide
  // and is on for a moment in each), whether a context made afterwards has a global gc.
  const code = `
    const { parentPort } = require('node:worker_threads');
    const { runInNewContext } = require('node:vm');
    import(${JSON.stringify(IDLE_GC)}).then(({ collectWhenIdle }) => {
      const stop = collectWhenIdle();
      parentPort.postMessage({ started: typeof stop === 'function' });
      parentPort.once('message', () => {
        parentPort.postMessage({ later: runInNewContext('typeof gc') });
        stop?.();
      });
    });`;
  const workers = Array.from({ length: 6 }, () => new Worker(code, { eval: true }));
  t.teardown(() => Promise.all(workers.map((worker) => worker.terminate())));
  const next = (worker: Worker) => new Promise<{ started?: boolean; later?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const started = await Promise.all(workers.map(next));
  const later = await Promise.all(workers.map((worker) => {
    const answer = next(worker);
    worker.postMessage('check');
    return answer;
  }));
  const answers = started.map((first, i) => ({ started: first.started, later: later[i]!.later }));
  t.same(answers.map((answer) => answer.started), answers.map(() => true), 'each thread has its collector');
  t.same(answers.map((answer) => answer.later), answers.map(() => 'undefined'), 'the flag is off again');
  t.equal(runInNewContext('typeof gc'), 'undefined', 'also in this thread');
});

t.test('a quiet thread whose heap grew collects once and gives memory back', async (t) => {
  const collections: { before: number; after: number }[] = [];
  const stop = collectWhenIdle({ checkMs: 300, growthBytes: 4 * 1024 * 1024, onCollected: (before, after) => collections.push({ before, after }) });
  t.ok(stop, 'started');
  t.teardown(() => stop?.());
  // Garbage a busy spell leaves: objects and Buffers no longer referenced.
  let keep: unknown[] = [];
  for (let i = 0; i < 200_000; i++) {
    keep.push({ i, text: `item ${i}`, bytes: Buffer.allocUnsafe(256) });
    if (keep.length === 50_000) keep = [];
  }
  keep = [];
  const until = Date.now() + 5000;
  while (collections.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  t.equal(collections.length, 1, 'one collection');
  const [first] = collections;
  t.ok(first && first.after < first.before - 4 * 1024 * 1024, `footprint ${first?.before} -> ${first?.after} bytes`);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(collections.length, 1, 'no more while nothing grows');
});
