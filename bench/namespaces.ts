// Test and bench runs share the machine's Redis and Postgres, each in its own namespace: a key
// prefix and a database of its own, removed at the end (never FLUSHALL: others use the server too).
import { isCluster, scanKeys, type RedisClient } from '../src/store/redis-connect.js';
import postgres from 'postgres';

/** SCAN + DEL of every key under `prefix` (on every primary of a cluster). */
export async function deleteKeysWithPrefix(redis: RedisClient, prefix: string): Promise<void> {
  for await (const found of scanKeys(redis, `${prefix}*`)) {
    // On a cluster one DEL names keys of one slot only.
    if (isCluster(redis)) await Promise.all(found.map((key) => redis.del(key)));
    else await redis.del(...found);
  }
}

/** Drops a database, disconnecting whoever still uses it; `adminUrl` names any other database of the server. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
  } finally {
    await admin.end();
  }
}
