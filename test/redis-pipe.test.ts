// The hot path's lean Redis connection against the real Redis: every reply type in one batch, error
// replies that fail only their own command, replies split across reads, a lost connection, an
// unreachable server, a database in the URL, and Lua scripts Redis has not cached.
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Redis } from 'ioredis';
import { RedisPipe, RespError, encodeCommands } from '../src/store/redis-pipe.js';
import { ScriptBatcher } from '../src/admission/script-batcher.js';
import { RedisKeys } from '../src/admission/keys.js';
import { NO_KEY_LIMITS, defineScripts, hydrate, loadScript } from '../src/admission/scripts.js';
import { deleteKeysWithPrefix } from '../bench/namespaces.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:pipe:${randomBytes(4).toString('hex')}:`;
const redis = defineScripts(new Redis(REDIS_URL));
t.teardown(async () => {
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

t.test('encodes commands as RESP arrays of bulk strings, lengths in bytes', async (t) => {
  t.equal(encodeCommands([['SET', 'k', 'é'], ['INCRBY', 'n', 5]]), '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\né\r\n*3\r\n$6\r\nINCRBY\r\n$1\r\nn\r\n$1\r\n5\r\n');
});

t.test('one batch: every reply type, in order, an error reply failing only its own command', async (t) => {
  const pipe = new RedisPipe(REDIS_URL);
  t.teardown(() => pipe.close());
  const key = `${prefix}a`;
  const replies = await pipe.exec([
    ['SET', key, 'naïve ☃'],
    ['GET', key],
    ['INCR', key], // not an integer: an error reply
    ['GET', `${prefix}missing`],
    ['RPUSH', `${prefix}list`, 'x', 'y'],
    ['LRANGE', `${prefix}list`, 0, -1],
    ['EVAL', 'return {1, "two", {3}, redis.error_reply("nested")}', 0],
    ['PING'],
  ]);
  t.equal(replies.length, 8);
  t.equal(replies[0], 'OK');
  t.equal(replies[1], 'naïve ☃', 'a multi-byte value round-trips');
  t.ok(replies[2] instanceof RespError && /not an integer/.test(replies[2].message), 'the error reply is a value');
  t.equal(replies[3], null, 'a missing key is null');
  t.equal(replies[4], 2, 'integers are numbers');
  t.same(replies[5], ['x', 'y']);
  const nested = replies[6] as unknown[];
  t.same(nested.slice(0, 3), [1, 'two', [3]], 'nested arrays');
  t.ok(nested[3] instanceof RespError, 'an error inside an array');
  t.equal(replies[7], 'PONG', 'the commands after the error ran');
});

t.test('a reply larger than one read, and many batches in flight at once, come back whole and in order', async (t) => {
  const pipe = new RedisPipe(REDIS_URL);
  t.teardown(() => pipe.close());
  const big = randomBytes(1_500_000).toString('base64'); // 2 MB: many socket reads
  await pipe.exec([['SET', `${prefix}big`, big]]);
  const batches = await Promise.all(Array.from({ length: 50 }, (_, i) => pipe.exec([['ECHO', `m${i}`], ['GET', `${prefix}big`], ['ECHO', `n${i}`]])));
  batches.forEach((replies, i) => {
    if (replies[0] !== `m${i}` || replies[1] !== big || replies[2] !== `n${i}`) t.fail(`batch ${i} came back wrong`);
  });
  t.pass('50 batches of 2 MB replies');
});

t.test('a lost connection fails what waits on it; the next batch reconnects', async (t) => {
  const pipe = new RedisPipe(REDIS_URL);
  t.teardown(() => pipe.close());
  const [id] = await pipe.exec([['CLIENT', 'ID']]);
  const waiting = t.rejects(pipe.exec([['BLPOP', `${prefix}never`, 5]]), /lost/, 'the batch in flight fails');
  await sleep(50);
  t.equal(await redis.client('KILL', 'ID', String(id)), 1, 'the connection was killed');
  await waiting;
  const [again] = await pipe.exec([['CLIENT', 'ID']]);
  t.not(again, id, 'a new connection');
  t.same(await pipe.exec([['PING']]), ['PONG']);
});

t.test('an unreachable server rejects at once, and again without hammering it', async (t) => {
  const pipe = new RedisPipe('redis://127.0.0.1:1');
  t.teardown(() => pipe.close());
  await t.rejects(pipe.exec([['PING']]), 'refused');
  await t.rejects(pipe.exec([['PING']]), 'refused again');
  await t.rejects(pipe.exec([['PING']]), /unreachable/, 'within the pause after repeated failures, no new connection');
});

t.test('a server that accepts and never answers fails the batch after the reply timeout, not never', async (t) => {
  const silent = net.createServer((socket) => socket.on('data', () => {}));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => silent.close(() => resolve())));
  const pipe = new RedisPipe(`redis://127.0.0.1:${(silent.address() as net.AddressInfo).port}`, { replyTimeoutMs: 300 });
  t.teardown(() => pipe.close(0));
  const started = Date.now();
  await t.rejects(pipe.exec([['PING']]), /did not answer within 300 ms/);
  t.ok(Date.now() - started < 2_000, 'soon after the timeout');
});

t.test('the database in the URL is selected before any command', async (t) => {
  const pipe = new RedisPipe(`${REDIS_URL}/3`);
  t.teardown(() => pipe.close());
  const key = `${prefix}db3`;
  await pipe.exec([['SET', key, 'here']]);
  const db3 = new Redis(`${REDIS_URL}/3`);
  t.teardown(async () => {
    await db3.del(key);
    db3.disconnect();
  });
  t.equal(await db3.get(key), 'here');
  t.equal(await redis.get(key), null, 'not in database 0');
});

t.test('a database Redis refuses fails the batch instead of running it in another one', async (t) => {
  const pipe = new RedisPipe(`${REDIS_URL}/99`);
  t.teardown(() => pipe.close());
  const key = `${prefix}nodb`;
  await t.rejects(pipe.exec([['SET', key, '1']]), /lost/);
  t.equal(await redis.get(key), null, 'nothing ran in database 0');
});

t.test('a password given to a Redis without one is not an error (as with ioredis)', async (t) => {
  const pipe = new RedisPipe(`redis://:spare-password@${new URL(REDIS_URL).host}`);
  t.teardown(() => pipe.close());
  t.same(await pipe.exec([['PING']]), ['PONG']);
});

t.test('after close, batches are refused', async (t) => {
  const pipe = new RedisPipe(REDIS_URL);
  await pipe.exec([['PING']]);
  await pipe.close();
  await t.rejects(pipe.exec([['PING']]), /closed/);
});

t.test('scripts Redis has not cached run by their source, once', async (t) => {
  const pipe = new RedisPipe(REDIS_URL);
  t.teardown(() => pipe.close());
  const keys = new RedisKeys(prefix);
  const scripts = new ScriptBatcher(pipe, keys);
  const user = 'flushed';
  await hydrate(redis, keys, user, 1000n, 1000n);
  // Other test files' connections fall back the same way (ioredis does too), so flushing is safe here.
  await redis.script('FLUSH');
  const admitted = await scripts.admit({
    userId: user, keyId: 'k', leaseId: 'k:l1', callNano: 100n, wantCreditNano: 100n, wantSlots: 1, limit: 100, windowMs: 10_000,
    ttlMs: 60_000, leaseLifeMs: 1000, keyLimits: NO_KEY_LIMITS, callTokens: 1,
  });
  t.equal(admitted.kind, 'admitted');
  t.equal(await redis.hget(keys.balance(user), 'held'), '100', 'reserved once');
  const settled = await scripts.settle({
    userId: user, keyId: 'k', leaseId: 'k:l1', epoch: admitted.kind === 'admitted' ? admitted.grant.epoch : '0', batch: 1, ttlMs: 60_000,
    close: true, unusedSlots: 0, releaseNano: 0n, calls: [{ callId: 'c1', chargeNano: 40n, tokens: 1, event: '{}' }],
  });
  t.same(settled, { kind: 'applied', chargedNano: 40n });
  t.same(await redis.hmget(keys.balance(user), 'credits', 'held'), ['960', '0'], 'charged once, the rest released');
  t.same(await redis.script('EXISTS', loadScript('admit').sha, loadScript('settle').sha), [1, 1], 'cached again');
  t.ok(await redis.sismember(keys.ledgerDirtyOf(user), user), 'the user is marked for the ledger writer after the retried settlement');
});
