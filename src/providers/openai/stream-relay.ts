import type { ChatStreamRelay } from '../family.js';
import { NO_USAGE, readOpenAiUsage, renderUsage, type NormalizedUsage } from '../usage.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS } from '../pending-event.js';
import { CompleteEvents, KeptEvents, eventAround } from '../relayed-events.js';

const MODEL_KEY = Buffer.from('"model"');
const USAGE_OBJECT = /"usage"\s*:\s*\{/;
/** A `"usage"` key holding an object, JSON's whitespace allowed around the colon (not the `null` every chunk but the last carries). */
const USAGE_OBJECT_BYTES = /"usage"[ \t\n\r]*:[ \t\n\r]*\{/;
const REASONING_KEY = Buffer.from('"reasoning');
/** An `error` key (inside a JSON string a quote is escaped, so these bytes are never generated text). */
const ERROR_KEY = Buffer.from('"error"');
const DATA_FIELD = Buffer.from('data:');

/**
 * Relays an OpenAI-wire SSE stream byte for byte. Per chunk it only finds the last event boundary
 * and swaps the upstream's model name for the gateway's id; it parses just the events that need it:
 * the usage-bearing one (billing, and usage as the spec words it) and, with include_reasoning false,
 * events carrying reasoning. A stream that ends without usage is read once more at its end, for an
 * `error` object (the vendor failed mid-stream: the call failed, nothing is charged).
 */
export class OpenAiStreamRelay implements ChatStreamRelay {
  usage: NormalizedUsage | undefined;
  usageEventAt: number | undefined;
  /** The stream's complete events as received, kept so an aborted stream can be counted. */
  private readonly kept: KeptEvents;
  private readonly framing: CompleteEvents;
  /** The upstream's `"model":"…"` bytes and the gateway's, as latin1 text (see transform). */
  private modelNeedle: string | undefined;
  private readonly modelReplacement: string;
  failure: string | undefined;
  /** The complete events of the last two pushes: where a vendor's error object, which ends its stream, is. */
  private previousEvents: Buffer | undefined;
  private lastEvents: Buffer | undefined;

  /**
   * `maxEventBytes`: the longest event held before it ends (longer breaks the stream); `maxGeneratedChars`:
   * the generated text kept for counting (the call's output allowance at the longest a token can be).
   */
  constructor(private readonly modelId: string, private readonly includeReasoning: boolean, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, maxGeneratedChars = DEFAULT_MAX_GENERATED_CHARS, private readonly costOf?: (usage: NormalizedUsage) => number) {
    this.modelReplacement = Buffer.from(`"model":${JSON.stringify(modelId)}`).toString('latin1');
    this.framing = new CompleteEvents(maxEventBytes);
    this.kept = new KeptEvents(generatedText, maxGeneratedChars);
  }

  /** Takes an upstream chunk; returns the bytes to forward now (complete events only). */
  push(chunk: Buffer): Buffer | undefined {
    this.usageEventAt = undefined;
    const events = this.framing.push(chunk);
    if (events === undefined) return undefined;
    this.kept.keep(events);
    this.previousEvents = this.lastEvents;
    this.lastEvents = events;
    return this.transform(events);
  }

  generatedText(): string {
    return this.kept.generatedText(this.framing.held);
  }

  /** Whatever is left when the upstream ends (an unterminated last event); a stream without usage is read for an error. */
  flush(): Buffer | undefined {
    const rest = this.framing.take();
    if (rest) this.kept.keep(rest);
    if (this.usage === undefined) for (const events of [this.previousEvents, this.lastEvents, rest]) if (events) this.readErrors(events);
    return rest ? this.transform(rest) : undefined;
  }

  /**
   * The events are searched as latin1 text, one character per byte, so an index in the text is an
   * offset in the bytes and nothing is decoded: V8's string search costs a fraction of a
   * `Buffer#indexOf` call, which a search per event made the relay's largest cost.
   */
  private transform(events: Buffer): Buffer {
    if (!this.modelNeedle) this.learnModelNeedle(events);
    if (!this.includeReasoning && events.includes(REASONING_KEY)) return this.transformEvents(events);
    const text = events.toString('latin1');
    const usageAt = text.search(USAGE_OBJECT_BYTES);
    if (usageAt === -1) return this.replaceModel(events, text);
    // Only the event carrying the usage is parsed; the events around it take the fast path.
    const { start, end } = eventAround(events, usageAt);
    const before = this.replaceModel(events.subarray(0, start), text.slice(0, start));
    const hadUsage = this.usage !== undefined;
    const usageEvent = Buffer.from(this.transformEvent(events.toString('utf8', start, end)));
    if (!hadUsage && this.usage) this.usageEventAt = before.length;
    const after = end < events.length ? this.transform(events.subarray(end)) : undefined;
    return after ? Buffer.concat([before, usageEvent, after]) : Buffer.concat([before, usageEvent]);
  }

  /** Whether an event holding an `error` key is an error object (the vendor's failure) rather than a chunk: the call then failed. */
  private readErrors(events: Buffer): void {
    for (let at = events.indexOf(ERROR_KEY); at !== -1 && this.failure === undefined; at = events.indexOf(ERROR_KEY, at + ERROR_KEY.length)) {
      const { start, end } = eventAround(events, at);
      const dataAt = events.indexOf(DATA_FIELD, start);
      if (dataAt === -1 || dataAt >= end) continue;
      try {
        const event = JSON.parse(events.toString('utf8', dataAt + DATA_FIELD.length, end)) as { error?: unknown; choices?: unknown };
        if (typeof event.error === 'object' && event.error !== null && event.choices === undefined) {
          this.failure = 'upstream_error';
          this.usage = NO_USAGE;
        }
      } catch {
        // not JSON: passed on as it came
      }
    }
  }

  /** The upstream answers with its own (often dated) model name; remember its exact bytes once. */
  private learnModelNeedle(events: Buffer): void {
    const start = events.indexOf(MODEL_KEY);
    if (start === -1) return;
    let i = start + MODEL_KEY.length;
    while (events[i] === 0x20 || events[i] === 0x3a) i++; // spaces and the colon
    if (events[i] !== 0x22) return;
    const end = events.indexOf(0x22, i + 1);
    if (end === -1) return;
    this.modelNeedle = events.toString('latin1', start, end + 1);
  }

  /** `events` (`text`: the same as latin1) with each of the upstream's model names swapped for the gateway's id. */
  private replaceModel(events: Buffer, text = events.toString('latin1')): Buffer {
    const needle = this.modelNeedle;
    if (!needle) return events;
    let at = text.indexOf(needle);
    if (at === -1) return events;
    let out = '';
    let from = 0;
    for (; at !== -1; at = text.indexOf(needle, from)) {
      out += text.slice(from, at) + this.modelReplacement;
      from = at + needle.length;
    }
    return Buffer.from(from < text.length ? out + text.slice(from) : out, 'latin1');
  }

  /** The slow path, for the few events that need parsing. */
  private transformEvents(events: Buffer): Buffer {
    const text = events.toString('utf8');
    const out: string[] = [];
    for (const event of text.split(/(?<=\r?\n\r?\n)/)) {
      out.push(this.transformEvent(event));
    }
    return Buffer.from(out.join(''));
  }

  private transformEvent(event: string): string {
    const dataAt = event.indexOf('data:');
    if (dataAt === -1) return event;
    const payload = event.slice(dataAt + 5).trim();
    const needsUsage = USAGE_OBJECT.test(payload);
    const needsReasoning = !this.includeReasoning && payload.includes('"reasoning');
    if (!needsUsage && !needsReasoning) return this.replaceModel(Buffer.from(event)).toString('utf8');
    let chunk: Record<string, any>;
    try {
      chunk = JSON.parse(payload);
    } catch {
      return event;
    }
    if (typeof chunk.model === 'string') chunk.model = this.modelId;
    if (needsUsage) {
      const usage = readOpenAiUsage(chunk.usage);
      if (usage && this.failure === undefined) {
        this.usage = usage;
        chunk.usage = renderUsage(usage, this.costOf?.(usage));
      }
    }
    if (needsReasoning && Array.isArray(chunk.choices)) {
      for (const choice of chunk.choices) {
        if (choice?.delta) {
          delete choice.delta.reasoning_content;
          delete choice.delta.reasoning;
        }
      }
    }
    return `${event.slice(0, dataAt)}data: ${JSON.stringify(chunk)}\n\n`;
  }
}

/** The text an OpenAI-wire stream generated so far (content, reasoning, tool-call arguments), for counting after an abort. */
export function generatedText(received: readonly Buffer[]): string {
  const bytes = received.length === 1 ? received[0]! : Buffer.concat(received as Buffer[]);
  let generated = '';
  // Each line that starts with `data:`; other lines (comments, other fields) are skipped unread.
  for (let at = bytes.indexOf(DATA_FIELD); at !== -1; at = bytes.indexOf(DATA_FIELD, at + DATA_FIELD.length)) {
    if (at > 0 && bytes[at - 1] !== 0x0a) continue;
    const end = bytes.indexOf(0x0a, at);
    const payload = bytes.toString('utf8', at + DATA_FIELD.length, end === -1 ? bytes.length : end).trim();
    // Only a chunk that may carry text is parsed (keep-alives and empty deltas are not).
    if (!payload.startsWith('{') || !(payload.includes('"content"') || payload.includes('"reasoning_content"') || payload.includes('"tool_calls"'))) continue;
    let chunk: Record<string, any>;
    try {
      chunk = JSON.parse(payload);
    } catch {
      continue; // the last line may be cut off mid-event
    }
    for (const choice of Array.isArray(chunk.choices) ? chunk.choices : []) {
      const delta = choice?.delta ?? {};
      if (typeof delta.content === 'string') generated += delta.content;
      if (typeof delta.reasoning_content === 'string') generated += delta.reasoning_content;
      for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
        if (typeof call?.function?.name === 'string') generated += call.function.name;
        if (typeof call?.function?.arguments === 'string') generated += call.function.arguments;
      }
    }
  }
  return generated;
}
