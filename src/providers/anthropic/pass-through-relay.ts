import type { Usage } from '@anthropic-ai/sdk/resources/messages';
import type { ChatStreamRelay } from '../family.js';
import type { NormalizedUsage } from '../usage.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS, PendingEvent } from '../pending-event.js';
import { mergeUsage, readAnthropicUsage } from './answer.js';
import { anthropicErrorEvent } from '../../http/messages/errors.js';

const LF2 = Buffer.from('\n\n');
const CRLF2 = Buffer.from('\r\n\r\n');
/**
 * The event types billing reads, as JSON string tokens: inside a JSON string a quote is escaped, so
 * these bytes occur only as a key or a value of the event itself, never in generated text.
 */
const NEEDLES = [Buffer.from('"message_start"'), Buffer.from('"message_delta"'), Buffer.from('"message_stop"'), Buffer.from('"error"')];
const DATA_FIELD = Buffer.from('data:');
/** Complete events kept raw (not copied) for counting, at most; beyond, their text is extracted and they are let go. */
const KEPT_EVENT_BYTES = 1024 * 1024;
const NO_TOKENS: NormalizedUsage = Object.freeze({ promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

/**
 * Relays Anthropic's Messages SSE stream to a client of the same API byte for byte (thinking
 * signatures and block types added later pass untouched). Per chunk it finds the last event boundary
 * and looks for the few events billing reads (`message_start`, `message_delta`, `message_stop`,
 * `error`), parsing only those. Usage is known at `message_delta`, whose event goes out after the call
 * settles. An upstream `error` event, or an end before `message_delta`, is a failed call: zero usage,
 * nothing charged (the error event reaches the client, or one is added when the stream just ends).
 */
export class AnthropicPassThroughRelay implements ChatStreamRelay {
  usage: NormalizedUsage | undefined;
  usageEventAt: number | undefined;
  private readonly carry: PendingEvent;
  private crlfFramed: boolean | undefined;
  private startUsage: Partial<Usage> = {};
  /** `message_delta` came: the usage is final. */
  private finished = false;
  /** `message_stop` or `error` came: nothing more to read. */
  private ended = false;
  private readonly events: Buffer[] = [];
  private eventBytes = 0;
  private generated = '';

  constructor(maxEventBytes = DEFAULT_MAX_EVENT_BYTES, private readonly maxGeneratedChars = DEFAULT_MAX_GENERATED_CHARS) {
    this.carry = new PendingEvent(maxEventBytes);
  }

  push(chunk: Buffer): Buffer | undefined {
    this.usageEventAt = undefined;
    const data = this.carry.add(chunk, this.crlfFramed === false ? 'lf' : 'either');
    if (data === undefined) return undefined;
    const lf = data.lastIndexOf(LF2);
    const crlf = this.crlfFramed === false ? -1 : data.lastIndexOf(CRLF2);
    const boundary = Math.max(lf === -1 ? -1 : lf + 2, crlf === -1 ? -1 : crlf + 4);
    if (boundary === -1) {
      this.carry.hold(data);
      return undefined;
    }
    this.crlfFramed ??= crlf !== -1;
    const events = boundary < data.length ? data.subarray(0, boundary) : data;
    if (boundary < data.length) this.carry.hold(data.subarray(boundary));
    this.read(events);
    return events;
  }

  /** The upstream ended: an unterminated last event, and the end the stream lacks (a `message_stop`, or an error). */
  flush(): Buffer | undefined {
    let out = '';
    const rest = this.carry.take();
    if (rest) {
      this.read(rest);
      out = rest.toString('utf8') + (rest.includes(LF2) || rest.includes(CRLF2) ? '' : '\n\n');
    }
    if (!this.ended) {
      this.ended = true;
      if (this.finished) out += 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
      else {
        this.usage = NO_TOKENS;
        out += anthropicErrorEvent('api_error', 'The upstream stream ended before the message was complete.');
      }
    }
    return out === '' ? undefined : Buffer.from(out);
  }

  errorEvent(_code: string, message: string): string {
    return anthropicErrorEvent('api_error', message);
  }

  generatedText(): string {
    const pending = this.generated.length < this.maxGeneratedChars ? generatedText([...this.events, ...this.carry.held]) : '';
    return (this.generated + pending).slice(0, this.maxGeneratedChars);
  }

  /** Reads the events billing needs out of complete events, and keeps them for counting. */
  private read(events: Buffer): void {
    this.keep(events);
    if (this.ended) return;
    let lastStart = -1;
    for (const needle of NEEDLES) {
      for (let at = events.indexOf(needle); at !== -1; at = events.indexOf(needle, at + needle.length)) {
        const start = Math.max(0, past(events.lastIndexOf(LF2, at), 2), past(events.lastIndexOf(CRLF2, at), 4));
        if (start === lastStart) continue; // one event naming two needles (an error's "error" key and type)
        lastStart = start;
        const lfEnd = events.indexOf(LF2, at);
        const crlfEnd = events.indexOf(CRLF2, at);
        const end = Math.min(lfEnd === -1 ? events.length : lfEnd, crlfEnd === -1 ? events.length : crlfEnd);
        this.apply(events.toString('utf8', start, end), start);
      }
    }
  }

  private apply(event: string, start: number): void {
    const payload = dataOf(event);
    if (payload === '') return;
    let parsed: { type?: unknown; message?: { usage?: Partial<Usage> }; usage?: Partial<Usage> };
    try {
      parsed = JSON.parse(payload);
    } catch {
      return; // passed on as it came; a stream that never completes is not charged
    }
    switch (parsed.type) {
      case 'message_start':
        this.startUsage = parsed.message?.usage ?? {};
        break;
      case 'message_delta': {
        const hadUsage = this.usage !== undefined;
        this.usage = readAnthropicUsage(mergeUsage(this.startUsage, parsed.usage)) ?? NO_TOKENS;
        this.finished = true;
        if (!hadUsage) this.usageEventAt = start;
        break;
      }
      case 'message_stop':
        this.ended = true;
        if (!this.finished) this.usage = NO_TOKENS;
        break;
      case 'error':
        this.ended = true;
        this.usage = NO_TOKENS;
        break;
    }
  }

  /** Keeps complete events for generatedText as they are; past KEPT_EVENT_BYTES their text is extracted instead. */
  private keep(events: Buffer): void {
    if (this.generated.length >= this.maxGeneratedChars) return;
    this.events.push(events);
    if ((this.eventBytes += events.length) <= KEPT_EVENT_BYTES) return;
    this.generated += generatedText(this.events);
    if (this.generated.length > this.maxGeneratedChars) this.generated = this.generated.slice(0, this.maxGeneratedChars);
    this.events.length = 0;
    this.eventBytes = 0;
  }
}

/** The offset just past a separator of `length` bytes found at `at`; -1 when none was found. */
const past = (at: number, length: number) => (at === -1 ? -1 : at + length);

/** The `data:` of an SSE event (its lines joined, as the SSE rules join them). */
function dataOf(event: string): string {
  let payload = '';
  for (const line of event.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const value = line.slice(line[5] === ' ' ? 6 : 5).replace(/\r$/, '');
    payload = payload === '' ? value : `${payload}\n${value}`;
  }
  return payload;
}

/** The text an Anthropic stream generated (text, thinking, tool names and inputs), for counting after an abort. */
export function generatedText(received: readonly Buffer[]): string {
  const bytes = received.length === 1 ? received[0]! : Buffer.concat(received as Buffer[]);
  let generated = '';
  for (let at = bytes.indexOf(DATA_FIELD); at !== -1; at = bytes.indexOf(DATA_FIELD, at + DATA_FIELD.length)) {
    if (at > 0 && bytes[at - 1] !== 0x0a) continue;
    const end = bytes.indexOf(0x0a, at);
    const payload = bytes.toString('utf8', at + DATA_FIELD.length, end === -1 ? bytes.length : end).trim();
    if (!payload.startsWith('{') || !(payload.includes('"content_block_delta"') || payload.includes('"content_block_start"'))) continue;
    let event: { delta?: Record<string, unknown>; content_block?: Record<string, unknown> };
    try {
      event = JSON.parse(payload);
    } catch {
      continue; // the last line may be cut off mid-event
    }
    const delta = event.delta ?? {};
    for (const field of ['text', 'thinking', 'partial_json'] as const) if (typeof delta[field] === 'string') generated += delta[field];
    const block = event.content_block ?? {};
    for (const field of ['text', 'thinking', 'name'] as const) if (typeof block[field] === 'string') generated += block[field];
  }
  return generated;
}
