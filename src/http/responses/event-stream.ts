// A family's chat.completion.chunk SSE stream as the Responses-style `response.*` events.
import type { ChatStreamRelay } from '../../providers/family.js';
import type { NormalizedUsage } from '../../providers/usage.js';
import { DEFAULT_MAX_GENERATED_CHARS } from '../../providers/pending-event.js';
import { functionCallItemId, messageItemId, responseObject, statusOf, type FunctionCallItem, type MessageItem, type OutputItem, type ResponseMeta } from './response-object.js';
import { ChunkRenderer, chatChunksOf } from '../chat-chunks.js';


/**
 * Wraps a family's relay (which keeps doing the billing work: usage, generated text) and turns the
 * chunks it emits into Responses events, in the standard order:
 * `response.created`, `response.in_progress`, then per output item `response.output_item.added`,
 * (`response.content_part.added`, `response.output_text.delta`..., `response.output_text.done`,
 * `response.content_part.done` | `response.function_call_arguments.delta`...,
 * `response.function_call_arguments.done`), `response.output_item.done`; last `response.completed`
 * (or `response.incomplete` when the answer was cut off). Every event carries `sequence_number`.
 * The items are kept whole for the closing events, so what they hold is bounded (`maxKeptChars`): an
 * upstream streaming past it breaks the stream, which then ends with an `error` event.
 */
export class ResponsesEventRelay extends ChunkRenderer {
  private sequence = 0;
  private started = false;
  private ended = false;
  private readonly output: OutputItem[] = [];
  /** The item being streamed, and for a function call the upstream's tool-call index. */
  private open: MessageItem | FunctionCallItem | undefined;
  private openToolIndex = -1;
  private messages = 0;
  private calls = 0;
  private finishReason: unknown;
  /** Characters the output items hold (text, arguments, ids and names). */
  private keptChars = 0;
  /** The message of the error the family reported in its stream, for the `error` event that ends it. */
  private upstreamError: string | undefined;

  /**
   * `keep`: writes the finished output items for `item_reference` (awaited before the closing events).
   * `maxKeptChars`: the most characters the items may hold, the call's output allowance at
   * MAX_CHARS_PER_TOKEN (AnswerOptions.maxGeneratedChars), more than any vendor generates within it.
   */
  constructor(
    inner: ChatStreamRelay, private readonly meta: ResponseMeta, private readonly keep?: (items: readonly OutputItem[]) => Promise<void>,
    private readonly maxKeptChars = DEFAULT_MAX_GENERATED_CHARS,
  ) {
    super(inner);
  }

  /**
   * The upstream ended and the call is settled: the open item closes and the response completes.
   * With `keep`, once the items are written (so a client that answers at `response.completed` can
   * refer to them).
   */
  end(usage: NormalizedUsage): Buffer | Promise<Buffer> {
    let out = this.start();
    if (this.ended) return Buffer.from(out);
    this.ended = true;
    out += this.closeItem();
    const { status, incomplete_details } = statusOf(this.finishReason);
    const response = responseObject(this.meta, status, incomplete_details, this.output, usage);
    out += this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
    if (!this.keep || this.output.length === 0) return Buffer.from(out);
    return this.keep(this.output).then(() => Buffer.from(out));
  }

  /**
   * An `error` event for a stream that broke after its headers went out, or whose upstream reported an
   * error (then with the upstream's message).
   */
  errorEvent(code: string, message: string): string {
    const said = this.upstreamError ?? message;
    return this.start() + this.event('error', { code, message: said, param: null, error: { message: said, type: 'api_error', code } });
  }

  private event(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.sequence++, ...fields })}\n\n`;
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const response = responseObject(this.meta, 'in_progress', null, [], null);
    return this.event('response.created', { response }) + this.event('response.in_progress', { response });
  }

  protected translate(bytes: Buffer | undefined): Buffer | undefined {
    let out = this.start();
    // `[DONE]` is left out: the response completes in `end`.
    if (bytes && bytes.length > 0) {
      for (const chunk of chatChunksOf(bytes)) {
        // The family's error chunk is not a Responses event: the stream ends with `error` (errorEvent) instead.
        if (chunk.error && typeof chunk.error === 'object') this.upstreamError ??= typeof chunk.error.message === 'string' ? chunk.error.message : undefined;
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
      if (typeof delta.content === 'string' && delta.content !== '') out += this.text(delta.content);
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) out += this.toolCall(call);
    }
    if (choice.finish_reason != null) this.finishReason = choice.finish_reason;
    return out;
  }

  private text(delta: string): string {
    let out = '';
    let item = this.open;
    if (item?.type !== 'message') {
      out += this.closeItem();
      item = { type: 'message', id: messageItemId(this.meta, this.messages++), status: 'in_progress', role: 'assistant', content: [] };
      this.openItem(item, item.id.length);
      out += this.event('response.output_item.added', { output_index: this.output.length - 1, item: { ...item, content: [] } });
      const part = { type: 'output_text', text: '', annotations: [] };
      item.content.push({ type: 'output_text', text: '', annotations: [] });
      out += this.event('response.content_part.added', { item_id: item.id, output_index: this.output.length - 1, content_index: 0, part });
    }
    this.hold(delta.length);
    item.content[0]!.text += delta;
    return out + this.event('response.output_text.delta', { item_id: item.id, output_index: this.output.length - 1, content_index: 0, delta, logprobs: [] });
  }

  private toolCall(call: { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } }): string {
    let out = '';
    const index = typeof call.index === 'number' ? call.index : 0;
    let item = this.open;
    if (item?.type !== 'function_call' || index !== this.openToolIndex) {
      out += this.closeItem();
      item = {
        type: 'function_call', id: functionCallItemId(this.meta, this.calls++), call_id: typeof call.id === 'string' ? call.id : '',
        name: typeof call.function?.name === 'string' ? call.function.name : '', arguments: '', status: 'in_progress',
      };
      this.openItem(item, item.id.length + item.call_id.length + item.name.length);
      this.openToolIndex = index;
      out += this.event('response.output_item.added', { output_index: this.output.length - 1, item: { ...item } });
    }
    const args = call.function?.arguments;
    if (typeof args === 'string' && args !== '') {
      this.hold(args.length);
      item.arguments += args;
      out += this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: this.output.length - 1, delta: args });
    }
    return out;
  }

  private openItem(item: OutputItem, chars: number): void {
    this.hold(chars);
    this.open = item;
    this.output.push(item);
  }

  /** Counts `chars` more kept in the items; past `maxKeptChars` the stream breaks (the throw fails the upstream exchange). */
  private hold(chars: number): void {
    this.keptChars += chars;
    if (this.keptChars > this.maxKeptChars) throw new Error(`the streamed output items grew past ${this.maxKeptChars} characters`);
  }

  /** Closes the open item: its `.done` events, then `response.output_item.done` with the whole item. */
  private closeItem(): string {
    const item = this.open;
    if (!item) return '';
    this.open = undefined;
    this.openToolIndex = -1;
    const outputIndex = this.output.length - 1;
    // A message cut off by the output cap is incomplete, as in the whole (non-streamed) response.
    item.status = item.type === 'message' && this.ended && statusOf(this.finishReason).status === 'incomplete' ? 'incomplete' : 'completed';
    let out = '';
    if (item.type === 'message') {
      const part = item.content[0]!;
      out += this.event('response.output_text.done', { item_id: item.id, output_index: outputIndex, content_index: 0, text: part.text, logprobs: [] });
      out += this.event('response.content_part.done', { item_id: item.id, output_index: outputIndex, content_index: 0, part });
    } else {
      out += this.event('response.function_call_arguments.done', { item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments });
    }
    return out + this.event('response.output_item.done', { output_index: outputIndex, item });
  }
}
