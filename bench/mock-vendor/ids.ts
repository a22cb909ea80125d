import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** prefix + `length` random alphanumerics, shaped like OpenAI's ids (chatcmpl-..., call_...). */
export function randomId(prefix: string, length: number): string {
  const bytes = randomBytes(length);
  let id = prefix;
  for (let i = 0; i < length; i++) id += ALPHABET[(bytes[i] as number) % ALPHABET.length];
  return id;
}
