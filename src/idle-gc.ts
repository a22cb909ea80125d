/**
 * Memory back to the system once a thread has gone quiet. V8 shrinks its young generation and frees
 * the memory of dead Buffers only in a full collection, and its own idle collection (the memory
 * reducer) is started by growth of the old generation (some 10 MiB), not of the young one or of
 * Buffers. An HTTP thread's old generation stays small, so after a busy spell it kept, for as long as
 * it stayed idle, a young generation grown to its 16 MiB semi-spaces (about 30 MiB committed) and the
 * Buffers of its last requests (10-20 MiB each): an idle gateway of two HTTP threads sat at 230-280
 * MiB after traffic instead of about 180.
 *
 * Every `CHECK_MS`, a thread whose loop was busy less than `QUIET_UTILIZATION` of the time, and
 * whose heap and external memory grew by `GROWTH_BYTES` since its last collection, runs one full
 * collection. A thread under load never does (V8 collects as it always has); one holding many idle
 * streams does once, after they opened, and then only when it grows again.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';

const CHECK_MS = 10_000;
/** An idle thread's loop is busy 0.1-0.3 % of the time (timers); one serving requests, far more. */
const QUIET_UTILIZATION = 0.01;
const GROWTH_BYTES = 8 * 1024 * 1024;

/** V8's `gc()`, exposed for this thread without `--expose-gc` on the command line; undefined when V8 refuses. */
function exposedGc(): (() => void) | undefined {
  const global = (globalThis as { gc?: () => void }).gc;
  if (typeof global === 'function') return global;
  // The flag is read when a context is created: the new context gets `gc`, bound to this thread's heap.
  // It is turned off again (contexts made later, such as new workers', get no global `gc`); another
  // thread doing the same at once may turn it off between our two steps, hence a few attempts.
  for (let attempt = 0; attempt < 10; attempt++) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc: unknown = runInNewContext('typeof gc === "function" ? gc : undefined');
      if (typeof gc === 'function') return gc as () => void;
    } catch {
      return undefined; // V8 refused the flag: no collections of our own
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  return undefined;
}

/** Committed heap and memory held for the heap's objects outside it (Buffers), in bytes. */
function footprint(): number {
  const heap = v8.getHeapStatistics();
  return heap.total_physical_size + heap.external_memory;
}

export interface IdleCollectionOptions {
  /** How often the loop's utilisation and the footprint are read. */
  readonly checkMs?: number;
  /** Growth of the footprint since the last collection that makes a quiet thread collect. */
  readonly growthBytes?: number;
  /** Called after each collection of ours, with the footprint before and after (bytes). */
  readonly onCollected?: (before: number, after: number) => void;
}

/**
 * Starts the quiet-time collections of this thread; returns the function that stops them, or
 * undefined when V8 gives no `gc` (nothing was started).
 */
export function collectWhenIdle(options: IdleCollectionOptions = {}): (() => void) | undefined {
  const gc = exposedGc();
  if (!gc) return undefined;
  const growthBytes = options.growthBytes ?? GROWTH_BYTES;
  let baseline = footprint();
  let previous = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, previous).utilization;
    previous = now;
    const current = footprint();
    baseline = Math.min(baseline, current); // V8 gave memory back by itself
    if (busy > QUIET_UTILIZATION || current - baseline < growthBytes) return;
    gc();
    baseline = footprint();
    options.onCollected?.(current, baseline);
  }, options.checkMs ?? CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
