/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 over
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the base64 secret after `whsec_`, sent as
 * space-separated `v1,<base64>` entries (one per secret while a rotation is under way). Pure.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and the base64 of 32 random bytes (the HMAC key). */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The HMAC key: the base64 after `whsec_` (the prefix is optional, as in the reference libraries). */
function keyOf(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  // An empty key would still produce signatures, which anyone could forge.
  if (key.length === 0) throw new RangeError('A webhook secret must carry a non-empty base64 key after whsec_.');
  return key;
}

function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

/** The `webhook-signature` header value for `body`, one `v1,<base64>` entry per secret. */
export function signWebhook(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  // An empty header is a delivery no receiver can ever accept: a caller bug, not a signature.
  if (secrets.length === 0) throw new RangeError('signWebhook needs at least one secret.');
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) throw new RangeError('webhook-timestamp must be whole Unix seconds.');
  return secrets.map((secret) => `v1,${signature(secret, id, timestampSeconds, body)}`).join(' ');
}

/**
 * Whether any `v1` entry of `headers.signature` is `secret`'s signature over `body` and the timestamp
 * is within `toleranceSeconds` of `nowSeconds` either way (replays and stale deliveries fail).
 * `body` must be the raw body as received: re-serialised JSON does not verify.
 */
export function verifyWebhook(
  secret: string, headers: { id: string; timestamp: string; signature: string }, body: string, nowSeconds: number, toleranceSeconds = 300,
): boolean {
  if (!/^\d{1,15}$/.test(headers.timestamp)) return false;
  const timestamp = Number(headers.timestamp);
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signature(secret, headers.id, timestamp, body));
  // Every entry is compared (no early exit), each in constant time.
  let matched = false;
  for (const entry of headers.signature.split(' ')) {
    const comma = entry.indexOf(',');
    if (comma < 0 || entry.slice(0, comma) !== 'v1') continue;
    const given = Buffer.from(entry.slice(comma + 1));
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}
