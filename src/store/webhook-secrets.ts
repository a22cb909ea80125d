/**
 * `webhook_secrets`: each user's Standard Webhooks signing secret, sealed at rest (it must be shown
 * again, so it is encrypted rather than hashed), and the one it replaced while receivers switch over.
 */
import type { AnySql } from './db.js';
import type { SealedBox } from '../auth/sealed-box.js';
import { ensureAccount } from './accounts.js';
import { newWebhookSecret } from '../tasks/webhook-signature.js';

/** How long a rotated-out secret still signs deliveries, so receivers can switch over. */
export const PREVIOUS_SECRET_MS = 86_400_000;

export interface WebhookSecrets {
  readonly current: string;
  /** The secret `current` replaced; it signs beside it until `rotatedAt + PREVIOUS_SECRET_MS`. */
  readonly previous: string | null;
  readonly createdAt: Date;
  readonly rotatedAt: Date | null;
}

interface Row {
  secret_enc: Buffer;
  previous_enc: Buffer | null;
  created_at: Date;
  rotated_at: Date | null;
}

const open = (box: SealedBox, row: Row): WebhookSecrets => ({
  current: box.open(row.secret_enc),
  previous: row.previous_enc ? box.open(row.previous_enc) : null,
  createdAt: row.created_at,
  rotatedAt: row.rotated_at,
});

async function selectRow(sql: AnySql, userId: string): Promise<Row | undefined> {
  const [row] = await sql<Row[]>`select secret_enc, previous_enc, created_at, rotated_at from webhook_secrets where user_id = ${userId}`;
  return row;
}

/**
 * The user's signing secrets, made on first use. Concurrent first reads agree on one: each tries the
 * insert, `on conflict do nothing` lets exactly one land (the others wait for it), then all read it.
 */
export async function webhookSecretsOf(sql: AnySql, box: SealedBox, userId: string): Promise<WebhookSecrets> {
  const found = await selectRow(sql, userId);
  if (found) return open(box, found);
  await ensureAccount(sql, userId);
  const [inserted] = await sql<Row[]>`
    insert into webhook_secrets (user_id, secret_enc) values (${userId}, ${box.seal(newWebhookSecret())})
    on conflict (user_id) do nothing
    returning secret_enc, previous_enc, created_at, rotated_at`;
  const row = inserted ?? await selectRow(sql, userId);
  if (!row) throw new Error(`webhook_secrets: no row for user ${userId} after its insert.`);
  return open(box, row);
}

/**
 * A new secret for the user; the one it replaces becomes `previous` (dropping any older one) with
 * `rotated_at = now()`. One statement, so concurrent rotations serialise on the row and none is lost.
 * A user without a secret yet just gets one: there is nothing to hand over, so no `previous`.
 */
export async function rotateWebhookSecret(sql: AnySql, box: SealedBox, userId: string): Promise<WebhookSecrets> {
  await ensureAccount(sql, userId);
  const [row] = await sql<Row[]>`
    insert into webhook_secrets (user_id, secret_enc) values (${userId}, ${box.seal(newWebhookSecret())})
    on conflict (user_id) do update
      set previous_enc = webhook_secrets.secret_enc, secret_enc = excluded.secret_enc, rotated_at = now()
    returning secret_enc, previous_enc, created_at, rotated_at`;
  return open(box, row!);
}

/** Until when `previous` still signs deliveries; null when there is none. */
export function previousValidUntil(secrets: WebhookSecrets): Date | null {
  return secrets.previous !== null && secrets.rotatedAt !== null ? new Date(secrets.rotatedAt.getTime() + PREVIOUS_SECRET_MS) : null;
}

/** The secrets a delivery is signed with at `now`: the current one, and the previous one for a day after a rotation. */
export function signingSecrets(secrets: WebhookSecrets, now: Date): string[] {
  const until = previousValidUntil(secrets);
  return until !== null && now.getTime() < until.getTime() ? [secrets.current, secrets.previous!] : [secrets.current];
}
