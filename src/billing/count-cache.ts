/**
 * Token counts of long texts a user sent before, on this HTTP thread: a conversation resends its
 * history and its system prompt with every turn, and counting 16 KB takes about a millisecond of
 * the counting worker. Keyed by user (a shared cache would tell one user, by its speed, what another
 * sent) and bounded by the characters it holds, oldest out first.
 */
export class CountCache {
  private readonly counts = new Map<string, number>();
  private chars = 0;

  /** `maxChars`: the characters the keys may hold together; `minChars`: shorter texts are counted every time. */
  constructor(private readonly maxChars: number, readonly minChars: number) {}

  get size(): number {
    return this.counts.size;
  }

  get(userId: string, text: string): number | undefined {
    const key = `${userId}\n${text}`;
    const count = this.counts.get(key);
    if (count !== undefined) {
      // Used again: to the back of the line.
      this.counts.delete(key);
      this.counts.set(key, count);
    }
    return count;
  }

  set(userId: string, text: string, count: number): void {
    const key = `${userId}\n${text}`;
    if (key.length > this.maxChars || this.counts.has(key)) return;
    this.counts.set(key, count);
    this.chars += key.length;
    for (const [oldest] of this.counts) {
      if (this.chars <= this.maxChars) break;
      this.counts.delete(oldest);
      this.chars -= oldest.length;
    }
  }
}
