import { randomUUID } from 'node:crypto';
import type { Sql } from '../store/db.js';
import { ledgerTotals } from '../store/ledger.js';
import { enqueueMail } from '../store/mail-outbox.js';
import { accountEmail, type AccountEmail } from '../store/accounts.js';
import {
  countUserAlerts, disarmCrossed, insertAlert, lockUserAlerts, rearmRecovered, usersOutOfStep, usersWithAlerts, type BillingAlertRow,
} from '../store/billing-alerts.js';
import { alertMail } from './alert-mail.js';

export const MAX_ALERTS_PER_USER = 20;

/** Why an alert mails no one: the account has no address, or the address it would mail is not verified. */
export type UndeliverableReason = 'no_address' | 'address_unverified';

/** Where an alert mails now (`recipient`), or why it mails no one. */
export type AlertDelivery =
  | { readonly recipient: string; readonly deliverable: true }
  | { readonly recipient: string | null; readonly deliverable: false; readonly reason: UndeliverableReason };

/**
 * The one rule for where an alert mails: only an address proven to belong to the account (the
 * account's address when a JWT marked it `email_verified: true` or an operator set it). An alert
 * without its own address follows the account's; an alert's own address is mailed only while it is
 * that verified address (ignoring case), so no one can have the gateway mail a stranger.
 */
export function alertDelivery(alertEmail: string | null, account: AccountEmail | null): AlertDelivery {
  const recipient = alertEmail ?? account?.email ?? null;
  if (recipient === null) return { recipient, deliverable: false, reason: 'no_address' };
  const verified = account !== null && account.verified && account.email.toLowerCase() === recipient.toLowerCase();
  return verified ? { recipient, deliverable: true } : { recipient, deliverable: false, reason: 'address_unverified' };
}

export type CreateAlertResult = { kind: 'created'; row: BillingAlertRow } | { kind: 'limit' };

/**
 * Creates an alert armed only when the credits are at or above its threshold now: an alert set above
 * the current credits waits for them to rise before it can fire (no mail for a crossing that
 * happened before it existed). Under the user's alert lock, so the limit holds against concurrent creates.
 * `email` null: the alert follows the account's address as it is when the alert fires (alertDelivery).
 */
export async function createAlert(sql: Sql, input: { userId: string; thresholdNano: bigint; email: string | null }): Promise<CreateAlertResult> {
  return sql.begin(async (tx): Promise<CreateAlertResult> => {
    await lockUserAlerts(tx, input.userId);
    if ((await countUserAlerts(tx, input.userId)) >= MAX_ALERTS_PER_USER) return { kind: 'limit' };
    const { credits } = await ledgerTotals(tx, input.userId);
    const row = await insertAlert(tx, { id: randomUUID(), userId: input.userId, thresholdNano: input.thresholdNano, email: input.email, armed: credits >= input.thresholdNano });
    return { kind: 'created', row };
  });
}

/**
 * Brings the alerts of one user in step with the credits in Postgres, in one transaction under the
 * user's alert lock: an armed alert whose threshold is above the credits is disarmed and its mail
 * queued together (the conditional update lets one evaluator win, the lock orders evaluators), and a
 * disarmed alert whose threshold the credits reached again is re-armed. Each fired alert mails as
 * alertDelivery says, with the account's address as it is now; an undeliverable one fires without a
 * mail, which its `last_triggered_at` shows. Returns the mails queued.
 */
async function evaluateUser(sql: Sql, userId: string): Promise<number> {
  return sql.begin(async (tx) => {
    await lockUserAlerts(tx, userId);
    const { credits } = await ledgerTotals(tx, userId);
    const fired = await disarmCrossed(tx, userId, credits);
    const account = fired.length ? await accountEmail(tx, userId) : null;
    let queued = 0;
    for (const alert of fired) {
      const delivery = alertDelivery(alert.email, account);
      if (!delivery.deliverable) continue;
      const mail = alertMail({ alertId: alert.id, userId, thresholdNano: alert.threshold_nano, creditsNano: credits, at: alert.last_triggered_at ?? new Date() });
      await enqueueMail(tx, { id: randomUUID(), userId, alertId: alert.id, recipient: delivery.recipient, ...mail });
      queued++;
    }
    await rearmRecovered(tx, userId, credits);
    return queued;
  });
}

/** Evaluates the users among `userIds` that have alerts; returns the mails queued. */
export async function evaluateAlerts(sql: Sql, userIds: readonly string[]): Promise<number> {
  let queued = 0;
  for (const userId of await usersWithAlerts(sql, userIds)) queued += await evaluateUser(sql, userId);
  return queued;
}

/** Evaluates every user whose alerts disagree with their credits (a process died before evaluating). */
export async function sweepAlerts(sql: Sql): Promise<number> {
  return evaluateAlerts(sql, await usersOutOfStep(sql));
}

export interface AlertMonitorOptions {
  readonly sweepMs: number;
  readonly onQueued: (mails: number) => void;
  readonly onError: (error: unknown) => void;
}

/**
 * The main thread's evaluator: users named by the ledger writer after each commit, and a periodic
 * sweep. One evaluation pass at a time; users named meanwhile are collected for the next pass.
 */
export class AlertMonitor {
  private pending = new Set<string>();
  private sweepDue = false;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sql: Sql, private readonly options: AlertMonitorOptions) {}

  start(): void {
    this.sweepDue = true; // a previous process may have died between a commit and its evaluation
    this.kick();
    this.timer = setInterval(() => {
      this.sweepDue = true;
      this.kick();
    }, this.options.sweepMs);
    this.timer.unref();
  }

  usersWritten(userIds: readonly string[]): void {
    for (const userId of userIds) this.pending.add(userId);
    this.kick();
  }

  /** Stops the sweep and waits for the evaluations of users already named. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.sweepDue = false;
    while (this.loop) await this.loop;
  }

  private kick(): void {
    this.loop ??= this.drain().finally(() => {
      this.loop = undefined;
      if (this.pending.size || this.sweepDue) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.size || this.sweepDue) {
      const users = [...this.pending];
      this.pending.clear();
      const sweep = this.sweepDue;
      this.sweepDue = false;
      try {
        const queued = (users.length ? await evaluateAlerts(this.sql, users) : 0) + (sweep ? await sweepAlerts(this.sql) : 0);
        if (queued) this.options.onQueued(queued);
      } catch (error) {
        this.options.onError(error); // the next sweep evaluates whoever this pass missed
      }
    }
  }
}
