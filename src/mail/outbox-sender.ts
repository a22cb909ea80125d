import type { Transporter } from 'nodemailer';
import type { AnySql, Sql } from '../store/db.js';
import { claimDueMails, markMailFailed, markMailSent, type OutboxMail } from '../store/mail-outbox.js';

const BATCH = 20;
/** Longer than a send can take with the timeouts below, so a claimed mail is not sent twice by two senders. */
const LEASE_MS = 5 * 60_000;
const MAX_RETRY_MS = 60 * 60_000;
/** How long a sent mail stays in `mail_outbox` (the record that it went, and to whom). */
export const SENT_MAIL_RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * Deletes the mails sent more than `keepDays` before `now`. Unsent mails are kept whatever their age
 * (queued without SMTP_URL, or still retried): no mail is dropped before it went. Returns the rows deleted.
 */
export async function deleteSentMails(sql: AnySql, now = new Date(), keepDays = SENT_MAIL_RETENTION_DAYS): Promise<number> {
  const result = await sql`delete from mail_outbox where sent_at < ${new Date(now.getTime() - keepDays * DAY_MS)}`;
  return result.count;
}

export interface OutboxSenderOptions {
  /** `smtp://` or `smtps://` URL of the relay, with credentials when it needs them. */
  readonly smtpUrl: string;
  readonly from: string;
  /** Pause between polls when nothing is due. */
  readonly pollMs: number;
  /** First retry delay after a failed send; doubles per attempt, at most an hour. */
  readonly retryMs: number;
  readonly onSent?: (mail: OutboxMail) => void;
  readonly onFailed?: (mail: OutboxMail, error: unknown) => void;
  readonly onError: (error: unknown) => void;
}

/** Delay before the next attempt after `attempts` failed ones. */
export function retryDelayMs(baseMs: number, attempts: number): number {
  return Math.min(baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30), MAX_RETRY_MS);
}

/**
 * Sends the mail outbox over SMTP. Rows are claimed with `for update skip locked` (any number of
 * processes may run one), sent one by one, and marked sent only after the relay accepted them; a
 * failure records the error and backs off. No unsent row is ever dropped (sent ones: `deleteSentMails`).
 */
export class OutboxSender {
  /** Loaded with nodemailer at the first pass: a gateway without SMTP_URL never loads it (about 5 MiB per process). */
  private transport: Transporter | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private woken = false;

  constructor(private readonly sql: Sql, private readonly options: OutboxSenderOptions) {}

  private async openTransport(): Promise<Transporter> {
    const { default: nodemailer } = await import('nodemailer');
    return (this.transport ??= nodemailer.createTransport({
      url: this.options.smtpUrl,
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 30_000,
      disableFileAccess: true,
      disableUrlAccess: true,
    }));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Polls now (a mail was just queued in this process). */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Stops after the mail being sent now; unsent rows stay queued for the next start. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp?.();
    await this.loop;
    this.transport?.close();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      let claimed = 0;
      try {
        claimed = await this.pass();
      } catch (error) {
        this.options.onError(error);
      }
      if (claimed < BATCH && !this.woken) await this.sleep(this.options.pollMs);
    }
  }

  /** Claims and sends one batch; returns how many were claimed. */
  async pass(): Promise<number> {
    const mails = await claimDueMails(this.sql, BATCH, LEASE_MS);
    const transport = mails.length > 0 ? this.transport ?? await this.openTransport() : undefined;
    for (const mail of mails) {
      if (!this.running) {
        // Not attempted: due again at once for the next sender.
        await markMailFailed(this.sql, mail.id, 'sender stopped before sending', 0);
        continue;
      }
      try {
        await transport!.sendMail({ from: this.options.from, to: mail.recipient, subject: mail.subject, text: mail.body });
      } catch (error) {
        const message = (error instanceof Error ? error.message : String(error)).slice(0, 1000);
        await markMailFailed(this.sql, mail.id, message, retryDelayMs(this.options.retryMs, mail.attempts));
        this.options.onFailed?.(mail, error);
        continue;
      }
      await markMailSent(this.sql, mail.id);
      this.options.onSent?.(mail);
    }
    return mails.length;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }
}
