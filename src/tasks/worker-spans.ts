/**
 * Spans of the task workers (docs/operations.md "Task spans"). A step's I/O runs in the worker pool;
 * the step passes its span's context in the worker's input (`trace`), and the worker thread makes a
 * child span for the vendor exchange, the download or the callback POST. Each worker thread starts
 * its own tracing once (`tasks-<threadId>`), and exports what it holds when the pool closes
 * (`flushWorkerSpans`), so a graceful shutdown loses no span.
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { SpanKind, activeTraceparent, contextOf, endFailed, flushTracing, startTracing, tracer, withSpan, type Attributes, type Span } from '../tracing/tracing.js';

/** A step's span context and what the worker's span says about the step (vendor, target, attempt). */
export interface WorkerTrace {
  readonly traceparent: string;
  readonly attributes?: Attributes;
}

/** The active step span's context for a worker input; undefined when tracing is off or no step span is active. */
export function workerTraceOf(attributes?: Attributes): WorkerTrace | undefined {
  const traceparent = activeTraceparent();
  if (!traceparent) return undefined;
  return attributes ? { traceparent, attributes } : { traceparent };
}

/** What a worker span ends with: more attributes, and an error code when the work failed. */
export interface WorkerOutcome {
  readonly attributes?: Attributes;
  readonly error?: string;
}

/**
 * Runs a worker's work inside a span (a child of the step's), so the exchanges it makes are its
 * children and carry its traceparent. Without a trace, runs `work` alone.
 */
export async function inWorkerSpan<T>(trace: WorkerTrace | undefined, name: string, kind: SpanKind, work: (span: Span | undefined) => Promise<T>, outcome: (output: T) => WorkerOutcome): Promise<T> {
  if (!tracer || !trace) return work(undefined);
  const span = tracer.startSpan(name, { kind, attributes: trace.attributes }, contextOf(trace.traceparent));
  let output: T;
  try {
    output = await withSpan(span, () => work(span));
  } catch (error) {
    endFailed(span, (error as Error)?.name ?? 'Error');
    throw error;
  }
  const { attributes, error } = outcome(output);
  if (attributes) span.setAttributes(attributes);
  if (error !== undefined) endFailed(span, error);
  else span.end();
  return output;
}

/** The channel the pool's owner asks every worker thread on to export its spans. */
const FLUSH_CHANNEL = 'model-gateway:task-worker-spans';
type FlushMessage = { readonly flush: number } | { readonly flushed: number };

let workerStarted = false;

/**
 * Starts this worker thread's tracing (once per thread, whichever worker module loads first) and
 * answers the pool owner's flush requests. A no-op when tracing is off.
 */
export function startWorkerTracing(): void {
  if (workerStarted) return;
  workerStarted = true;
  if (!startTracing(`tasks-${threadId}`)) return;
  const channel = new BroadcastChannel(FLUSH_CHANNEL);
  channel.unref(); // an idle worker thread may still end
  channel.onmessage = (event) => {
    const message = (event as { data: FlushMessage }).data;
    if (!('flush' in message)) return;
    void flushTracing().then(() => channel.postMessage({ flushed: message.flush } satisfies FlushMessage));
  };
}

/**
 * Asks each of the pool's `threads` worker threads to export the spans it holds, and waits for their
 * answers (at most `timeoutMs`): before the pool is destroyed at shutdown.
 */
export async function flushWorkerSpans(threads: number, timeoutMs: number): Promise<void> {
  if (!tracer || threads === 0) return;
  const channel = new BroadcastChannel(FLUSH_CHANNEL);
  const round = Date.now();
  try {
    await new Promise<void>((resolve) => {
      let answered = 0;
      const timer = setTimeout(resolve, timeoutMs);
      channel.onmessage = (event) => {
        const message = (event as { data: FlushMessage }).data;
        if ('flushed' in message && message.flushed === round && ++answered >= threads) {
          clearTimeout(timer);
          resolve();
        }
      };
      channel.postMessage({ flush: round } satisfies FlushMessage);
    });
  } finally {
    channel.close();
  }
}
