// The Lua scripts against the test's Redis, under a key prefix of their own that the test's teardown
// deletes: a client with the scripts defined, the keys, and the hot path's pipe and batcher.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { ScriptBatcher } from '../../src/admission/script-batcher.js';
import { RedisPipe } from '../../src/store/redis-pipe.js';
import { connectRedis } from '../../src/store/redis-connect.js';
import { RedisKeys } from '../../src/admission/keys.js';
import { defineScripts, type ScriptedRedis } from '../../src/admission/scripts.js';
import { deleteKeysWithPrefix } from '../../bench/namespaces.js';

export interface LuaTestbed {
  readonly prefix: string;
  readonly redis: ScriptedRedis;
  readonly keys: RedisKeys;
  readonly pipe: RedisPipe;
  readonly scripts: ScriptBatcher;
}

export function luaTestbed(t: Test, label: string, redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'): LuaTestbed {
  const prefix = `test:${label}:${randomBytes(4).toString('hex')}:`;
  const redis = defineScripts(connectRedis(redisUrl));
  const keys = new RedisKeys(prefix);
  const pipe = new RedisPipe(redisUrl);
  t.teardown(async () => {
    await deleteKeysWithPrefix(redis, prefix);
    redis.disconnect();
    await pipe.close();
  });
  return { prefix, redis, keys, pipe, scripts: new ScriptBatcher(pipe, keys) };
}
