import { ApiError } from '../http/errors.js';
import { LruMap } from './lru-map.js';

export interface FailureBudgetOptions {
  /** Failures one subject may have in a window; 0 turns the budget off. */
  readonly failures: number;
  readonly windowMs: number;
  /** Subjects tracked at once (least recently failing ones are forgotten first). */
  readonly subjects: number;
}

interface Window {
  startedAt: number;
  count: number;
}

/**
 * Failed attempts per subject (a source address, an account) in fixed windows, in this thread's
 * memory: past the budget, `check` throws 429 with Retry-After until the window ends. Successes
 * cost nothing: only failures are recorded.
 */
export class FailureBudget {
  private readonly windows: LruMap<string, Window>;

  constructor(private readonly options: FailureBudgetOptions, private readonly what: string) {
    this.windows = new LruMap(options.subjects);
  }

  private current(subject: string, now: number): Window | undefined {
    const window = this.windows.get(subject);
    return window && now - window.startedAt < this.options.windowMs ? window : undefined;
  }

  /** 429 when `subject` used up its failures in the current window. */
  check(subject: string, now = Date.now()): void {
    if (this.options.failures === 0) return;
    const window = this.current(subject, now);
    if (window && window.count >= this.options.failures) {
      const retryAfter = Math.max(1, Math.ceil((window.startedAt + this.options.windowMs - now) / 1000));
      throw new ApiError(429, 'too_many_failures',
        `Too many failed ${this.what} from here: ${this.options.failures} in ${this.options.windowMs / 1000} s; retry in ${retryAfter} s.`,
        null, { 'retry-after': String(retryAfter) });
    }
  }

  record(subject: string, now = Date.now()): void {
    if (this.options.failures === 0) return;
    const window = this.current(subject, now);
    if (window) window.count++;
    else this.windows.set(subject, { startedAt: now, count: 1 });
  }
}
