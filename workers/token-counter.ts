/**
 * The process's token counter: one thread that each HTTP thread asks over a port of its own
 * (src/billing/token-count.ts), so a count is one round trip between two threads and no HTTP thread
 * relays another's. The tokenizer's tables (about 45 MiB) load with the first count.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import type { CountAnswer, CountRequest } from '../src/billing/token-count.js';
// Reports this thread's loop to the metrics (its workerData asks for it: src/worker-pool.ts).
import '../src/worker-pool.js';

let counting: Promise<typeof import('./count-tokens.js').default> | undefined;

for (const port of (workerData as { ports: MessagePort[] }).ports) {
  port.on('message', async ({ id, input }: CountRequest) => {
    let answer: CountAnswer;
    try {
      const count = await (counting ??= import('./count-tokens.js').then((module) => module.default));
      answer = { id, counts: count(input) };
    } catch (error) {
      answer = { id, error: error instanceof Error ? error.message : String(error) };
    }
    port.postMessage(answer);
  });
}
