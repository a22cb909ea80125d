// `node dist/bench/stream-memory.js`: resident memory of open, idle SSE chat streams. The gateway and
// the bare proxy (bench/bare-proxy.ts: the same uWS front end and upstream client with nothing in
// between), one after the other in front of one mock vendor, each hold 0, 1,000, 5,000 and 10,000
// streams that the mock keeps open without a token (`[[mock delay_ms=...]]`: the first event, then
// silence); at each level, after a settle time, the server process's VmRSS (all threads) is read from
// /proc/<pid>/status. Prints one JSON line per server and a comparison line on stdout; progress on stderr.
// Each held stream takes two descriptors in the server (the client's and the upstream's): the top
// level is lowered to what the open-file limit allows (raised first with prlimit where permitted) and
// the line says so; growth per 1,000 streams is then the figure to compare.
// Options: MEMORY_STREAMS (1000,5000,10000), MEMORY_SETTLE_MS (25000: each level, long enough for an idle
// thread's collection, src/idle-gc.ts), MEMORY_SIDES (gateway,bare), BENCH_THREADS (2). About 7 minutes.
import net from 'node:net';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { runMain } from './cleanup.js';
import { chatCalls } from './calls.js';
import type { Child } from './child.js';
import { startGatewayProcess } from './gateway-process.js';
import { startMockProcess } from './mock-process.js';
import { startBareProxyProcess } from './bare-proxy-process.js';
import { settledRss } from './rss.js';
import { round } from './stats.js';

/** Growth the gateway may show holding 10,000 idle streams (issue 18). */
const TARGET_GROWTH_MB_AT_10K = 200;
/** Streams connecting at once (under the listen backlogs). */
const CONNECT_BATCH = 250;
/** Longest wait for a stream's first event. */
const FIRST_EVENT_TIMEOUT_MS = 30_000;
/** Descriptors kept free in the server beyond its idle count and two per stream. */
const FD_MARGIN = 64;
/** The second reading after closing every stream: past the token counter's idle minute (src/worker-pool.ts). */
const AFTER_CLOSE_LONG_MS = 90_000;
/** Short streams run before the 0 level, so both servers are measured warm. */
const WARMUP_STREAMS = 500;

const note = (message: string) => process.stderr.write(`stream-memory: ${message}\n`);

function numbers(name: string, fallback: string): number[] {
  const list = (process.env[name] || fallback).split(',').map((s) => Number(s.trim()));
  if (list.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${name}: whole numbers >= 1, comma-separated`);
  return [...new Set(list)].sort((a, b) => a - b);
}

const openFds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** The hard open-file limit of this process (children inherit it; Node raises its soft limit to it). */
function hardFdLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const hard = line?.trim().split(/\s+/)[4];
  return hard === undefined || hard === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(hard);
}

/** Raises this process's open-file limit (so the servers it starts inherit it) where the system permits. */
function raiseFdLimit(wanted: number): number {
  if (hardFdLimit() < wanted) {
    try {
      execFileSync('prlimit', ['--pid', String(process.pid), `--nofile=${wanted}:${wanted}`], { stdio: 'ignore' });
    } catch {
      // Not permitted (no CAP_SYS_RESOURCE) or no prlimit: the levels are fitted to the limit as it is.
    }
  }
  return hardFdLimit();
}

interface Server {
  readonly name: 'gateway' | 'bare_proxy';
  readonly child: Child;
  readonly url: string;
  readonly apiKey: string;
  /** The request body this server relays (the gateway's catalog id, or the mock's model name). */
  readonly body: string;
}

/** Client ends of the streams a server holds: raw sockets, one request each, kept open idle. */
class HeldStreams {
  private readonly sockets = new Set<net.Socket>();
  /** Streams the server (or the mock through it) closed while they were held. */
  lost = 0;
  private lastLoss = '';

  constructor(private readonly server: Server) {}

  get count(): number {
    return this.sockets.size;
  }

  get lossSample(): string {
    return this.lastLoss;
  }

  /** Opens streams until `total` are held; each must answer 200 and its first event. */
  async openUpTo(total: number): Promise<void> {
    const { port, hostname, host } = new URL(this.server.url);
    const request = Buffer.from(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: ${host}\r\nauthorization: Bearer ${this.server.apiKey}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(this.server.body)}\r\n\r\n${this.server.body}`,
    );
    while (this.sockets.size < total) {
      const batch = Math.min(CONNECT_BATCH, total - this.sockets.size);
      await Promise.all(Array.from({ length: batch }, () => this.openOne(Number(port), hostname, request)));
    }
  }

  private openOne(port: number, host: string, request: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host, noDelay: true });
      let head = '';
      /** Opened (its first event came) or failed: either way, decided. */
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        reject(new Error(`${this.server.name}: a stream did not open: ${why}`));
      };
      const timer = setTimeout(() => fail(`no first event within ${FIRST_EVENT_TIMEOUT_MS} ms`), FIRST_EVENT_TIMEOUT_MS);
      socket.once('connect', () => socket.write(request));
      socket.on('data', (chunk: Buffer) => {
        if (settled) return;
        head += chunk.toString('latin1');
        if (!head.startsWith('HTTP/1.1 200')) {
          if (head.includes('\r\n')) fail(head.slice(0, 300));
          return;
        }
        if (!head.includes('data:')) return;
        settled = true;
        clearTimeout(timer);
        this.sockets.add(socket);
        resolve();
      });
      socket.on('error', (error) => fail(error.message));
      socket.on('close', () => {
        if (!settled) return fail(`closed: ${head.slice(0, 300)}`);
        if (this.sockets.delete(socket)) {
          this.lost++;
          this.lastLoss = head.slice(-200);
        }
      });
    });
  }

  async closeAll(): Promise<void> {
    const closing = [...this.sockets].map((socket) => new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      this.sockets.delete(socket);
      socket.destroy();
    }));
    await Promise.all(closing);
  }
}

interface LevelFigure {
  readonly streams: number;
  readonly rss_mb: number;
  readonly growth_mb: number;
  readonly open_fds: number;
}

async function measure(server: Server, levels: number[], settleMs: number): Promise<Record<string, unknown>> {
  const pid = server.child.pid;
  // Warm: the stream path compiled and the pools as they are after some traffic.
  const warm = new HeldStreams({ ...server, body: server.body.replace(/delay_ms=\d+/, 'delay_ms=0') });
  await warm.openUpTo(WARMUP_STREAMS).catch((error: Error) => { throw new Error(`warm-up: ${error.message}`); });
  await warm.closeAll();
  const held = new HeldStreams(server);
  const figures: LevelFigure[] = [];
  const idleRss = await settledRss(pid, settleMs);
  figures.push({ streams: 0, rss_mb: round(idleRss, 1), growth_mb: 0, open_fds: openFds(pid) });
  note(`${server.name}: 0 streams, ${round(idleRss, 1)} MiB`);
  for (const level of levels) {
    const started = Date.now();
    await held.openUpTo(level);
    const opened = Date.now() - started;
    const rss = await settledRss(pid, settleMs);
    if (held.count !== level) throw new Error(`${server.name}: ${level - held.count} of ${level} streams closed while held (${held.lossSample})`);
    figures.push({ streams: level, rss_mb: round(rss, 1), growth_mb: round(rss - idleRss, 1), open_fds: openFds(pid) });
    note(`${server.name}: ${level} streams (opened in ${opened} ms), ${round(rss, 1)} MiB`);
  }
  await held.closeAll();
  // Closing is work (each call settles; a call cut before its usage has its tokens counted, in a worker
  // that stays a minute): read once after the settle time, once after that minute.
  const afterClose = await settledRss(pid, settleMs);
  const afterMinute = await settledRss(pid, Math.max(0, AFTER_CLOSE_LONG_MS - settleMs));
  const top = figures[figures.length - 1]!;
  return {
    server: server.name,
    levels: figures,
    growth_mb_per_1000_streams: top.streams > 0 ? round((top.growth_mb * 1000) / top.streams, 2) : NaN,
    kib_per_stream: top.streams > 0 ? round((top.growth_mb * 1024) / top.streams, 1) : NaN,
    rss_mb_after_closing_all: { [`${Math.round(settleMs / 1000)}s`]: round(afterClose, 1), [`${Math.round(Math.max(settleMs, AFTER_CLOSE_LONG_MS) / 1000)}s`]: round(afterMinute, 1) },
  };
}

async function main(): Promise<number> {
  const wanted = numbers('MEMORY_STREAMS', '1000,5000,10000');
  const settleMs = Number(process.env.MEMORY_SETTLE_MS || '25000');
  const threads = Number(process.env.BENCH_THREADS || '2');
  const sides = (process.env.MEMORY_SIDES || 'gateway,bare').split(',').map((s) => s.trim());
  const top = wanted[wanted.length - 1]!;

  // Two descriptors per stream in the server, and its own (Redis, Postgres, journals, pipes: ~70 for 2 threads).
  const fdLimit = raiseFdLimit(2 * top + 1000);
  const mock = await startMockProcess();
  note(`mock ${mock.url}; open-file limit ${fdLimit}; settle ${settleMs} ms per level`);
  const calls = chatCalls({ prompt: 'Hold this stream open. [[mock chunks=4 delay_ms=3600000]]', stream: true, maxTokens: 64 });

  const results: Record<string, Record<string, unknown>> = {};
  let failed = false;
  for (const side of sides) {
    if (side !== 'gateway' && side !== 'bare') throw new Error(`MEMORY_SIDES: unknown ${side} (gateway, bare)`);
    const server: Server = side === 'gateway'
      ? await startGatewayProcess({ mockUrl: mock.url, threads }).then((g) => ({ name: 'gateway' as const, child: g.child, url: g.url, apiKey: g.apiKey, body: calls.gateway.body }))
      : await startBareProxyProcess(mock.url, threads).then((b) => ({ name: 'bare_proxy' as const, child: b.child, url: b.url, apiKey: 'bench', body: calls.direct.body }));
    const fits = Math.floor((fdLimit - openFds(server.child.pid) - FD_MARGIN) / 2);
    const levels = wanted.map((level) => Math.min(level, fits)).filter((level, i, all) => all.indexOf(level) === i);
    if (levels[levels.length - 1]! < top) note(`${server.name}: ${top} streams need ${2 * top} descriptors beyond its own; the open-file limit (${fdLimit}) fits ${fits}`);
    try {
      const result = await measure(server, levels, settleMs);
      results[server.name] = { ...result, http_threads: threads, ...(levels[levels.length - 1]! < top ? { top_level_lowered_from: top, open_file_limit: fdLimit } : {}) };
      process.stdout.write(`${JSON.stringify({ scenario: 'stream_memory', ...results[server.name], loadavg_1m: round(loadavg()[0] ?? NaN, 2) })}\n`);
    } catch (error) {
      failed = true;
      note(`${server.name}: ${(error as Error).message}\n${server.child.output.slice(-3000)}`);
    }
    await server.child.stop();
  }

  const gateway = results.gateway as { levels: LevelFigure[]; growth_mb_per_1000_streams: number } | undefined;
  const bare = results.bare_proxy as { levels: LevelFigure[]; growth_mb_per_1000_streams: number } | undefined;
  if (gateway) {
    // At 10,000 streams, or projected to 10,000 from the top level the descriptor limit allowed.
    const growthAt10k = round(gateway.growth_mb_per_1000_streams * 10, 1);
    process.stdout.write(`${JSON.stringify({
      scenario: 'stream_memory_summary',
      idle_rss_mb: { gateway: gateway.levels[0]!.rss_mb, bare_proxy: bare?.levels[0]!.rss_mb ?? null },
      growth_mb_per_1000_streams: { gateway: gateway.growth_mb_per_1000_streams, bare_proxy: bare?.growth_mb_per_1000_streams ?? null },
      gateway_growth_mb_at_10000_streams: growthAt10k,
      targets: { growth_mb_at_10000_streams_max: TARGET_GROWTH_MB_AT_10K, met: growthAt10k <= TARGET_GROWTH_MB_AT_10K },
    })}\n`);
  }
  return failed ? 1 : 0;
}

await runMain('stream-memory', main);
