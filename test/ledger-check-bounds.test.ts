// Issue 25: `gateway ledger check` hung once in about 45 runs on a Redis Cluster. Its waits are
// bounded now:
// - a process that closes its cluster client while the periodic slot-map refresh is under way exits
//   (ioredis armed its next refresh after such a refresh, and then every 5 s for ever, so the CLI,
//   or a test process, never exited);
// - a Redis that stops answering (a paused node) ends the check within its per-command bound, with
//   a clear error and exit code 1.
import t from 'tap';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startRedisCluster } from './helpers/redis-cluster.js';
import { freePort, startGateway } from './helpers/harness.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const REDIS_CONNECT = new URL('../src/store/redis-connect.js', import.meta.url).href;

/** Whether `child` exits within `ms`; killed otherwise. */
async function exitsWithin(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  let timer: NodeJS.Timeout | undefined;
  const exited = await Promise.race([
    once(child, 'exit').then(() => true),
    new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), ms); }),
  ]);
  clearTimeout(timer);
  if (!exited) child.kill('SIGKILL');
  return exited;
}

t.test('a process that closes its cluster client during a slot-map refresh exits', async (t) => {
  const cluster = await startRedisCluster({ primaries: 3 });
  t.teardown(() => cluster.stop());
  // The client as the CLI makes it; it is closed at the moment the periodic refresh asks a node for
  // the slot map (ioredis's getInfoFromNode, held back 100 ms so the close lands inside it).
  const script = `
    import { connectRedis } from ${JSON.stringify(REDIS_CONNECT)};
    const redis = connectRedis(process.argv[1], { maxRetriesPerRequest: 2 });
    await redis.ping();
    const getInfoFromNode = redis.getInfoFromNode.bind(redis);
    redis.getInfoFromNode = (node, callback) => {
      setTimeout(() => getInfoFromNode(node, callback), 100);
      redis.disconnect();
      console.log('closed during a refresh');
    };
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, cluster.url], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
  // The first periodic refresh comes 5 s after the client is ready.
  const until = Date.now() + 30_000;
  while (!output.includes('closed during a refresh') && child.exitCode === null && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.match(output, /closed during a refresh/, 'a refresh came, and the client was closed during it');
  t.ok(await exitsWithin(child, 15_000), 'the process exits (nothing keeps it alive)');
  t.equal(child.exitCode, 0, output);
});

t.test('a Redis that stops answering ends the check with a clear error', async (t) => {
  const gateway = await startGateway();
  t.teardown(() => gateway.close());
  const port = await freePort();
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  t.teardown(async () => {
    redis.kill('SIGCONT');
    redis.kill('SIGKILL');
    if (redis.exitCode === null && redis.signalCode === null) await once(redis, 'exit');
  });
  const until = Date.now() + 10_000;
  for (;;) {
    const answered = await run('redis-cli', ['-p', String(port), 'ping']).then(({ stdout }) => stdout.trim() === 'PONG', () => false);
    if (answered) break;
    if (Date.now() > until) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  redis.kill('SIGSTOP'); // connections are still accepted (by the kernel), and nothing is answered

  const cli = spawn(process.execPath, [CLI, 'ledger', 'check'], {
    env: { ...process.env, ...gateway.env, REDIS_URL: `redis://127.0.0.1:${port}` }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  cli.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  // Its bound is 10 s per command; a hang is cut at a minute.
  t.ok(await exitsWithin(cli, 60_000), 'the check ends');
  t.equal(cli.exitCode, 1, 'exit code 1');
  t.match(stderr, /^gateway: Error: Redis did not answer \(Command timed out; each command waits at most 10 s\): nothing was checked/, stderr);
});
