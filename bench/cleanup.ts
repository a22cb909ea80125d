// Teardown that must happen however the bench ends (normal end, thrown error, SIGINT/SIGTERM):
// child processes killed and the run's Redis keys deleted. Tasks run once, newest first.
import type { ChildProcess } from 'node:child_process';

type Task = () => Promise<void> | void;

const tasks: Task[] = [];
const children = new Set<ChildProcess>();
let running: Promise<void> | undefined;

export function onCleanup(task: Task): void {
  tasks.push(task);
}

/** Tracks a child so that even a hard exit (process.exit, uncaught error) SIGKILLs it. */
export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export function runCleanup(): Promise<void> {
  running ??= (async () => {
    for (const task of tasks.splice(0).reverse()) {
      try {
        await task();
      } catch (error) {
        process.stderr.write(`bench: cleanup step failed: ${(error as Error).message}\n`);
      }
    }
  })();
  return running;
}

/** Installs signal handlers: clean up, then exit 130/143 like a shell would report it. */
export function installSignalHandlers(): void {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}, cleaning up\n`);
      void runCleanup().finally(() => process.exit(code));
    });
  }
  // Last resort: synchronous, so it also runs on process.exit().
  process.on('exit', () => {
    for (const child of children) child.kill('SIGKILL');
  });
}

/** Runs a bench's `main` with the signal handlers installed, cleans up however it ends, and exits with its code (1 when it threw). */
export async function runMain(name: string, main: () => Promise<number>): Promise<never> {
  installSignalHandlers();
  let exitCode = 1;
  try {
    exitCode = await main();
  } catch (error) {
    process.stderr.write(`${name}: failed: ${(error as Error).stack ?? String(error)}\n`);
  } finally {
    await runCleanup();
  }
  process.exit(exitCode);
}
