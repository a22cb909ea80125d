// A family's chat.completion.chunk SSE stream as Anthropic Messages stream events.
import type { ChatStreamRelay } from '../../providers/family.js';
import type { NormalizedUsage } from '../../providers/usage.js';
import type { OutputRelay } from '../routes/chat-completions.js';
import { DEFAULT_MAX_GENERATED_CHARS } from '../../providers/pending-event.js';
import { ThinkingSignature, anthropicUsage, stopReasonOf, toolUseIdOf, type MessageMeta } from './message-object.js';
import { anthropicErrorEvent, anthropicTypeOfChatError } from './errors.js';
import { ChunkRenderer, chatChunksOf } from '../chat-chunks.js';

/** Characters a block counts for itself besides its text, so blocks without text are bounded too. */
const BLOCK_OVERHEAD_CHARS = 16;

interface OpenBlock {
  readonly type: 'text' | 'thinking' | 'tool_use';
  /** For a tool_use block, the upstream's tool-call index. */
  readonly toolIndex: number;
  readonly signature?: ThinkingSignature;
}

/**
 * Wraps a family's relay (which keeps doing the billing work: usage, generated text) and turns the
 * chunks it emits into the Messages stream, every event with its `event:` line (the SDKs switch on
 * it): `message_start` (content empty, usage zeros), `ping`, then per content block
 * `content_block_start`, its deltas (`thinking_delta` then a `signature_delta` | `text_delta` |
 * `input_json_delta`), `content_block_stop`; once the call is settled (`end`), `message_delta`
 * (stop_reason and the whole usage) and `message_stop`. An error the family reports in the stream
 * becomes an `error` event carrying the upstream's message, and nothing follows it (the family's relay
 * marks the call failed: the pipeline then writes no tail, and charges nothing).
 * Nothing is kept but the open block, yet what the blocks carry is bounded as in ResponsesEventRelay
 * (`maxGeneratedChars`): past it the stream breaks.
 */
export class MessagesEventRelay extends ChunkRenderer implements OutputRelay {
  private started = false;
  /** An error event went out: the stream is over for the client. */
  private failed = false;
  private ended = false;
  private blocks = 0;
  private open: OpenBlock | undefined;
  private toolCalls = 0;
  private finishReason: unknown;
  private emittedChars = 0;

  /** `maxGeneratedChars`: the call's output allowance at MAX_CHARS_PER_TOKEN (AnswerOptions.maxGeneratedChars). */
  constructor(inner: ChatStreamRelay, private readonly meta: MessageMeta, private readonly maxGeneratedChars = DEFAULT_MAX_GENERATED_CHARS) {
    super(inner);
  }

  /** The upstream ended and the call is settled: the open block closes, then `message_delta` and `message_stop`. */
  end(usage: NormalizedUsage): Buffer {
    if (this.failed || this.ended) return Buffer.alloc(0);
    let out = this.start();
    this.ended = true;
    out += this.closeBlock();
    out += this.event('message_delta', {
      delta: { stop_reason: stopReasonOf(this.finishReason, this.toolCalls > 0), stop_sequence: null },
      usage: anthropicUsage(usage, this.meta.costOf?.(usage)),
    });
    out += this.event('message_stop', {});
    return Buffer.from(out);
  }

  /** The `error` event for a stream that broke after its head went out (`api_error`: the upstream failed). */
  errorEvent(_code: string, message: string): string {
    if (this.failed) return '';
    this.failed = true;
    return anthropicErrorEvent('api_error', message);
  }

  private event(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const message = {
      id: this.meta.id, type: 'message', role: 'assistant', model: this.meta.model, content: [],
      stop_reason: null, stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
    return this.event('message_start', { message }) + this.event('ping', {});
  }

  protected translate(bytes: Buffer | undefined): Buffer | undefined {
    if (this.failed) return undefined;
    let out = this.start();
    // `[DONE]` is left out: the message stops in `end`.
    if (bytes && bytes.length > 0) {
      for (const chunk of chatChunksOf(bytes)) {
        if (chunk.error && typeof chunk.error === 'object') {
          // The family failed mid-stream (sseErrorEvent, or the upstream's own error passed through).
          this.failed = true;
          const message = typeof chunk.error.message === 'string' ? chunk.error.message : 'The upstream failed mid-stream.';
          return Buffer.from(out + anthropicErrorEvent(anthropicTypeOfChatError(chunk.error), message));
        }
        const choice = chunk.choices?.[0];
        if (choice) out += this.choice(choice);
      }
    }
    return out ? Buffer.from(out) : undefined;
  }

  private choice(choice: { delta?: Record<string, any>; finish_reason?: unknown }): string {
    let out = '';
    const delta = choice.delta;
    if (delta) {
      const reasoning = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : '';
      if (reasoning !== '') out += this.thinking(reasoning);
      if (typeof delta.content === 'string' && delta.content !== '') out += this.text(delta.content);
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) out += this.toolCall(call);
    }
    if (choice.finish_reason != null) this.finishReason = choice.finish_reason;
    return out;
  }

  private thinking(delta: string): string {
    let out = '';
    if (this.open?.type !== 'thinking') {
      out += this.closeBlock();
      out += this.openBlock({ type: 'thinking', toolIndex: -1, signature: new ThinkingSignature(this.meta.id, this.blocks) }, { type: 'thinking', thinking: '', signature: '' });
    }
    this.count(delta.length);
    this.open!.signature!.add(delta);
    return out + this.delta({ type: 'thinking_delta', thinking: delta });
  }

  private text(delta: string): string {
    let out = '';
    if (this.open?.type !== 'text') {
      out += this.closeBlock();
      out += this.openBlock({ type: 'text', toolIndex: -1 }, { type: 'text', text: '' });
    }
    this.count(delta.length);
    return out + this.delta({ type: 'text_delta', text: delta });
  }

  private toolCall(call: { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }): string {
    let out = '';
    const index = typeof call.index === 'number' ? call.index : 0;
    if (this.open?.type !== 'tool_use' || this.open.toolIndex !== index) {
      out += this.closeBlock();
      const id = typeof call.id === 'string' && call.id !== '' ? call.id : toolUseIdOf(this.meta, this.toolCalls);
      const name = typeof call.function?.name === 'string' ? call.function.name : '';
      this.toolCalls++;
      this.count(id.length + name.length);
      out += this.openBlock({ type: 'tool_use', toolIndex: index }, { type: 'tool_use', id, name, input: {} });
    }
    const args = call.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      this.count(args.length);
      out += this.delta({ type: 'input_json_delta', partial_json: args });
    }
    return out;
  }

  private openBlock(block: OpenBlock, contentBlock: Record<string, unknown>): string {
    this.count(BLOCK_OVERHEAD_CHARS);
    this.open = block;
    return this.event('content_block_start', { index: this.blocks, content_block: contentBlock });
  }

  private delta(delta: Record<string, unknown>): string {
    return this.event('content_block_delta', { index: this.blocks, delta });
  }

  /** Closes the open block: a thinking block's signature first, then `content_block_stop`. */
  private closeBlock(): string {
    const block = this.open;
    if (!block) return '';
    this.open = undefined;
    let out = '';
    if (block.signature) out += this.delta({ type: 'signature_delta', signature: block.signature.digest() });
    out += this.event('content_block_stop', { index: this.blocks });
    this.blocks++;
    return out;
  }

  /** Counts `chars` more sent in blocks; past `maxGeneratedChars` the stream breaks (the throw fails the upstream exchange). */
  private count(chars: number): void {
    this.emittedChars += chars;
    if (this.emittedChars > this.maxGeneratedChars) throw new Error(`the streamed content blocks grew past ${this.maxGeneratedChars} characters`);
  }
}
