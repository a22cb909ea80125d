import { Piscina } from 'piscina';
import { PoolLoops, probedPoolOptions, type LoopThread } from '../worker-pool.js';
import type { SubmitTaskInput, SubmitTaskOutput } from '../../workers/submit-task.js';
import type { PollTaskInput, PollTaskOutput } from '../../workers/poll-task.js';
import type { RehostMediaInput, RehostMediaOutput } from '../../workers/rehost-media.js';
import type { DeliverCallbackInput, DeliverCallbackOutput } from '../../workers/deliver-callback.js';
import type { GenerateAudioInput, GenerateAudioOutput } from '../../workers/generate-audio.js';
import { WorkerSpanExports, workerTraceOf } from './worker-spans.js';
import type { Attributes } from '../tracing/tracing.js';

const worker = (name: string) => new URL(`../../workers/${name}.js`, import.meta.url).href;

/**
 * The task steps' worker pool: vendor calls, downloads and callback deliveries run here, never on
 * the main thread's event loop or an HTTP thread. Steps mostly wait on the network, so each worker
 * runs many at once. Each call made inside a step's span carries that span's context (`trace`): the
 * worker's span of it joins the task's trace, with `attributes` (vendor, target, attempt).
 */
export class TaskWorkers {
  private readonly pool: Piscina;
  private readonly loops: PoolLoops;
  private readonly spanExports = new WorkerSpanExports();

  constructor(threads: number) {
    // Every task names its module; the pool's default one reports each worker's event loop to the metrics.
    this.pool = new Piscina({ ...probedPoolOptions(), minThreads: 1, maxThreads: threads, concurrentTasksPerWorker: 32, idleTimeout: 60_000 });
    this.loops = new PoolLoops(this.pool, 'tasks');
  }

  submit(input: SubmitTaskInput, attributes?: Attributes): Promise<SubmitTaskOutput> {
    return this.pool.run(traced(input, attributes), { filename: worker('submit-task') });
  }

  poll(input: PollTaskInput, attributes?: Attributes): Promise<PollTaskOutput> {
    return this.pool.run(traced(input, attributes), { filename: worker('poll-task') });
  }

  rehost(input: RehostMediaInput, attributes?: Attributes): Promise<RehostMediaOutput> {
    return this.pool.run(traced(input, attributes), { filename: worker('rehost-media') });
  }

  generate(input: GenerateAudioInput, attributes?: Attributes): Promise<GenerateAudioOutput> {
    return this.pool.run(traced(input, attributes), { filename: worker('generate-audio') });
  }

  deliver(input: DeliverCallbackInput, attributes?: Attributes): Promise<DeliverCallbackOutput> {
    return this.pool.run(traced(input, attributes), { filename: worker('deliver-callback') });
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  get queued(): number {
    return this.pool.queueSize;
  }

  /** Each worker's event loop (`tasks-0`, `tasks-1`, ...), for the metrics. */
  loopThreads(): LoopThread[] {
    return this.loops.threads();
  }

  /** Destroys the pool, once its threads exported the spans they hold. */
  async close(): Promise<void> {
    await this.spanExports.flush(this.pool.threads.map((thread) => thread.threadId), FLUSH_TIMEOUT_MS);
    this.spanExports.close();
    await this.pool.destroy();
  }
}

/** Longest the pool's close waits for its threads' spans to be exported. */
const FLUSH_TIMEOUT_MS = 5000;

/** The input with the active step span's context, when there is one (tracing on): unchanged otherwise. */
function traced<T extends object>(input: T, attributes: Attributes | undefined): T {
  const trace = workerTraceOf(attributes);
  return trace ? { ...input, trace } : input;
}
