import type { Usage } from '@anthropic-ai/sdk/resources/messages';
import type { ChatStreamRelay } from '../family.js';
import { NO_USAGE, type NormalizedUsage } from '../usage.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS } from '../pending-event.js';
import { CompleteEvents, KeptEvents, eventAround } from '../relayed-events.js';
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
  failure: string | undefined;
  private readonly framing: CompleteEvents;
  private readonly kept: KeptEvents;
  private startUsage: Partial<Usage> = {};
  /** `message_delta` came: the usage is final. */
  private finished = false;
  /** `message_stop` or `error` came: nothing more to read. */
  private ended = false;

  constructor(maxEventBytes = DEFAULT_MAX_EVENT_BYTES, maxGeneratedChars = DEFAULT_MAX_GENERATED_CHARS) {
    this.framing = new CompleteEvents(maxEventBytes);
    this.kept = new KeptEvents(generatedText, maxGeneratedChars);
  }

  push(chunk: Buffer): Buffer | undefined {
    this.usageEventAt = undefined;
    const events = this.framing.push(chunk);
    if (events === undefined) return undefined;
    this.read(events);
    return events;
  }

  /** The upstream ended: an unterminated last event, and the end the stream lacks (a `message_stop`, or an error). */
  flush(): Buffer | undefined {
    let out = '';
    const rest = this.framing.take();
    if (rest) {
      this.read(rest);
      out = rest.toString('utf8') + (rest.includes(LF2) || rest.includes(CRLF2) ? '' : '\n\n');
    }
    if (!this.ended) {
      this.ended = true;
      if (this.finished) out += 'event: message_stop\ndata: {"type":"message_stop"}\n\n';
      else {
        this.usage = NO_USAGE;
        this.failure = 'upstream_stream_broken';
        out += anthropicErrorEvent('api_error', 'The upstream stream ended before the message was complete.');
      }
    }
    return out === '' ? undefined : Buffer.from(out);
  }

  /** Anthropic's error event; none once the stream has its end (the upstream's error or message_stop, or the one flush added). */
  errorEvent(_code: string, message: string): string {
    return this.ended ? '' : anthropicErrorEvent('api_error', message);
  }

  generatedText(): string {
    return this.kept.generatedText(this.framing.held);
  }

  /** Reads the events billing needs out of complete events, and keeps them for counting. */
  private read(events: Buffer): void {
    this.kept.keep(events);
    if (this.ended) return;
    let lastStart = -1;
    for (const needle of NEEDLES) {
      for (let at = events.indexOf(needle); at !== -1; at = events.indexOf(needle, at + needle.length)) {
        const { start, end } = eventAround(events, at);
        if (start === lastStart) continue; // one event naming two needles (an error's "error" key and type)
        lastStart = start;
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
        this.usage = readAnthropicUsage(mergeUsage(this.startUsage, parsed.usage)) ?? NO_USAGE;
        this.finished = true;
        if (!hadUsage) this.usageEventAt = start;
        break;
      }
      case 'message_stop':
        this.ended = true;
        if (!this.finished) {
          this.usage = NO_USAGE;
          this.failure = 'upstream_stream_broken';
        }
        break;
      case 'error':
        this.ended = true;
        this.usage = NO_USAGE;
        this.failure = 'upstream_error';
        break;
    }
  }
}

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
