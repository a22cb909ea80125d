// RedisPipe against a real Redis Cluster of three primaries: a batch split over every node and
// reassembled in order, scripts routed by their first key, a slot moving mid-test (ASK while it
// migrates, MOVED once it has moved, TRYAGAIN for a split multi-key command), and a killed node
// failing only its own commands.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Redis } from 'ioredis';
import { RedisPipe, RespError, type RespValue } from '../src/store/redis-pipe.js';
import { keySlot } from '../src/store/cluster-slot.js';
import { startRedisCluster } from './helpers/redis-cluster.js';

const cluster = await startRedisCluster({ replicasPerPrimary: 0 });
const admins = cluster.nodes.map((node) => new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0 }));
for (const admin of admins) admin.on('error', () => {});
const pipe = new RedisPipe(cluster.url);
t.teardown(async () => {
  await pipe.close(0);
  for (const admin of admins) admin.disconnect();
  await cluster.stop();
});

/** Which node (index into cluster.nodes) owns each slot now. */
async function owners(): Promise<number[]> {
  const ranges = (await admins[0]!.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const slots: number[] = [];
  for (const [start, end, [, port]] of ranges) for (let slot = start; slot <= end; slot++) slots[slot] = cluster.nodes.findIndex((node) => node.port === port);
  return slots;
}

/** One key per node, by its index: `k<i>:<n>` for the first n that lands there. */
function keysPerNode(slots: readonly number[]): string[] {
  const found: string[] = [];
  for (let n = 0; found.filter(Boolean).length < cluster.nodes.length; n++) {
    const node = slots[keySlot(`k:${n}`)]!;
    found[node] ??= `k:${n}`;
  }
  return found;
}

/** Redirects each node has answered so far (INFO errorstats). */
async function redirects(kind: 'MOVED' | 'ASK'): Promise<number[]> {
  return Promise.all(admins.map(async (admin) => {
    const match = new RegExp(`errorstat_${kind}:count=(\\d+)`).exec(await admin.info('errorstats'));
    return Number(match?.[1] ?? 0);
  }));
}

const nodeId = (i: number) => admins[i]!.call('CLUSTER', 'MYID') as Promise<string>;
const slots = await owners();
const keys = keysPerNode(slots);

t.test('a batch with keys on all three primaries: each command on its owner, no redirect, replies in order', async (t) => {
  const moved = await redirects('MOVED');
  const replies = await pipe.exec([
    ['SET', keys[0]!, 'zero'], ['SET', keys[1]!, 'one'], ['SET', keys[2]!, 'two'],
    ['GET', keys[2]!], ['GET', keys[0]!], ['INCR', keys[1]!], ['GET', keys[1]!],
    ['PING'],
  ]);
  t.same(replies.slice(0, 5), ['OK', 'OK', 'OK', 'two', 'zero']);
  t.ok(replies[5] instanceof RespError && /not an integer/.test(replies[5].message), 'an error reply is its own command\'s value');
  t.same(replies.slice(6), ['one', 'PONG']);
  for (let i = 0; i < 3; i++) t.equal(await admins[i]!.get(keys[i]!), ['zero', 'one', 'two'][i], `node ${i} holds its key`);
  t.same(await redirects('MOVED'), moved, 'the slot map sent every command to its owner');

  const batches = await Promise.all(Array.from({ length: 30 }, (_, n) => pipe.exec([
    ['ECHO', `a${n}`], ['GET', keys[n % 3]!], ['GET', keys[(n + 1) % 3]!], ['ECHO', `b${n}`],
  ])));
  batches.forEach((replies, n) => {
    const names = ['zero', 'one', 'two'];
    if (replies.join() !== [`a${n}`, names[n % 3], names[(n + 1) % 3], `b${n}`].join()) t.fail(`batch ${n} came back wrong: ${replies.join()}`);
  });
  t.pass('30 batches in flight at once, each in order');
});

t.test('the URL\'s password goes to every node (a Redis without one accepts it)', async (t) => {
  const withPassword = new RedisPipe(cluster.url.replace('://', '://:spare-password@'));
  t.teardown(() => withPassword.close());
  t.same(await withPassword.exec(keys.map((key) => ['GET', key])), ['zero', 'one', 'two']);
});

t.test('EVALSHA and EVAL route by their first key (argument 3); with no key, to any node', async (t) => {
  const lua = "redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1]), #KEYS}";
  const shas = await Promise.all(admins.map((admin) => admin.script('LOAD', lua) as Promise<string>));
  const sha = shas[0]!;
  const moved = await redirects('MOVED');
  const tagged = (i: number, name: string) => `{${keys[i]}}:${name}`; // same slot as keys[i]
  const replies = await pipe.exec([
    ['EVALSHA', sha, 1, tagged(0, 's'), 'e0'],
    ['EVALSHA', sha, 2, tagged(1, 's'), tagged(1, 't'), 'e1'],
    ['evalsha', sha, 1, tagged(2, 's'), 'e2'],
    ['EVAL', lua, 1, tagged(1, 'u'), 'e3'],
    ['EVAL', 'return ARGV[1]', 0, 'nokey'],
  ]);
  t.same(replies, [['e0', 1], ['e1', 2], ['e2', 1], ['e3', 1], 'nokey']);
  t.same(await redirects('MOVED'), moved, 'no script was sent to a node that does not own its keys');
  t.equal(await admins[2]!.get(tagged(2, 's')), 'e2');
});

t.test('a slot moving to another node: ASK while it migrates, MOVED once it has moved, answered all along', async (t) => {
  const [from, to, other] = [0, 1, 2];
  // A slot of its own on node 0, so the other tests' keys stay where they are.
  let n = 0;
  while (slots[keySlot(`mig:${n}`)] !== from || keySlot(`mig:${n}`) === keySlot(keys[from]!)) n++;
  const tag = `{mig:${n}}`;
  const slot = keySlot(tag);
  const [a, b, c] = [`${tag}:a`, `${tag}:b`, `${tag}:c`];
  t.same(await pipe.exec([['SET', a, 'A'], ['SET', c, 'C']]), ['OK', 'OK']);

  await admins[to]!.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', await nodeId(from));
  await admins[from]!.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', await nodeId(to));
  let asked = await redirects('ASK');
  let moved = await redirects('MOVED');
  // b is not on the source: it asks the target, which creates it there.
  t.same(await pipe.exec([['SET', b, 'B'], ['GET', a], ['GET', keys[1]!]]), ['OK', 'A', 'one']);
  t.equal((await redirects('ASK'))[from], asked[from]! + 1, 'the source answered ASK for the missing key');
  t.same(await pipe.exec([['GET', c]]), ['C'], 'a key still on the source');
  t.same(await redirects('MOVED'), moved, 'ASK did not move the slot in the map (the target would have answered MOVED)');

  await admins[from]!.call('MIGRATE', '127.0.0.1', cluster.nodes[to]!.port, '', 0, 5000, 'KEYS', a);
  asked = await redirects('ASK');
  t.same(await pipe.exec([['GET', a], ['EVAL', 'return redis.call(\'GET\', KEYS[1])', 1, a]]), ['A', 'A'], 'a migrated key, by ASK');
  t.equal((await redirects('ASK'))[from], asked[from]! + 2);

  const started = Date.now();
  const split = await pipe.exec([['GET', keys[2]!], ['MGET', a, c], ['GET', c]]);
  t.equal(split[0], 'two');
  t.ok(split[1] instanceof RespError && /^TRYAGAIN/.test(split[1].message), `keys split between the nodes: TRYAGAIN, after retries (${String(split[1])})`);
  t.ok(Date.now() - started >= 200, 'retried after pauses before giving up');
  t.equal(split[2], 'C');

  await admins[from]!.call('MIGRATE', '127.0.0.1', cluster.nodes[to]!.port, '', 0, 5000, 'KEYS', c);
  const toId = await nodeId(to);
  for (const i of [to, from, other]) await admins[i]!.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
  moved = await redirects('MOVED');
  t.same(await pipe.exec([['GET', c], ['GET', keys[0]!], ['GET', a], ['GET', b], ['MGET', a, c]]), ['C', 'zero', 'A', 'B', ['A', 'C']]);
  t.ok((await redirects('MOVED'))[from]! > moved[from]!, 'the old owner answered MOVED');
  moved = await redirects('MOVED');
  await sleep(300); // the map is read again after a MOVED (at most every 250 ms)
  t.same(await pipe.exec([['GET', a], ['GET', keys[0]!]]), ['A', 'zero']);
  t.same(await redirects('MOVED'), moved, 'the map now has the slot at its new owner');
  for (const key of [a, b, c]) t.ok(await admins[to]!.exists(key), `${key} is on the new owner`);
});

t.test('a killed node fails only its own commands; a batch all on it rejects', async (t) => {
  const victim = 2;
  admins[victim]!.disconnect();
  const node = cluster.nodes[victim]!;
  node.process.kill('SIGKILL');
  await new Promise((resolve) => node.process.once('exit', resolve));
  const replies: RespValue[] = await pipe.exec([['GET', keys[0]!], ['GET', keys[2]!], ['GET', keys[1]!], ['EVAL', 'return 1', 1, keys[2]!]]);
  t.equal(replies[0], 'zero');
  t.ok(replies[1] instanceof RespError && /lost|ECONNREFUSED|ECONNRESET|unreachable/.test(replies[1].message), `the dead node's command failed: ${String(replies[1])}`);
  t.equal(replies[2], 'one');
  t.ok(replies[3] instanceof RespError, 'so did its script');
  await t.rejects(pipe.exec([['GET', keys[2]!]]), 'a batch only for the dead node rejects, as for a single node');
  t.same(await pipe.exec([['GET', keys[1]!]]), ['one'], 'the others still answer');
});
