// CPU time of another process from /proc/<pid>/stat: utime + stime (fields 14 and 15), in clock
// ticks. Covers every thread of the process, so all of the gateway's HTTP threads and its main
// thread (ledger writer) are counted.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicksPerSecond(): number {
  if (ticksPerSecond === undefined) {
    const parsed = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    ticksPerSecond = Number.isFinite(parsed) && parsed > 0 ? parsed : 100;
  }
  return ticksPerSecond;
}

/** User + system CPU time of `pid` so far, in microseconds (resolution: one clock tick, 10 ms at 100 Hz). */
export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]); // field 14
  const stime = Number(fields[12]); // field 15
  return ((utime + stime) * 1_000_000) / clockTicksPerSecond();
}

/** The same for `pid` and its child processes (nginx's master and its workers), found through /proc. */
export function processTreeCpuMicros(pid: number): number {
  let total = processCpuMicros(pid);
  let children = '';
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {
    // a kernel without the children file: the process alone
  }
  for (const child of children.split(' ').filter(Boolean)) total += processTreeCpuMicros(Number(child));
  return total;
}
