import { MessageChannel, Worker } from 'node:worker_threads';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { MainToThread, MetricsJson, ThreadToMain } from './thread-messages.js';
import { log } from '../log.js';
import { WorkerUtilization, loopOf, probedWorkerData, type LoopThread } from '../worker-pool.js';
import type { TokenCounterPorts } from '../billing/token-count.js';
import { breakerMemory } from '../routing/breakers.js';
import { STOP_TRACING, TRACING_STOPPED, tracer } from '../tracing/tracing.js';

const METRICS_TIMEOUT_MS = 2000;
const EXIT_GRACE_MS = 5000;

export interface ThreadPoolEvents {
  /** A thread ended while the pool was not stopping. */
  readonly onUnexpectedExit: (code: number) => void;
  /** A thread's settlements added ledger events after a quiet spell. */
  readonly onLedgerAppended: () => void;
}

/**
 * The HTTP threads of this process: started together on one port, asked together for /metrics
 * (summed with the main thread's registry), drained together on shutdown.
 */
export class HttpThreadPool {
  private readonly drained = new Map<Worker, Promise<void>>();
  private readonly exited = new Map<Worker, Promise<void>>();
  private readonly running = new Set<Worker>();
  /** Each thread's name in logs and metrics (`http-0`, ...). */
  private readonly names = new Map<Worker, string>();
  private readonly utilization = new WorkerUtilization();
  private readonly pendingMetrics = new Map<number, { parts: MetricsJson[]; left: number; done: (parts: MetricsJson[]) => void }>();
  /** The process's token counter (workers/token-counter.ts): a port to it for each HTTP thread. */
  private tokenCounter: Worker | undefined;
  private tokenCounterLoop: LoopThread | undefined;
  private metricsSeq = 0;
  private stopping = false;

  private constructor(private readonly mainRegistry: Registry, private readonly events: ThreadPoolEvents) {}

  /** Resolves once every thread listens; rejects when one cannot. */
  static async start(config: Config, mainRegistry: Registry, events: ThreadPoolEvents): Promise<HttpThreadPool> {
    const pool = new HttpThreadPool(mainRegistry, events);
    // One token counter per process, with a port to it for each thread (src/billing/token-count.ts).
    const counter = Array.from({ length: config.httpThreads }, () => new MessageChannel());
    const ports = counter.map((channel) => channel.port2);
    pool.tokenCounter = new Worker(new URL('../../workers/token-counter.js', import.meta.url), { workerData: { ports, ...probedWorkerData() }, transferList: ports, name: 'token-counter' });
    pool.tokenCounterLoop = loopOf(pool.tokenCounter, 'token-counter');
    pool.tokenCounter.on('error', (error) => log.error('token counter thread crashed; each HTTP thread counts in a pool of its own', { error }));
    pool.tokenCounter.unref();
    // The routing targets' breakers, shared by every thread (src/routing/breakers.ts).
    const breakers = breakerMemory(config.routing.table?.slots ?? 0);
    await Promise.all(Array.from({ length: config.httpThreads }, (_, index) => pool.spawn(config, `http-${index}`, breakers, { tokenCounter: counter[index]!.port1 })));
    return pool;
  }

  private spawn(config: Config, name: string, breakers: SharedArrayBuffer, ports: TokenCounterPorts): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const transferList = ports.tokenCounter ? [ports.tokenCounter] : [];
      const thread = new Worker(new URL('./thread.js', import.meta.url), { workerData: { config, name, breakers, ...ports }, transferList, name });
      this.running.add(thread);
      this.names.set(thread, name);
      let onDrained: () => void = () => {};
      this.drained.set(thread, new Promise((r) => { onDrained = r; }));
      this.exited.set(thread, new Promise((r) => thread.once('exit', () => r())));
      thread.on('message', (message: ThreadToMain) => {
        switch (message.type) {
          case 'listening': resolve(); break;
          case 'listen-failed': reject(new Error(message.message)); break;
          case 'drained':
            if (message.unfinished) log.warn('thread stopped with requests unfinished', { unfinished: message.unfinished });
            onDrained();
            break;
          case 'metrics-json': this.receiveMetrics(message.id, message.data); break;
          case 'ledger-appended': this.events.onLedgerAppended(); break;
          case 'collect-metrics':
            this.metricsText().then((text) => thread.postMessage({ type: 'metrics-text', id: message.id, text } satisfies MainToThread));
            break;
        }
      });
      thread.on('error', (error) => {
        log.error('HTTP thread crashed', { error });
        reject(error);
      });
      thread.on('exit', (code) => {
        this.running.delete(thread);
        onDrained();
        if (!this.stopping) this.events.onUnexpectedExit(code);
      });
    });
  }

  /**
   * The HTTP threads' loops as the main thread sees them: utilisation from each Worker handle (it shows
   * a stuck thread too); their delay is each thread's own metric. And the token counter's, delay included.
   */
  loopThreads(): LoopThread[] {
    const threads: LoopThread[] = [...this.running].map((worker) => ({
      thread: this.names.get(worker)!,
      delay: () => undefined,
      utilization: () => this.utilization.read(worker),
    }));
    return this.tokenCounterLoop ? [...threads, this.tokenCounterLoop] : threads;
  }

  /** Prometheus text of the whole process: every thread's registry and the main thread's, summed. */
  async metricsText(): Promise<string> {
    const parts = await new Promise<MetricsJson[]>((resolve) => {
      const id = ++this.metricsSeq;
      this.pendingMetrics.set(id, { parts: [], left: this.running.size, done: resolve });
      for (const thread of this.running) thread.postMessage({ type: 'metrics-json', id } satisfies MainToThread);
      setTimeout(() => { // a stuck thread must not hang /metrics
        const pending = this.pendingMetrics.get(id);
        if (pending) {
          this.pendingMetrics.delete(id);
          resolve(pending.parts);
        }
      }, METRICS_TIMEOUT_MS).unref();
    });
    return AggregatorRegistry.aggregate([...parts, await this.mainRegistry.getMetricsAsJSON()]).metrics();
  }

  private receiveMetrics(id: number, data: MetricsJson): void {
    const pending = this.pendingMetrics.get(id);
    if (!pending) return;
    pending.parts.push(data);
    if (--pending.left === 0) {
      this.pendingMetrics.delete(id);
      pending.done(pending.parts);
    }
  }

  /** Stops accepting, waits (up to the deadline) for requests and their settlements to finish. */
  async drain(deadlineMs: number): Promise<void> {
    this.stopping = true;
    for (const thread of this.running) thread.postMessage({ type: 'drain', deadlineMs } satisfies MainToThread);
    await Promise.race([Promise.all(this.drained.values()), new Promise((r) => setTimeout(r, deadlineMs + 10_000))]);
  }

  /** Drained threads end by themselves; one that does not within a grace period is terminated. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.race([Promise.all(this.exited.values()), new Promise((r) => setTimeout(r, EXIT_GRACE_MS))]);
    await Promise.all([...this.running].map((thread) => thread.terminate()));
    if (this.tokenCounter && tracer !== undefined) await tracingStopped(this.tokenCounter);
    await this.tokenCounter?.terminate();
  }
}

/** Asks a worker to export its queued spans (tracing on), waiting for its answer a few seconds at most. */
function tracingStopped(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve();
    };
    const onMessage = (message: unknown) => {
      if (message === TRACING_STOPPED) done();
    };
    const timer = setTimeout(done, 5000);
    worker.on('message', onMessage);
    worker.postMessage(STOP_TRACING);
  });
}
