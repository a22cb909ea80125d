import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const PUBLIC_ID_LENGTH = 12;
export const SECRET_LENGTH = 48;

export interface ParsedApiKey {
  readonly prefix: string;
  readonly provisioning: boolean;
  readonly publicId: string;
  readonly secret: string;
}

const KEY_PATTERN = /^sk-([a-z0-9]{1,8})-(?:(prov)-)?([A-Za-z0-9]{12})-([A-Za-z0-9]{48})$/;

/** Parses `sk-<prefix>-[prov-]<public_id:12>-<secret:48>`; undefined for anything else. */
export function parseApiKey(key: string): ParsedApiKey | undefined {
  const match = KEY_PATTERN.exec(key);
  if (!match) return undefined;
  return { prefix: match[1]!, provisioning: match[2] === 'prov', publicId: match[3]!, secret: match[4]! };
}

/** Uniform base62 (rejection sampling, so no character is likelier than another). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function generateApiKey(prefix: string, provisioning: boolean): { key: string; publicId: string; secret: string } {
  const publicId = randomBase62(PUBLIC_ID_LENGTH);
  const secret = randomBase62(SECRET_LENGTH);
  return { key: `sk-${prefix}-${provisioning ? 'prov-' : ''}${publicId}-${secret}`, publicId, secret };
}

/** Keyed hash of a secret; only this is stored. */
export function hashSecret(keySecret: string, secret: string): Buffer {
  return createHmac('sha256', keySecret).update(secret).digest();
}

export function secretMatches(keySecret: string, secret: string, storedHash: Uint8Array): boolean {
  const computed = hashSecret(keySecret, secret);
  return storedHash.length === computed.length && timingSafeEqual(computed, storedHash);
}

/** Display form: first 12 characters, an ellipsis, last 4. */
export function maskKey(key: string): string {
  return `${key.slice(0, 12)}...${key.slice(-4)}`;
}
