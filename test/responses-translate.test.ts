// The Responses-style endpoint's pure parts: request translation, the Response object, the event stream.
import t, { type Test } from 'tap';
import { toChatRequest } from '../src/http/responses/to-chat.js';
import { responseFromCompletion, responseMeta } from '../src/http/responses/response-object.js';
import { ResponsesEventRelay } from '../src/http/responses/event-stream.js';
import { ApiError } from '../src/http/errors.js';
import type { ChatStreamRelay } from '../src/providers/family.js';
import type { NormalizedUsage } from '../src/providers/usage.js';

const CALL_ID = '0b7c6a52-3a57-4c1e-9c1e-2f1a8f7e6d5c';
const USAGE: NormalizedUsage = { promptTokens: 20, completionTokens: 7, cachedTokens: 4, cacheWriteTokens: 0, reasoningTokens: 2 };

function refused(t: Test, body: Record<string, unknown>, param: string, code?: string): void {
  try {
    toChatRequest(body);
    t.fail(`accepted ${JSON.stringify(body)}`);
  } catch (error) {
    t.ok(error instanceof ApiError);
    t.equal((error as ApiError).status, 400);
    t.equal((error as ApiError).param, param, JSON.stringify(body));
    if (code) t.equal((error as ApiError).code, code);
  }
}

t.test('a string input is one user message; instructions lead as a system message', async (t) => {
  t.same(toChatRequest({ model: 'm', input: 'hi' }), { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  t.same(toChatRequest({ model: 'm', input: 'hi', instructions: 'Be brief.', max_output_tokens: 9, temperature: 0.2, top_p: 0.5, stream: true, store: true }), {
    model: 'm', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }],
    max_completion_tokens: 9, temperature: 0.2, top_p: 0.5, stream: true,
  });
});

t.test('items: messages of every role, typed parts, function calls and their outputs, reasoning skipped', async (t) => {
  const chat = toChatRequest({
    model: 'm',
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Rules.' }] },
      { role: 'system', content: 'More rules.' },
      { role: 'user', content: [{ type: 'input_text', text: 'Look' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'high' }] },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [], logprobs: [] }] },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed', parsed_arguments: null },
      { type: 'function_call', call_id: 'call_2', name: 'get_time', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'noon' }] },
    ],
  });
  t.same(chat.messages, [
    { role: 'system', content: 'Rules.' },
    { role: 'system', content: 'More rules.' },
    { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'high' } }] },
    {
      role: 'assistant', content: 'Checking.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    { role: 'tool', tool_call_id: 'call_2', content: 'noon' },
  ]);
});

t.test('tools: function tools flattened into chat tools, hosted tools dropped, tool_choice mapped', async (t) => {
  const chat = toChatRequest({
    model: 'm', input: 'hi', parallel_tool_calls: false,
    tools: [
      { type: 'web_search_preview' },
      { type: 'function', name: 'f', description: 'd', parameters: { type: 'object' }, strict: true },
    ],
    tool_choice: { type: 'function', name: 'f' },
  });
  t.same(chat.tools, [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' }, strict: true } }]);
  t.same(chat.tool_choice, { type: 'function', function: { name: 'f' } });
  t.equal(chat.parallel_tool_calls, false);
  for (const choice of ['auto', 'none', 'required'] as const) {
    t.equal(toChatRequest({ model: 'm', input: 'hi', tools: [{ type: 'function', name: 'f' }], tool_choice: choice }).tool_choice, choice);
  }
  const onlyHosted = toChatRequest({ model: 'm', input: 'hi', tools: [{ type: 'file_search' }], tool_choice: 'auto' });
  t.notOk('tools' in onlyHosted, 'no tools left: none sent');
  t.notOk('tool_choice' in onlyHosted);
});

t.test('text.format, reasoning.effort, user and prompt_cache_key map to their chat fields', async (t) => {
  const chat = toChatRequest({
    model: 'm', input: 'hi', user: 'u', prompt_cache_key: 'k', reasoning: { effort: 'low' },
    text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
  });
  t.same(chat.response_format, { type: 'json_schema', json_schema: { name: 'out', schema: { type: 'object' }, strict: true } });
  t.equal(chat.reasoning_effort, 'low');
  t.equal(chat.user, 'u');
  t.equal(chat.prompt_cache_key, 'k');
  t.same(toChatRequest({ model: 'm', input: 'hi', text: { format: { type: 'json_object' } } }).response_format, { type: 'json_object' });
});

t.test('refusals name the field', async (t) => {
  refused(t, { model: 'm', input: 'hi', previous_response_id: 'resp_1' }, 'previous_response_id', 'previous_response_not_supported');
  refused(t, { model: 'm', input: 'hi', conversation: { id: 'c' } }, 'conversation', 'previous_response_not_supported');
  refused(t, { input: 'hi' }, 'model');
  refused(t, { model: 'm' }, 'input');
  refused(t, { model: 'm', input: { role: 'user' } }, 'input');
  refused(t, { model: 'm', input: [{ role: 'user', content: 5 }] }, 'input[0].content');
  refused(t, { model: 'm', input: [{ role: 'user', content: [{ type: 'input_audio' }] }] }, 'input[0].content[0].type');
  refused(t, { model: 'm', input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] }, 'input[0].content[0].type', 'unsupported_content');
  refused(t, { model: 'm', input: [{ type: 'function_call_output', call_id: 'c', output: 3 }] }, 'input[0].output');
  refused(t, { model: 'm', input: [{ type: 'message', role: 'user', content: 'x' }, { type: 'web_search_call', id: 'w' }] }, 'input[1].type');
  refused(t, { model: 'm', input: 'hi', tools: [{ type: 'function' }] }, 'tools[0].name');
  refused(t, { model: 'm', input: 'hi', tool_choice: { type: 'file_search' } }, 'tool_choice');
  refused(t, { model: 'm', input: 'hi', reasoning: { effort: 'max' } }, 'reasoning.effort');
  refused(t, { model: 'm', input: 'hi', n: 2 }, 'n');
});

const meta = responseMeta(CALL_ID, 1_700_000_000_500, 'openai/gpt-4o-mini', toChatRequest({ model: 'openai/gpt-4o-mini', input: 'hi', tools: [{ type: 'function', name: 'f' }] }));

t.test('a finished completion as the Response object', async (t) => {
  const completion = JSON.stringify({
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'openai/gpt-4o-mini',
    choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] } }],
  });
  const response = JSON.parse(responseFromCompletion(completion, USAGE, meta));
  t.equal(response.id, 'resp_0b7c6a523a574c1e9c1e2f1a8f7e6d5c');
  t.equal(response.object, 'response');
  t.equal(response.created_at, 1_700_000_000);
  t.equal(response.status, 'completed');
  t.equal(response.model, 'openai/gpt-4o-mini');
  t.equal(response.parallel_tool_calls, true);
  t.same(response.output, [
    { type: 'message', id: 'msg_0b7c6a523a574c1e9c1e2f1a8f7e6d5c', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Let me check.', annotations: [] }] },
    { type: 'function_call', id: 'fc_0b7c6a523a574c1e9c1e2f1a8f7e6d5c_0', call_id: 'call_9', name: 'f', arguments: '{"a":1}', status: 'completed' },
  ]);
  t.same(response.usage, { input_tokens: 20, input_tokens_details: { cached_tokens: 4 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 27 });
  t.same(response.tools, [{ type: 'function', name: 'f', description: null, parameters: null, strict: null }]);

  const cut = JSON.parse(responseFromCompletion(JSON.stringify({ choices: [{ finish_reason: 'length', message: { role: 'assistant', content: 'Once upon' } }] }), USAGE, meta));
  t.equal(cut.status, 'incomplete');
  t.same(cut.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(cut.output[0].status, 'incomplete');
});

/** A stand-in family relay: hands back the chunk events it is given. */
function fakeRelay(): ChatStreamRelay & { usageIs(u: NormalizedUsage): void } {
  let usage: NormalizedUsage | undefined;
  return {
    get usage() { return usage; },
    usageIs(u) { usage = u; },
    push: (chunk) => chunk,
    flush: () => undefined,
    generatedText: () => '',
  };
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

function parseEvents(text: string): { event: string; data: any }[] {
  return text.split('\n\n').filter(Boolean).map((block) => {
    const [event, data] = block.split('\n');
    return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
  });
}

t.test('the chunk stream as response.* events: text, then two function calls', async (t) => {
  const inner = fakeRelay();
  const relay = new ResponsesEventRelay(inner, meta);
  let out = '';
  const push = (text: string) => { out += relay.push(Buffer.from(text))?.toString() ?? ''; };
  push(chunk({ role: 'assistant', content: '' }));
  push(chunk({ content: 'Hel' }) + chunk({ content: 'lo' }));
  push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }));
  push(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }));
  push(chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'g', arguments: '{}' } }] }));
  push(chunk({}, 'tool_calls') + 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":7}}\n\ndata: [DONE]\n\n');
  inner.usageIs(USAGE);
  out += relay.flush()?.toString() ?? '';
  out += relay.end(USAGE).toString();
  const events = parseEvents(out);
  t.same(events.map((e) => e.event), [
    'response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta',
    'response.function_call_arguments.done', 'response.output_item.done',
    'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
    'response.completed',
  ]);
  t.same(events.map((e) => e.data.type), events.map((e) => e.event), 'data.type names the event');
  t.same(events.map((e) => e.data.sequence_number), events.map((_, i) => i));
  t.same(events.filter((e) => e.event === 'response.output_item.done').map((e) => e.data.output_index), [0, 1, 2]);
  const done = events.at(-1)!.data.response;
  t.equal(done.status, 'completed');
  t.same(done.output.map((item: any) => item.type), ['message', 'function_call', 'function_call']);
  t.equal(done.output[0].content[0].text, 'Hello');
  t.same(done.output[1], { type: 'function_call', id: `fc_${meta.itemKey}_0`, call_id: 'call_1', name: 'f', arguments: '{"a":1}', status: 'completed' });
  t.equal(done.output[2].call_id, 'call_2');
  t.equal(done.usage.total_tokens, 27);
  t.same(events[12]!.data, { type: 'response.function_call_arguments.done', sequence_number: 12, item_id: `fc_${meta.itemKey}_0`, output_index: 1, name: 'f', arguments: '{"a":1}' });
});

t.test('a cut-off stream ends with response.incomplete; a broken one with an error event', async (t) => {
  const relay = new ResponsesEventRelay(fakeRelay(), meta);
  let out = relay.push(Buffer.from(chunk({ content: 'Once' }) + chunk({}, 'length')))!.toString();
  out += relay.end(USAGE).toString();
  const events = parseEvents(out);
  t.equal(events.at(-1)!.event, 'response.incomplete');
  t.same(events.at(-1)!.data.response.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(events.at(-2)!.data.item.status, 'incomplete');

  const broken = new ResponsesEventRelay(fakeRelay(), meta);
  const error = parseEvents(broken.errorEvent('upstream_stream_broken', 'gone'));
  t.same(error.map((e) => e.event), ['response.created', 'response.in_progress', 'error']);
  t.equal(error[2]!.data.code, 'upstream_stream_broken');
  t.equal(error[2]!.data.error.code, 'upstream_stream_broken', 'the error object the openai client throws on');
});

t.test('the output items hold at most maxKeptChars: text, arguments, and item after item, each past it throws', async (t) => {
  const bounded = () => new ResponsesEventRelay(fakeRelay(), meta, undefined, 1000);
  const text = bounded();
  text.push(Buffer.from(chunk({ content: 'x'.repeat(900) })));
  t.throws(() => text.push(Buffer.from(chunk({ content: 'x'.repeat(100) }))), /grew past 1000 characters/, 'text');

  const args = bounded();
  args.push(Buffer.from(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: 'a'.repeat(900) } }] })));
  t.throws(() => args.push(Buffer.from(chunk({ tool_calls: [{ index: 0, function: { arguments: 'a'.repeat(100) } }] }))), /grew past 1000 characters/, 'arguments');

  // Empty calls alternating between two indexes open a new item each: their ids count.
  const items = bounded();
  const alternating = Array.from({ length: 200 }, (_, i) => chunk({ tool_calls: [{ index: i % 2 }] })).join('');
  t.throws(() => items.push(Buffer.from(alternating)), /grew past 1000 characters/, 'items without text');
  t.match(parseEvents(items.errorEvent('upstream_stream_broken', 'gone')).at(-1)!.data, { code: 'upstream_stream_broken' }, 'the stream then ends with its error event');
});
