// Resident memory of another process, read from /proc: what the memory benches record.
import { readFileSync } from 'node:fs';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** VmRSS of a process (every thread), MiB. */
export function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) / 1024;
}

/** RSS after `settleMs` of quiet (read every second; the last reading). */
export async function settledRss(pid: number, settleMs: number): Promise<number> {
  const until = Date.now() + settleMs;
  let rss = rssMb(pid);
  while (Date.now() < until) {
    await sleep(1000);
    rss = rssMb(pid);
  }
  return rss;
}
