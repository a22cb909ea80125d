import type { ChatStreamRelay } from '../family.js';
import { readOpenAiUsage, renderUsage, type NormalizedUsage } from '../usage.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS, PendingEvent } from '../pending-event.js';

const LF2 = Buffer.from('\n\n');
const CRLF2 = Buffer.from('\r\n\r\n');
const MODEL_KEY = Buffer.from('"model"');
const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const USAGE_KEY = Buffer.from('"usage"');
const REASONING_KEY = Buffer.from('"reasoning');
const DATA_FIELD = Buffer.from('data:');
/** Complete events kept raw (not copied) for counting, at most; beyond, their text is extracted and they are let go. */
const KEPT_EVENT_BYTES = 1024 * 1024;

/**
 * Relays an OpenAI-wire SSE stream byte for byte. Per chunk it only finds the last event boundary
 * and swaps the upstream's model name for the gateway's id; it parses just the events that need it:
 * the usage-bearing one (billing, and usage as the spec words it) and, with include_reasoning false,
 * events carrying reasoning.
 */
export class OpenAiStreamRelay implements ChatStreamRelay {
  usage: NormalizedUsage | undefined;
  usageEventAt: number | undefined;
  /** The stream's complete events as received, kept (not copied) so an aborted stream can be counted; see keep. */
  private readonly events: Buffer[] = [];
  private eventBytes = 0;
  /** The text extracted from the events let go so far. */
  private generated = '';
  private readonly carry: PendingEvent;
  private crlfFramed: boolean | undefined;
  private modelNeedle: Buffer | undefined;
  private readonly modelReplacement: Buffer;

  /**
   * `maxEventBytes`: the longest event held before it ends (longer breaks the stream); `maxGeneratedChars`:
   * the generated text kept for counting (the call's output allowance at the longest a token can be).
   */
  constructor(private readonly modelId: string, private readonly includeReasoning: boolean, maxEventBytes = DEFAULT_MAX_EVENT_BYTES, private readonly maxGeneratedChars = DEFAULT_MAX_GENERATED_CHARS) {
    this.modelReplacement = Buffer.from(`"model":${JSON.stringify(modelId)}`);
    this.carry = new PendingEvent(maxEventBytes);
  }

  /** Takes an upstream chunk; returns the bytes to forward now (complete events only). */
  push(chunk: Buffer): Buffer | undefined {
    this.usageEventAt = undefined;
    // "\r\n\r\n" contains no "\n\n": once the first boundary shows the framing, look only for that one.
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
    this.keep(events);
    return this.transform(events);
  }

  generatedText(): string {
    const pending = this.generated.length < this.maxGeneratedChars ? generatedText([...this.events, ...this.carry.held]) : '';
    return (this.generated + pending).slice(0, this.maxGeneratedChars);
  }

  /** Whatever is left when the upstream ends (an unterminated last event). */
  flush(): Buffer | undefined {
    const rest = this.carry.take();
    if (!rest) return undefined;
    this.keep(rest);
    return this.transform(rest);
  }

  /**
   * Keeps complete events for generatedText as they are (most streams are short, and never counted);
   * past KEPT_EVENT_BYTES their text is extracted and kept instead, up to maxGeneratedChars.
   */
  private keep(events: Buffer): void {
    if (this.generated.length >= this.maxGeneratedChars) return;
    this.events.push(events);
    if ((this.eventBytes += events.length) <= KEPT_EVENT_BYTES) return;
    this.generated += generatedText(this.events);
    if (this.generated.length > this.maxGeneratedChars) this.generated = this.generated.slice(0, this.maxGeneratedChars);
    this.events.length = 0;
    this.eventBytes = 0;
  }

  private transform(events: Buffer): Buffer {
    if (!this.modelNeedle) this.learnModelNeedle(events);
    if (!this.includeReasoning && events.includes(REASONING_KEY)) return this.transformEvents(events);
    const usageAt = usageObjectAt(events);
    if (usageAt === -1) return this.replaceModel(events);
    // Only the event carrying the usage is parsed; the events around it take the fast path.
    const start = Math.max(0, past(events.lastIndexOf(LF2, usageAt), 2), past(events.lastIndexOf(CRLF2, usageAt), 4));
    const lf = events.indexOf(LF2, usageAt);
    const crlf = events.indexOf(CRLF2, usageAt);
    const end = Math.min(lf === -1 ? events.length : lf + 2, crlf === -1 ? events.length : crlf + 4);
    const before = this.replaceModel(events.subarray(0, start));
    const hadUsage = this.usage !== undefined;
    const usageEvent = Buffer.from(this.transformEvent(events.toString('utf8', start, end)));
    if (!hadUsage && this.usage) this.usageEventAt = before.length;
    const after = end < events.length ? this.transform(events.subarray(end)) : undefined;
    return after ? Buffer.concat([before, usageEvent, after]) : Buffer.concat([before, usageEvent]);
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
    this.modelNeedle = Buffer.from(events.subarray(start, end + 1));
  }

  private replaceModel(events: Buffer): Buffer {
    const needle = this.modelNeedle;
    if (!needle) return events;
    let at = events.indexOf(needle);
    if (at === -1) return events;
    const parts: Buffer[] = [];
    let from = 0;
    while (at !== -1) {
      parts.push(events.subarray(from, at), this.modelReplacement);
      from = at + needle.length;
      at = events.indexOf(needle, from);
    }
    parts.push(events.subarray(from));
    return Buffer.concat(parts);
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
      if (usage) {
        this.usage = usage;
        chunk.usage = renderUsage(usage);
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

/** Where the first `"usage"` key holding an object is (not the `null` every chunk but the last carries), or -1. */
function usageObjectAt(events: Buffer): number {
  for (let at = events.indexOf(USAGE_KEY); at !== -1; at = events.indexOf(USAGE_KEY, at + USAGE_KEY.length)) {
    let i = at + USAGE_KEY.length;
    while (events[i] === 0x20 || events[i] === 0x3a) i++; // spaces and the colon
    if (events[i] === 0x7b) return at; // {
  }
  return -1;
}

/** The offset just past a separator of `length` bytes found at `at`; -1 when none was found. */
const past = (at: number, length: number) => (at === -1 ? -1 : at + length);

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
