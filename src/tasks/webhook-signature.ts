/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 over
 * `{webhook-id}.{webhook-timestamp}.{body}`, keyed by the base64 secret after `whsec_`, sent as
 * space-separated `v1,<base64>` entries (one per secret while a rotation is under way). Pure.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';

export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
}

/** The `webhook-signature` header value for `body`, one entry per secret. */
export function signWebhook(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => `v1,${signature(secret, id, timestampSeconds, body)}`).join(' ');
}

/** Whether any entry of `headers.signature` is `secret`'s signature and the timestamp is within `toleranceSeconds` of now. */
export function verifyWebhook(
  secret: string, headers: { id: string; timestamp: string; signature: string }, body: string, nowSeconds: number, toleranceSeconds = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!/^\d+$/.test(headers.timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signature(secret, headers.id, timestamp, body));
  return headers.signature.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
