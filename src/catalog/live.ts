import type { AnySql } from '../store/db.js';
import { loadCallableModels } from '../store/catalog.js';
import { CatalogSnapshot } from './snapshot.js';

const REFRESH_MS = 60_000;

/** The catalog as callers read it: loaded now, then reloaded every minute (a failed reload keeps the last snapshot). */
export class LiveCatalog {
  private timer: NodeJS.Timeout | undefined;

  private constructor(private snapshot: CatalogSnapshot) {}

  static async open(sql: AnySql, onRefreshError: (error: unknown) => void): Promise<LiveCatalog> {
    const load = async () => {
      const { chat, media, embedding } = await loadCallableModels(sql);
      return new CatalogSnapshot(chat, media, embedding);
    };
    const live = new LiveCatalog(await load());
    live.timer = setInterval(() => {
      load().then((snapshot) => { live.snapshot = snapshot; }, onRefreshError);
    }, REFRESH_MS);
    live.timer.unref();
    return live;
  }

  /** The current snapshot. */
  readonly current = (): CatalogSnapshot => this.snapshot;

  stop(): void {
    clearInterval(this.timer);
  }
}
