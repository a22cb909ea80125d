// The relay of /v1/messages for Anthropic models: the upstream's SSE bytes pass through untouched,
// read only for usage; a stream that fails or ends early is charged nothing and ends with an error event.
import t from 'tap';
import { AnthropicPassThroughRelay } from '../src/providers/anthropic/pass-through-relay.js';
import { BedrockStreamRelay } from '../src/providers/anthropic/bedrock.js';
import { encodeEventStreamMessage } from '../src/providers/cloud/eventstream.js';

const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const STREAM = [
  event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, usage: { input_tokens: 20, cache_read_input_tokens: 100, cache_creation_input_tokens: 50, output_tokens: 1 } } }),
  event('ping', {}),
  event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Let me see: "message_delta" is only text here.' } }),
  event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: 'EqQBCkYIBxgCKkD+sig==' } }),
  event('content_block_stop', { index: 0 }),
  event('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
  event('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Hello there' } }),
  event('content_block_stop', { index: 1 }),
  event('content_block_start', { index: 2, content_block: { type: 'some_future_block', payload: { x: 1 } } }),
  event('content_block_stop', { index: 2 }),
  event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12 } }),
  event('message_stop', {}),
].join('');

function relayAll(relay: { push(chunk: Buffer): Buffer | undefined; flush(): Buffer | undefined }, bytes: Buffer, step: number): { out: string; usageAt: number | undefined } {
  let out = '';
  let usageAt: number | undefined;
  for (let i = 0; i < bytes.length; i += step) {
    const piece = relay.push(bytes.subarray(i, i + step));
    const at = (relay as { usageEventAt?: number }).usageEventAt;
    if (at !== undefined && usageAt === undefined) usageAt = out.length + at;
    out += piece?.toString() ?? '';
  }
  out += relay.flush()?.toString() ?? '';
  return { out, usageAt };
}

t.test('the bytes pass through as they came, split anywhere; usage and the usage event are found', async (t) => {
  for (const step of [1, 7, 64, STREAM.length]) {
    const relay = new AnthropicPassThroughRelay();
    const { out, usageAt } = relayAll(relay, Buffer.from(STREAM), step);
    t.equal(out, STREAM, `byte for byte, chunks of ${step}`);
    t.same(relay.usage, { promptTokens: 170, completionTokens: 12, cachedTokens: 100, cacheWriteTokens: 50, reasoningTokens: 0 }, 'usage: message_start\'s input counts, message_delta\'s output');
    t.equal(usageAt, STREAM.indexOf('event: message_delta'), 'the usage event\'s offset, so it leaves after the call settles');
    t.match(relay.generatedText(), /Let me see.*Hello there/, 'the generated text, for counting after an abort');
  }
  const crlf = STREAM.replaceAll('\n', '\r\n');
  const relay = new AnthropicPassThroughRelay();
  t.equal(relayAll(relay, Buffer.from(crlf), 5).out, crlf, 'CRLF framing passes too');
  t.equal(relay.usage?.completionTokens, 12);
});

t.test('an error event or an early end is a failed call: nothing charged, and the client is told', async (t) => {
  const head = STREAM.slice(0, STREAM.indexOf('event: content_block_stop'));
  const failed = `${head}${event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })}`;
  let relay = new AnthropicPassThroughRelay();
  let { out } = relayAll(relay, Buffer.from(failed), 9);
  t.equal(out, failed, 'the upstream\'s error event reaches the client as sent');
  t.equal(relay.usage?.completionTokens, 0, 'zero usage');
  t.equal(relay.usage?.promptTokens, 0);
  t.equal(relay.failure, 'upstream_error', 'a failed call');

  relay = new AnthropicPassThroughRelay();
  ({ out } = relayAll(relay, Buffer.from(head), 9));
  t.ok(out.startsWith(head));
  t.match(out.slice(head.length), /^event: error\ndata: \{"type":"error","error":\{"type":"api_error","message":"The upstream stream ended/, 'an error event is added');
  t.equal(relay.usage?.completionTokens, 0, 'zero usage');
  t.equal(relay.failure, 'upstream_stream_broken');

  const unstopped = STREAM.slice(0, STREAM.indexOf('event: message_stop'));
  relay = new AnthropicPassThroughRelay();
  ({ out } = relayAll(relay, Buffer.from(unstopped), 11));
  t.equal(out, `${unstopped}event: message_stop\ndata: {"type":"message_stop"}\n\n`, 'a stream cut after its final usage is closed');
  t.equal(relay.usage?.completionTokens, 12, 'and charged its usage');
  t.equal(relay.failure, undefined);
});

t.test('an endless event breaks the stream', async (t) => {
  const relay = new AnthropicPassThroughRelay(1024);
  t.throws(() => relay.push(Buffer.from(`event: content_block_delta\ndata: {"text":"${'x'.repeat(2000)}`)), /grew past 1024 bytes/);
  t.match(relay.errorEvent('upstream_stream_broken', 'The upstream stream ended unexpectedly.'), /^event: error\ndata: \{"type":"error","error":\{"type":"api_error"/);
});

t.test('Bedrock\'s event stream comes out as Anthropic\'s SSE, events named', async (t) => {
  const frames = STREAM.split('\n\n').filter(Boolean).map((text) => {
    const json = text.slice(text.indexOf('data: ') + 6);
    return encodeEventStreamMessage({ ':message-type': 'event', ':event-type': 'chunk' }, Buffer.from(JSON.stringify({ bytes: Buffer.from(json).toString('base64') })));
  });
  const relay = new BedrockStreamRelay(new AnthropicPassThroughRelay());
  const { out } = relayAll(relay, Buffer.concat(frames), 13);
  t.equal(out, STREAM, 'the same events, with their names');
  t.equal(relay.usage?.completionTokens, 12);
});
