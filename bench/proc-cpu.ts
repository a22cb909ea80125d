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

/**
 * CPU time the whole machine has spent busy so far (every process: gateway, Redis, Postgres, mock, load
 * generator), from /proc/stat, in microseconds. Between two blocks of the same load it shows costs a
 * process's own figure leaves out, such as the Redis and Postgres work a call causes; only a machine
 * with nothing else running gives a figure worth reading.
 */
export function machineCpuMicros(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait.
  const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + fields[7]!;
  return (busy * 1_000_000) / clockTicksPerSecond();
}
