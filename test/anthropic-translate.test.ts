// Pure fixtures for the Anthropic family: request translation (and refusals), message ->
// chat.completion, and the SSE relay split at every byte, in Anthropic's documented shapes.
import t, { type Test } from 'tap';
import type { CatalogModel } from '../src/catalog/model.js';
import { usdToNano } from '../src/catalog/model.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import type { ChatRequest } from '../src/http/schemas/chat.js';
import { ApiError } from '../src/http/errors.js';
import { anthropicFamily } from '../src/providers/anthropic/family.js';
import { buildAnthropicBody, JSON_RESPONSE_TOOL } from '../src/providers/anthropic/request.js';
import { finishAnthropicMessage, readAnthropicUsage } from '../src/providers/anthropic/answer.js';
import { AnthropicStreamRelay } from '../src/providers/anthropic/stream-relay.js';
import type { AnswerOptions } from '../src/providers/family.js';

const seed = CHAT_MODELS.find((m) => m.id === 'anthropic/claude-sonnet-4-5')!;
const MODEL: CatalogModel = {
  ...seed, modality: 'chat', isActive: true,
  prices: { input: usdToNano(seed.usdPerMillion.input), cachedInput: usdToNano(seed.usdPerMillion.cachedInput), cacheWrite: usdToNano(seed.usdPerMillion.cacheWrite), output: usdToNano(seed.usdPerMillion.output) },
} as CatalogModel;
const OPTIONS = { includeReasoning: true, id: 'chatcmpl-abc', created: 1_700_000_000 };
const PARTITION = 'p4rt1t10n';

const build = (fields: Partial<ChatRequest> & Record<string, unknown>, stream = false) =>
  buildAnthropicBody({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], ...fields } as ChatRequest, MODEL, stream, PARTITION) as unknown as Record<string, any>;

function refused(t: Test, fields: Record<string, unknown>, param: string) {
  try {
    build(fields);
    t.fail(`${JSON.stringify(fields)} was accepted`);
  } catch (error) {
    t.ok(error instanceof ApiError && error.status === 400, `${JSON.stringify(fields).slice(0, 80)} -> 400`);
    t.equal((error as ApiError).param, param, `names ${param}`);
  }
}

t.test('the upstream request: URL, headers, model, cap, salt, breakpoint and metadata', async (t) => {
  const upstream = anthropicFamily.request({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }] } as ChatRequest, MODEL, true, { baseUrl: 'https://api.anthropic.com/v1', apiKey: 'sk-ant' }, { partition: PARTITION });
  t.equal(upstream.url, 'https://api.anthropic.com/v1/messages');
  t.same(upstream.headers, { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' });
  const body = JSON.parse(upstream.body);
  t.same(body, {
    model: 'claude-sonnet-4-5', max_tokens: 64_000, stream: true,
    system: [{ type: 'text', text: `cache-scope:${PARTITION}`, cache_control: { type: 'ephemeral' } }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    metadata: { user_id: PARTITION },
  });
});

t.test('messages: system and developer to system blocks, same-role turns merged, images, tools round trip', async (t) => {
  const body = build({
    user: 'raw-caller-id',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      { role: 'user', content: 'one' },
      { role: 'user', content: [{ type: 'text', text: 'two' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'high' } }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
      { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }, { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      { role: 'tool', tool_call_id: 'toolu_2', content: [{ type: 'text', text: 'noon' }] },
      { role: 'user', content: 'thanks' },
      { role: 'assistant', content: null },
    ],
  } as never);
  t.same(body.system, [
    { type: 'text', text: `cache-scope:${PARTITION}` },
    { type: 'text', text: 'Be brief.' },
    { type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } },
  ]);
  t.same(body.messages, [
    { role: 'user', content: [
      { type: 'text', text: 'one' }, { type: 'text', text: 'two' },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    ] },
    { role: 'assistant', content: [
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
    ] },
    { role: 'user', content: [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] },
      { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'noon' }] },
      { type: 'text', text: 'thanks' },
    ] },
  ]);
  t.same(body.metadata, { user_id: PARTITION }, 'the caller\'s user never reaches the upstream');
});

t.test('parameters: tools, tool_choice, parallel calls, stop, sampling, caps, thinking, JSON modes', async (t) => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } }, { type: 'function', function: { name: 'noop' } }];
  const withTools = build({ tools, tool_choice: 'required', parallel_tool_calls: false } as never);
  t.same(withTools.tools, [
    { name: 'get_weather', description: 'Weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    { name: 'noop', input_schema: { type: 'object', properties: {} } },
  ]);
  t.same(withTools.tool_choice, { type: 'any', disable_parallel_tool_use: true });
  t.same(build({ tools, tool_choice: 'none' } as never).tool_choice, { type: 'none' });
  t.same(build({ tools, tool_choice: 'auto' } as never).tool_choice, { type: 'auto' });
  t.same(build({ tools, tool_choice: { type: 'function', function: { name: 'noop' } } } as never).tool_choice, { type: 'tool', name: 'noop' });
  t.same(build({ tools, parallel_tool_calls: false } as never).tool_choice, { type: 'auto', disable_parallel_tool_use: true });
  t.notOk('tool_choice' in build({ tools } as never));

  t.same(build({ stop: 'END' }).stop_sequences, ['END']);
  t.same(build({ stop: ['a', 'b'] }).stop_sequences, ['a', 'b']);
  t.equal(build({ temperature: 0.7 }).temperature, 0.7);
  t.equal(build({ top_p: 0.5 }).top_p, 0.5);
  t.equal(build({ max_tokens: 300 }).max_tokens, 300);
  t.equal(build({ max_completion_tokens: 200, max_tokens: 300 }).max_tokens, 200);
  const inert = build({ logprobs: false, presence_penalty: 0, frequency_penalty: 0, store: true, metadata: { a: 'b' }, service_tier: 'auto', prompt_cache_key: 'k', include_reasoning: false, stream_options: { include_usage: true }, n: 1, user: 'u' } as never);
  for (const field of ['logprobs', 'presence_penalty', 'frequency_penalty', 'store', 'service_tier', 'prompt_cache_key', 'include_reasoning', 'stream_options', 'n', 'user']) t.notOk(field in inert, `${field} dropped`);
  t.same(inert.metadata, { user_id: PARTITION });

  t.same(build({ reasoning_effort: 'minimal' }).thinking, { type: 'enabled', budget_tokens: 1024 });
  t.same(build({ reasoning_effort: 'low' }).thinking, { type: 'enabled', budget_tokens: 4096 });
  t.same(build({ reasoning_effort: 'medium' }).thinking, { type: 'enabled', budget_tokens: 12_288 });
  t.same(build({ reasoning_effort: 'high' }).thinking, { type: 'enabled', budget_tokens: 32_768 });
  t.same(build({ reasoning_effort: 'high', max_tokens: 5000 }).thinking, { type: 'enabled', budget_tokens: 4999 }, 'the budget stays below the output cap');
  t.equal(build({ reasoning_effort: 'high', top_p: 0.97 }).top_p, 0.97);

  const jsonObject = build({ messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'hi' }], response_format: { type: 'json_object' } } as never);
  t.match(jsonObject.system.at(-1), { type: 'text', text: /single valid JSON object/, cache_control: { type: 'ephemeral' } });
  const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
  const jsonSchema = build({ response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } } } as never);
  t.same(jsonSchema.tools, [{ name: JSON_RESPONSE_TOOL, description: 'Answer with a reply object.', input_schema: schema }]);
  t.same(jsonSchema.tool_choice, { type: 'tool', name: JSON_RESPONSE_TOOL });
});

t.test('what Anthropic cannot do is refused with a 400 naming the field', async (t) => {
  refused(t, { temperature: 1.2 }, 'temperature');
  refused(t, { temperature: 0.5, top_p: 0.9 }, 'top_p');
  refused(t, { n: 3 }, 'n');
  refused(t, { logprobs: true }, 'logprobs');
  refused(t, { top_logprobs: 2 }, 'top_logprobs');
  refused(t, { logit_bias: { '50256': -100 } }, 'logit_bias');
  refused(t, { seed: 7 }, 'seed');
  refused(t, { presence_penalty: 0.5 }, 'presence_penalty');
  refused(t, { frequency_penalty: -1 }, 'frequency_penalty');
  refused(t, { reasoning_effort: 'low', temperature: 0.2 }, 'temperature');
  refused(t, { reasoning_effort: 'low', top_p: 0.5 }, 'top_p');
  refused(t, { reasoning_effort: 'low', max_tokens: 1000 }, 'max_tokens');
  refused(t, { reasoning_effort: 'low', max_completion_tokens: 1024 }, 'max_completion_tokens');
  const tools = [{ type: 'function', function: { name: 'f' } }];
  refused(t, { reasoning_effort: 'low', tools, tool_choice: 'required' }, 'tool_choice');
  refused(t, { tool_choice: 'required' }, 'tool_choice');
  refused(t, { tools: [{ type: 'function', function: { name: JSON_RESPONSE_TOOL } }] }, 'tools');
  refused(t, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }, tools }, 'response_format');
  refused(t, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }, reasoning_effort: 'low' }, 'reasoning_effort');
  refused(t, { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array' } } } }, 'response_format');
  refused(t, { messages: [{ role: 'system', content: 'only system' }] }, 'messages');
  refused(t, { messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }, { role: 'user', content: 'hi' }] }, 'messages');
  refused(t, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/bmp;base64,AAAA' } }] }] }, 'messages');
  refused(t, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png,rawbytes' } }] }] }, 'messages');
  refused(t, { messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{not json' } }] }] }, 'messages');
  const plain = { ...MODEL, capabilities: { ...MODEL.capabilities, reasoning: false } } as CatalogModel;
  t.throws(() => buildAnthropicBody({ model: MODEL.id, messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'low' } as ChatRequest, plain, false, PARTITION), new ApiError(400, 'unsupported_parameter', `Model ${MODEL.id} does not reason; remove 'reasoning_effort'.`, 'reasoning_effort'));
});

// The documented non-streaming answer shape.
const MESSAGE = {
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929',
  content: [
    { type: 'thinking', thinking: 'Let me check the weather.', signature: 'EqQBCgIYAhIM' },
    { type: 'text', text: 'I will look it up.' },
    { type: 'tool_use', id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
  ],
  stop_reason: 'tool_use', stop_sequence: null,
  usage: { input_tokens: 472, cache_creation_input_tokens: 100, cache_read_input_tokens: 2048, output_tokens: 89, service_tier: 'standard' },
};

t.test('a message becomes a chat.completion', async (t) => {
  const finished = anthropicFamily.finish(JSON.stringify(MESSAGE), MODEL, OPTIONS);
  const completion = JSON.parse(finished.body);
  t.same(completion, {
    id: 'chatcmpl-abc', object: 'chat.completion', created: 1_700_000_000, model: 'anthropic/claude-sonnet-4-5',
    choices: [{ index: 0, logprobs: null, finish_reason: 'tool_calls', message: {
      role: 'assistant', content: 'I will look it up.', reasoning_content: 'Let me check the weather.',
      tool_calls: [{ id: 'toolu_01A09q90qw90lq917835lq9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' } }],
    } }],
    usage: { prompt_tokens: 2620, completion_tokens: 89, total_tokens: 2709, prompt_tokens_details: { cached_tokens: 2048, cache_read_input_tokens: 2048, cache_creation_input_tokens: 100 } },
  });
  t.same(finished.usage, { promptTokens: 2620, completionTokens: 89, cachedTokens: 2048, cacheWriteTokens: 100, reasoningTokens: 0 });
  t.equal(finished.generated, 'Let me check the weather.I will look it up.get_weather{"location":"San Francisco, CA","unit":"celsius"}');

  const hidden = JSON.parse(finishAnthropicMessage(JSON.stringify(MESSAGE), MODEL.id, { ...OPTIONS, includeReasoning: false }).body);
  t.notOk('reasoning_content' in hidden.choices[0].message);

  const reasons = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter', pause_turn: 'stop' };
  for (const [stop, finish] of Object.entries(reasons)) {
    const body = JSON.parse(finishAnthropicMessage(JSON.stringify({ ...MESSAGE, content: [{ type: 'text', text: 'x' }], stop_reason: stop }), MODEL.id, OPTIONS).body);
    t.equal(body.choices[0].finish_reason, finish, `${stop} -> ${finish}`);
  }
  const onlyTool = JSON.parse(finishAnthropicMessage(JSON.stringify({ ...MESSAGE, content: [MESSAGE.content[2]] }), MODEL.id, OPTIONS).body);
  t.equal(onlyTool.choices[0].message.content, null, 'content is null beside tool calls only');
  const json = JSON.parse(finishAnthropicMessage(JSON.stringify({ ...MESSAGE, content: [{ type: 'tool_use', id: 'toolu_x', name: JSON_RESPONSE_TOOL, input: { answer: 'yes' } }] }), MODEL.id, OPTIONS).body);
  t.equal(json.choices[0].message.content, '{"answer":"yes"}', 'a json_schema answer is the content');
  t.equal(json.choices[0].finish_reason, 'stop');
  t.notOk(json.choices[0].message.tool_calls);

  t.throws(() => anthropicFamily.finish('{"type":"error","error":{"type":"api_error","message":"x"}}', MODEL, OPTIONS));
  t.throws(() => anthropicFamily.finish('not json', MODEL, OPTIONS));
  t.equal(readAnthropicUsage({ output_tokens: 5 })?.promptTokens, 0);
  t.equal(readAnthropicUsage({ input_tokens: 5 } as never), undefined, 'no output count, no usage');
});

// A recorded stream in the documented event order (with a multi-byte character, CRLF-free framing).
const sse = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
const RECORDED = [
  sse('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 472, cache_creation_input_tokens: 0, cache_read_input_tokens: 2048, output_tokens: 2 } } }),
  sse('ping', { type: 'ping' }),
  sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm, ' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'weather.' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
  sse('content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Café ☕ ' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'check:' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 1 }),
  sse('content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', input: {} } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"location": "San Fra' } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'ncisco, CA"}' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 2 }),
  sse('content_block_start', { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{}' } }),
  sse('content_block_stop', { type: 'content_block_stop', index: 3 }),
  sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 89 } }),
  sse('message_stop', { type: 'message_stop' }),
].join('');

function relayPieces(pieces: Buffer[], options: AnswerOptions = OPTIONS): { out: string; relay: AnthropicStreamRelay } {
  const relay = new AnthropicStreamRelay(MODEL.id, options);
  const out: Buffer[] = [];
  for (const piece of pieces) {
    const bytes = relay.push(piece);
    if (bytes) out.push(bytes);
  }
  const rest = relay.flush();
  if (rest) out.push(rest);
  return { out: Buffer.concat(out).toString('utf8'), relay };
}

const events = (text: string) => text.split('\n\n').filter((e) => e !== '').map((e) => (e === 'data: [DONE]' ? '[DONE]' : JSON.parse(e.slice(6))));

t.test('the stream becomes chat.completion.chunk events: role, thinking, text, tool calls, finish, usage, [DONE]', async (t) => {
  const { out, relay } = relayPieces([Buffer.from(RECORDED)]);
  const chunks = events(out);
  const head = { id: 'chatcmpl-abc', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'anthropic/claude-sonnet-4-5' };
  const choice = (delta: unknown, finish: string | null = null) => ({ ...head, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  t.same(chunks, [
    choice({ role: 'assistant', content: '' }),
    choice({ reasoning_content: 'Hmm, ' }),
    choice({ reasoning_content: 'weather.' }),
    choice({ content: 'Café ☕ ' }),
    choice({ content: 'check:' }),
    choice({ tool_calls: [{ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    choice({ tool_calls: [{ index: 0, function: { arguments: '{"location": "San Fra' } }] }),
    choice({ tool_calls: [{ index: 0, function: { arguments: 'ncisco, CA"}' } }] }),
    choice({ tool_calls: [{ index: 1, id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '' } }] }),
    choice({ tool_calls: [{ index: 1, function: { arguments: '{}' } }] }),
    choice({}, 'tool_calls'),
    { ...head, choices: [], usage: { prompt_tokens: 2520, completion_tokens: 89, total_tokens: 2609, prompt_tokens_details: { cached_tokens: 2048, cache_read_input_tokens: 2048 } } },
    '[DONE]',
  ]);
  t.same(relay.usage, { promptTokens: 2520, completionTokens: 89, cachedTokens: 2048, cacheWriteTokens: 0, reasoningTokens: 0 });
  t.equal(relay.generatedText(), 'Hmm, weather.Café ☕ check:get_weather{"location": "San Francisco, CA"}get_time{}');
});

t.test('the same output whatever byte boundaries split the stream (and CRLF framing)', async (t) => {
  const whole = Buffer.from(RECORDED);
  const expected = relayPieces([whole]).out;
  let mismatches = 0;
  for (let at = 1; at < whole.length; at++) {
    if (relayPieces([whole.subarray(0, at), whole.subarray(at)]).out !== expected) mismatches++;
  }
  t.equal(mismatches, 0, `every one of ${whole.length - 1} two-piece splits gives the same events`);
  t.equal(relayPieces([...whole].map((byte) => Buffer.from([byte]))).out, expected, 'one byte at a time');
  t.equal(relayPieces([Buffer.from(RECORDED.replaceAll('\n', '\r\n'))]).out, expected, 'CRLF framing');
});

t.test('events in other SSE shapes: data first, the data split over lines, other fields after it, a comment', async (t) => {
  const expected = relayPieces([Buffer.from(RECORDED)]).out;
  // Every event rewritten: "data:" first (no space), its JSON split over two data lines, an id line after, and a comment between events.
  const reshaped = RECORDED.split('\n\n').filter(Boolean).map((event) => {
    const json = event.slice(event.indexOf('data: ') + 6);
    const cut = json.indexOf(',');
    return `data:${json.slice(0, cut + 1)}\ndata: ${json.slice(cut + 1)}\nid: 7\n\n: keep-alive\n\n`;
  }).join('');
  t.equal(relayPieces([Buffer.from(reshaped)]).out, expected);
});

t.test('usage: known at message_delta, cache writes, message_delta input updates, include_reasoning false', async (t) => {
  const relay = new AnthropicStreamRelay(MODEL.id, OPTIONS);
  const start = RECORDED.slice(0, RECORDED.indexOf('event: message_delta'));
  relay.push(Buffer.from(start));
  t.equal(relay.usage, undefined, 'unknown before message_delta');
  relay.push(Buffer.from(sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 500, cache_creation_input_tokens: 1200, cache_read_input_tokens: 0, output_tokens: 10 } })));
  t.same(relay.usage, { promptTokens: 1700, completionTokens: 10, cachedTokens: 0, cacheWriteTokens: 1200, reasoningTokens: 0 }, 'cumulative message_delta counts win');
  const out = relay.flush()!.toString();
  t.match(out, /"usage":\{"prompt_tokens":1700,"completion_tokens":10,"total_tokens":1710,"prompt_tokens_details":\{"cache_creation_input_tokens":1200\}\}/);
  t.ok(out.endsWith('data: [DONE]\n\n'), '[DONE] from flush when message_stop never came');

  const hidden = relayPieces([Buffer.from(RECORDED)], { ...OPTIONS, includeReasoning: false });
  t.notMatch(hidden.out, /reasoning_content/);
  t.match(hidden.relay.generatedText(), /^Hmm, weather\./, 'thinking still counts as generated');

  for (const [stop, finish] of [['end_turn', 'stop'], ['max_tokens', 'length'], ['stop_sequence', 'stop'], ['refusal', 'content_filter']]) {
    const text = RECORDED.replace('"stop_reason":"tool_use"', `"stop_reason":"${stop}"`);
    t.match(relayPieces([Buffer.from(text)]).out, new RegExp(`"finish_reason":"${finish}"`), `${stop} -> ${finish}`);
  }
});

t.test('a json_schema answer streams as content', async (t) => {
  const text = [
    sse('message_start', { type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', model: 'x', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_j', name: JSON_RESPONSE_TOOL, input: {} } }),
    sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"answer":' } }),
    sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"yes"}' } }),
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 6 } }),
    sse('message_stop', { type: 'message_stop' }),
  ].join('');
  const chunks = events(relayPieces([Buffer.from(text)]).out);
  t.equal(chunks.map((c: any) => c.choices?.[0]?.delta?.content ?? '').join(''), '{"answer":"yes"}');
  t.notMatch(JSON.stringify(chunks), /tool_calls/);
  t.equal(chunks.at(-3).choices[0].finish_reason, 'stop');
});

t.test('an upstream error event or a truncated stream ends with the gateway error event, no [DONE], zero usage', async (t) => {
  const cut = RECORDED.indexOf('event: content_block_start');
  const errored = relayPieces([Buffer.from(RECORDED.slice(0, cut) + sse('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }) + RECORDED.slice(cut))]);
  const last = events(errored.out).at(-1);
  t.same(last, { error: { message: 'The upstream vendor failed mid-stream: overloaded_error: Overloaded', type: 'api_error', code: 'upstream_error' } });
  t.equal(events(errored.out).length, 2, 'the role chunk, then the error and nothing after it');
  t.same(errored.relay.usage, { promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

  const truncated = relayPieces([Buffer.from(RECORDED.slice(0, RECORDED.indexOf('event: message_delta')))]);
  t.match(events(truncated.out).at(-1), { error: { code: 'upstream_stream_broken' } });
  t.notMatch(truncated.out, /\[DONE\]/);
});

t.test('bounds: an event still incomplete past maxEventBytes throws; generated text stops at maxGeneratedChars', async (t) => {
  const endless = new AnthropicStreamRelay(MODEL.id, { ...OPTIONS, maxEventBytes: 1024 });
  endless.push(Buffer.from(RECORDED.slice(0, RECORDED.indexOf('\n\n') + 2)));
  t.throws(() => {
    for (let i = 0; i < 20; i++) endless.push(Buffer.from('data: '.padEnd(100, 'A')));
  }, /grew past 1024 bytes/);
  const { out, relay } = relayPieces([Buffer.from(RECORDED)], { ...OPTIONS, maxGeneratedChars: 10 });
  t.match(out, /Café ☕/, 'the stream itself is whole');
  t.equal(relay.generatedText(), 'Hmm, weath');
});
