// `npm run bench:capacity`: what one call costs the gateway, Redis and Postgres, the figures
// docs/capacity.md sizes a deployment from (issue 31, item 4). One gateway (BENCH_THREADS HTTP threads)
// in front of the mock vendor, on a Redis and a Postgres server of its own, started here on spare ports
// so that no other work's commands, rows or WAL count: Redis with its append-only file fsynced every
// second, as a primary in production runs it; Postgres with initdb's defaults (bench/postgres-server.ts).
// For each kind of call (non-streamed
// chat at 32 connections; streams of 20 and of 256 chunks at 64), after a warm-up:
//   - an idle window (CAPACITY_IDLE_SECONDS) measures what the three do with no calls (the ledger
//     writer's polls, leases, timers), at the same rate subtracted from the measured window;
//   - a measured window: CAPACITY_SECONDS of calls, then until the ledger writer has drained them into
//     Postgres (its rows stop changing), read around it:
//       gateway CPU (utime+stime of its process tree, /proc),
//       Redis commands (INFO commandstats, by command) and Redis CPU (INFO cpu, used_cpu_sys+user: every thread),
//       Postgres rows inserted, updated and deleted (pg_stat_database, and by table from
//       pg_stat_user_tables), the database's growth in bytes (pg_database_size), WAL written (pg_stat_wal:
//       bytes, records, full-page images) and the server's CPU (its process tree: backends, WAL writer,
//       checkpointer, autovacuum).
// BENCH_GATEWAY_ENV ("NAME=value,..."): settings for the gateway, e.g. ADMISSION_LEASE_CALLS=1 (one
// admission script per call, as for keys that each call rarely; by default one lease admits up to 256).
// CAPACITY_SECONDS (15), CAPACITY_IDLE_SECONDS (10), CAPACITY_KINDS (nonstream,stream_20,stream_256).
// Prints one JSON line per kind of call and a summary table on stderr; writes nothing else.
import { loadavg } from 'node:os';
import postgres from 'postgres';
import { runMain, onCleanup, trackChild } from './cleanup.js';
import { chatCalls } from './calls.js';
import { startGatewayProcess } from './gateway-process.js';
import { connect, runLoad, type Call, type LoadPlan, type Target } from './load.js';
import { startMockProcess } from './mock-process.js';
import { envPairs, positiveNumber } from './options.js';
import { processTreeCpuMicros } from './proc-cpu.js';
import { startPostgresServer } from './postgres-server.js';
import { round } from './stats.js';
import { warmUpServers } from './warmup.js';
import { connectRedis } from '../src/store/redis-connect.js';
import { startRedisServer } from '../test/helpers/redis-cluster.js';

const note = (message: string) => process.stderr.write(`capacity: ${message}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long the ledger writer's rows must stay unchanged before the window is read as drained. */
const DRAINED_QUIET_MS = 3000;
/** An idle backend reports its statistics (pg_stat_*) up to 10 s late (Postgres's PGSTAT_IDLE_INTERVAL): wait that out before reading them. */
const PG_STATS_FLUSH_MS = 11_000;
const DRAIN_TIMEOUT_MS = 120_000;

interface Kind {
  readonly name: string;
  readonly call: Call;
  readonly concurrency: number;
}

const KINDS: readonly Kind[] = [
  { name: 'nonstream', call: chatCalls({ prompt: 'Say hello to the benchmark.', stream: false, maxTokens: 64 }).gateway, concurrency: 32 },
  { name: 'stream_20', call: chatCalls({ prompt: 'Stream a short answer. [[mock chunks=20 delay_ms=0]]', stream: true, maxTokens: 64 }).gateway, concurrency: 64 },
  { name: 'stream_256', call: chatCalls({ prompt: 'Stream a long answer. [[mock chunks=256]]', stream: true, maxTokens: 512 }).gateway, concurrency: 64 },
];

interface Counters {
  readonly atMs: number;
  readonly gatewayCpuUs: number;
  /** Calls by Redis command name, and Redis's time inside commands (µs). */
  readonly redisCalls: Record<string, number>;
  readonly redisCommandUs: number;
  readonly redisCpuUs: number;
  readonly postgresCpuUs: number;
  /** Rows inserted and updated, and bytes on disk (with its indexes and TOAST), by table. */
  readonly pgTables: Record<string, { ins: number; upd: number; bytes: number }>;
  readonly pgInserted: number;
  readonly pgUpdated: number;
  readonly pgDeleted: number;
  readonly pgDatabaseBytes: number;
  readonly walBytes: number;
  readonly walRecords: number;
  readonly walFullPages: number;
  /** Rows written by every other database of the server (their WAL is in walBytes too). */
  readonly otherDatabasesRows: number;
}

type Sql = ReturnType<typeof postgres>;
type Redis = ReturnType<typeof connectRedis>;

/** `name:value` lines of one INFO section. */
function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  return fields;
}

async function readCounters(gatewayPid: number, postgresPid: number, redis: Redis, sql: Sql): Promise<Counters> {
  const [commandstats, cpu] = await Promise.all([redis.info('commandstats'), redis.info('cpu')]);
  const redisCalls: Record<string, number> = {};
  let redisCommandUs = 0;
  for (const [name, value] of infoFields(commandstats)) {
    if (!name.startsWith('cmdstat_')) continue;
    const calls = /(?:^|,)calls=(\d+)/.exec(value);
    const usec = /(?:^|,)usec=(\d+)/.exec(value);
    redisCalls[name.slice('cmdstat_'.length)] = Number(calls?.[1] ?? 0);
    redisCommandUs += Number(usec?.[1] ?? 0);
  }
  const cpuFields = infoFields(cpu);
  // The snapshot of this connection's statistics is cleared, so each read sees the latest flushed counters.
  await sql`select pg_stat_clear_snapshot()`;
  const [db] = await sql<{ ins: string; upd: string; del: string; size: string }[]>`
    select tup_inserted as ins, tup_updated as upd, tup_deleted as del, pg_database_size(current_database()) as size
    from pg_stat_database where datname = current_database()`;
  const [wal] = await sql<{ bytes: string; records: string; fpi: string }[]>`select wal_bytes as bytes, wal_records as records, wal_fpi as fpi from pg_stat_wal`;
  const tables = await sql<{ name: string; ins: string; upd: string; bytes: string }[]>`
    select relname as name, n_tup_ins as ins, n_tup_upd as upd, pg_total_relation_size(relid) as bytes from pg_stat_user_tables`;
  const [others] = await sql<{ rows: string | null }[]>`
    select sum(tup_inserted + tup_updated + tup_deleted) as rows from pg_stat_database where datname <> current_database()`;
  return {
    atMs: Date.now(),
    gatewayCpuUs: processTreeCpuMicros(gatewayPid),
    redisCalls,
    redisCommandUs,
    redisCpuUs: (Number(cpuFields.get('used_cpu_sys')) + Number(cpuFields.get('used_cpu_user'))) * 1e6,
    postgresCpuUs: processTreeCpuMicros(postgresPid),
    pgTables: Object.fromEntries(tables.map((t) => [t.name, { ins: Number(t.ins), upd: Number(t.upd), bytes: Number(t.bytes) }])),
    pgInserted: Number(db!.ins),
    pgUpdated: Number(db!.upd),
    pgDeleted: Number(db!.del),
    pgDatabaseBytes: Number(db!.size),
    walBytes: Number(wal!.bytes),
    walRecords: Number(wal!.records),
    walFullPages: Number(wal!.fpi),
    otherDatabasesRows: Number(others!.rows ?? 0),
  };
}

interface Delta {
  readonly ms: number;
  readonly gatewayCpuUs: number;
  readonly redisCommands: number;
  readonly redisByCommand: Record<string, number>;
  readonly redisCommandUs: number;
  readonly redisCpuUs: number;
  readonly postgresCpuUs: number;
  readonly pgRows: { inserted: number; updated: number; deleted: number };
  /** Rows written (inserted, updated) and growth in bytes by table, the tables that moved only. */
  readonly pgTables: Record<string, { inserted: number; updated: number; bytes: number }>;
  readonly pgDatabaseBytes: number;
  readonly walBytes: number;
  readonly walRecords: number;
  readonly walFullPages: number;
  readonly otherDatabasesRows: number;
}

function delta(a: Counters, b: Counters): Delta {
  const byCommand: Record<string, number> = {};
  for (const [name, calls] of Object.entries(b.redisCalls)) {
    const moved = calls - (a.redisCalls[name] ?? 0);
    // INFO itself is the bench's own reading, not the gateway's.
    if (moved > 0 && name !== 'info') byCommand[name] = moved;
  }
  return {
    ms: b.atMs - a.atMs,
    gatewayCpuUs: b.gatewayCpuUs - a.gatewayCpuUs,
    redisCommands: Object.values(byCommand).reduce((sum, n) => sum + n, 0),
    redisByCommand: byCommand,
    redisCommandUs: b.redisCommandUs - a.redisCommandUs,
    redisCpuUs: b.redisCpuUs - a.redisCpuUs,
    postgresCpuUs: b.postgresCpuUs - a.postgresCpuUs,
    pgRows: { inserted: b.pgInserted - a.pgInserted, updated: b.pgUpdated - a.pgUpdated, deleted: b.pgDeleted - a.pgDeleted },
    pgTables: Object.fromEntries(Object.entries(b.pgTables)
      .map(([name, t]) => [name, { inserted: t.ins - (a.pgTables[name]?.ins ?? 0), updated: t.upd - (a.pgTables[name]?.upd ?? 0), bytes: t.bytes - (a.pgTables[name]?.bytes ?? 0) }] as const)
      .filter(([, t]) => t.inserted > 0 || t.updated > 0 || t.bytes > 0)),
    pgDatabaseBytes: b.pgDatabaseBytes - a.pgDatabaseBytes,
    walBytes: b.walBytes - a.walBytes,
    walRecords: b.walRecords - a.walRecords,
    walFullPages: b.walFullPages - a.walFullPages,
    otherDatabasesRows: b.otherDatabasesRows - a.otherDatabasesRows,
  };
}

/**
 * Waits until the ledger writer is done: the rows it writes per call (the ledger's transactions and the
 * request log, counted as they are, since the statistics lag) stay unchanged for DRAINED_QUIET_MS; then
 * until Postgres's statistics have caught up.
 */
async function untilDrained(sql: Sql): Promise<void> {
  const rowsWritten = async () => {
    const [row] = await sql<{ n: string }[]>`select (select count(*) from transactions) + (select count(*) from request_logs) as n`;
    return Number(row!.n);
  };
  const until = Date.now() + DRAIN_TIMEOUT_MS;
  let last = await rowsWritten();
  let quietSince = Date.now();
  while (Date.now() - quietSince < DRAINED_QUIET_MS) {
    if (Date.now() > until) throw new Error(`the ledger writer did not drain within ${DRAIN_TIMEOUT_MS} ms`);
    await sleep(500);
    const now = await rowsWritten();
    if (now !== last) {
      last = now;
      quietSince = Date.now();
    }
  }
  await sleep(PG_STATS_FLUSH_MS);
}

async function main(): Promise<number> {
  const seconds = positiveNumber('CAPACITY_SECONDS', '15');
  const idleSeconds = positiveNumber('CAPACITY_IDLE_SECONDS', '10');
  const threads = positiveNumber('BENCH_THREADS', '2');
  const wanted = (process.env.CAPACITY_KINDS || KINDS.map((k) => k.name).join(',')).split(',').filter(Boolean);
  for (const name of wanted) if (!KINDS.some((k) => k.name === name)) throw new Error(`CAPACITY_KINDS: unknown ${name} (${KINDS.map((k) => k.name).join(', ')})`);

  // A primary as production runs it: append-only file, fsync every second.
  const redisServer = await startRedisServer(['--appendonly', 'yes', '--appendfsync', 'everysec']);
  trackChild(redisServer.process);
  onCleanup(() => redisServer.stop());
  const mock = await startMockProcess();
  const postgresServer = await startPostgresServer();
  const gatewayEnv = envPairs('BENCH_GATEWAY_ENV', process.env.BENCH_GATEWAY_ENV);
  const gateway = await startGatewayProcess({ mockUrl: mock.url, threads, env: { ...gatewayEnv, REDIS_URL: redisServer.url }, postgresUrl: postgresServer.url });
  const pid = gateway.child.pid;
  const redis = connectRedis(redisServer.url, { maxRetriesPerRequest: 2 });
  onCleanup(() => { redis.disconnect(); });
  const sql = postgres(gateway.env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  onCleanup(() => sql.end());
  note(`mock ${mock.url}, gateway ${gateway.url} (pid ${pid}, ${threads} HTTP threads), Redis ${redisServer.url} (append-only, fsync every second), Postgres ${postgresServer.url} (pid ${postgresServer.child.pid})`);

  const target: Target = { side: 'gateway', origin: gateway.url, path: '/v1/chat/completions', apiKey: gateway.apiKey };
  const warmupErrors = await warmUpServers([target], 1);
  if (warmupErrors > 0) note(`warm-up: ${warmupErrors} failed requests`);
  await untilDrained(sql);

  // What the three do with no calls, per second, subtracted from each window at its length.
  const counters = () => readCounters(pid, postgresServer.child.pid, redis, sql);
  const idleStart = await counters();
  await sleep(idleSeconds * 1000);
  const idle = delta(idleStart, await counters());
  const idlePerS = (value: number) => (value * 1000) / idle.ms;
  process.stdout.write(`${JSON.stringify({
    scenario: 'capacity_idle', seconds: round(idle.ms / 1000, 1),
    gateway_cpu_us_per_s: round(idlePerS(idle.gatewayCpuUs), 0), redis_commands_per_s: round(idlePerS(idle.redisCommands), 1),
    redis_by_command: idle.redisByCommand, redis_cpu_us_per_s: round(idlePerS(idle.redisCpuUs), 0),
    postgres_cpu_us_per_s: round(idlePerS(idle.postgresCpuUs), 0), pg_rows: idle.pgRows, wal_bytes_per_s: round(idlePerS(idle.walBytes), 0),
  })}\n`);

  let failed = false;
  const table: string[] = [];
  for (const kind of KINDS.filter((k) => wanted.includes(k.name))) {
    const dispatcher = connect(target, kind.concurrency);
    const plan: LoadPlan = { concurrency: kind.concurrency, requests: Number.MAX_SAFE_INTEGER, durationMs: seconds * 1000 };
    try {
      await runLoad(dispatcher, target, kind.call, { ...plan, durationMs: 2000 });
      await untilDrained(sql);
      const before = await counters();
      const load = await runLoad(dispatcher, target, kind.call, plan);
      await untilDrained(sql);
      const moved = delta(before, await counters());
      const calls = load.requests;
      const net = (value: number, idleValue: number) => Math.max(0, value - (idleValue * moved.ms) / idle.ms);
      const perCall = (value: number, decimals = 2) => round(value / calls, decimals);
      const line = {
        scenario: `capacity_${kind.name}`,
        ...(Object.keys(gatewayEnv).length > 0 ? { gateway_env: gatewayEnv } : {}),
        concurrency: kind.concurrency,
        calls,
        failed: load.errors,
        calls_per_s: round(calls / load.seconds, 0),
        chunks_per_call: round(load.events / calls, 1),
        window_s: round(moved.ms / 1000, 1),
        gateway_cpu_us_per_call: perCall(net(moved.gatewayCpuUs, idle.gatewayCpuUs), 1),
        redis_commands_per_call: perCall(net(moved.redisCommands, idle.redisCommands), 3),
        redis_by_command_per_call: Object.fromEntries(Object.entries(moved.redisByCommand).map(([name, n]) => [name, perCall(n, 4)])),
        redis_cpu_us_per_call: perCall(net(moved.redisCpuUs, idle.redisCpuUs), 1),
        redis_command_us_per_call: perCall(net(moved.redisCommandUs, idle.redisCommandUs), 1),
        postgres_cpu_us_per_call: perCall(net(moved.postgresCpuUs, idle.postgresCpuUs), 1),
        pg_rows_per_call: { inserted: perCall(moved.pgRows.inserted, 3), updated: perCall(moved.pgRows.updated, 3), deleted: perCall(moved.pgRows.deleted, 3) },
        pg_rows_per_call_by_table: Object.fromEntries(Object.entries(moved.pgTables).map(([name, t]) => [name, { inserted: perCall(t.inserted, 3), updated: perCall(t.updated, 3), bytes: perCall(t.bytes, 0) }])),
        pg_database_bytes_per_call: perCall(moved.pgDatabaseBytes, 0),
        wal_bytes_per_call: perCall(net(moved.walBytes, idle.walBytes), 0),
        wal_records_per_call: perCall(moved.walRecords, 2),
        wal_full_page_images: moved.walFullPages,
        // The server is the bench's own: rows of its other databases (none expected) would be in the WAL figure too.
        other_databases_rows_in_window: moved.otherDatabasesRows,
        idle_subtracted: true,
        loadavg_1m: round(loadavg()[0] ?? NaN, 2),
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      table.push(`${kind.name.padEnd(11)} ${String(line.gateway_cpu_us_per_call).padStart(8)} µs gw  ${String(line.redis_commands_per_call).padStart(6)} redis cmds  ${String(line.redis_cpu_us_per_call).padStart(6)} µs redis  ${line.pg_rows_per_call.inserted}+${line.pg_rows_per_call.updated} pg rows  ${line.wal_bytes_per_call} B wal  ${line.postgres_cpu_us_per_call} µs pg`);
      if (load.errors > 0) {
        failed = true;
        note(`${kind.name}: ${load.errors} failed: ${load.errorSamples.join('; ')}`);
      }
    } finally {
      await dispatcher.close();
    }
  }
  note(`per call (net of idle):\n${table.join('\n')}`);
  if (gateway.child.exited) throw new Error(`the gateway died:\n${gateway.child.output}`);
  return failed ? 1 : 0;
}

await runMain('capacity', main);
