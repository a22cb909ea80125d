// A local Redis Cluster of this test's own: `primaries` redis-server processes with `--cluster-enabled
// yes` (and `replicasPerPrimary` replicas each) on spare ports, joined by `redis-cli --cluster create`;
// or one standalone redis-server of the caller's own (startRedisServer).
// Debian's redis-server and redis-tools provide both programs.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ClusterNode {
  readonly port: number;
  readonly process: ChildProcess;
}

export interface LocalCluster {
  readonly nodes: readonly ClusterNode[];
  /** The form REDIS_URL takes for a cluster: every node as a seed. */
  readonly url: string;
  /** `host:port` of each node. */
  readonly addresses: readonly string[];
  stop(): Promise<void>;
}

/** Whether `port` (and its cluster bus port, port + 10000) can be listened on now. */
async function free(port: number): Promise<boolean> {
  const check = (p: number) => new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(p, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  return (await check(port)) && (await check(port + 10_000));
}

/** `count` consecutive ports from a random base where each port and its bus port are free. */
async function spareRange(count: number): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let i = 0; i < count && ok; i++) ok = await free(base + i);
    if (ok) return base;
  }
  throw new Error('no spare port range for a Redis Cluster');
}

async function clusterInfo(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'cluster', 'info']);
  return stdout;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch { /* not up yet */ }
    if (Date.now() > until) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A redis-server on `port` with its files in `dir`: no snapshots and no append-only file unless `args` say otherwise. */
function spawnRedisServer(port: number, dir: string, args: readonly string[]): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args], { stdio: 'ignore' });
}

const untilAnswering = (port: number) => waitFor(async () => (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'])).stdout.trim() === 'PONG', 10_000, `redis-server on ${port} did not start`);

/** One Redis of the caller's own on a spare port (a bench's, so nobody else's commands count in its INFO); `args` are extra redis-server options. */
export async function startRedisServer(args: readonly string[] = []): Promise<ClusterNode & { readonly url: string; stop(): Promise<void> }> {
  const port = await spareRange(1);
  const dir = mkdtempSync(join(tmpdir(), 'gateway-redis-'));
  const child = spawnRedisServer(port, dir, args);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await untilAnswering(port);
  } catch (error) {
    await stop();
    throw error;
  }
  return { port, process: child, url: `redis://127.0.0.1:${port}`, stop };
}

export async function startRedisCluster(options: { primaries?: number; replicasPerPrimary?: number } = {}): Promise<LocalCluster> {
  const primaries = options.primaries ?? 3;
  const replicas = options.replicasPerPrimary ?? 0;
  const count = primaries * (1 + replicas);
  const base = await spareRange(count);
  const dir = mkdtempSync(join(tmpdir(), 'gateway-cluster-'));
  const nodes: ClusterNode[] = [];
  const stop = async () => {
    await Promise.all(nodes.map(async (node) => {
      if (node.process.exitCode !== null || node.process.signalCode !== null) return;
      node.process.kill('SIGTERM');
      await once(node.process, 'exit');
    }));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) {
      const port = base + i;
      nodes.push({ port, process: spawnRedisServer(port, dir, ['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000']) });
    }
    for (const node of nodes) await untilAnswering(node.port);
    const addresses = nodes.map((node) => `127.0.0.1:${node.port}`);
    await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes']);
    for (const node of nodes) await waitFor(async () => /cluster_state:ok/.test(await clusterInfo(node.port)), 20_000, `the cluster was not ok at ${node.port}`);
    return { nodes, addresses, url: `redis-cluster://${addresses.join(',')}`, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts a cluster from the command line and prints its REDIS_URL; it runs until interrupted. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const cluster = await startRedisCluster({ replicasPerPrimary: Number(process.env.REPLICAS ?? 0) });
  process.stdout.write(`${cluster.url}\n`);
  const quit = () => { void cluster.stop().then(() => process.exit(0)); };
  process.on('SIGINT', quit);
  process.on('SIGTERM', quit);
}
