import { Piscina } from 'piscina';
import { PoolLoops, probedPoolOptions, type LoopThread } from '../worker-pool.js';
import type { SubmitTaskInput, SubmitTaskOutput } from '../../workers/submit-task.js';
import type { PollTaskInput, PollTaskOutput } from '../../workers/poll-task.js';
import type { RehostMediaInput, RehostMediaOutput } from '../../workers/rehost-media.js';
import type { DeliverCallbackInput, DeliverCallbackOutput } from '../../workers/deliver-callback.js';
import type { GenerateAudioInput, GenerateAudioOutput } from '../../workers/generate-audio.js';

const worker = (name: string) => new URL(`../../workers/${name}.js`, import.meta.url).href;

/**
 * The task steps' worker pool: vendor calls, downloads and callback deliveries run here, never on
 * the main thread's event loop or an HTTP thread. Steps mostly wait on the network, so each worker
 * runs many at once.
 */
export class TaskWorkers {
  private readonly pool: Piscina;
  private readonly loops: PoolLoops;

  constructor(threads: number) {
    // Every task names its module; the pool's default one reports each worker's event loop to the metrics.
    this.pool = new Piscina({ ...probedPoolOptions(), minThreads: 1, maxThreads: threads, concurrentTasksPerWorker: 32, idleTimeout: 60_000 });
    this.loops = new PoolLoops(this.pool, 'tasks');
  }

  submit(input: SubmitTaskInput): Promise<SubmitTaskOutput> {
    return this.pool.run(input, { filename: worker('submit-task') });
  }

  poll(input: PollTaskInput): Promise<PollTaskOutput> {
    return this.pool.run(input, { filename: worker('poll-task') });
  }

  rehost(input: RehostMediaInput): Promise<RehostMediaOutput> {
    return this.pool.run(input, { filename: worker('rehost-media') });
  }

  generate(input: GenerateAudioInput): Promise<GenerateAudioOutput> {
    return this.pool.run(input, { filename: worker('generate-audio') });
  }

  deliver(input: DeliverCallbackInput): Promise<DeliverCallbackOutput> {
    return this.pool.run(input, { filename: worker('deliver-callback') });
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

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
