// Child processes of the bench (mock vendor, gateway): spawned with their output captured (the
// bench's own stdout carries only the JSON lines), stopped politely and then by force.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { onCleanup, trackChild } from './cleanup.js';

const OUTPUT_KEEP_CHARS = 20_000;

export class Child {
  /** The tail of stdout+stderr, for error messages. */
  output = '';

  constructor(readonly name: string, readonly process: ChildProcess) {
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-OUTPUT_KEEP_CHARS);
    };
    process.stdout?.on('data', keep);
    process.stderr?.on('data', keep);
  }

  get pid(): number {
    const pid = this.process.pid;
    if (pid === undefined) throw new Error(`${this.name} has no pid`);
    return pid;
  }

  get exited(): boolean {
    return this.process.exitCode !== null || this.process.signalCode !== null;
  }

  /** SIGTERM, then SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.exited) return;
    const exit = once(this.process, 'exit');
    this.process.kill('SIGTERM');
    const timer = setTimeout(() => this.process.kill('SIGKILL'), graceMs);
    await exit;
    clearTimeout(timer);
  }
}

/** Starts `node script` with `env` added; it is stopped by the bench's cleanup. */
export function spawnNode(name: string, script: string, env: Record<string, string>, nodeArgs: string[] = []): Child {
  const child = new Child(name, spawn(process.execPath, [...nodeArgs, script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  trackChild(child.process);
  onCleanup(() => child.stop());
  return child;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Polls `probe` until it returns true; fails early if the child dies. */
export async function waitUntil(child: Child, what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (child.exited) throw new Error(`${child.name} exited before ${what}:\n${child.output}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`${child.name}: no ${what} within ${timeoutMs} ms:\n${child.output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
