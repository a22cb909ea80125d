import type { AnySql, Sql } from './db.js';

export interface OutboxMail {
  id: string;
  user_id: string;
  alert_id: string | null;
  recipient: string;
  subject: string;
  body: string;
  attempts: number;
}

/** Queued in the caller's transaction: the mail exists exactly when the decision to send it committed. */
export async function enqueueMail(sql: AnySql, mail: { id: string; userId: string; alertId: string | null; recipient: string; subject: string; body: string }): Promise<void> {
  await sql`
    insert into mail_outbox (id, user_id, alert_id, recipient, subject, body)
    values (${mail.id}, ${mail.userId}, ${mail.alertId}, ${mail.recipient}, ${mail.subject}, ${mail.body})`;
}

/**
 * Claims up to `limit` due unsent mails for `leaseMs`: their next attempt moves past the lease and the
 * attempt is counted before sending, so another process skips them, and a sender that dies mid-send
 * leaves them to be retried when the lease ends.
 */
export async function claimDueMails(sql: Sql, limit: number, leaseMs: number): Promise<OutboxMail[]> {
  return sql<OutboxMail[]>`
    update mail_outbox set attempts = attempts + 1, next_attempt_at = now() + ${leaseMs} * interval '1 millisecond'
    where id in (
      select id from mail_outbox
      where sent_at is null and next_attempt_at <= now()
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    )
    returning id, user_id, alert_id, recipient, subject, body, attempts`;
}

export async function markMailSent(sql: AnySql, id: string): Promise<void> {
  await sql`update mail_outbox set sent_at = now(), last_error = null where id = ${id}`;
}

export async function markMailFailed(sql: AnySql, id: string, error: string, retryInMs: number): Promise<void> {
  await sql`
    update mail_outbox set last_error = ${error}, next_attempt_at = now() + ${retryInMs} * interval '1 millisecond'
    where id = ${id} and sent_at is null`;
}
