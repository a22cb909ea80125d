import { Piscina } from 'piscina';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import { MessageChannel, isMainThread, parentPort, threadId, workerData, type MessagePort, type Worker } from 'node:worker_threads';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Event-loop delay of one thread over a window, in seconds (beyond the sampler's own timer period). */
export interface LoopDelay {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/**
 * Samples this thread's event-loop delay: a timer every `resolutionMs`, and how late it fires.
 * `read` returns the delay since the previous read and starts a new window.
 */
export class LoopDelaySampler {
  private readonly histogram;

  constructor(private readonly resolutionMs: number) {
    this.histogram = monitorEventLoopDelay({ resolution: resolutionMs });
    this.histogram.enable();
  }

  private readAtMs = performance.now();

  read(): LoopDelay {
    const h = this.histogram;
    const nowMs = performance.now();
    const windowMs = nowMs - this.readAtMs;
    this.readAtMs = nowMs;
    let sample: LoopDelay;
    if (h.count > 0) {
      // The histogram records the gap between wake-ups: the delay is what exceeds the timer's period.
      const delay = (ns: number) => Math.max(0, ns / 1e6 - this.resolutionMs) / 1000;
      sample = { p50: delay(h.percentile(50)), p99: delay(h.percentile(99)), max: delay(h.max) };
    } else {
      // No wake-up in the whole window: the loop was held at least this long (its late timer has not run yet).
      const held = Math.max(0, windowMs - 2 * this.resolutionMs) / 1000;
      sample = { p50: held, p99: held, max: held };
    }
    h.reset();
    return sample;
  }

  close(): void {
    this.histogram.disable();
  }
}

/** One thread's loop as the metrics see it: a name, its delay and utilisation since the previous scrape. */
export interface LoopThread {
  readonly thread: string;
  /** Undefined: unknown this scrape (the thread did not answer in time). */
  delay(): LoopDelay | undefined | Promise<LoopDelay | undefined>;
  /** Share of the window the loop was busy (0 to 1); undefined when unknown. */
  utilization(): number | undefined;
}

/** Utilisation of another thread's loop since the previous call, read from its `Worker` handle (works while it is stuck). */
export class WorkerUtilization {
  private readonly previous = new WeakMap<Worker, EventLoopUtilization>();

  read(worker: Worker): number | undefined {
    let now: EventLoopUtilization;
    try {
      now = worker.performance.eventLoopUtilization();
    } catch {
      return undefined; // the thread has ended
    }
    const before = this.previous.get(worker);
    const share = before ? utilizationBetween(now, before) : utilizationBetween(now);
    if (share !== undefined) this.previous.set(worker, now); // an empty window is merged into the next
    return share;
  }
}

/** The busy share between two readings (or since the thread started), clamped to [0, 1]; undefined for an empty window. */
function utilizationBetween(now: EventLoopUtilization, before?: EventLoopUtilization): number | undefined {
  const active = now.active - (before?.active ?? 0);
  const total = active + now.idle - (before?.idle ?? 0);
  return total > 0 ? Math.min(1, Math.max(0, active / total)) : undefined;
}

/** This thread's own utilisation since the previous call. */
export function selfUtilization(): () => number | undefined {
  let previous = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = utilizationBetween(now, previous);
    if (share !== undefined) previous = now;
    return share;
  };
}

// --- Loop metrics of piscina workers --------------------------------------------------------------
//
// A pool's workers load this module first (it is the pool's default `filename`; every task names
// its own): flagged through `workerData`, it samples the worker's loop and sends the pool a port on
// which each scrape asks for the delay since the previous one. The pools run with atomics disabled:
// piscina's default parks an idle worker in `Atomics.wait` inside a callback, which reads as a loop
// 100 % busy and freezes its timers (and those of any step still waiting on a socket) until the next task.

const PROBE = 'gatewayLoopProbe';
/** Timer period of a pool worker's delay sampler (idle workers wake 10 times a second for it). */
const POOL_RESOLUTION_MS = 100;
/** Longest a scrape waits for a worker's answer; a late one is reported at the next scrape. */
const PROBE_TIMEOUT_MS = 500;

interface ProbeHello { readonly [PROBE]: { readonly threadId: number; readonly port: MessagePort } }

if (!isMainThread && parentPort && (workerData as Record<string, unknown> | null)?.[PROBE]) {
  const sampler = new LoopDelaySampler((workerData as Record<typeof PROBE, { resolutionMs: number }>)[PROBE].resolutionMs);
  const { port1, port2 } = new MessageChannel();
  port1.on('message', () => port1.postMessage(sampler.read()));
  port1.unref(); // piscina's own port keeps the worker alive; this one must not
  parentPort.postMessage({ [PROBE]: { threadId, port: port2 } } satisfies ProbeHello, [port2]);
}

/** The piscina options that make a pool's workers report their loops (merge into the pool's options). */
export function probedPoolOptions(): { filename: string; atomics: 'disabled'; workerData: Record<string, unknown> } {
  return { filename: import.meta.url, atomics: 'disabled', workerData: { [PROBE]: { resolutionMs: POOL_RESOLUTION_MS } } };
}

class WorkerProbe {
  private inFlight: Promise<LoopDelay> | undefined;
  private ready: LoopDelay | undefined;
  private answer: ((delay: LoopDelay) => void) | undefined;

  constructor(private readonly port: MessagePort) {
    port.on('message', (delay: LoopDelay) => this.answer?.(delay));
    port.unref();
  }

  /** The delay since the previous answer; at most one question in flight. */
  async delay(): Promise<LoopDelay | undefined> {
    if (this.ready) {
      const ready = this.ready;
      this.ready = undefined;
      return ready;
    }
    this.inFlight ??= new Promise<LoopDelay>((resolve) => {
      this.answer = resolve;
      this.port.postMessage(0);
    }).then((delay) => {
      this.ready = delay;
      this.inFlight = undefined;
      this.answer = undefined;
      return delay;
    });
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      this.inFlight,
      new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), PROBE_TIMEOUT_MS); timer.unref(); }),
    ]);
    clearTimeout(timer);
    if (answered) this.ready = undefined;
    return answered;
  }

  close(): void {
    this.port.close();
  }
}

/** The loops of one piscina pool's workers, named `<name>-<slot>` (a slot is reused by the next worker). */
export class PoolLoops {
  private readonly probes = new Map<number, WorkerProbe>();
  private readonly slots = new Map<Worker, number>();
  private readonly utilization = new WorkerUtilization();

  constructor(private readonly pool: Piscina, readonly name: string) {
    pool.on('message', (message: unknown) => {
      const hello = (message as Partial<ProbeHello> | null)?.[PROBE];
      if (hello) this.probes.set(hello.threadId, new WorkerProbe(hello.port));
    });
  }

  threads(): LoopThread[] {
    const live = this.pool.threads;
    for (const worker of this.slots.keys()) if (!live.includes(worker)) this.slots.delete(worker);
    const liveIds = new Set(live.map((worker) => worker.threadId));
    for (const [threadId, probe] of this.probes) {
      if (!liveIds.has(threadId)) {
        probe.close();
        this.probes.delete(threadId);
      }
    }
    return live.map((worker) => {
      let slot = this.slots.get(worker);
      if (slot === undefined) {
        const taken = new Set(this.slots.values());
        for (slot = 0; taken.has(slot); slot++);
        this.slots.set(worker, slot);
      }
      const threadId = worker.threadId;
      return {
        thread: `${this.name}-${slot}`,
        delay: () => this.probes.get(threadId)?.delay(),
        utilization: () => this.utilization.read(worker),
      };
    });
  }
}

/**
 * A thread of its own (not a pool's) that reports its loop like a pool worker: started with
 * `probedWorkerData()` in its workerData, its module imports this one, and `loopOf` reads it.
 */
export function probedWorkerData(): Record<string, unknown> {
  return { [PROBE]: { resolutionMs: POOL_RESOLUTION_MS } };
}

/** The loop of `worker` (started with probedWorkerData) under the metrics' name `thread`. */
export function loopOf(worker: Worker, thread: string): LoopThread {
  let probe: WorkerProbe | undefined;
  worker.on('message', (message: unknown) => {
    const hello = (message as Partial<ProbeHello> | null)?.[PROBE];
    if (hello) probe = new WorkerProbe(hello.port);
  });
  const utilization = new WorkerUtilization();
  return { thread, delay: () => probe?.delay(), utilization: () => utilization.read(worker) };
}

/**
 * A one-thread piscina pool per HTTP thread, started on first use and stopped after a minute idle:
 * for work most requests never need (token counting, data: URI decoding) off the event loop.
 */
export class OnDemandWorkerPool<In, Out> {
  /** Every pool of this thread, for the loop metrics. */
  static readonly all = new Set<OnDemandWorkerPool<unknown, unknown>>();
  private pool: Piscina<In, Out> | undefined;
  private loops: PoolLoops | undefined;
  /** The worker module's name (`count-tokens`), used in metric labels. */
  readonly name: string;

  /** `filename`: the worker module's file URL. */
  constructor(private readonly filename: URL) {
    this.name = basename(fileURLToPath(filename)).replace(/\.[cm]?js$/, '');
    OnDemandWorkerPool.all.add(this as OnDemandWorkerPool<unknown, unknown>);
  }

  run(input: In): Promise<Out> {
    if (!this.pool) {
      this.pool = new Piscina({ ...probedPoolOptions(), minThreads: 0, maxThreads: 1, idleTimeout: 60_000 });
      this.loops = new PoolLoops(this.pool, this.name);
    }
    return this.pool.run(input, { filename: this.filename.href });
  }

  /** The pool's worker loops (none while it is stopped or idle). */
  loopThreads(): LoopThread[] {
    return this.loops?.threads() ?? [];
  }

  async close(): Promise<void> {
    await this.pool?.destroy();
    this.pool = undefined;
    this.loops = undefined;
  }
}
