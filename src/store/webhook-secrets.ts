import type { AnySql } from './db.js';
import type { SealedBox } from '../auth/sealed-box.js';
import { ensureAccount } from './accounts.js';
import { newWebhookSecret } from '../tasks/webhook-signature.js';

/** How long a rotated-out secret still signs deliveries, so receivers can switch over. */
export const PREVIOUS_SECRET_MS = 86_400_000;

export interface WebhookSecrets {
  readonly current: string;
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

/** The user's signing secrets, made on first use (concurrent first reads agree on one). */
export async function webhookSecretsOf(sql: AnySql, box: SealedBox, userId: string): Promise<WebhookSecrets> {
  const [found] = await sql<Row[]>`select secret_enc, previous_enc, created_at, rotated_at from webhook_secrets where user_id = ${userId}`;
  if (found) return open(box, found);
  await ensureAccount(sql, userId);
  await sql`insert into webhook_secrets (user_id, secret_enc) values (${userId}, ${box.seal(newWebhookSecret())}) on conflict (user_id) do nothing`;
  const [row] = await sql<Row[]>`select secret_enc, previous_enc, created_at, rotated_at from webhook_secrets where user_id = ${userId}`;
  return open(box, row!);
}

/** A new secret; the old one becomes `previous` and keeps signing for PREVIOUS_SECRET_MS. */
export async function rotateWebhookSecret(sql: AnySql, box: SealedBox, userId: string): Promise<WebhookSecrets> {
  await webhookSecretsOf(sql, box, userId);
  const [row] = await sql<Row[]>`
    update webhook_secrets set previous_enc = secret_enc, secret_enc = ${box.seal(newWebhookSecret())}, rotated_at = now()
    where user_id = ${userId}
    returning secret_enc, previous_enc, created_at, rotated_at`;
  return open(box, row!);
}

/** The secrets a delivery is signed with at `now`: the current one, and the previous one for a day after a rotation. */
export function signingSecrets(secrets: WebhookSecrets, now: Date): string[] {
  const previousValid = secrets.previous !== null && secrets.rotatedAt !== null && now.getTime() - secrets.rotatedAt.getTime() < PREVIOUS_SECRET_MS;
  return previousValid ? [secrets.current, secrets.previous!] : [secrets.current];
}
