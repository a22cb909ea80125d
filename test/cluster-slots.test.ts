// Issue 19: on a Redis Cluster, a Lua script whose keys span slots fails with CROSSSLOT. Every
// script's KEYS are captured from the production code that builds them (ScriptBatcher, the
// scripts.ts wrappers, ShardLeases, the task runtime's timer pass), for many user, key, lease and
// shard shapes and prefixes, and must share one slot; every key those callers build must be among
// the KEYS (not passed as ARGV), which pins SCRIPT_KEY_COUNTS; and each captured call runs once on a
// real cluster. keySlot itself is checked against the cluster's own CLUSTER KEYSLOT.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { Redis } from 'ioredis';
import { keySlot } from '../src/store/cluster-slot.js';
import { RedisPipe, RespError, type RespCommand, type RespValue } from '../src/store/redis-pipe.js';
import { RedisKeys } from '../src/admission/keys.js';
import { ScriptBatcher } from '../src/admission/script-batcher.js';
import { NO_KEY_LIMITS, SCRIPT_KEY_COUNTS, credit, expireLease, hydrate, loadScript, loadSpend, settleTaskHold, type ScriptName, type ScriptedRedis } from '../src/admission/scripts.js';
import { ShardLeases } from '../src/tasks/shards.js';
import { TaskRuntime } from '../src/tasks/runtime.js';
import { holdIdOf } from '../src/store/tasks.js';
import { startRedisCluster } from './helpers/redis-cluster.js';
import { IdempotencyStore } from '../src/routing/idempotency-store.js';

const SCRIPT_NAMES = Object.keys(SCRIPT_KEY_COUNTS) as ScriptName[];

/** One script call as production code made it. */
interface ScriptCall {
  readonly name: ScriptName;
  readonly keys: readonly string[];
  readonly argv: readonly (string | number)[];
  /** Every key RedisKeys built for the call (pub/sub channels and scan patterns are not keys). */
  readonly built: readonly string[];
}

/** RedisKeys methods whose strings are not keys. */
const NOT_KEYS = new Set(['leaseRecallChannel', 'keyEvents', 'ledgerScanPattern', 'deadlinesScanPattern', 'userIdOf']);

let built: string[] = [];
/** The keys built since the last call reached Redis, and a fresh start. */
function takeBuilt(): string[] {
  const taken = built;
  built = [];
  return taken;
}

/** RedisKeys that notes every key it builds, so a key added to a caller later is checked too. */
function recordingKeys(prefix: string): RedisKeys {
  return new Proxy(new RedisKeys(prefix), {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function' || NOT_KEYS.has(String(property))) return value;
      return (...args: unknown[]) => {
        const key = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (typeof key === 'string') built.push(key);
        return key;
      };
    },
  });
}

const calls: ScriptCall[] = [];
const scriptBySha = new Map(SCRIPT_NAMES.map((name) => [loadScript(name).sha, name]));

/** Replies shaped as each script's callers read them. */
const FAKE_REPLIES: Record<ScriptName, unknown> = {
  admit: [0, 100, 1, 100, 9, 1000, 1], settle: [0, 0], count: [1], hydrate: 1, credit: [0, 100], loadspend: 1,
  expire: [1, 5], task_settle: [0, 5], shard_claim: 1, shard_release: 1, timers_due: [0, -1],
  idempotency_claim: [0], idempotency_complete: 1, idempotency_release: 1,
};

/** A RedisPipe that runs nothing: it notes ScriptBatcher's EVALSHA commands. */
const recordingPipe = {
  exec: async (commands: readonly RespCommand[]): Promise<RespValue[]> => {
    const batchBuilt = takeBuilt();
    return commands.map((command) => {
      const name = scriptBySha.get(String(command[1]));
      if (command[0] !== 'EVALSHA' || !name) return 1; // SADD of the ledger's dirty users: one key per dirty set
      const count = Number(command[2]);
      calls.push({ name, keys: command.slice(3, 3 + count).map(String), argv: command.slice(3 + count), built: batchBuilt });
      return FAKE_REPLIES[name] as RespValue;
    });
  },
  close: async () => {},
} as unknown as RedisPipe;

/** An ioredis client as the scripts.ts wrappers, ShardLeases and the task runtime use it: script commands noted, KEYS first. */
const recordingRedis = new Proxy({}, {
  get(_, property) {
    const name = String(property);
    if (name in SCRIPT_KEY_COUNTS) {
      return async (...args: (string | number)[]) => {
        const count = SCRIPT_KEY_COUNTS[name as ScriptName];
        calls.push({ name: name as ScriptName, keys: args.slice(0, count).map(String), argv: args.slice(count), built: takeBuilt() });
        return FAKE_REPLIES[name as ScriptName];
      };
    }
    if (name === 'multi') {
      takeBuilt(); // ShardLeases' member list: a MULTI of one key, not a script
      const chain = { zadd: () => chain, zremrangebyscore: () => chain, zrange: () => chain, exec: async () => [[null, 1], [null, 0], [null, ['owner-1']]] };
      return () => chain;
    }
    if (name === 'then') return undefined;
    return async () => {
      takeBuilt();
      return 1;
    };
  },
}) as unknown as ScriptedRedis;

const prefixes = ['', 'gw:', 'test:slots:1f2e:'];
const users = ['u1', randomUUID(), 'user:with:colons', 'ünïcødé-☃', 'has{brace'];
const keyIds = ['k1', randomUUID(), 'key}with{braces'];
const shards = [0, 1, 7, 63, 1023];

/** Drives each production caller once per shape. */
async function capture(): Promise<void> {
  for (const prefix of prefixes) {
    const keys = recordingKeys(prefix);
    const batcher = new ScriptBatcher(recordingPipe, keys);
    const idempotency = new IdempotencyStore(recordingRedis, keys);
    for (const userId of users) {
      // Each call names its record again, as each request does (claim, then keep or release).
      const claimOf = () => ({ record: idempotency.recordOf(userId, 'ab'.repeat(32)), fingerprint: 'POST /v1/chat/completions 00', owner: randomUUID() });
      await idempotency.claim(claimOf(), 30_000);
      await idempotency.complete(claimOf(), 60_000, 200, { headers: { 'content-type': 'application/json' }, body: Buffer.from('{}') });
      await idempotency.release(claimOf());
      await hydrate(recordingRedis, keys, userId, 1000n, 1000n, [{ holdId: holdIdOf(keyIds[0]!, randomUUID()), nano: 10n }]);
      await credit(recordingRedis, keys, userId, 2000n);
      for (const keyId of keyIds) {
        const leaseId = `${keyId}:${randomUUID().slice(0, 12)}`;
        await loadSpend(recordingRedis, keys, userId, keyId, Date.now(), 0n, 0n);
        const admitted = batcher.admit({
          userId, keyId, leaseId, callNano: 10n, wantCreditNano: 20n, wantSlots: 2, limit: 100, windowMs: 60_000, ttlMs: 60_000,
          leaseLifeMs: 10_000, keyLimits: { rpm: 100, tph: 10_000, tpd: 100_000, capNano: 1_000_000n, periodStartMs: 0 }, callTokens: 10, recallMs: 500,
        });
        batcher.flush();
        await admitted;
        const settled = batcher.settle({
          userId, keyId, leaseId, epoch: '1', batch: 1, ttlMs: 60_000, close: true, unusedSlots: 1, releaseNano: 10n,
          calls: [{ callId: randomUUID(), chargeNano: 5n, tokens: 3, event: '{}' }], slackNano: 0n, retired: true,
        });
        batcher.flush();
        await settled;
        const counted = batcher.count({ userId, keyId, memberId: leaseId, windowMs: 60_000, leaseLifeMs: 10_000, rpm: true });
        batcher.flush();
        await counted;
        await expireLease(recordingRedis, keys, userId, keyId, leaseId);
        await settleTaskHold(recordingRedis, keys, userId, keyId, holdIdOf(keyId, randomUUID()), 5n);
      }
    }
    const leases = new ShardLeases(recordingRedis, keys, 'owner-1', { shards: 64, leaseMs: 10_000 }, { acquired: () => {}, lost: () => {} }, (error) => { throw error; });
    await leases.tick(); // one member: it claims every shard
    // The runtime's timer pass over the shards it owns (private; called on a stand-in with just what it reads).
    const moveDueTimers = Reflect.get(TaskRuntime.prototype, 'moveDueTimers') as (this: unknown) => Promise<number>;
    await moveDueTimers.call({ options: { redis: recordingRedis, keys }, leases: { tokens: new Map(shards.map((shard) => [shard, 1n])) } });
    await leases.stop(); // releases every shard
  }
}

await capture();

t.test('every script is called by the code captured here', async (t) => {
  t.same([...new Set(calls.map((call) => call.name))].sort(), [...SCRIPT_NAMES].sort());
  t.ok(calls.length > 500, `${calls.length} calls`);
});

t.test('each call\'s KEYS share one slot', async (t) => {
  let checked = 0;
  for (const call of calls) {
    const slotsOfCall = new Set(call.keys.map(keySlot));
    if (slotsOfCall.size !== 1) t.fail(`${call.name} would raise CROSSSLOT: ${JSON.stringify(call.keys)} hash to ${[...slotsOfCall].join(', ')}`);
    else checked++;
  }
  t.equal(checked, calls.length, `${checked} calls, each in one slot`);
});

t.test('SCRIPT_KEY_COUNTS: each call passes every key it built as KEYS, and nothing else', async (t) => {
  for (const name of SCRIPT_NAMES) {
    const ofScript = calls.filter((call) => call.name === name);
    const bad = ofScript.filter((call) => {
      const declared = new Set(call.keys);
      const builtForCall = call.built.filter((key) => !key.includes('ledger:dirty:')); // ScriptBatcher's SADDs, commands of their own
      return call.keys.length !== SCRIPT_KEY_COUNTS[name] || call.keys.some((key) => !builtForCall.includes(key)) || builtForCall.some((key) => !declared.has(key));
    });
    t.equal(bad.length, 0, `${name}: ${SCRIPT_KEY_COUNTS[name]} KEYS${bad[0] ? ` (first mismatch: KEYS ${JSON.stringify(bad[0].keys)}, built ${JSON.stringify(bad[0].built)})` : ''}`);
  }
});

t.test('SCRIPT_KEY_COUNTS: each Lua script reads as many KEYS as it is given', async (t) => {
  for (const name of SCRIPT_NAMES) {
    const code = readFileSync(new URL(`../../lua/${name}.lua`, import.meta.url), 'utf8').replace(/--\[\[[\s\S]*?\]\]/g, '').replace(/--.*$/gm, '');
    const highest = Math.max(0, ...[...code.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1])));
    t.equal(highest, SCRIPT_KEY_COUNTS[name], `${name}.lua reads KEYS[1..${highest}]`);
  }
});

t.test('on a real cluster', async (t) => {
  const cluster = await startRedisCluster({ replicasPerPrimary: 0 });
  const admin = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  const pipe = new RedisPipe(cluster.url);
  t.teardown(async () => {
    await pipe.close(0);
    admin.disconnect();
    await cluster.stop();
  });

  t.test('keySlot agrees with CLUSTER KEYSLOT', async (t) => {
    const samples = ['{u:abc}:bal', '{}x', '{', '}', '{}', '{a', 'a}{b}', '{{a}}', 'x{}{y}', '', 'foo', 'ünï☃', '{☃}x', '😀{😀}', '{u:' + randomUUID() + '}:res'];
    for (const call of calls) samples.push(...call.keys);
    for (let n = 0; n < 2000; n++) {
      const top = [0x80, 0x800, 0x10000, 0x110000][n % 4]!;
      samples.push(Array.from({ length: 1 + (n % 23) }, () => {
        const code = Math.floor(Math.random() * top);
        return code >= 0xd800 && code < 0xe000 ? '{' : String.fromCodePoint(code); // no lone surrogates: they are not UTF-8
      }).join(''));
    }
    const batch = admin.pipeline();
    for (const key of samples) batch.cluster('KEYSLOT', key);
    const answers = (await batch.exec())!;
    const wrong = samples.filter((key, i) => answers[i]![1] !== keySlot(key));
    t.same(wrong.slice(0, 5), [], `${samples.length} keys, none hashed otherwise than Redis does`);
  });

  t.test('every captured call runs without CROSSSLOT', async (t) => {
    const commands: RespCommand[] = calls.map((call) => ['EVAL', loadScript(call.name).lua, call.keys.length, ...call.keys, ...call.argv]);
    const replies: RespValue[] = [];
    for (let at = 0; at < commands.length; at += 200) replies.push(...await pipe.exec(commands.slice(at, at + 200)));
    const failed = replies.map((reply, i) => [calls[i]!.name, reply] as const).filter(([, reply]) => reply instanceof RespError);
    t.same(failed.map(([name, reply]) => `${name}: ${(reply as RespError).message.slice(0, 200)}`), [], `${replies.length} script calls, no error`);
    const keys = new RedisKeys('');
    const [crossing] = await pipe.exec([['EVAL', 'return 1', 2, keys.balance('u1'), keys.balance('u2')]]);
    t.match(String(crossing), /CROSSSLOT/, 'the check can fail: two users\' keys in one script are refused');
  });
});
