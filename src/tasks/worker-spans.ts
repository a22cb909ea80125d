/**
 * Spans of the task workers (docs/operations.md "Task spans"). A step's I/O runs in the worker pool;
 * the step passes its span's context in the worker's input (`trace`), and the worker thread makes a
 * child span for the vendor exchange, the download or the callback POST. Each worker thread starts
 * its own tracing once (`tasks-<threadId>`), and exports what it holds when the pool closes
 * (`WorkerSpanExports`), so a graceful shutdown loses no span.
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

/** The channel worker threads announce their tracing on, and the pool's owner asks them to export on. */
const CHANNEL = 'model-gateway:task-worker-spans';
type ChannelMessage = { readonly started: number } | { readonly flush: number } | { readonly flushed: number; readonly thread: number };
const messageOf = (event: unknown) => (event as { data: ChannelMessage }).data;

let workerStarting: Promise<void> | undefined;

/**
 * Starts this worker thread's tracing (once per thread, whichever worker module loads first; the
 * others wait for the same start), tells the pool's owner, and answers its flush requests. A no-op
 * when tracing is off.
 */
export function startWorkerTracing(): Promise<void> {
  workerStarting ??= (async () => {
    if (!(await startTracing(`tasks-${threadId}`))) return;
    const channel = new BroadcastChannel(CHANNEL);
    channel.unref(); // an idle worker thread may still end
    channel.onmessage = (event) => {
      const message = messageOf(event);
      if ('flush' in message) void flushTracing().then(() => channel.postMessage({ flushed: message.flush, thread: threadId } satisfies ChannelMessage));
    };
    channel.postMessage({ started: threadId } satisfies ChannelMessage);
  })();
  return workerStarting;
}

/**
 * The pool owner's side: which of its worker threads trace (they said so when they started), and
 * their export of what they hold before the pool is destroyed. Nothing while tracing is off.
 */
export class WorkerSpanExports {
  private readonly traced = new Set<number>();
  private readonly channel: BroadcastChannel | undefined;
  private readonly waiting = new Map<number, () => void>();

  constructor() {
    if (!tracer) return;
    this.channel = new BroadcastChannel(CHANNEL);
    this.channel.unref();
    this.channel.onmessage = (event) => {
      const message = messageOf(event);
      if ('started' in message) this.traced.add(message.started);
      else if ('flushed' in message) this.waiting.get(message.thread)?.();
    };
  }

  /** Asks the traced ones of `threads` (the pool's live thread ids) to export their spans; waits at most `timeoutMs`. */
  async flush(threads: readonly number[], timeoutMs: number): Promise<void> {
    const channel = this.channel;
    const asked = threads.filter((thread) => this.traced.has(thread));
    if (!channel || asked.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      const answered = Promise.all(asked.map((thread) => new Promise<void>((resolve) => this.waiting.set(thread, resolve))));
      channel.postMessage({ flush: Date.now() } satisfies ChannelMessage);
      await Promise.race([answered, new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); })]);
    } finally {
      clearTimeout(timer);
      this.waiting.clear();
    }
  }

  close(): void {
    this.channel?.close();
  }
}
