// What a relay that forwards an SSE stream byte for byte (OpenAI's to chat clients, Anthropic's to
// Messages clients) needs besides its own parsing: the complete events at each chunk's end, and the
// events kept for counting the generated text after an abort.
import { PendingEvent } from './pending-event.js';

const LF2 = Buffer.from('\n\n');
const CRLF2 = Buffer.from('\r\n\r\n');
/** Complete events kept raw (not copied) for counting, at most; beyond, their text is extracted and they are let go. */
const KEPT_EVENT_BYTES = 1024 * 1024;

/**
 * Splits a stream at its last event boundary: what ends an event goes on, the rest is held (bounded:
 * see PendingEvent). "\r\n\r\n" holds no "\n\n": once the first boundary shows the framing, only that
 * one is looked for.
 */
export class CompleteEvents {
  private readonly carry: PendingEvent;
  private crlfFramed: boolean | undefined;

  constructor(maxEventBytes: number) {
    this.carry = new PendingEvent(maxEventBytes);
  }

  /** The pieces of an event held unfinished. */
  get held(): readonly Buffer[] {
    return this.carry.held;
  }

  /** The complete events `chunk` ends, with what was held before it; undefined when it ends none. */
  push(chunk: Buffer): Buffer | undefined {
    const data = this.carry.add(chunk, this.crlfFramed === false ? 'lf' : 'either');
    if (data === undefined) return undefined;
    // Most chunks end exactly at an event's end: two or four bytes say so, without a search.
    if (this.crlfFramed !== undefined && endsWithSeparator(data, this.crlfFramed)) return data;
    const lf = data.lastIndexOf(LF2);
    const crlf = this.crlfFramed === false ? -1 : data.lastIndexOf(CRLF2);
    const boundary = Math.max(lf === -1 ? -1 : lf + 2, crlf === -1 ? -1 : crlf + 4);
    if (boundary === -1) {
      this.carry.hold(data);
      return undefined;
    }
    this.crlfFramed ??= crlf !== -1;
    if (boundary === data.length) return data;
    this.carry.hold(data.subarray(boundary));
    return data.subarray(0, boundary);
  }

  /** What is held when the stream ends (an unterminated last event). */
  take(): Buffer | undefined {
    return this.carry.take();
  }
}

/** Whether `data` ends with the stream's blank line: `\r\n\r\n` when it is CRLF-framed, `\n\n` when not. */
function endsWithSeparator(data: Buffer, crlf: boolean): boolean {
  const n = data.length;
  if (data[n - 1] !== 0x0a) return false;
  return crlf ? data[n - 2] === 0x0d && data[n - 3] === 0x0a && data[n - 4] === 0x0d : data[n - 2] === 0x0a;
}

/** Where the event holding the byte at `at` starts, and where it ends (past its blank line), in complete events. */
export function eventAround(events: Buffer, at: number): { start: number; end: number } {
  const start = Math.max(0, past(events.lastIndexOf(LF2, at), 2), past(events.lastIndexOf(CRLF2, at), 4));
  const lf = events.indexOf(LF2, at);
  const crlf = events.indexOf(CRLF2, at);
  return { start, end: Math.min(lf === -1 ? events.length : lf + 2, crlf === -1 ? events.length : crlf + 4) };
}

/** The offset just past a separator of `length` bytes found at `at`; -1 when none was found. */
const past = (at: number, length: number) => (at === -1 ? -1 : at + length);

/**
 * The stream's complete events, kept as they came (most streams are short and never counted); past
 * KEPT_EVENT_BYTES their text is extracted (`extract`) and they are let go. The text is bounded by
 * `maxChars`, the most the call's output allowance can stand for.
 */
export class KeptEvents {
  private readonly events: Buffer[] = [];
  private bytes = 0;
  private text = '';

  constructor(private readonly extract: (events: readonly Buffer[]) => string, private readonly maxChars: number) {}

  keep(events: Buffer): void {
    if (this.text.length >= this.maxChars) return;
    this.events.push(events);
    if ((this.bytes += events.length) <= KEPT_EVENT_BYTES) return;
    this.text += this.extract(this.events);
    if (this.text.length > this.maxChars) this.text = this.text.slice(0, this.maxChars);
    this.events.length = 0;
    this.bytes = 0;
  }

  /** The text generated so far, from the events kept and `pending` (an event still unfinished). */
  generatedText(pending: readonly Buffer[]): string {
    const rest = this.text.length < this.maxChars ? this.extract([...this.events, ...pending]) : '';
    return (this.text + rest).slice(0, this.maxChars);
  }
}
