// The task runtime's Redis side straight against Redis: task holds rebuilt with the balance and
// settled once (task_settle.lua), shard leases with fencing tokens that only grow (even when Redis
// loses the lease), the rendezvous spread of shards, and timers moved into the stream once.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { connectRedis } from '../src/store/redis-connect.js';
import { defineScripts, hydrate, loadSpend, settleTaskHold, type ScriptedRedis } from '../src/admission/scripts.js';
import { RedisKeys } from '../src/admission/keys.js';
import { ShardLeases, preferredOwner, shardOf } from '../src/tasks/shards.js';
import { deleteKeysWithPrefix } from '../bench/namespaces.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
let redis: ScriptedRedis;
let keys: RedisKeys;

t.before(() => {
  redis = defineScripts(connectRedis(REDIS_URL));
  keys = new RedisKeys(`test:tasks:${randomBytes(4).toString('hex')}:`);
});
t.teardown(async () => {
  await deleteKeysWithPrefix(redis, keys.prefix);
  redis.disconnect();
});

const balance = async (user: string) => {
  const [credits, held] = await redis.hmget(keys.balance(user), 'credits', 'held');
  return { credits: BigInt(credits ?? '-1'), held: BigInt(held ?? '-1') };
};

t.test('hydrate rebuilds pending tasks\' holds into held; task_settle charges once and releases the rest', async (t) => {
  const user = 'holds';
  const holds = [{ holdId: 'k1:task-a', nano: 300n }, { holdId: 'k2:task-b', nano: 200n }];
  t.equal(await hydrate(redis, keys, user, 1000n, 1000n, holds), 1);
  t.same(await balance(user), { credits: 1000n, held: 500n }, 'held is the holds');
  t.same(await redis.hgetall(keys.reservations(user)), { 'k1:task-a': '300', 'k2:task-b': '200' });
  t.equal(await redis.zcard(keys.reservationDeadlines(user)), 0, 'rebuilt holds have no deadline');
  t.equal(await hydrate(redis, keys, user, 5n, 5n, [{ holdId: 'x', nano: 1n }]), 0, 'a loaded balance is not touched');

  await loadSpend(redis, keys, user, 'k1', 0, 50n, 300n);
  t.same(await redis.hgetall(keys.keySpend(user, 'k1')), { period: '0', spent: '50', held: '300' }, 'the key spend carries its pending tasks');

  t.equal(await settleTaskHold(redis, keys, user, 'k1', 'k1:task-a', 250n), 250n, 'charged');
  t.same(await balance(user), { credits: 750n, held: 200n });
  t.same(await redis.hgetall(keys.keySpend(user, 'k1')), { period: '0', spent: '300', held: '0' }, 'spend moved from held to spent');
  t.equal(await settleTaskHold(redis, keys, user, 'k1', 'k1:task-a', 250n), undefined, 'a second settlement does nothing');
  t.same(await balance(user), { credits: 750n, held: 200n }, 'charged once');

  t.equal(await settleTaskHold(redis, keys, user, 'k2', 'k2:task-b', 999n), 200n, 'a charge is capped at the hold');
  t.same(await balance(user), { credits: 550n, held: 0n });
  t.equal(await settleTaskHold(redis, keys, user, 'k2', 'never-held', 0n), undefined, 'an unknown hold: nothing');
});

t.test('a failed task releases its whole hold and charges nothing', async (t) => {
  const user = 'release';
  await hydrate(redis, keys, user, 1000n, 1000n, [{ holdId: 'k:task-c', nano: 400n }]);
  t.equal(await settleTaskHold(redis, keys, user, 'k', 'k:task-c', 0n), 0n);
  t.same(await balance(user), { credits: 1000n, held: 0n });
  t.equal(await redis.hexists(keys.reservations(user), 'k:task-c'), 0);
});

t.test('shards: a stable user shard, and the rendezvous owner spreads shards and moves few', (t) => {
  t.equal(shardOf('alice', 16), shardOf('alice', 16), 'stable');
  t.ok(shardOf('alice', 16) < 16);
  const members = ['p1', 'p2', 'p3', 'p4'];
  const count = new Map<string, number>();
  const owners = Array.from({ length: 64 }, (_, shard) => preferredOwner(shard, members)!);
  for (const owner of owners) count.set(owner, (count.get(owner) ?? 0) + 1);
  t.equal(count.size, 4, 'every member owns shards');
  t.ok([...count.values()].every((n) => n >= 8), `a fair spread (${[...count.values()].join(', ')})`);
  const without = Array.from({ length: 64 }, (_, shard) => preferredOwner(shard, ['p1', 'p2', 'p4'])!);
  t.ok(owners.every((owner, shard) => owner === 'p3' || without[shard] === owner), 'when p3 leaves, only its shards move');
  t.equal(preferredOwner(3, []), undefined);
  t.end();
});

t.test('shard leases: claimed by the preferred member, renewed with the same token, lost and reclaimed with a greater one', async (t) => {
  const events: string[] = [];
  const make = (owner: string) => new ShardLeases(redis, keys, owner, { shards: 4, leaseMs: 2000 }, {
    acquired: ({ shard, token }) => events.push(`${owner} +${shard}@${token}`),
    lost: (shard, reason) => events.push(`${owner} -${shard} ${reason}`),
  }, (error) => { throw error; });
  const a = make('proc-a');
  await a.tick();
  t.equal(a.tokens.size, 4, 'alone, it owns every shard');
  const first = new Map(a.tokens);
  await a.tick();
  t.same(new Map(a.tokens), first, 'renewed under the same tokens');

  const b = make('proc-b');
  await b.tick(); // b joins the members; a still holds everything
  await a.tick(); // a sees b and hands over b's shards
  await b.tick(); // b claims them
  const bShards = [...b.tokens.keys()];
  t.ok(bShards.length > 0 && a.tokens.size + b.tokens.size === 4, `split: a ${a.tokens.size}, b ${b.tokens.size}`);
  t.ok(bShards.every((shard) => !a.tokens.has(shard)), 'no shard owned twice');
  t.ok(bShards.every((shard) => preferredOwner(shard, ['proc-a', 'proc-b']) === 'proc-b'), 'b owns exactly its preferred shards');
  for (const shard of bShards) t.ok(b.tokens.get(shard)! > first.get(shard)!, `shard ${shard}: the new owner's token is greater`);

  // Redis loses a's leases (and the token counters): a notices, and the tokens it claims again still grow.
  const aShard = [...a.tokens.keys()][0]!;
  const before = a.tokens.get(aShard)!;
  await redis.del(keys.taskLease(aShard), keys.taskFence(aShard));
  await a.tick();
  t.ok(events.includes(`proc-a -${aShard} expired`), 'the lost lease is reported');
  t.ok(a.tokens.get(aShard)! > before, 'claimed again with a greater token');

  t.equal(await redis.shard_claim(keys.taskLease(aShard), keys.taskFence(aShard), 'proc-b', 2000), 0, 'a held shard is not given to another owner');
  await a.stop();
  t.equal(a.tokens.size, 0, 'stop releases every lease');
  t.equal(await redis.exists(keys.taskLease(aShard)), 0);
  await b.tick();
  t.equal(b.tokens.size, 4, 'the remaining member takes every shard');
  await b.stop();
});

t.test('timers_due moves due timers into the stream once, oldest first, and tells when the next is due', async (t) => {
  const timers = keys.taskTimers(9);
  const stream = keys.taskStream(9);
  const now = Date.now();
  await redis.zadd(timers, now - 20, 'a:task-1:user:one', now - 10, 'c:task-2:u2', now + 60_000, 'a:task-3:u3');
  const [moved, nextMs] = await redis.timers_due(timers, stream, 100);
  t.equal(moved, 2);
  t.ok(nextMs! > 50_000 && nextMs! <= 60_000, `the next timer is due in about a minute (${nextMs})`);
  const entries = await redis.xrange(stream, '-', '+');
  t.same(entries.map(([, fields]) => fields), [['k', 'a', 't', 'task-1', 'u', 'user:one'], ['k', 'c', 't', 'task-2', 'u', 'u2']], 'user ids may hold colons');
  const [again] = await redis.timers_due(timers, stream, 100);
  t.equal(again, 0, 'nothing moved twice');
  t.equal(await redis.xlen(stream), 2);
});
