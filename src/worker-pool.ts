import { Piscina } from 'piscina';

/**
 * A one-thread piscina pool per HTTP thread, started on first use and stopped after a minute idle:
 * for work most requests never need (token counting, data: URI decoding) off the event loop.
 */
export class OnDemandWorkerPool<In, Out> {
  private pool: Piscina<In, Out> | undefined;

  /** `filename`: the worker module's file URL. */
  constructor(private readonly filename: URL) {}

  run(input: In): Promise<Out> {
    this.pool ??= new Piscina({ filename: this.filename.href, minThreads: 0, maxThreads: 1, idleTimeout: 60_000 });
    return this.pool.run(input);
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
    this.pool = undefined;
  }
}
