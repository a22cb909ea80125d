// The Messages endpoint's pure parts for non-Anthropic families: request translation, the Message
// object, the event stream (checked with @anthropic-ai/sdk's own stream parser and accumulator).
import t, { type Test } from 'tap';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { MESSAGES_FIELD_NAMES, effortForBudget, messagesToChatRequest } from '../src/http/messages/to-chat.js';
import { anthropicUsage, messageFromCompletion, messageIdOf, thinkingSignature } from '../src/http/messages/message-object.js';
import { MessagesEventRelay } from '../src/http/messages/event-stream.js';
import { anthropicErrorJson, anthropicErrorEvent, anthropicErrorType } from '../src/http/messages/errors.js';
import { THINKING_BUDGETS } from '../src/providers/anthropic/request.js';
import { readAnthropicUsage } from '../src/providers/anthropic/answer.js';
import { sseErrorEvent } from '../src/http/sse.js';
import { ApiError } from '../src/http/errors.js';
import type { ChatStreamRelay } from '../src/providers/family.js';
import type { NormalizedUsage } from '../src/providers/usage.js';

const CALL_ID = '0b7c6a52-3a57-4c1e-9c1e-2f1a8f7e6d5c';
const META = { id: messageIdOf(CALL_ID), model: 'openai/gpt-4o-mini' };
const USAGE: NormalizedUsage = { promptTokens: 120, completionTokens: 7, cachedTokens: 80, cacheWriteTokens: 10, reasoningTokens: 2 };
const USER = { role: 'user', content: 'hi' };

function refused(t: Test, body: Record<string, unknown>, param: string, code?: string): void {
  try {
    messagesToChatRequest(body);
    t.fail(`accepted ${JSON.stringify(body)}`);
  } catch (error) {
    t.ok(error instanceof ApiError, String(error));
    t.equal((error as ApiError).status, 400);
    t.equal((error as ApiError).param, param, JSON.stringify(body));
    if (code) t.equal((error as ApiError).code, code, param);
  }
}

t.test('text, system blocks, stop_sequences, sampling, metadata, stream; cache_control and service_tier ignored', async (t) => {
  t.same(messagesToChatRequest({ model: 'gpt-4o', max_tokens: 100, messages: [USER] }), {
    model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100, include_reasoning: false,
  });
  const chat = messagesToChatRequest({
    model: 'google/gemini-2.5-flash', max_tokens: 1024, stream: true, temperature: 0.3, top_p: 0.9,
    stop_sequences: ['END', '\n\nHuman:'], metadata: { user_id: 'user_abc_session_1' }, service_tier: 'auto',
    system: [
      { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ],
    messages: [
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>ctx</system-reminder>' }, { type: 'text', text: 'Fix it', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.', citations: null }] },
      { role: 'user', content: 'Thanks' },
    ],
  });
  t.same(chat, {
    model: 'google/gemini-2.5-flash',
    messages: [
      { role: 'system', content: 'You are Claude Code.\n\nBe brief.' },
      { role: 'user', content: '<system-reminder>ctx</system-reminder>\nFix it' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Thanks' },
    ],
    max_tokens: 1024, stop: ['END', '\n\nHuman:'], stream: true, temperature: 0.3, top_p: 0.9, include_reasoning: false, user: 'user_abc_session_1',
  });
  t.same(messagesToChatRequest({ model: 'm', max_tokens: 5, system: 'Rules.', messages: [USER] }).messages[0], { role: 'system', content: 'Rules.' });
  t.same(messagesToChatRequest({ model: 'm', max_tokens: 5, models: ['a', 'b'], messages: [USER] }).models, ['a', 'b'], 'the gateway fallback list passes');
});

t.test('images (base64, url) and documents (text, content) become chat parts', async (t) => {
  const chat = messagesToChatRequest({
    model: 'm', max_tokens: 10,
    messages: [{
      role: 'user', content: [
        { type: 'text', text: 'Compare' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' }, cache_control: { type: 'ephemeral' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        { type: 'document', title: 'Notes', source: { type: 'text', media_type: 'text/plain', data: 'line one' } },
        { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'part' }, { type: 'image', source: { type: 'url', url: 'https://example.com/d.png' } }] } },
        { type: 'text', text: '' },
      ],
    }],
  });
  t.same(chat.messages, [{
    role: 'user', content: [
      { type: 'text', text: 'Compare' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
      { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
      { type: 'text', text: 'Notes\n\nline one' },
      { type: 'text', text: 'part' },
      { type: 'image_url', image_url: { url: 'https://example.com/d.png' } },
    ],
  }]);
});

t.test('tool use, tool results (string, blocks with an image, is_error), tools and tool_choice', async (t) => {
  const tools = [
    { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }, cache_control: { type: 'ephemeral' } },
    { type: 'custom', name: 'Bash', input_schema: { type: 'object' } },
  ];
  const chat = messagesToChatRequest({
    model: 'm', max_tokens: 10, tools, tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    messages: [
      USER,
      { role: 'assistant', content: [
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { path: 'a.ts' } },
        { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: {} },
      ] },
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'const a = 1;' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/' } }], cache_control: { type: 'ephemeral' } },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: 'command not found', is_error: true },
        { type: 'text', text: 'Go on.' },
      ] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_3', name: 'Bash', input: { cmd: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_3' }] },
    ],
  });
  t.same(chat.messages, [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'Reading.', tool_calls: [
      { id: 'toolu_1', type: 'function', function: { name: 'Read', arguments: '{"path":"a.ts"}' } },
      { id: 'toolu_2', type: 'function', function: { name: 'Bash', arguments: '{}' } },
    ] },
    { role: 'tool', tool_call_id: 'toolu_1', content: 'const a = 1;' },
    { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: command not found' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/' } }, { type: 'text', text: 'Go on.' }] },
    { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_3', type: 'function', function: { name: 'Bash', arguments: '{"cmd":"ls"}' } }] },
    { role: 'tool', tool_call_id: 'toolu_3', content: '' },
  ]);
  t.same(chat.tools, [
    { type: 'function', function: { name: 'Read', description: 'Read a file', parameters: tools[0]!.input_schema } },
    { type: 'function', function: { name: 'Bash', parameters: { type: 'object' } } },
  ]);
  t.equal(chat.tool_choice, 'auto');
  t.equal(chat.parallel_tool_calls, false);
  const choice = (tool_choice: unknown) => messagesToChatRequest({ model: 'm', max_tokens: 10, tools, tool_choice, messages: [USER] });
  t.equal(choice({ type: 'any' }).tool_choice, 'required');
  t.equal(choice({ type: 'none' }).tool_choice, 'none');
  t.same(choice({ type: 'tool', name: 'Bash' }).tool_choice, { type: 'function', function: { name: 'Bash' } });
  t.notOk('parallel_tool_calls' in choice({ type: 'any' }));
  t.notOk('tool_choice' in messagesToChatRequest({ model: 'm', max_tokens: 10, tool_choice: { type: 'auto' }, messages: [USER] }), 'auto without tools: nothing');
});

t.test('thinking: budgets map to reasoning_effort, disabled or absent leaves reasoning out; thinking blocks sent back are dropped', async (t) => {
  for (const [effort, budget] of Object.entries(THINKING_BUDGETS)) t.equal(effortForBudget(budget), effort === 'minimal' ? 'low' : effort, `${budget} is ${effort === 'minimal' ? 'low: enabled thinking never turns it off' : effort}`);
  t.equal(effortForBudget(10_000), 'medium');
  t.equal(effortForBudget(31_999), 'high');
  t.equal(effortForBudget(2_000), 'low');
  t.equal(effortForBudget(128_000), 'high');
  const thinking = messagesToChatRequest({ model: 'm', max_tokens: 40_000, thinking: { type: 'enabled', budget_tokens: 31_999 }, messages: [USER] });
  t.equal(thinking.reasoning_effort, 'high');
  t.notOk('include_reasoning' in thinking);
  const off = messagesToChatRequest({ model: 'm', max_tokens: 10, thinking: { type: 'disabled' }, messages: [USER] });
  t.notOk('reasoning_effort' in off);
  t.equal(off.include_reasoning, false);

  // A Message this gateway answered, sent back as the assistant turn (as Claude Code does).
  const answered = JSON.parse(messageFromCompletion(JSON.stringify({ choices: [{ finish_reason: 'tool_calls', message: {
    role: 'assistant', reasoning_content: 'Let me look.', content: 'Looking.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"path":"x"}' } }],
  } }] }), USAGE, META));
  const chat = messagesToChatRequest({
    model: 'm', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 },
    tools: [{ name: 'Read', input_schema: { type: 'object' } }],
    messages: [
      USER,
      { role: 'assistant', content: answered.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'x' }] },
      { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'EmwKAhgB' }, { type: 'thinking', thinking: 'hm', signature: 'not-ours' }] },
      { role: 'user', content: 'and?' },
    ],
  });
  t.same(chat.messages, [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'Looking.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'Read', arguments: '{"path":"x"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'x' },
    { role: 'user', content: 'and?' },
  ], 'thinking dropped, a turn of only thinking left out');
  t.equal(chat.reasoning_effort, 'low');
});

t.test('refusals name the Messages field', async (t) => {
  refused(t, { messages: [USER], max_tokens: 1 }, 'model');
  refused(t, { model: 'm', messages: [USER] }, 'max_tokens');
  refused(t, { model: 'm', max_tokens: 0, messages: [USER] }, 'max_tokens');
  refused(t, { model: 'm', max_tokens: 1, messages: [] }, 'messages');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'audio' }] }] }, 'messages[0].content[0].type');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER, { role: 'assistant', content: [{ type: 'text', text: 'a' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] }, 'messages[1].content[1].type', 'unsupported_content');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }] }, 'messages[0].content[0].type', 'unsupported_content');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }, 'messages[0].content[0].source.type');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }] }] }, 'messages[0].content[0].source.media_type');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER, { role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }] }, 'messages[1].content[0].source', 'unsupported_content');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }] }] }] }, 'messages[0].content[0].content[0].source', 'unsupported_content');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: '' }] }] }, 'messages[0].content[0].tool_use_id');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], top_k: 40 }, 'top_k', 'unsupported_parameter');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], temperature: 1.5 }, 'temperature');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, 'stop_sequences');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tools: [{ name: 'f', input_schema: { type: 'object' } }, { type: 'web_search_20250305', name: 'web_search', max_uses: 5 }] }, 'tools[1].type', 'unsupported_parameter');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tools: [{ type: 'bash_20250124', name: 'bash' }] }, 'tools[0].type', 'unsupported_parameter');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tools: [{ name: 'f' }] }, 'tools[0].input_schema');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tools: [{ name: 'a b', input_schema: {} }] }, 'tools[0].name');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tool_choice: { type: 'any' } }, 'tool_choice.type');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], tools: [{ name: 'f', input_schema: {} }], tool_choice: { type: 'tool', name: 'g' } }, 'tool_choice.name');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], thinking: { type: 'enabled', budget_tokens: 100 } }, 'thinking.budget_tokens');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], thinking: { type: 'adaptive' } }, 'thinking.type');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], metadata: { user_id: 'x'.repeat(257) } }, 'metadata.user_id');
  refused(t, { model: 'm', max_tokens: 1, messages: [USER], container: 'c' }, 'container');
  refused(t, { model: 'm', max_tokens: 1, messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] }] }, 'messages');
  t.equal(MESSAGES_FIELD_NAMES.max_completion_tokens, 'max_tokens');
  t.equal(MESSAGES_FIELD_NAMES.stop, 'stop_sequences');
  t.equal(MESSAGES_FIELD_NAMES.reasoning_effort, 'thinking');
});

t.test('a finished completion as the Message: thinking with a signature, text, tool_use; stop reasons; usage', async (t) => {
  const completion = (message: Record<string, unknown>, finish: string) => JSON.stringify({
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'openai/gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
  });
  const message = JSON.parse(messageFromCompletion(completion({
    content: 'Let me check.', reasoning_content: 'The user wants a file.',
    tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'Read', arguments: '{"path":"a.ts"}' } }, { id: 'call_10', type: 'function', function: { name: 'Bash', arguments: '' } }],
  }, 'tool_calls'), USAGE, META));
  t.same(message, {
    id: 'msg_0b7c6a523a574c1e9c1e2f1a8f7e6d5c', type: 'message', role: 'assistant', model: 'openai/gpt-4o-mini',
    content: [
      { type: 'thinking', thinking: 'The user wants a file.', signature: thinkingSignature(META.id, 0, 'The user wants a file.') },
      { type: 'text', text: 'Let me check.', citations: null },
      { type: 'tool_use', id: 'call_9', name: 'Read', input: { path: 'a.ts' } },
      { type: 'tool_use', id: 'call_10', name: 'Bash', input: {} },
    ],
    stop_reason: 'tool_use', stop_sequence: null,
    usage: { input_tokens: 30, output_tokens: 7, cache_creation_input_tokens: 10, cache_read_input_tokens: 80 },
  });
  t.match(message.content[0].signature, /^gw1_[A-Za-z0-9_-]{43}$/);
  t.equal(thinkingSignature(META.id, 0, 'x'), thinkingSignature(META.id, 0, 'x'), 'deterministic');
  t.not(thinkingSignature(META.id, 0, 'x'), thinkingSignature(META.id, 0, 'y'));
  const stop = (finish: string, extra: Record<string, unknown> = {}) => JSON.parse(messageFromCompletion(completion({ content: 'a', ...extra }, finish), USAGE, META)).stop_reason;
  t.equal(stop('stop'), 'end_turn');
  t.equal(stop('length'), 'max_tokens');
  t.equal(stop('content_filter'), 'refusal');
  t.equal(stop('stop', { tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{}' } }] }), 'tool_use', 'a vendor finishing a call as stop');
  t.same(JSON.parse(messageFromCompletion(completion({ content: '' }, 'stop'), USAGE, META)).content, [], 'nothing said, no block');
  const noId = JSON.parse(messageFromCompletion(completion({ content: null, tool_calls: [{ function: { name: 'f', arguments: 'not json' } }] }, 'tool_calls'), USAGE, META));
  t.same(noId.content, [{ type: 'tool_use', id: 'toolu_0b7c6a523a574c1e9c1e2f1a8f7e6d5c_0', name: 'f', input: {} }]);
});

t.test('anthropicUsage is the inverse of readAnthropicUsage; error types by status', async (t) => {
  t.same(readAnthropicUsage(anthropicUsage(USAGE)), { ...USAGE, reasoningTokens: 0 });
  t.same(anthropicUsage({ promptTokens: 5, completionTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 }), { input_tokens: 5, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
  const types = Object.fromEntries([400, 401, 402, 403, 404, 409, 413, 422, 429, 500, 502, 503, 504, 529].map((status) => [status, anthropicErrorType(status)]));
  t.same(types, {
    400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error', 403: 'permission_error', 404: 'not_found_error', 409: 'invalid_request_error',
    413: 'request_too_large', 422: 'invalid_request_error', 429: 'rate_limit_error', 500: 'api_error', 502: 'api_error', 503: 'overloaded_error', 504: 'timeout_error', 529: 'overloaded_error',
  });
  t.same(JSON.parse(anthropicErrorJson('rate_limit_error', 'slow down')), { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
});

/** A stand-in family relay: hands back the chunk events it is given; `flush` the usage chunk and [DONE]. */
function fakeRelay(): ChatStreamRelay & { usageIs(u: NormalizedUsage): void } {
  let usage: NormalizedUsage | undefined;
  return {
    get usage() { return usage; },
    usageIs(u) { usage = u; },
    push: (chunk) => chunk,
    flush: () => Buffer.from('data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":7}}\n\ndata: [DONE]\n\n'),
    generatedText: () => '',
  };
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

/** Runs pushes through a relay as the chat pipeline does (push..., flush, end(usage)); returns the SSE text. */
function stream(pushes: string[], options: { maxChars?: number; usage?: NormalizedUsage } = {}): string {
  const inner = fakeRelay();
  const relay = new MessagesEventRelay(inner, META, options.maxChars);
  let out = '';
  for (const push of pushes) out += relay.push(Buffer.from(push))?.toString() ?? '';
  inner.usageIs(options.usage ?? USAGE);
  out += relay.flush()?.toString() ?? '';
  out += relay.end(options.usage ?? USAGE).toString();
  return out;
}

function parseEvents(text: string): { event: string; data: any }[] {
  return text.split('\n\n').filter(Boolean).map((block) => {
    const [event, data, extra] = block.split('\n');
    if (extra !== undefined || !event!.startsWith('event: ') || !data!.startsWith('data: ')) throw new Error(`not one event line and one data line: ${block}`);
    return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
  });
}

/** The SSE text as the Anthropic SDK reads it over HTTP: its SSE decoder, then MessageStream's accumulator. */
function sdkStream(sse: string) {
  const client = new Anthropic({
    apiKey: 'sk-test', maxRetries: 0,
    fetch: async () => new Response(sse, { status: 200, headers: { 'content-type': 'text/event-stream' } }),
  });
  return client.messages.stream({ model: META.model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
}

const REASONING_TEXT_TOOLS = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ reasoning_content: 'The user ' }) + chunk({ reasoning_content: 'wants a file.' }),
  chunk({ content: 'Let me ' }),
  chunk({ content: 'check.' }) + chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'Read', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"a.ts"}' } }] }) + chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'Bash', arguments: '{"cmd":"ls"}' } }] }),
  chunk({}, 'tool_calls'),
];

t.test('the chunk stream as the exact Anthropic event sequence: thinking, text, two tool calls split across pushes', async (t) => {
  const events = parseEvents(stream(REASONING_TEXT_TOOLS));
  t.same(events.map((e) => e.event), [
    'message_start', 'ping',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop',
    'content_block_start', 'content_block_delta', 'content_block_stop',
    'message_delta', 'message_stop',
  ]);
  t.same(events.map((e) => e.data.type), events.map((e) => e.event), 'data.type names the event');
  t.same(events[0]!.data.message, {
    id: META.id, type: 'message', role: 'assistant', model: META.model, content: [], stop_reason: null, stop_sequence: null,
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  });
  t.same(events.slice(2, 7).map((e) => e.data), [
    { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'The user ' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'wants a file.' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: thinkingSignature(META.id, 0, 'The user wants a file.') } },
    { type: 'content_block_stop', index: 0 },
  ], 'the streamed signature is the one the whole Message would carry');
  t.same(events[7]!.data.content_block, { type: 'text', text: '' });
  t.same(events[11]!.data, { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'call_1', name: 'Read', input: {} } });
  t.same(events.slice(12, 14).map((e) => e.data.delta), [{ type: 'input_json_delta', partial_json: '{"pa' }, { type: 'input_json_delta', partial_json: 'th":"a.ts"}' }]);
  t.same(events[15]!.data.content_block, { type: 'tool_use', id: 'call_2', name: 'Bash', input: {} });
  t.same(events[18]!.data, {
    type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 30, output_tokens: 7, cache_creation_input_tokens: 10, cache_read_input_tokens: 80 },
  });
});

t.test('the Anthropic SDK reads the stream into the Message a non-streamed call answers', async (t) => {
  const sse = stream(REASONING_TEXT_TOOLS);
  const texts: string[] = [];
  const sdk = sdkStream(sse).on('text', (delta) => texts.push(delta));
  const message = await sdk.finalMessage();
  t.same(texts, ['Let me ', 'check.']);
  const whole = JSON.parse(messageFromCompletion(JSON.stringify({ choices: [{ finish_reason: 'tool_calls', message: {
    role: 'assistant', reasoning_content: 'The user wants a file.', content: 'Let me check.',
    tool_calls: [{ id: 'call_1', function: { name: 'Read', arguments: '{"path":"a.ts"}' } }, { id: 'call_2', function: { name: 'Bash', arguments: '{"cmd":"ls"}' } }],
  } }] }), USAGE, META));
  t.same(message, { ...whole, content: whole.content.map((block: any) => (block.type === 'text' ? { type: 'text', text: block.text } : block)) });

  const plain = await sdkStream(stream([chunk({ role: 'assistant', content: '' }), chunk({ content: 'Once upon' }), chunk({}, 'length')])).finalMessage();
  t.equal(plain.stop_reason, 'max_tokens');
  t.same(plain.content, [{ type: 'text', text: 'Once upon' }]);
  const empty = await sdkStream(stream([chunk({ role: 'assistant', content: '' }), chunk({}, 'stop')])).finalMessage();
  t.same(empty.content, []);
  t.equal(empty.stop_reason, 'end_turn');
});

t.test('a broken stream ends with an Anthropic error event, which the SDK throws', async (t) => {
  // The family reports a failed upstream in the stream (sseErrorEvent): an error event, and nothing after it.
  const broken = stream([chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hal' }) + sseErrorEvent('upstream_stream_broken', 'The upstream stream ended unexpectedly.'), chunk({ content: 'f' })]);
  const events = parseEvents(broken);
  t.same(events.map((e) => e.event), ['message_start', 'ping', 'content_block_start', 'content_block_delta', 'error']);
  t.same(events.at(-1)!.data, { type: 'error', error: { type: 'api_error', message: 'The upstream stream ended unexpectedly.' } });
  const thrown = await sdkStream(broken).finalMessage().then(() => undefined, (error: unknown) => error);
  t.ok(thrown instanceof APIError, 'the SDK raises an APIError');
  t.match((thrown as APIError).error, { type: 'error', error: { type: 'api_error' } });

  const overloaded = parseEvents(stream([chunk({ content: 'a' }) + `data: ${JSON.stringify({ error: { message: 'busy', type: 'server_error', code: 'overloaded' } })}\n\n`]));
  t.same(overloaded.at(-1)!.data, { type: 'error', error: { type: 'overloaded_error', message: 'busy' } });

  // The pipeline's own break (the upstream connection failed): errorEvent, once.
  const relay = new MessagesEventRelay(fakeRelay(), META);
  const first = relay.push(Buffer.from(chunk({ content: 'a' })))!.toString();
  const error = relay.errorEvent('upstream_stream_broken', 'gone');
  t.same(parseEvents(first + error).map((e) => e.event), ['message_start', 'ping', 'content_block_start', 'content_block_delta', 'error']);
  t.equal(error, anthropicErrorEvent('api_error', 'gone'));
  t.equal(relay.errorEvent('upstream_stream_broken', 'gone'), '', 'one error event');
  t.equal(relay.end(USAGE).length, 0, 'no message_stop after an error');
});

t.test('the content blocks are bounded by maxGeneratedChars: text, arguments, blocks without text', async (t) => {
  const bounded = () => new MessagesEventRelay(fakeRelay(), META, 1000);
  const text = bounded();
  text.push(Buffer.from(chunk({ content: 'x'.repeat(900) })));
  t.throws(() => text.push(Buffer.from(chunk({ content: 'x'.repeat(100) }))), /grew past 1000 characters/, 'text');
  const thinking = bounded();
  t.throws(() => thinking.push(Buffer.from(chunk({ reasoning_content: 'x'.repeat(1001) }))), /grew past 1000 characters/, 'thinking');
  const args = bounded();
  args.push(Buffer.from(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: 'a'.repeat(900) } }] })));
  t.throws(() => args.push(Buffer.from(chunk({ tool_calls: [{ index: 0, function: { arguments: 'a'.repeat(100) } }] }))), /grew past 1000 characters/, 'arguments');
  const blocks = bounded();
  const alternating = Array.from({ length: 200 }, (_, i) => chunk({ tool_calls: [{ index: i % 2 }] })).join('');
  t.throws(() => blocks.push(Buffer.from(alternating)), /grew past 1000 characters/, 'blocks without text');
  t.match(parseEvents(blocks.errorEvent('upstream_stream_broken', 'gone')).at(-1)!.data, { type: 'error' }, 'the stream then ends with its error event');
});
