/**
 * The process's token counter: one thread that each HTTP thread asks over a port of its own
 * (src/billing/token-count.ts), so a count is one round trip between two threads and no HTTP thread
 * relays another's. The tokenizer's tables (about 45 MiB) load with the first count.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { CountAnswer, CountRequest } from '../src/billing/token-count.js';
// Reports this thread's loop to the metrics (its workerData asks for it: src/worker-pool.ts).
import '../src/worker-pool.js';
import { STOP_TRACING, TRACING_STOPPED, contextOf, endFailed, startTracing, stopTracing, tracer } from '../src/tracing/tracing.js';

await startTracing('token-counter');
// The main thread asks before it ends this thread: the spans still queued are exported first.
parentPort?.on('message', (message: unknown) => {
  if (message === STOP_TRACING) void stopTracing().then(() => parentPort?.postMessage(TRACING_STOPPED));
});

let counting: Promise<typeof import('./count-tokens.js').default> | undefined;

for (const port of (workerData as { ports: MessagePort[] }).ports) {
  port.on('message', async ({ id, input, traceparent }: CountRequest) => {
    // A span for the count, under the span that asked for it (tracing on and a context sent).
    const span = tracer !== undefined && traceparent !== undefined
      ? tracer.startSpan('count_tokens', { attributes: { 'gateway.texts': input.texts.length } }, contextOf(traceparent))
      : undefined;
    let answer: CountAnswer;
    try {
      const count = await (counting ??= import('./count-tokens.js').then((module) => module.default));
      answer = { id, counts: count(input) };
      span?.setAttribute('gateway.tokens', answer.counts!.reduce((a, b) => a + b, 0));
      span?.end();
    } catch (error) {
      answer = { id, error: error instanceof Error ? error.message : String(error) };
      if (span) endFailed(span, error instanceof Error ? error.name : 'error');
    }
    port.postMessage(answer);
  });
}
