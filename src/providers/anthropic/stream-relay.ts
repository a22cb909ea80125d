import type { RawMessageStreamEvent, StopReason, Usage } from '@anthropic-ai/sdk/resources/messages';
import type { AnswerOptions, ChatStreamRelay } from '../family.js';
import { NO_USAGE, renderUsage, type NormalizedUsage } from '../usage.js';
import { sseErrorEvent } from '../../http/sse.js';
import { finishReason, mergeUsage, readAnthropicUsage } from './answer.js';
import { JSON_RESPONSE_TOOL } from './request.js';
import { DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_GENERATED_CHARS, PendingEvent } from '../pending-event.js';

type Block = { kind: 'text' | 'thinking' | 'json' | 'other' } | { kind: 'tool'; toolIndex: number };

const DONE = 'data: [DONE]\n\n';

/**
 * Translates Anthropic's Messages SSE stream into chat.completion.chunk events. Bytes are held until
 * an event is complete (events and UTF-8 characters may split anywhere). Usage is known at
 * `message_delta` (input counts from `message_start`, possibly updated there; output cumulative).
 * An upstream `error` event, or an end before `message_delta`, is a failed call: it becomes the
 * gateway's SSE error event, no `[DONE]`, and zero usage so nothing is charged, as for a broken stream.
 */
export class AnthropicStreamRelay implements ChatStreamRelay {
  usage: NormalizedUsage | undefined;
  failure: string | undefined;
  private readonly carry: PendingEvent;
  private readonly blocks = new Map<number, Block>();
  private tools = 0;
  private jsonResponse = false;
  private started = false;
  private startUsage: Partial<Usage> = {};
  private stopReason: StopReason | null | undefined;
  private finished = false;
  private ended = false;
  private generated: string[] = [];
  private generatedChars = 0;
  private readonly maxGeneratedChars: number;
  private readonly head: string;
  /** The stream's event separator, learnt from its first event ("\r\n\r\n" holds no "\n\n"). */
  private separator: string | undefined;

  constructor(modelId: string, private readonly options: AnswerOptions) {
    this.head = `{"id":${JSON.stringify(options.id)},"object":"chat.completion.chunk","created":${options.created},"model":${JSON.stringify(modelId)},"choices":`;
    this.carry = new PendingEvent(options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES);
    this.maxGeneratedChars = options.maxGeneratedChars ?? DEFAULT_MAX_GENERATED_CHARS;
  }

  push(chunk: Buffer): Buffer | undefined {
    const data = this.carry.add(chunk, this.separator === undefined ? 'either' : this.separator === '\n\n' ? 'lf' : 'crlf');
    if (data === undefined) return undefined;
    let out = '';
    let from = 0;
    this.separator ??= framing(data);
    const separator = this.separator;
    if (separator !== undefined) {
      for (let end = data.indexOf(separator, from); end !== -1; end = data.indexOf(separator, from)) {
        out += this.event(data.toString('utf8', from, end));
        from = end + separator.length;
      }
    }
    if (from < data.length) this.carry.hold(Buffer.from(data.subarray(from)));
    return out === '' ? undefined : Buffer.from(out);
  }

  flush(): Buffer | undefined {
    let out = '';
    const rest = this.carry.take();
    if (rest) out += this.event(rest.toString('utf8'));
    if (!this.ended) out += this.finished ? this.close() : this.fail('upstream_stream_broken', 'The upstream stream ended before the message was complete.');
    return out === '' ? undefined : Buffer.from(out);
  }

  generatedText(): string {
    return this.generated.join('').slice(0, this.maxGeneratedChars);
  }

  private event(text: string): string {
    if (this.ended) return '';
    const payload = dataOf(text);
    if (payload === '') return '';
    let event: RawMessageStreamEvent | { type: 'error'; error?: { type?: string; message?: string } } | { type: 'ping' };
    try {
      event = JSON.parse(payload);
    } catch {
      return this.fail('upstream_invalid_response', 'The upstream stream carried an event that is not JSON.');
    }
    switch (event.type) {
      case 'message_start':
        this.startUsage = event.message.usage ?? {};
        if (this.started) return '';
        this.started = true;
        return this.chunk({ role: 'assistant', content: '' });
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text') {
          this.blocks.set(event.index, { kind: 'text' });
          return block.text ? this.content(block.text) : '';
        }
        if (block.type === 'thinking') {
          this.blocks.set(event.index, { kind: 'thinking' });
          return block.thinking ? this.reasoning(block.thinking) : '';
        }
        if (block.type === 'tool_use') {
          if (block.name === JSON_RESPONSE_TOOL) {
            this.jsonResponse = true;
            this.blocks.set(event.index, { kind: 'json' });
            return '';
          }
          const toolIndex = this.tools++;
          this.blocks.set(event.index, { kind: 'tool', toolIndex });
          this.keep(block.name);
          return this.chunk({ tool_calls: [{ index: toolIndex, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
        }
        this.blocks.set(event.index, { kind: 'other' });
        return '';
      }
      case 'content_block_delta': {
        const block = this.blocks.get(event.index);
        const delta = event.delta;
        if (delta.type === 'text_delta') return this.content(delta.text);
        if (delta.type === 'thinking_delta') return this.reasoning(delta.thinking);
        if (delta.type === 'input_json_delta' && delta.partial_json !== '') {
          if (block?.kind === 'json') return this.content(delta.partial_json);
          if (block?.kind === 'tool') {
            this.keep(delta.partial_json);
            return this.chunk({ tool_calls: [{ index: block.toolIndex, function: { arguments: delta.partial_json } }] });
          }
        }
        return ''; // signature_delta, citations_delta
      }
      case 'message_delta': {
        this.stopReason = event.delta.stop_reason;
        this.usage = readAnthropicUsage(mergeUsage(this.startUsage, event.usage));
        this.finished = true;
        return this.chunk({}, finishReason(this.stopReason, this.jsonResponse));
      }
      case 'message_stop':
        return this.finished ? this.close() : this.fail('upstream_stream_broken', 'The upstream stream stopped without a final message delta.');
      case 'error': {
        const error = event.error ?? {};
        return this.fail('upstream_error', `The upstream vendor failed mid-stream: ${error.type ?? 'error'}${error.message ? `: ${error.message}` : ''}`);
      }
      default:
        return ''; // ping, content_block_stop, and event types added later
    }
  }

  /** Keeps generated text for counting, up to the most the call's output allowance can stand for. */
  private keep(text: string): void {
    if (this.generatedChars >= this.maxGeneratedChars) return;
    this.generated.push(text);
    this.generatedChars += text.length;
  }

  private content(text: string): string {
    this.keep(text);
    // The most frequent chunk by far, written without building an object to stringify.
    return `data: ${this.head}[{"index":0,"delta":{"content":${JSON.stringify(text)}},"logprobs":null,"finish_reason":null}]}\n\n`;
  }

  private reasoning(text: string): string {
    this.keep(text);
    return this.options.includeReasoning ? this.chunk({ reasoning_content: text }) : '';
  }

  private chunk(delta: Record<string, unknown>, finish: string | null = null): string {
    return `data: ${this.head}${JSON.stringify([{ index: 0, delta, logprobs: null, finish_reason: finish }])}}\n\n`;
  }

  /** The usage chunk (the gateway always reports usage) and the end of the stream. */
  private close(): string {
    this.ended = true;
    const usage = this.usage ?? NO_USAGE;
    this.usage = usage;
    return `data: ${this.head}[],"usage":${JSON.stringify(renderUsage(usage, this.options.costOf?.(usage)))}}\n\n${DONE}`;
  }

  private fail(code: string, message: string): string {
    this.ended = true;
    this.failure = code;
    this.usage = NO_USAGE;
    return sseErrorEvent(code, message);
  }
}

/** The separator of the stream's events, once its first one is complete (either framing). */
function framing(data: Buffer): string | undefined {
  const lf = data.indexOf('\n\n');
  const crlf = data.indexOf('\r\n\r\n');
  if (lf === -1 && crlf === -1) return undefined;
  return crlf !== -1 && (lf === -1 || crlf < lf) ? '\r\n\r\n' : '\n\n';
}

/** The `data:` of an SSE event (its lines joined, as the SSE rules join them). */
function dataOf(event: string): string {
  let at = event.startsWith('data:') ? 0 : event.indexOf('\ndata:');
  if (at === -1) return '';
  let payload = '';
  while (at !== -1) {
    const start = at === 0 && event.startsWith('data:') ? 5 : at + 6;
    const lineEnd = event.indexOf('\n', start);
    let line = event.slice(event[start] === ' ' ? start + 1 : start, lineEnd === -1 ? event.length : lineEnd);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    payload += payload === '' ? line : `\n${line}`;
    at = lineEnd === -1 ? -1 : event.indexOf('\ndata:', lineEnd);
  }
  return payload;
}
