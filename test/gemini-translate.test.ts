// Pure fixtures for the Gemini family, in the Gemini API's documented shapes.
import type { Test } from 'tap';
import t from 'tap';
import { buildGeminiBody, imageTypeOfUrl } from '../src/providers/gemini/request.js';
import { finishGeminiCompletion, readGeminiUsage } from '../src/providers/gemini/response.js';
import { GeminiStreamRelay } from '../src/providers/gemini/stream-relay.js';
import { thinkingBudget } from '../src/providers/gemini/thinking.js';
import { geminiFamily } from '../src/providers/gemini/family.js';
import { cacheSalt } from '../src/providers/family.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import { ApiError } from '../src/http/errors.js';
import type { CatalogModel } from '../src/catalog/model.js';
import type { ChatRequest } from '../src/http/schemas/chat.js';

const seed = (id: string) => {
  const found = CHAT_MODELS.find((m) => m.id === id)!;
  return { ...found, modality: 'chat', prices: { input: 0n, cachedInput: 0n, cacheWrite: 0n, output: 0n }, isActive: true } as CatalogModel;
};
const FLASH = seed('google/gemini-2.5-flash');
const PRO = seed('google/gemini-2.5-pro');
const OPTIONS = { includeReasoning: true, id: 'chatcmpl-abc', created: 1_700_000_000 };
const req = (fields: Partial<ChatRequest>): ChatRequest => ({ model: FLASH.id, messages: [{ role: 'user', content: 'hi' }], ...fields }) as ChatRequest;
const body = (fields: Partial<ChatRequest>, model = FLASH) => buildGeminiBody(req(fields), model, 'part-1');

function refused(t: Test, fields: Partial<ChatRequest>, param: string) {
  try {
    body(fields);
    t.fail(`expected a 400 for ${param}`);
  } catch (error) {
    t.ok(error instanceof ApiError, 'an ApiError');
    t.equal((error as ApiError).status, 400);
    t.equal((error as ApiError).param, param, `names ${param}`);
  }
}

t.test('the upstream request: URL, key header, body', async (t) => {
  const target = { baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: 'AIza-test' };
  const whole = geminiFamily.request(req({}), FLASH, false, target, { partition: 'p' });
  t.equal(whole.url, 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent');
  t.same(whole.headers, { 'x-goog-api-key': 'AIza-test', 'content-type': 'application/json' });
  const streamed = geminiFamily.request(req({}), PRO, true, target, { partition: 'p' });
  t.equal(streamed.url, 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
  t.same(JSON.parse(streamed.body).contents, [{ role: 'user', parts: [{ text: 'hi' }] }]);
});

t.test('messages: system first with the cache salt, roles user/model, same-role turns merged, images, tool calls and results', async (t) => {
  const b = body({
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
      { role: 'user', content: 'one' },
      { role: 'user', content: [{ type: 'text', text: 'two' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0K' } }, { type: 'image_url', image_url: { url: 'https://example.com/cat.JPG?x=1' } }] },
      { role: 'assistant', content: 'Let me check.', tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } },
      ] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      { role: 'tool', tool_call_id: 'call_2', content: 'noon' },
      { role: 'assistant', content: null },
      { role: 'assistant', content: 'It is 21 degrees at noon.' },
      { role: 'user', content: 'thanks' },
    ] as ChatRequest['messages'],
  });
  t.same(b.systemInstruction, { parts: [{ text: cacheSalt('part-1') }, { text: 'You are terse.' }, { text: 'Answer in French.' }] }, 'the per-user salt is the first part');
  t.same(b.contents, [
    { role: 'user', parts: [{ text: 'one' }, { text: 'two' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0K' } }, { fileData: { fileUri: 'https://example.com/cat.JPG?x=1', mimeType: 'image/jpeg' } }] },
    { role: 'model', parts: [{ text: 'Let me check.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_time', args: {} } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { temp: 21 } } }, { functionResponse: { name: 'get_time', response: { content: 'noon' } } }] },
    { role: 'model', parts: [{ text: 'It is 21 degrees at noon.' }] },
    { role: 'user', parts: [{ text: 'thanks' }] },
  ]);
  t.equal(imageTypeOfUrl('https://x.test/a.webp'), 'image/webp');
  t.equal(imageTypeOfUrl('https://x.test/a'), undefined);
});

t.test('generation config: cap, sampling, stop, n, JSON mode, thinking', async (t) => {
  const b = body({ max_tokens: 1000, temperature: 1.5, top_p: 0.9, presence_penalty: 0.5, frequency_penalty: -0.5, seed: 7, stop: 'END', n: 2 });
  t.same(b.generationConfig, {
    maxOutputTokens: 1000, temperature: 1.5, topP: 0.9, presencePenalty: 0.5, frequencyPenalty: -0.5, seed: 7, candidateCount: 2, stopSequences: ['END'],
    thinkingConfig: { thinkingBudget: 500, includeThoughts: true },
  });
  t.equal(body({}).generationConfig.maxOutputTokens, 65_535, 'the model cap by default');
  t.equal(body({ max_completion_tokens: 300, max_tokens: 900 }).generationConfig.maxOutputTokens, 300, 'max_completion_tokens wins');
  t.same(body({ stop: ['a', 'b'] }).generationConfig.stopSequences, ['a', 'b']);
  t.same(body({ response_format: { type: 'json_object' } }).generationConfig.responseMimeType, 'application/json');
  const schema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
  const withSchema = body({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }).generationConfig;
  t.equal(withSchema.responseMimeType, 'application/json');
  t.same(withSchema.responseJsonSchema, schema);
  t.notOk('responseMimeType' in body({ response_format: { type: 'text' } }).generationConfig);
  t.same(body({ include_reasoning: false }).generationConfig.thinkingConfig, { thinkingBudget: 8192, includeThoughts: false });
});

t.test('thinking budgets: effort mapping, model ranges, never more than half the cap', async (t) => {
  const budget = (fields: Partial<ChatRequest>, model: CatalogModel, cap: number) => thinkingBudget(req(fields), model, cap);
  t.equal(budget({}, FLASH, 65_535), 8192);
  t.equal(budget({ reasoning_effort: 'minimal' }, FLASH, 65_535), 0, 'off on Flash');
  t.equal(budget({ reasoning_effort: 'minimal' }, PRO, 65_535), 128, 'Pro cannot turn thinking off');
  t.equal(budget({ reasoning_effort: 'low' }, FLASH, 65_535), 1024);
  t.equal(budget({ reasoning_effort: 'medium' }, PRO, 65_535), 8192);
  t.equal(budget({ reasoning_effort: 'high' }, FLASH, 65_535), 24_576);
  t.equal(budget({ reasoning_effort: 'high' }, PRO, 65_535), 32_767, 'its most, held to half the cap');
  t.equal(budget({ reasoning_effort: 'high' }, PRO, 65_536), 32_768);
  t.equal(budget({ reasoning_effort: 'high' }, FLASH, 3000), 1500, 'half the cap');
  t.equal(budget({}, PRO, 100), 128, "Pro's floor (maxOutputTokens still bounds thoughts and answer together)");
});

t.test('tools and tool_choice', async (t) => {
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } } }, { type: 'function' as const, function: { name: 'noop' } }];
  const b = body({ tools, tool_choice: 'auto' });
  t.same(b.tools, [{ functionDeclarations: [
    { name: 'get_weather', description: 'Weather', parametersJsonSchema: tools[0]!.function.parameters },
    { name: 'noop' },
  ] }]);
  t.same(b.toolConfig, { functionCallingConfig: { mode: 'AUTO' } });
  t.same(body({ tools, tool_choice: 'none' }).toolConfig, { functionCallingConfig: { mode: 'NONE' } });
  t.same(body({ tools, tool_choice: 'required' }).toolConfig, { functionCallingConfig: { mode: 'ANY' } });
  t.same(body({ tools, tool_choice: { type: 'function', function: { name: 'noop' } } }).toolConfig, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['noop'] } });
  t.notOk('toolConfig' in body({ tools }));
  refused(t, { tools, tool_choice: { type: 'function', function: { name: 'other' } } }, 'tool_choice');
  refused(t, { tool_choice: 'required' }, 'tool_choice');
});

t.test('refusals name the field', async (t) => {
  refused(t, { logprobs: true }, 'logprobs');
  refused(t, { top_logprobs: 3 }, 'top_logprobs');
  refused(t, { logit_bias: { '1': 2 } }, 'logit_bias');
  refused(t, { parallel_tool_calls: false }, 'parallel_tool_calls');
  refused(t, { messages: [{ role: 'system', content: 'only' }] as ChatRequest['messages'] }, 'messages');
  refused(t, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/picture' } }] }] as ChatRequest['messages'] }, 'messages[0].content[0].image_url.url');
  refused(t, { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png,rawbytes' } }] }] as ChatRequest['messages'] }, 'messages[0].content[0].image_url.url');
  refused(t, { messages: [{ role: 'system', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] }, { role: 'user', content: 'x' }] as ChatRequest['messages'] }, 'messages[0].content[0]');
  refused(t, { messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'nope', content: 'r' }] as ChatRequest['messages'] }, 'messages[1].tool_call_id');
  refused(t, { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] as ChatRequest['messages'] }, 'messages[0].tool_calls[0].function.arguments');
  refused(t, { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{bad' } }] }] as ChatRequest['messages'] }, 'messages[0].tool_calls[0].function.arguments');
  t.doesNotThrow(() => body({ logprobs: false, parallel_tool_calls: true }), 'false logprobs and parallel calls allowed are no-ops');
});

// A response in the documented GenerateContentResponse shape.
const RESPONSE = {
  candidates: [{
    content: { role: 'model', parts: [{ text: 'Let me think.', thought: true }, { text: 'Hello' }, { text: ' there.' }] },
    finishReason: 'STOP', index: 0, safetyRatings: [],
  }],
  usageMetadata: { promptTokenCount: 1200, cachedContentTokenCount: 1030, candidatesTokenCount: 3, thoughtsTokenCount: 4, totalTokenCount: 1207, promptTokensDetails: [{ modality: 'TEXT', tokenCount: 1200 }] },
  modelVersion: 'gemini-2.5-flash', responseId: 'abc',
};

t.test('a response becomes a chat.completion with usage as the spec words it', async (t) => {
  const finished = finishGeminiCompletion(JSON.stringify(RESPONSE), FLASH, OPTIONS);
  t.same(JSON.parse(finished.body), {
    id: 'chatcmpl-abc', object: 'chat.completion', created: 1_700_000_000, model: 'google/gemini-2.5-flash',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there.', reasoning_content: 'Let me think.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1200, completion_tokens: 7, total_tokens: 1207, prompt_tokens_details: { cached_tokens: 1030, cache_read_input_tokens: 1030 }, completion_tokens_details: { reasoning_tokens: 4 } },
  });
  t.same(finished.usage, { promptTokens: 1200, completionTokens: 7, cachedTokens: 1030, cacheWriteTokens: 0, reasoningTokens: 4 });
  t.equal(finished.generated, 'Let me think.Hello there.');
  const hidden = JSON.parse(finishGeminiCompletion(JSON.stringify(RESPONSE), FLASH, { ...OPTIONS, includeReasoning: false }).body);
  t.notOk('reasoning_content' in hidden.choices[0].message, 'include_reasoning false drops reasoning');
  t.equal(hidden.usage.completion_tokens, 7, 'thoughts still billed');
  t.equal(readGeminiUsage(undefined), undefined);
  t.equal(readGeminiUsage({ totalTokenCount: 3 }), undefined);
});

t.test('function calls, several candidates and finish reasons', async (t) => {
  const response = {
    candidates: [
      { content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_time' } }] }, finishReason: 'STOP', index: 0 },
      { content: { role: 'model', parts: [{ text: 'cut' }] }, finishReason: 'MAX_TOKENS', index: 1 },
      { content: { role: 'model', parts: [] }, finishReason: 'SAFETY', index: 2 },
      { content: { role: 'model', parts: [{ text: 'q' }] }, finishReason: 'RECITATION', index: 3 },
      { finishReason: 'PROHIBITED_CONTENT', index: 4 },
      { content: { parts: [{ text: 'odd' }] }, finishReason: 'OTHER', index: 5 },
    ],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 20, totalTokenCount: 30 },
  };
  const completion = JSON.parse(finishGeminiCompletion(JSON.stringify(response), FLASH, OPTIONS).body);
  const [calls, ...rest] = completion.choices;
  t.equal(calls.finish_reason, 'tool_calls');
  t.equal(calls.message.content, null);
  t.match(calls.message.tool_calls, [
    { id: /^call_/, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    { id: /^call_/, type: 'function', function: { name: 'get_time', arguments: '{}' } },
  ]);
  t.not(calls.message.tool_calls[0].id, calls.message.tool_calls[1].id);
  t.same(rest.map((c: any) => [c.index, c.finish_reason]), [[1, 'length'], [2, 'content_filter'], [3, 'content_filter'], [4, 'content_filter'], [5, 'stop']]);
  t.equal(completion.usage.completion_tokens, 20);
});

t.test('a blocked prompt answers content_filter with empty content; a body that is not a response throws', async (t) => {
  const blocked = { promptFeedback: { blockReason: 'SAFETY', safetyRatings: [] }, usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 } };
  const finished = finishGeminiCompletion(JSON.stringify(blocked), FLASH, OPTIONS);
  t.same(JSON.parse(finished.body).choices, [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'content_filter' }]);
  t.same(finished.usage, { promptTokens: 8, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
  for (const bad of ['not json', '[]', '{}', '{"candidates":3}', 'null']) t.throws(() => finishGeminiCompletion(bad, FLASH, OPTIONS), bad);
});

// A recorded-shape stream: thoughts, text, a finishing chunk with the usage; CRLF framing as Google sends it.
const event = (value: unknown) => `data: ${JSON.stringify(value)}\r\n\r\n`;
const chunk = (parts: unknown[], extra: Record<string, unknown> = {}) => ({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], modelVersion: 'gemini-2.5-flash', responseId: 'r1' });
const STREAM = [
  event({ ...chunk([{ text: 'Pondering ', thought: true }]), usageMetadata: { promptTokenCount: 1100, totalTokenCount: 1100 } }),
  event(chunk([{ text: 'Hé' }])),
  event(chunk([{ text: 'llo, wörld' }])),
  event({ ...chunk([{ text: '!' }], { finishReason: 'STOP' }), usageMetadata: { promptTokenCount: 1100, cachedContentTokenCount: 1028, candidatesTokenCount: 5, thoughtsTokenCount: 9, totalTokenCount: 1114 } }),
].join('');

function relayAll(pieces: Buffer[], includeReasoning = true): { out: string; relay: GeminiStreamRelay } {
  const relay = new GeminiStreamRelay('google/gemini-2.5-flash', { ...OPTIONS, includeReasoning });
  let out = '';
  for (const piece of pieces) out += relay.push(piece)?.toString() ?? '';
  out += relay.flush()?.toString() ?? '';
  return { out, relay };
}

const chunksOf = (out: string) => out.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));

t.test('a stream becomes chat.completion.chunk events, then usage, then [DONE]', async (t) => {
  const { out, relay } = relayAll([Buffer.from(STREAM)]);
  t.ok(out.endsWith('data: [DONE]\n\n'));
  const chunks = chunksOf(out);
  for (const c of chunks) t.match(c, { id: 'chatcmpl-abc', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'google/gemini-2.5-flash' });
  t.same(chunks.map((c) => c.choices[0]?.delta ?? null), [
    { role: 'assistant', reasoning_content: 'Pondering ', content: '' },
    { content: 'Hé' }, { content: 'llo, wörld' }, { content: '!' }, {}, null,
  ]);
  t.equal(chunks[4].choices[0].finish_reason, 'stop');
  t.same(chunks[5], { id: 'chatcmpl-abc', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'google/gemini-2.5-flash', choices: [], usage: {
    prompt_tokens: 1100, completion_tokens: 14, total_tokens: 1114, prompt_tokens_details: { cached_tokens: 1028, cache_read_input_tokens: 1028 }, completion_tokens_details: { reasoning_tokens: 9 },
  } });
  t.same(relay.usage, { promptTokens: 1100, completionTokens: 14, cachedTokens: 1028, cacheWriteTokens: 0, reasoningTokens: 9 });
  t.equal(relay.generatedText(), 'Pondering Héllo, wörld!');
  const hidden = relayAll([Buffer.from(STREAM)], false).out;
  t.notMatch(hidden, /reasoning_content|Pondering/);
  t.match(hidden, /"completion_tokens":14/);
});

t.test('the stream split at every byte boundary relays the same events', async (t) => {
  const bytes = Buffer.from(STREAM);
  const whole = relayAll([bytes]).out.replace(/call_[\w-]+/g, 'call');
  for (let at = 1; at < bytes.length; at++) {
    const { out } = relayAll([bytes.subarray(0, at), bytes.subarray(at)]);
    if (out !== whole) {
      t.equal(out, whole, `split at byte ${at}`);
      return;
    }
  }
  const single = relayAll([...bytes].map((b) => Buffer.from([b])));
  t.equal(single.out, whole, 'one byte at a time');
  t.equal(single.relay.usage?.completionTokens, 14);
  const lf = relayAll([Buffer.from(STREAM.replaceAll('\r\n', '\n'))]).out;
  t.equal(lf, whole, 'LF framing too');
});

t.test('usage is known once every candidate finished; function calls stream whole', async (t) => {
  const relay = new GeminiStreamRelay('m/g', OPTIONS);
  const first = relay.push(Buffer.from(event({ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] }, index: 0 }], usageMetadata: { promptTokenCount: 5 } })))!.toString();
  t.equal(relay.usage, undefined, 'not final yet');
  const [c] = chunksOf(first);
  t.match(c.choices[0].delta, { role: 'assistant', tool_calls: [{ index: 0, id: /^call_/, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
  const last = relay.push(Buffer.from(event({ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'get_time', args: {} } }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 12, totalTokenCount: 17 } })))!.toString();
  const [second, finish] = chunksOf(last);
  t.equal(second.choices[0].delta.tool_calls[0].index, 1, 'the second call gets the next index');
  t.equal(finish.choices[0].finish_reason, 'tool_calls');
  t.equal(relay.usage?.completionTokens, 12, 'final usage exposed before flush');
  t.equal(relay.generatedText(), 'get_weather{"city":"Paris"}get_time{}');
});

t.test('a blocked prompt streams content_filter; an error event fails the call, garbage breaks the stream', async (t) => {
  const { out } = relayAll([Buffer.from(event({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 } }))]);
  const chunks = chunksOf(out);
  t.same(chunks.map((c) => [c.choices[0]?.delta, c.choices[0]?.finish_reason]), [[{ role: 'assistant', content: '' }, null], [{}, 'content_filter'], [undefined, undefined]]);
  t.equal(chunks[2].usage.prompt_tokens, 4);
  const relay = new GeminiStreamRelay('m/g', OPTIONS);
  const failed = chunksOf(String(relay.push(Buffer.concat([Buffer.from(event({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }] })), Buffer.from(event({ error: { code: 500, message: 'boom', status: 'INTERNAL' } }))]))));
  t.equal(failed[0]?.choices[0]?.delta?.content, 'Hi', 'what came before the error goes out');
  t.same(failed.at(-1), { error: { message: 'The upstream vendor failed mid-stream: boom', type: 'api_error', code: 'upstream_error' } }, 'then the gateway\'s error event');
  t.equal(relay.failure, 'upstream_error', 'the call failed');
  t.equal(relay.usage?.completionTokens, 0, 'and counts nothing');
  t.equal(relay.flush(), undefined, 'no usage chunk, no [DONE]');
  t.throws(() => new GeminiStreamRelay('m/g', OPTIONS).push(Buffer.from('data: {nope\n\n')));
});

t.test('bounds: an event still incomplete past maxEventBytes throws; generated text stops at maxGeneratedChars', async (t) => {
  const endless = new GeminiStreamRelay('m/g', { ...OPTIONS, maxEventBytes: 1024 });
  t.throws(() => {
    for (let i = 0; i < 20; i++) endless.push(Buffer.from('data: '.padEnd(100, 'A')));
  }, /grew past 1024 bytes/);
  const relay = new GeminiStreamRelay('m/g', { ...OPTIONS, maxGeneratedChars: 12 });
  relay.push(Buffer.from(STREAM));
  relay.flush();
  t.equal(relay.generatedText(), 'Pondering Hé');
});
