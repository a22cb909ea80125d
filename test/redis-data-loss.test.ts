// Redis loses its data (FLUSHALL, on a redis-server of this test's own on a spare port) while ledger
// events it acknowledged still wait to be drained into Postgres. The HTTP threads' settlement journals
// keep every call until its entry left the user's ledger stream (so it is in Postgres), and charge
// again, once, the ones Redis lost; a ledger pass that read entries from the lost data commits none of
// them. Pieces first (the writer, the journal with its confirmer and the recovery), then whole
// gateways: with Postgres cut so that many charges wait in Redis when it loses them, with the gateway
// that served them killed before the loss (its journal replayed by the next one), and under traffic.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, postJson, postgresAddress, startGateway, type Gateway } from './helpers/harness.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { TEST_JWT_SECRET, eventually, fastUser, sleep } from './helpers/http-tools.js';
import { RedisKeys } from '../src/admission/keys.js';
import { defineScripts } from '../src/admission/scripts.js';
import { ScriptBatcher } from '../src/admission/script-batcher.js';
import { RedisPipe } from '../src/store/redis-pipe.js';
import { Balances } from '../src/billing/balances.js';
import { SettlementJournal, type JournalLease } from '../src/admission/settlement-journal.js';
import { LedgerConfirmer } from '../src/admission/ledger-confirmer.js';
import { LedgerRecovery } from '../src/admission/ledger-recovery.js';
import { acknowledgedCalls, readJournal } from '../src/admission/journal-replay.js';
import { LedgerWriter } from '../src/ledger/writer.js';
import { LEDGER_LOCK_CLASS, ledgerBucket } from '../src/ledger/locks.js';
import { checkLedger } from '../src/ledger/check.js';
import { ensureAccount } from '../src/store/accounts.js';
import type { Sql } from '../src/store/db.js';

const USD = 1_000_000_000n;

/** A Redis server of this test's own on a spare port: FLUSHALL must not touch the shared one. */
async function ownRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: 1 });
  probe.on('error', () => {}); // refused until the server listens
  const up = await eventually(async () => {
    try {
      await probe.connect().catch(() => {});
      return (await probe.ping()) === 'PONG';
    } catch {
      return false;
    }
  }, 10_000, 100);
  probe.disconnect();
  if (!up) throw new Error('redis-server did not start');
  return { url, stop: async () => { child.kill('SIGTERM'); await once(child, 'exit'); } };
}

/** Runs what it is given last first when the test ends, so a Redis server stops after its clients. */
function cleanup(t: Test): (step: () => unknown) => void {
  const steps: (() => unknown)[] = [];
  t.teardown(async () => {
    for (const step of steps.reverse()) await step();
  });
  return (step) => { steps.push(step); };
}

/** A ledger event as the gateway writes one (the writer needs a readable one to write its request log). */
function eventJson(keyId: string): string {
  return JSON.stringify({
    keyId, model: 'openai/gpt-4o-mini', endpoint: 'chat.completions', stream: false, status: 200, errorCode: null,
    promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 0, reservedNano: '1000', startedAtMs: Date.now(), durationMs: 5, ttfbMs: 2, clientAborted: false,
  });
}

async function usageIds(sql: Sql, user: string): Promise<Map<string, number>> {
  const rows = await sql<{ id: string; n: number }[]>`
    select id::text as id, count(*)::int as n from transactions where user_id = ${user} and payment_method = 'usage' group by id`;
  return new Map(rows.map((row) => [row.id, row.n]));
}

t.test('a ledger pass that read entries before Redis lost them commits none of them; the next pass writes the new data', async (t) => {
  const after = cleanup(t);
  const server = await ownRedis();
  after(() => server.stop());
  const gateway = await startGateway({ env: { REDIS_URL: server.url } }); // for its database
  after(() => gateway.close());
  const redis = new Redis(server.url);
  after(() => redis.disconnect());
  const sql = gateway.sql as unknown as Sql;
  const keys = new RedisKeys('unit-writer:');
  const user = 'writer-user';
  await ensureAccount(sql, user);
  await redis.hset(keys.balance(user), 'credits', '-200', 'held', '0', 'deposits', '0', 'epoch', '100');
  const ids = [randomUUID(), randomUUID()];
  for (const id of ids) await redis.xadd(keys.ledger(user), '*', 'r', id, 'c', '100', 'e', eventJson(randomUUID()));
  const changed: string[][] = [];
  const writer = new LedgerWriter(sql, redis, keys, { onError: (error) => { throw error; }, onEpochChanged: (users) => changed.push(users) });

  // Holding the user's ledger lock stops the pass after it read the stream, before it may commit.
  const holder = await gateway.sql.reserve();
  await holder`select pg_advisory_lock(${LEDGER_LOCK_CLASS}::int, ${ledgerBucket(user)}::int)`;
  const pass = writer.drainAll(true);
  await sleep(300);
  t.same(await usageIds(sql, user), new Map(), 'the pass waits for the lock');
  // Meanwhile Redis lost the data the pass read, and the balance was rebuilt (a new epoch).
  await redis.hset(keys.balance(user), 'epoch', '200');
  await holder`select pg_advisory_unlock(${LEDGER_LOCK_CLASS}::int, ${ledgerBucket(user)}::int)`;
  holder.release();
  t.equal(await pass, 0, 'the pass wrote nothing');
  t.same(changed, [[user]], 'and said which user');
  t.same(await usageIds(sql, user), new Map(), 'no transaction of the old data is in Postgres');
  t.equal(await redis.xlen(keys.ledger(user)), 2, 'nor was anything trimmed');

  // Read again under the epoch that holds now, they are written (here they are still in the stream).
  t.equal(await writer.drainAll(true), 2, 'the next pass writes them');
  t.same(await usageIds(sql, user), new Map(ids.map((id) => [id, 1])), 'once each');
  t.equal(await redis.xlen(keys.ledger(user)), 0, 'and trims them');
});

t.test('the journal keeps acknowledged calls until their entries left the stream; after a loss it charges the lost ones again, once', async (t) => {
  const after = cleanup(t);
  const server = await ownRedis();
  after(() => server.stop());
  const gateway = await startGateway({ env: { REDIS_URL: server.url } });
  after(() => gateway.close());
  const sql = gateway.sql as unknown as Sql;
  const redis = defineScripts(new Redis(server.url));
  after(() => redis.disconnect());
  const pipe = new RedisPipe(server.url);
  after(() => pipe.close());
  const keys = new RedisKeys('unit-journal:');
  const scripts = new ScriptBatcher(pipe, keys);
  const balances = new Balances(sql, redis, keys);
  const recovery = new LedgerRecovery({ sql, redis, keys, scripts, balances, ttlMs: 60_000 });
  const writer = new LedgerWriter(sql, redis, keys, { onError: (error) => { throw error; } });
  const dir = mkdtempSync(join(tmpdir(), 'journal-loss-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const journal = new SettlementJournal(join(dir, 'ns'), 'abc.1');
  const confirmer = new LedgerConfirmer(journal, redis, keys, recovery, 3_600_000); // checks run by hand here
  after(() => confirmer.stop());

  const user = 'journal-user';
  const keyId = randomUUID();
  await balances.topUp(user, 1n * USD, 'test');
  const epoch = (await redis.hget(keys.balance(user), 'epoch'))!;
  const lease: JournalLease = { id: `${keyId}:lease1`, userId: user, keyId, epoch, batch: 0, sending: false };
  // A call settled as settle.lua does it (charged, its entry appended), then acknowledged.
  const settle = async (batch: number) => {
    const call = { callId: randomUUID(), chargeNano: 100_000n, tokens: 15, event: eventJson(keyId) };
    journal.call({ ...lease, batch: batch - 1 }, call);
    const journaled = journal.batch({ ...lease, batch: batch - 1 }, batch, [call], 0n, false, 0);
    await redis.multi().xadd(keys.ledger(user), '*', 'r', call.callId, 'c', '100000', 'e', call.event).hincrby(keys.balance(user), 'credits', -100_000).exec();
    journal.acknowledged(journaled);
    return call;
  };

  const first = await settle(1);
  t.equal(journal.unconfirmedByUser.size, 1, 'an acknowledged call waits for Postgres');
  await confirmer.check();
  await confirmer.check();
  t.equal(journal.unconfirmedByUser.size, 1, 'still, while its entry is in the stream');
  t.equal(await writer.drainAll(true), 1, 'the writer commits it');
  await confirmer.check();
  t.equal(journal.unconfirmedByUser.size, 0, 'its entry left the stream: the record may go');

  const second = await settle(2);
  await confirmer.check(); // bound to the stream as it is
  await redis.flushall(); // Redis loses the balance and the entry of the second call, before the writer committed it
  await confirmer.check();
  t.equal(await redis.xlen(keys.ledger(user)), 1, 'the lost call was settled again: its entry is back in the stream');
  const rebuilt = BigInt((await redis.hget(keys.balance(user), 'credits'))!);
  t.equal(rebuilt, USD - 200_000n, 'the balance rebuilt from Postgres (without it) is charged for it, once');
  await confirmer.check(); // found in the stream under the new epoch: not charged again
  t.equal(BigInt((await redis.hget(keys.balance(user), 'credits'))!), rebuilt, 'checking again charges nothing');
  t.equal(journal.unconfirmedByUser.size, 1, 'it waits for Postgres again');
  t.equal(await writer.drainAll(true), 1);
  await confirmer.check();
  await confirmer.check();
  t.equal(journal.unconfirmedByUser.size, 0, 'committed: nothing waits');
  t.same(await usageIds(sql, user), new Map([[first.callId, 1], [second.callId, 1]]), 'each call has one usage transaction');
  t.same((await checkLedger(sql, redis, keys, { userId: user })).differences, [], 'Redis and Postgres agree');

  // The same journal looked through again (as a replay of a dead thread's journal would): nothing changes.
  const again = await recovery.recover(user, acknowledgedCalls(readJournal(journal.paths)));
  t.same({ inStream: again.inStream, committed: again.committed, recovered: again.recovered }, { inStream: 0, committed: 2, recovered: 0 });
  t.equal(BigInt((await redis.hget(keys.balance(user), 'credits'))!), rebuilt);
  await confirmer.stop();
  journal.close();
  t.same(readdirSync(dir), [], 'everything is in Postgres: the journal (and its folder) is deleted at shutdown');
});

const chat = (gateway: Gateway, key: string, content: string, stream: boolean) => postJson(`${gateway.v1}/chat/completions`, key, {
  model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }], max_tokens: 16, ...(stream ? { stream: true } : {}),
});

/** Calls served (200, and a stream that ended) are recorded by id under their user. */
async function serve(gateway: Gateway, served: Map<string, string[]>, user: string, key: string, content: string, stream: boolean): Promise<boolean> {
  const response = await chat(gateway, key, content, stream);
  if (response.status !== 200) return false;
  if (stream && !String(response.body).includes('data: [DONE]')) return false;
  served.get(user)!.push(response.headers.get('x-request-id')!);
  return true;
}

/** Every served call of every user has exactly one usage transaction, nothing else is charged, and Redis agrees with Postgres. */
async function chargedOnce(t: Test, gateway: Gateway, redis: Redis, served: Map<string, string[]>): Promise<void> {
  const keys = new RedisKeys(gateway.prefix);
  const sql = gateway.sql as unknown as Sql;
  await eventually(async () => {
    for (const [user, ids] of served) if ((await usageIds(sql, user)).size < ids.length) return false;
    return true;
  }, 30_000, 100);
  for (const [user, ids] of served) {
    // Settled: no lease open, nothing left in the stream.
    await eventually(async () => (await redis.hlen(keys.reservations(user))) === 0 && (await redis.xlen(keys.ledger(user))) === 0, 10_000, 50);
    const rows = await usageIds(sql, user);
    const missing = ids.filter((id) => !rows.has(id));
    const extra = [...rows.keys()].filter((id) => !ids.includes(id));
    const twice = [...rows].filter(([, n]) => n !== 1).map(([id]) => id);
    t.same({ missing, extra, twice }, { missing: [], extra: [], twice: [] },
      `${user}: each of the ${ids.length} served calls has exactly one usage transaction, and nothing else is charged`);
    t.same((await checkLedger(sql, redis, keys, { userId: user })).differences, [], `${user}: Redis credits equal the Postgres ledger, nothing held`);
  }
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/, '`gateway ledger check` passes');
  t.notMatch(gateway.output, /unexpected error/, "no 'unexpected error' in the gateway's log");
}

t.test('Redis loses its data while the charges of many calls wait for Postgres: every served call is charged exactly once', async (t) => {
  const after = cleanup(t);
  const server = await ownRedis();
  after(() => server.stop());
  const proxy = await TcpProxy.start(postgresAddress());
  after(() => proxy.close());
  // Settlements wait 200 ms to leave: some are still in the thread when Redis loses its data.
  const gateway = await startGateway({
    postgresVia: { host: '127.0.0.1', port: proxy.port },
    env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10', REDIS_URL: server.url, SETTLE_FLUSH_MS: '200' },
  });
  after(async () => {
    proxy.restore();
    await gateway.close();
  });
  const redis = new Redis(server.url);
  after(() => redis.disconnect());
  const keys = new RedisKeys(gateway.prefix);
  const users = ['loss-a', 'loss-b'];
  const apiKeys = new Map<string, string>();
  const served = new Map<string, string[]>(users.map((user) => [user, []]));
  for (const user of users) apiKeys.set(user, (await fastUser(gateway, user, '5')).key);

  for (const user of users) for (let i = 0; i < 3; i++) t.ok(await serve(gateway, served, user, apiKeys.get(user)!, `before ${i}`, i % 2 === 1), 'served before');
  await eventually(async () => (await Promise.all(users.map(async (user) => (await usageIds(gateway.sql as unknown as Sql, user)).size))).every((n) => n === 3), 15_000);

  // Postgres away: calls are served and charged in Redis, their ledger entries wait in the streams.
  proxy.cut();
  const outage = new Map<string, number>();
  for (const user of users) {
    for (let i = 0; i < 8; i++) t.ok(await serve(gateway, served, user, apiKeys.get(user)!, `during ${i}`, i % 2 === 1), `served during the outage (${user} ${i})`);
    outage.set(user, 8);
  }
  const waiting = await eventually(async () => {
    const lengths = await Promise.all(users.map((user) => redis.xlen(keys.ledger(user))));
    return lengths.every((n, i) => n >= outage.get(users[i]!)!);
  }, 10_000);
  t.ok(waiting, 'the charges of the outage calls wait in Redis, acknowledged, not yet in Postgres');
  // A stream admitted now finishes after the loss: its settlement leaves for a Redis without its lease.
  const slowUser = users[0]!;
  const slow = serve(gateway, served, slowUser, apiKeys.get(slowUser)!, 'slow [[mock chunks=6 delay_ms=80]]', true);
  await sleep(150);
  await redis.flushall();
  t.ok(await slow, 'the stream in flight across the loss was served');

  proxy.restore();
  // Traffic goes on: the first calls may wait while the gateway's Postgres connections come back.
  for (const user of users) {
    t.ok(await eventually(() => serve(gateway, served, user, apiKeys.get(user)!, 'after', false), 45_000, 200), `${user}: served again after the loss`);
    for (let i = 0; i < 4; i++) t.ok(await serve(gateway, served, user, apiKeys.get(user)!, `after ${i}`, i % 2 === 0), 'served after');
  }
  await chargedOnce(t, gateway, redis, served);
  t.match(gateway.output, /charged again from the settlement journal/, 'the journal charged the lost entries again');
});

t.test('a gateway killed while its charges wait for Postgres, then Redis loses its data: the next gateway charges every served call once from the journal', async (t) => {
  const after = cleanup(t);
  const server = await ownRedis();
  after(() => server.stop());
  const proxy = await TcpProxy.start(postgresAddress());
  after(() => proxy.close());
  const env = { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10', REDIS_URL: server.url };
  const first = await startGateway({ postgresVia: { host: '127.0.0.1', port: proxy.port }, env });
  after(async () => {
    proxy.restore();
    await first.close();
  });
  const redis = new Redis(server.url);
  after(() => redis.disconnect());
  const user = 'killed-loss';
  const served = new Map<string, string[]>([[user, []]]);
  const { key } = await fastUser(first, user, '5');
  for (let i = 0; i < 2; i++) t.ok(await serve(first, served, user, key, `before ${i}`, false), 'served before');
  proxy.cut();
  for (let i = 0; i < 6; i++) t.ok(await serve(first, served, user, key, `during ${i}`, i % 2 === 0), `served during the outage (${i})`);
  t.ok(await eventually(async () => (await redis.xlen(new RedisKeys(first.prefix).ledger(user))) >= 6, 10_000), 'their charges wait in Redis');
  t.equal(await first.stop('SIGKILL'), null, 'the gateway is killed; its journal stays');
  await redis.flushall();
  proxy.restore();

  // Another gateway on the host, same Redis, prefix and database: it replays the dead thread's journal.
  const second = await startGateway({
    mock: first.mock, shared: { database: first.database, prefix: first.prefix },
    env: { ...env, SETTLE_JOURNAL_STALE_SECONDS: '2', RESERVATION_JANITOR_SECONDS: '1' },
  });
  after(() => second.close());
  for (let i = 0; i < 3; i++) t.ok(await serve(second, served, user, key, `after ${i}`, i % 2 === 1), 'served after the loss');
  await chargedOnce(t, second, redis, served);
  t.match(second.output, /lost_entries_charged_again":[1-9]/, "the replay charged the dead thread's lost entries again");
});

t.test('FLUSHALL under traffic, twice: every served call is charged exactly once and the ledger check passes', async (t) => {
  const after = cleanup(t);
  const server = await ownRedis();
  after(() => server.stop());
  const gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10', REDIS_URL: server.url } });
  after(() => gateway.close());
  const redis = new Redis(server.url);
  after(() => redis.disconnect());
  const users = ['traffic-a', 'traffic-b', 'traffic-c'];
  const served = new Map<string, string[]>(users.map((user) => [user, []]));
  const apiKeys = await Promise.all(users.map(async (user) => (await fastUser(gateway, user, '5')).key));
  let running = true;
  let refused = 0;
  const workers = users.flatMap((user, u) => Array.from({ length: 3 }, async (_, w) => {
    for (let i = 0; running; i++) {
      const ok = await serve(gateway, served, user, apiKeys[u]!, `w${w} call ${i} [[mock chunks=${1 + (i % 4)} delay_ms=${i % 3 === 0 ? 20 : 0}]]`, (i + w) % 2 === 0);
      if (!ok) refused++;
    }
  }));
  await sleep(1500);
  await redis.flushall();
  await sleep(1500);
  await redis.flushall();
  await sleep(1500);
  running = false;
  await Promise.all(workers);
  const total = [...served.values()].reduce((sum, ids) => sum + ids.length, 0);
  t.ok(total > 100, `${total} calls served (${refused} not)`);
  await chargedOnce(t, gateway, redis, served);
});
