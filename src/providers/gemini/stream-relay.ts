import { NO_USAGE, renderUsage, type NormalizedUsage } from '../usage.js';
import { sseErrorEvent } from '../../http/sse.js';
import type { AnswerOptions } from '../family.js';
import { finishReasonOf, generatedOf, readGeminiUsage, readParts } from './response.js';
import type { GeminiResponse } from './wire.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS, PendingEvent } from '../pending-event.js';

const LF = 0x0a;

interface ChoiceState {
  started: boolean;
  toolCalls: number;
  finished: boolean;
}

/**
 * Translates Gemini's `streamGenerateContent?alt=sse` (each `data:` event a whole GenerateContentResponse)
 * into chat.completion.chunk events. Stateful: events may be split anywhere across upstream chunks.
 * Usage is taken from the last usageMetadata once every candidate has finished; the usage chunk
 * and `data: [DONE]` go out from `flush()`. An event carrying `error` (Google's mid-stream failure)
 * ends the stream with the gateway's error event after what came before it: the call failed.
 */
export class GeminiStreamRelay {
  usage: NormalizedUsage | undefined;
  /** Set when Google reported an error in the stream: the call failed (logged 502, charged nothing). */
  failure: string | undefined;
  private readonly carry: PendingEvent;
  private lastUsage: NormalizedUsage | undefined;
  private readonly choices = new Map<number, ChoiceState>();
  private generated = '';
  private readonly maxGeneratedChars: number;
  private readonly head: string;

  constructor(modelId: string, private readonly options: AnswerOptions) {
    this.head = `{"id":${JSON.stringify(options.id)},"object":"chat.completion.chunk","created":${options.created},"model":${JSON.stringify(modelId)},`;
    this.carry = new PendingEvent(options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES);
    this.maxGeneratedChars = options.maxGeneratedChars ?? DEFAULT_MAX_GENERATED_CHARS;
  }

  push(chunk: Buffer): Buffer | undefined {
    if (this.failure !== undefined) return undefined;
    const data = this.carry.add(chunk, 'either');
    if (data === undefined) return undefined;
    // Events end at a blank line; cut after the last complete line and parse whole events only.
    const lastLine = data.lastIndexOf(LF);
    if (lastLine === -1) {
      this.carry.hold(data);
      return undefined;
    }
    const complete = data.subarray(0, lastLine + 1).toString('utf8');
    const blank = lastBlankLineEnd(complete);
    if (blank === -1) {
      this.carry.hold(data);
      return undefined;
    }
    const rest = Buffer.byteLength(complete.slice(0, blank));
    if (rest < data.length) this.carry.hold(Buffer.from(data.subarray(rest)));
    const out = this.translate(complete.slice(0, blank));
    return out === '' ? undefined : Buffer.from(out);
  }

  flush(): Buffer | undefined {
    if (this.failure !== undefined) return undefined;
    const rest = this.carry.take()?.toString('utf8') ?? '';
    let out = rest.trim() === '' ? '' : this.translate(`${rest}\n\n`);
    if (this.failure !== undefined) return Buffer.from(out);
    this.usage ??= this.lastUsage;
    if (this.usage) out += `data: ${this.head}"choices":[],"usage":${JSON.stringify(renderUsage(this.usage, this.options.costOf?.(this.usage)))}}\n\n`;
    out += 'data: [DONE]\n\n';
    return Buffer.from(out);
  }

  generatedText(): string {
    return this.generated.slice(0, this.maxGeneratedChars);
  }

  private translate(events: string): string {
    let out = '';
    for (const event of events.split(/\r?\n\r?\n/)) {
      const payload = dataOf(event);
      if (payload === undefined) continue;
      let response: GeminiResponse & { error?: { message?: string } };
      try {
        response = JSON.parse(payload);
      } catch {
        throw new Error('the upstream sent an event that is not JSON');
      }
      if (response.error) {
        this.failure = 'upstream_error';
        this.usage = NO_USAGE;
        return out + sseErrorEvent('upstream_error', `The upstream vendor failed mid-stream: ${response.error.message ?? 'unknown error'}`);
      }
      out += this.translateResponse(response);
    }
    return out;
  }

  private translateResponse(response: GeminiResponse): string {
    let out = '';
    const usage = readGeminiUsage(response.usageMetadata);
    if (usage) this.lastUsage = usage;
    const candidates = Array.isArray(response.candidates) ? response.candidates : [];
    if (candidates.length === 0 && response.promptFeedback?.blockReason && this.choices.size === 0) {
      this.choices.set(0, { started: true, toolCalls: 0, finished: true });
      out += this.event(0, { role: 'assistant', content: '' }, null);
      out += this.event(0, {}, 'content_filter');
    }
    candidates.forEach((candidate, position) => {
      const index = typeof candidate?.index === 'number' ? candidate.index : position;
      let state = this.choices.get(index);
      if (!state) this.choices.set(index, (state = { started: false, toolCalls: 0, finished: false }));
      const parts = readParts(candidate?.content?.parts);
      if (this.generated.length < this.maxGeneratedChars) this.generated += generatedOf(parts);
      const delta: Record<string, unknown> = {};
      if (!state.started) {
        delta.role = 'assistant';
        state.started = true;
      }
      if (this.options.includeReasoning && parts.thoughts !== '') delta.reasoning_content = parts.thoughts;
      if (parts.text !== '' || delta.role) delta.content = parts.text;
      if (parts.calls.length > 0) {
        delta.tool_calls = parts.calls.map((call) => ({ index: state.toolCalls++, ...call }));
      }
      if (Object.keys(delta).length > 0) out += this.event(index, delta, null);
      if (candidate?.finishReason && !state.finished) {
        state.finished = true;
        out += this.event(index, {}, finishReasonOf(candidate.finishReason, state.toolCalls > 0));
      }
    });
    if (this.lastUsage && this.choices.size > 0 && [...this.choices.values()].every((s) => s.finished)) this.usage = this.lastUsage;
    return out;
  }

  private event(index: number, delta: Record<string, unknown>, finishReason: string | null): string {
    return `data: ${this.head}"choices":[{"index":${index},"delta":${JSON.stringify(delta)},"finish_reason":${JSON.stringify(finishReason)}}]}\n\n`;
  }
}

/** The end of the last blank line (an event boundary) in `text`, or -1. */
function lastBlankLineEnd(text: string): number {
  const lf = text.lastIndexOf('\n\n');
  const crlf = text.lastIndexOf('\r\n\r\n');
  return Math.max(lf === -1 ? -1 : lf + 2, crlf === -1 ? -1 : crlf + 4);
}

/** The `data:` lines of one SSE event joined, or undefined when it has none. */
function dataOf(event: string): string | undefined {
  let data: string | undefined;
  for (const line of event.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const value = line.slice(line.startsWith('data: ') ? 6 : 5);
    data = data === undefined ? value : `${data}\n${value}`;
  }
  return data === undefined || data.trim() === '' ? undefined : data;
}
