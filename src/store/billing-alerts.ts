import type { AnySql, TransactionSql } from './db.js';

export interface BillingAlertRow {
  id: string;
  user_id: string;
  threshold_nano: bigint;
  /** Null: the alert mails the account's address (as it is when the alert fires). */
  email: string | null;
  armed: boolean;
  created_at: Date;
  last_triggered_at: Date | null;
}

// Two-key advisory locks live apart from the one-key migration lock; the first key names the use.
const ALERTS_LOCK_CLASS = 72_313_002;

/**
 * Serialises every alert decision of one user until the transaction ends, so an evaluation that read
 * older credits can never disarm (and mail) after a later one re-armed.
 */
export async function lockUserAlerts(tx: TransactionSql, userId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${ALERTS_LOCK_CLASS}, hashtext(${userId}))`;
}

export async function countUserAlerts(sql: AnySql, userId: string): Promise<number> {
  const [row] = await sql<{ n: bigint }[]>`select count(*)::bigint as n from billing_alerts where user_id = ${userId}`;
  return Number(row!.n);
}

export async function insertAlert(sql: AnySql, alert: { id: string; userId: string; thresholdNano: bigint; email: string | null; armed: boolean }): Promise<BillingAlertRow> {
  const [row] = await sql<BillingAlertRow[]>`
    insert into billing_alerts (id, user_id, threshold_nano, email, armed)
    values (${alert.id}, ${alert.userId}, ${alert.thresholdNano.toString()}, ${alert.email}, ${alert.armed})
    returning *`;
  return row!;
}

/** Newest first. */
export async function listUserAlerts(sql: AnySql, userId: string): Promise<BillingAlertRow[]> {
  return sql<BillingAlertRow[]>`
    select * from billing_alerts where user_id = ${userId} order by created_at desc, id desc`;
}

/** True when the caller owned the alert and it is gone. */
export async function deleteUserAlert(sql: AnySql, userId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from billing_alerts where id = ${id} and user_id = ${userId} returning id`;
  return rows.length > 0;
}

/** Of `userIds`, those with at least one alert (the usual answer is none, at the cost of one query). */
export async function usersWithAlerts(sql: AnySql, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await sql<{ user_id: string }[]>`
    select distinct user_id from billing_alerts where user_id = any(${userIds as string[]}::text[])`;
  return rows.map((row) => row.user_id);
}

/** The conditional update that fires an alert: only a still-armed row is returned, so one caller wins. */
export async function disarmCrossed(tx: TransactionSql, userId: string, creditsNano: bigint): Promise<BillingAlertRow[]> {
  return tx<BillingAlertRow[]>`
    update billing_alerts set armed = false, last_triggered_at = now()
    where user_id = ${userId} and armed and threshold_nano > ${creditsNano.toString()}
    returning *`;
}

/** Re-arms the alerts whose threshold the credits are back at or above. */
export async function rearmRecovered(tx: TransactionSql, userId: string, creditsNano: bigint): Promise<number> {
  const rows = await tx`
    update billing_alerts set armed = true
    where user_id = ${userId} and not armed and threshold_nano <= ${creditsNano.toString()}
    returning id`;
  return rows.length;
}

/** Users with an alert whose `armed` disagrees with their credits now (what a missed evaluation leaves). */
export async function usersOutOfStep(sql: AnySql): Promise<string[]> {
  const rows = await sql<{ user_id: string }[]>`
    with balances as (
      select u.user_id, (select coalesce(sum(t.credits_nano), 0) from transactions t where t.user_id = u.user_id) as credits
      from (select distinct user_id from billing_alerts) u
    )
    select distinct a.user_id from billing_alerts a join balances b using (user_id)
    where a.armed <> (b.credits >= a.threshold_nano)`;
  return rows.map((row) => row.user_id);
}
