// Test and bench runs share the machine's Redis and Postgres, each in its own namespace: a key
// prefix and a database of its own, removed at the end (never FLUSHALL: others use the server too).
import type { Redis } from 'ioredis';
import postgres from 'postgres';

/** SCAN + DEL of every key under `prefix`. */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (found.length > 0) await redis.del(...found);
  } while (cursor !== '0');
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
