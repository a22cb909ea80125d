import { randomFillSync } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

// One randomFillSync per 4 KiB of ids instead of one crypto call per id (it showed in profiles).
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** prefix + `length` random alphanumerics, shaped like OpenAI's ids (chatcmpl-..., call_...). */
export function randomId(prefix: string, length: number): string {
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  let id = prefix;
  for (let i = 0; i < length; i++) id += ALPHABET[(pool[poolOffset + i] as number) % ALPHABET.length];
  poolOffset += length;
  return id;
}
