// Issue 25: the ledger's dirty set is spread over LEDGER_DIRTY_SHARDS sets, one per range of Cluster
// slots (src/ledger/dirty-set.ts), instead of one untagged key whose node took part in every
// settlement batch. Checked: the key choice (each set in its own slot range, each user marked in the
// set of the range holding the user's slot); on a real Redis Cluster of three primaries, a settlement
// batch of one node's users marks them on that node only; and ledger writers drain every set into
// Postgres, each event once, with two writers at once (SPOP hands each marked user to one of them).
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { keySlot, SLOT_COUNT } from '../src/store/cluster-slot.js';
import { connectRedis } from '../src/store/redis-connect.js';
import { RedisPipe, type RespCommand } from '../src/store/redis-pipe.js';
import { RedisKeys } from '../src/admission/keys.js';
import { ScriptBatcher } from '../src/admission/script-batcher.js';
import { DIRTY_SHARDS, LEDGER_DIRTY_SHARDS, dirtyMarks, dirtyShardOfSlot, dirtyShardTag } from '../src/ledger/dirty-set.js';
import { LedgerWriter } from '../src/ledger/writer.js';
import type { LedgerEvent } from '../src/ledger/event.js';
import { startRedisCluster, type LocalCluster } from './helpers/redis-cluster.js';
import { databaseBefore } from './helpers/migrations.js';

const SLOTS_PER_SHARD = SLOT_COUNT / LEDGER_DIRTY_SHARDS;
const rangeOf = (slot: number) => Math.floor(slot / SLOTS_PER_SHARD);

t.test('the key choice', async (t) => {
  t.test('each dirty set lies in its own slot range, under a tag that depends on the shard number only', async (t) => {
    const keys = new RedisKeys('gw:');
    const sets = DIRTY_SHARDS.map((shard) => keys.ledgerDirty(shard));
    t.equal(new Set(sets).size, LEDGER_DIRTY_SHARDS, `${LEDGER_DIRTY_SHARDS} distinct sets`);
    t.same(DIRTY_SHARDS.map((shard) => rangeOf(keySlot(keys.ledgerDirty(shard)))), DIRTY_SHARDS, 'set n in slot range n');
    // Every gateway process must build the same keys (and a later version the same ones, or its marks
    // wait for the periodic scan during a rolling upgrade).
    t.same(DIRTY_SHARDS.map(dirtyShardTag), [
      'd0.12', 'd1.11', 'd2.2', 'd3.1', 'd4.62', 'd5.61', 'd6.42', 'd7.41', 'd8.21', 'd9.22', 'd10.23', 'd11.20', 'd12.0', 'd13.3', 'd14.40', 'd15.43',
    ]);
    t.equal(keys.ledgerDirty(0), 'gw:ledger:dirty:{d0.12}');
  });

  t.test('a user is marked in the set of the range holding the user\'s slot', async (t) => {
    const users = ['u1', 'alice', 'user:with:colons', 'ünïcødé-☃', ...Array.from({ length: 2000 }, () => randomUUID())];
    const seen = new Set<number>();
    for (const prefix of ['', 'gw:', 'test:dirty:1f2e:']) {
      const keys = new RedisKeys(prefix);
      const wrong = users.filter((user) => rangeOf(keySlot(keys.ledgerDirtyOf(user))) !== rangeOf(keySlot(keys.balance(user))));
      t.same(wrong, [], `prefix "${prefix}": every user's set is in the user's slot range`);
      for (const user of users) seen.add(dirtyShardOfSlot(keySlot(keys.balance(user))));
    }
    t.equal(seen.size, LEDGER_DIRTY_SHARDS, 'users land in every set');
    const keys = new RedisKeys('gw:');
    const marks = dirtyMarks(keys, users);
    t.same([...marks.values()].flat().sort(), [...users].sort(), 'dirtyMarks groups every user once');
    for (const [key, marked] of marks) for (const user of marked) if (keys.ledgerDirtyOf(user) !== key) t.fail(`${user} grouped under ${key}`);
  });
});

t.test('on a Redis Cluster of three primaries', async (t) => {
  const cluster: LocalCluster = await startRedisCluster({ primaries: 3, replicasPerPrimary: 0 });
  const admin = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  t.teardown(async () => {
    admin.disconnect();
    await cluster.stop();
  });
  /** Each slot's primary, `host:port`. */
  const owners = new Array<string>(SLOT_COUNT);
  for (const [start, end, [host, port]] of (await admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]) {
    for (let slot = start; slot <= end; slot++) owners[slot] = `${host || '127.0.0.1'}:${port}`;
  }
  const nodes = [...new Set(owners)];
  t.equal(nodes.length, 3, 'three primaries serve the slots');
  const prefix = `test:dirty:${randomUUID().slice(0, 8)}:`;
  const keys = new RedisKeys(prefix);
  const nodeOf = (key: string) => owners[keySlot(key)]!;
  /** Whether one node serves every slot of the user's range (ranges cut by a node boundary are not). */
  const wholeRange = (user: string) => {
    const range = rangeOf(keySlot(keys.balance(user)));
    return owners[range * SLOTS_PER_SHARD] === owners[(range + 1) * SLOTS_PER_SHARD - 1];
  };

  t.test('a settlement batch of one node\'s users marks them on that node only', async (t) => {
    const pipe = new RedisPipe(cluster.url);
    t.teardown(() => pipe.close(0));
    const marks: RespCommand[] = [];
    let batches = 0;
    // The batcher's pipe, noting the dirty marks it sends.
    const noting = {
      cluster: pipe.cluster,
      close: pipe.close,
      exec: (commands: readonly RespCommand[]) => {
        batches++;
        for (const command of commands) if (command[0] === 'SADD') marks.push(command);
        return pipe.exec(commands);
      },
    } as unknown as RedisPipe;
    const batcher = new ScriptBatcher(noting, keys);
    const users = Array.from({ length: 600 }, (_, i) => `dirty-${i}`).filter(wholeRange);
    for (const node of nodes) {
      const ofNode = users.filter((user) => nodeOf(keys.balance(user)) === node);
      t.ok(ofNode.length >= 20, `${ofNode.length} users on ${node}`);
      marks.length = 0;
      // One batch: every settlement of this turn leaves together (balances not loaded: the scripts
      // answer not_loaded, and the users are marked all the same).
      await Promise.allSettled(ofNode.map((userId) => batcher.settle({
        userId, keyId: 'k', leaseId: `k:${userId}`, epoch: '0', batch: 1, ttlMs: 60_000, close: true, unusedSlots: 0, releaseNano: 0n,
        calls: [{ callId: randomUUID(), chargeNano: 1n, tokens: 1, event: '{}' }],
      })));
      await waitFor(() => marks.flatMap((mark) => mark.slice(2)).length === ofNode.length, 5000);
      t.same(marks.flatMap((mark) => mark.slice(2)).map(String).sort(), [...ofNode].sort(), 'every user marked once');
      t.same([...new Set(marks.map((mark) => nodeOf(String(mark[1]))))], [node], 'the marks go to the users\' own node only');
      t.same(marks.filter((mark) => mark.slice(2).some((user) => keys.ledgerDirtyOf(String(user)) !== mark[1])), [], 'each user in its own set');
      const slots = await Promise.all(marks.map((mark) => admin.call('CLUSTER', 'KEYSLOT', String(mark[1]))));
      t.same(slots, marks.map((mark) => keySlot(String(mark[1]))), 'the cluster places the sets where keySlot says');
    }
    t.ok(batches >= 3, `${batches} writes`);
  });

  t.test('ledger writers drain every set, each event once, with two writers at once', async (t) => {
    const sql = await databaseBefore(t, '9999');
    const redis = connectRedis(cluster.url);
    t.teardown(() => redis.disconnect());
    const users = Array.from({ length: 200 }, (_, i) => `drain-${i}`);
    t.equal(new Set(users.map((user) => keys.ledgerDirtyOf(user))).size, LEDGER_DIRTY_SHARDS, 'the users fall in every set');
    await sql`insert into accounts (id) select unnest(${users}::text[])`;
    const errors: unknown[] = [];
    const writers = [0, 1].map(() => new LedgerWriter(sql, redis, keys, { onError: (error) => errors.push(error) }));
    const ids: string[] = [];
    for (const user of users) {
      for (let i = 0; i < 3; i++) {
        const id = randomUUID();
        ids.push(id);
        await redis.xadd(keys.ledger(user), '*', 'r', id, 'c', '1000', 'e', JSON.stringify(event()));
      }
    }
    for (const [key, marked] of dirtyMarks(keys, users)) await redis.sadd(key, ...marked);
    // Passes without the periodic scan: only the dirty sets say where the events are.
    const written = await Promise.all(writers.map((writer) => writer.drainAll(false)));
    t.same(errors, []);
    t.equal(written[0]! + written[1]!, ids.length, `every event written by one writer (${written.join(' + ')})`);
    const [row] = await sql<{ n: number; total: string }[]>`select count(*)::int as n, coalesce(sum(credits_nano), 0)::text as total from transactions where id = any(${ids}::uuid[])`;
    t.same(row, { n: ids.length, total: String(-1000 * ids.length) }, 'each charge once in Postgres');
    const left = await Promise.all(DIRTY_SHARDS.map((shard) => redis.scard(keys.ledgerDirty(shard))));
    t.same(left, DIRTY_SHARDS.map(() => 0), 'every set drained');
    const streams = await Promise.all(users.map((user) => redis.xlen(keys.ledger(user))));
    t.equal(streams.reduce((a, b) => a + b, 0), 0, 'every stream trimmed');
    t.same(await Promise.all(writers.map((writer) => writer.drainAll(false))), [0, 0], 'nothing more to drain');
  });
});

function event(): LedgerEvent {
  return {
    keyId: randomUUID(), model: 'openai/gpt-4o-mini', endpoint: '/v1/chat/completions', stream: false, status: 200, errorCode: null,
    promptTokens: 1, completionTokens: 1, cachedTokens: 0, reasoningTokens: 0, reservedNano: '5000', startedAtMs: Date.now(), durationMs: 1, ttfbMs: 1, clientAborted: false,
  };
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
}
