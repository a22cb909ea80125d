/**
 * A real SMTP server (smtp-server) on a local port that keeps every message it accepts, for tests
 * that check what the gateway mails. No TLS, no AUTH: the gateway talks plain SMTP to it.
 */
import { once } from 'node:events';
import { SMTPServer } from 'smtp-server';
import { eventually } from './billing-checks.js';

export interface ReceivedMail {
  readonly from: string;
  readonly to: string[];
  readonly subject: string;
  /** The decoded plain-text body. */
  readonly text: string;
  readonly raw: string;
}

/** Headers (unfolded, lower-case names) and body of a raw message. */
function parseMessage(raw: string): { headers: Map<string, string>; body: string } {
  const split = raw.indexOf('\r\n\r\n');
  const head = (split < 0 ? raw : raw.slice(0, split)).replace(/\r\n[ \t]+/g, ' ');
  const headers = new Map<string, string>();
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body: split < 0 ? '' : raw.slice(split + 4) };
}

function decodeBody(body: string, encoding: string | undefined): string {
  switch ((encoding ?? '7bit').toLowerCase()) {
    case 'quoted-printable':
      return Buffer.from(body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
    case 'base64':
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    default:
      return body;
  }
}

/** RFC 2047 encoded words (=?UTF-8?Q?...?= / =?UTF-8?B?...?=) in a header value. */
function decodeHeader(value: string): string {
  return value.replace(/=\?([^?]+)\?([QB])\?([^?]*)\?=\s*/gi, (_, _charset: string, kind: string, text: string) =>
    kind.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (__, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8'));
}

export class SmtpSink {
  private constructor(private readonly server: SMTPServer, readonly port: number, readonly messages: ReceivedMail[]) {}

  /** Starts on `port` (0: any free port) on 127.0.0.1. */
  static async start(port = 0): Promise<SmtpSink> {
    const received: ReceivedMail[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          const { headers, body } = parseMessage(raw);
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: decodeHeader(headers.get('subject') ?? ''),
            text: decodeBody(body, headers.get('content-transfer-encoding')),
            raw,
          });
          callback();
        });
      },
    });
    const listening = server.listen(port, '127.0.0.1');
    await once(listening, 'listening');
    return new SmtpSink(server, (listening.address() as { port: number }).port, received);
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** Waits until at least `count` messages arrived; returns all of them. */
  async waitFor(count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> {
    return eventually(`${count} mail(s) at the SMTP sink (have ${this.messages.length})`, () => (this.messages.length >= count ? [...this.messages] : undefined), timeoutMs);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
