// `node dist/bench/ledger-writer.js`: the ledger writer alone. Fills users' ledger streams with
// settled-call entries as settle.lua writes them, drains them into Postgres with LedgerWriter, and
// prints one JSON line: this process's CPU per event (the gateway's main thread pays it per call).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { installSignalHandlers, onCleanup, runCleanup } from './cleanup.js';
import { dropDatabase, deleteKeysWithPrefix } from './namespaces.js';
import { RedisKeys } from '../src/admission/keys.js';
import { dirtyMarks } from '../src/ledger/dirty-set.js';
import { LedgerWriter } from '../src/ledger/writer.js';
import type { LedgerEvent } from '../src/ledger/event.js';
import { connect } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const EVENTS = Math.round(40_000 * Number(process.env.BENCH_SCALE || '1'));
const PER_PASS = 400;
const USERS = 4;

/** CPU time of this process's main thread alone (its helper threads, GC included, are not in it), µs. */
function mainThreadCpuUs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // clock ticks of 10 ms
}

async function main(): Promise<void> {
  installSignalHandlers();
  const database = `gw_bench_ledger_${randomUUID().slice(0, 8)}`;
  const prefix = `bench:ledger:${randomUUID().slice(0, 8)}:`;
  const admin = connect(ADMIN_URL, 1);
  await admin.unsafe(`create database ${database}`);
  await admin.end();
  onCleanup(() => dropDatabase(ADMIN_URL, database));
  const sql = connect(`postgres://postgres@127.0.0.1:5432/${database}`, 4);
  onCleanup(() => sql.end({ timeout: 5 }));
  await migrate(sql);
  const redis = new Redis(REDIS_URL);
  onCleanup(async () => {
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
  });
  const keys = new RedisKeys(prefix);
  const users = Array.from({ length: USERS }, (_, i) => `bench-ledger-${i}`);
  await sql`insert into accounts (id) select unnest(${users}::text[])`;
  const writer = new LedgerWriter(sql, redis, keys, { onError: (error) => { throw error; } });

  const fill = async (count: number) => {
    const pipeline = redis.pipeline();
    for (let i = 0; i < count; i++) {
      const user = users[i % USERS]!;
      const event: LedgerEvent = {
        keyId: randomUUID(), model: 'openai/gpt-4o-mini', endpoint: 'chat.completions', stream: i % 2 === 0, status: 200, errorCode: null,
        promptTokens: 25, completionTokens: 16, cachedTokens: 0, reasoningTokens: 0, reservedNano: '9876543', startedAtMs: Date.now(), durationMs: 3, ttfbMs: 1, clientAborted: false,
      };
      pipeline.xadd(keys.ledger(user), '*', 'r', randomUUID(), 'c', '13350', 'e', JSON.stringify(event));
    }
    for (const [key, marked] of dirtyMarks(keys, users)) pipeline.sadd(key, ...marked);
    await pipeline.exec();
  };

  // Warm up, then fill every stream first, so the measured passes pay for draining only.
  for (let i = 0; i < 4; i++) {
    await fill(PER_PASS);
    await writer.drainAll();
  }
  for (let filled = 0; filled < EVENTS; filled += PER_PASS) await fill(PER_PASS);
  await new Promise((resolve) => setTimeout(resolve, 500)); // let the fill's garbage be collected
  const before = process.cpuUsage();
  const mainBefore = mainThreadCpuUs();
  let written = 0;
  for (let events = await writer.drainAll(); events > 0; events = await writer.drainAll()) written += events;
  const used = process.cpuUsage(before);
  const cpuUs = used.user + used.system;
  const mainUs = mainThreadCpuUs() - mainBefore;
  process.stdout.write(`${JSON.stringify({ scenario: 'ledger_writer', events: written, events_per_pass: `up to ${1000 * USERS}`, cpu_us_per_event: Math.round((cpuUs / written) * 10) / 10, main_thread_cpu_us_per_event: Math.round((mainUs / written) * 10) / 10 })}\n`);
}

try {
  await main();
} finally {
  await runCleanup();
}
