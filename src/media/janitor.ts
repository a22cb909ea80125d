import type { MediaStorage } from './storage.js';

export interface MediaJanitorOptions {
  readonly retentionMs: number;
  readonly onSwept: (count: number) => void;
  readonly onError: (error: unknown) => void;
  readonly now?: () => number;
}

/**
 * Deletes media stored (or last re-stored) longer ago than the retention period. Runs in the main
 * process, once at start and then every interval; several processes sweeping one store is harmless
 * (a file already gone is skipped). Reads already refuse expired objects, so a late pass only costs disk.
 */
export class MediaJanitor {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly now: () => number;

  constructor(private readonly storage: MediaStorage, private readonly options: MediaJanitorOptions) {
    this.now = options.now ?? Date.now;
  }

  start(intervalMs: number): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
  }

  private tick(): void {
    this.running ??= this.sweep().catch(this.options.onError).finally(() => { this.running = undefined; });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; returns the objects deleted. */
  async sweep(): Promise<number> {
    const count = await this.storage.sweep(new Date(this.now() - this.options.retentionMs));
    if (count > 0) this.options.onSwept(count);
    return count;
  }
}
