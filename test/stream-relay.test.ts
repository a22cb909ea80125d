import t from 'tap';
import { OpenAiStreamRelay, generatedText } from '../src/providers/openai/stream-relay.js';
import { pipeEvents } from '../src/http/sse.js';
import { openAiFamily } from '../src/providers/openai/family.js';

const chunk = (fields: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini-2024-07-18', ...fields })}\n\n`;
const delta = (content: string) => chunk({ choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null });
const usageChunk = chunk({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 } } });

function relayAll(relay: OpenAiStreamRelay, pieces: string[]): string {
  let out = '';
  for (const piece of pieces) out += relay.push(Buffer.from(piece))?.toString() ?? '';
  out += relay.flush()?.toString() ?? '';
  return out;
}

t.test('passes events through with the gateway model id and finds usage', async (t) => {
  const upstream = [delta(' a'), delta(' b'), delta(' c'), usageChunk, 'data: [DONE]\n\n'];
  const relay = new OpenAiStreamRelay('openai/gpt-4o-mini', true);
  const out = relayAll(relay, upstream);
  t.notMatch(out, /gpt-4o-mini-2024-07-18/, 'upstream model name replaced everywhere');
  t.equal(out.match(/"model":"openai\/gpt-4o-mini"/g)?.length, 4);
  t.same(relay.usage, { promptTokens: 10, completionTokens: 3, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
  t.match(out, /"usage":\{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13\}/, 'zero cache details omitted');
  t.ok(out.endsWith('data: [DONE]\n\n'));
  t.equal(out.split('\n\n').length - 1, 5, 'one event out per event in');
});

t.test('an error object that ends a stream is a failed call: passed on, usage zero', async (t) => {
  const error = `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } })}\n\n`;
  const quoted = delta('He said "error" twice: {"error": 1}');
  for (const size of [1, 5, 1000]) {
    const whole = [quoted, delta(' b'), error].join('');
    const pieces: string[] = [];
    for (let i = 0; i < whole.length; i += size) pieces.push(whole.slice(i, i + size));
    const relay = new OpenAiStreamRelay('m/x', true);
    const out = relayAll(relay, pieces);
    t.ok(out.includes(error), `the error passes on as it came (pieces of ${size})`);
    t.same(relay.usage, { promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }, 'zero usage: nothing charged');
    t.equal(relay.failure, 'upstream_error', 'a failed call (logged 502)');
  }
  const relay = new OpenAiStreamRelay('m/x', true);
  relayAll(relay, [quoted, usageChunk]);
  t.equal(relay.usage?.completionTokens, 3, '"error" inside generated text is text, not a failure');
  t.equal(relay.failure, undefined);
});

t.test('events split across chunks at any byte are reassembled', async (t) => {
  const whole = [delta(' hello'), delta(' world'), usageChunk, 'data: [DONE]\n\n'].join('');
  for (const size of [1, 2, 7, 33, 100]) {
    const pieces: string[] = [];
    for (let i = 0; i < whole.length; i += size) pieces.push(whole.slice(i, i + size));
    const relay = new OpenAiStreamRelay('m/x', true);
    const out = relayAll(relay, pieces);
    t.equal(out, whole.replaceAll('"model":"gpt-4o-mini-2024-07-18"', '"model":"m/x"').replace(/"usage":\{[^}]*\{[^}]*\}\}/, '"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}'), `piece size ${size}`);
    t.equal(relay.usage?.completionTokens, 3);
  }
});

t.test('bytes pass unchanged but for the model name: multi-byte text, a gateway id with non-ASCII and replacement-pattern characters', async (t) => {
  const modelId = 'vendor/mödel-$&-$1-世界';
  const whole = [delta(' héllo — 世界 🎉'), delta(' "model":"gpt-4o-mini-2024-07-18" in text'), usageChunk, 'data: [DONE]\n\n'].join('');
  const expected = whole
    .replaceAll('"model":"gpt-4o-mini-2024-07-18"', () => `"model":${JSON.stringify(modelId)}`)
    .replace(/"usage":\{[^}]*\{[^}]*\}\}/, '"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}');
  const bytes = Buffer.from(whole);
  for (const size of [1, 3, bytes.length]) {
    const relay = new OpenAiStreamRelay(modelId, true);
    const out: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += size) out.push(relay.push(bytes.subarray(i, i + size)) ?? Buffer.alloc(0));
    out.push(relay.flush() ?? Buffer.alloc(0));
    t.equal(Buffer.concat(out).toString('utf8'), expected, `pieces of ${size} bytes`);
    t.equal(relay.usage?.completionTokens, 3);
  }
  // The quoted model name inside generated text is escaped (\"model\"), so it is not the key and stays as it is.
  t.match(expected, /\\"model\\":\\"gpt-4o-mini-2024-07-18\\" in text/);
});

t.test('CRLF framing and a spaced model key', async (t) => {
  const relay = new OpenAiStreamRelay('m/x', true);
  const out = relayAll(relay, ['data: {"model": "up-1","choices":[]}\r\n\r\n', 'data: {"model": "up-1","choices":[]}\r\n\r\n']);
  t.equal(out, 'data: {"model":"m/x","choices":[]}\r\n\r\ndata: {"model":"m/x","choices":[]}\r\n\r\n');
});

t.test('include_reasoning false removes reasoning_content only', async (t) => {
  const reasoning = chunk({ choices: [{ index: 0, delta: { reasoning_content: ' think' }, finish_reason: null }], usage: null });
  const relay = new OpenAiStreamRelay('m/r', false);
  const out = relayAll(relay, [reasoning, delta(' answer'), 'data: [DONE]\n\n']);
  t.notMatch(out, /reasoning_content|think/);
  t.match(out, / answer/);
  const keep = relayAll(new OpenAiStreamRelay('m/r', true), [reasoning]);
  t.match(keep, /"reasoning_content":" think"/);
});

t.test('generatedText collects content, reasoning and tool-call arguments, ignoring a cut-off last line', async (t) => {
  const tool = chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: 'get', arguments: '{"a":' } }] } }] });
  const reasoning = chunk({ choices: [{ index: 0, delta: { reasoning_content: 'hmm' } }] });
  const text = generatedText([Buffer.from(delta('one ') + reasoning + tool), Buffer.from(delta('two').slice(0, 30))]);
  t.equal(text, 'one hmmget{"a":');
});

t.test('a push carrying the usage event says where it starts in what it returned', async (t) => {
  for (const crlf of [false, true]) {
    const frame = (text: string) => (crlf ? text.replace(/\n\n$/, '\r\n\r\n') : text);
    const relay = new OpenAiStreamRelay('m/x', true);
    const first = relay.push(Buffer.from(frame(delta(' a'))))!;
    t.equal(relay.usageEventAt, undefined, 'no usage yet');
    t.match(first.toString(), /"model":"m\/x"/);
    const out = relay.push(Buffer.from([delta(' b'), delta(' c'), usageChunk, 'data: [DONE]\n\n'].map(frame).join('')))!.toString();
    const at = relay.usageEventAt!;
    t.ok(at > 0, `found (${crlf ? 'CRLF' : 'LF'})`);
    t.equal(out.slice(0, at).split(crlf ? '\r\n\r\n' : '\n\n').length - 1, 2, 'the two deltas come before it');
    t.match(out.slice(at), /^data: \{[^\n]*"usage":\{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13\}\}\n\ndata: \[DONE\]/, 'the usage event and [DONE] after it');
    t.notMatch(out, /gpt-4o-mini-2024-07-18/);
    relay.push(Buffer.from(frame(': keep-alive\n\n')));
    t.equal(relay.usageEventAt, undefined, 'a later push clears it');
  }
});

t.test('pipeEvents writes the bytes before the usage event, then settles, then writes the rest', async (t) => {
  const relay = new OpenAiStreamRelay('m/x', true);
  const log: string[] = [];
  const upstream = {
    consume(consumer: { data(chunk: Buffer): void; end(): void }) {
      consumer.data(Buffer.from(delta(' a')));
      consumer.data(Buffer.from([delta(' b'), usageChunk, 'data: [DONE]\n\n'].join('')));
      consumer.end();
    },
    pause() {},
    resume() {},
  };
  const reply = { write: (chunk: Buffer) => log.push(chunk.toString().includes('"usage":{') ? 'write usage' : chunk.toString().includes(' b') ? 'write b' : 'write a') > 0, whenWritable() {}, sendHead() {} };
  await pipeEvents(upstream as never, reply as never, relay, () => log.push(relay.usage ? 'settle' : 'first byte'));
  t.same(log, ['write a', 'first byte', 'write b', 'settle', 'write usage']);
});

t.test("the OpenAI family's stream relay is the relay itself, so pipeEvents sees where the usage event starts", async (t) => {
  const relay = openAiFamily.relay({ id: 'm/x' } as never, { includeReasoning: true, id: 'chatcmpl-1', created: 1 });
  relay.push(Buffer.from([delta(' a'), usageChunk, 'data: [DONE]\n\n'].join('')));
  t.ok((relay.usageEventAt ?? 0) > 0);
  t.equal(relay.generatedText(), ' a');
});

t.test('CRLF-framed events split at any byte, the blank line too, are reassembled', async (t) => {
  const whole = [delta(' hello'), delta(' world'), usageChunk, 'data: [DONE]\n\n'].map((event) => event.replace(/\n\n$/, '\r\n\r\n')).join('');
  for (const size of [1, 2, 3, 5]) {
    const pieces: string[] = [];
    for (let i = 0; i < whole.length; i += size) pieces.push(whole.slice(i, i + size));
    const relay = new OpenAiStreamRelay('m/x', true);
    const out = relayAll(relay, pieces);
    t.equal(out.match(/\r?\n\r?\n/g)?.length, 4, `piece size ${size}: four events`);
    t.equal(relay.usage?.completionTokens, 3);
    t.equal(relay.generatedText(), ' hello world');
  }
});

t.test('an event still incomplete past maxEventBytes throws; one just under it passes', async (t) => {
  const relay = new OpenAiStreamRelay('m/x', true, 1024);
  const long = delta('x'.repeat(900));
  let out = '';
  for (let i = 0; i < long.length; i += 100) out += relay.push(Buffer.from(long.slice(i, i + 100)))?.toString() ?? '';
  t.match(out, /x{900}/, 'an event under the bound, in pieces');
  const endless = new OpenAiStreamRelay('m/x', true, 1024);
  t.throws(() => {
    for (let i = 0; i < 20; i++) endless.push(Buffer.from('data: '.padEnd(100, 'A')));
  }, /grew past 1024 bytes/);
});

t.test('generatedText of a long stream equals that of its events, and stops at maxGeneratedChars', async (t) => {
  const events = Array.from({ length: 3000 }, (_, i) => delta(` w${i}`)); // well past the raw events kept
  const expected = generatedText([Buffer.from(events.join(''))]);
  const relay = new OpenAiStreamRelay('m/x', true);
  const whole = events.join('');
  for (let i = 0; i < whole.length; i += 999) relay.push(Buffer.from(whole.slice(i, i + 999)));
  t.equal(relay.generatedText(), expected);
  const capped = new OpenAiStreamRelay('m/x', true, undefined, 100);
  for (const event of events) capped.push(Buffer.from(event));
  t.equal(capped.generatedText(), expected.slice(0, 100));
});
