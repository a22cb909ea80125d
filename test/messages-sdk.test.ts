// POST /v1/messages through the official Anthropic SDK (`messages.create`, `messages.stream`,
// `messages.countTokens`), unchanged, on an Anthropic model (passed through), an OpenAI model and a
// Gemini model (translated): text, streaming, a tool round trip, images, thinking with its signature
// sent back, cache_control. Each call is charged exactly what the same call costs on
// /v1/chat/completions (the usage transactions, found by the calls' request ids, are compared).
import t, { type Test } from 'tap';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './helpers/harness.js';
import { leasesClosed } from './helpers/billing-checks.js';
import { promptAccounting, type AnthropicRequest } from '../src/mock-vendor/anthropic.js';

// A 1x1 PNG.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WEATHER: Anthropic.Tool = { name: 'get_weather', description: 'Weather of a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };
const MODELS = [
  { id: 'anthropic/claude-sonnet-4-5', label: 'an Anthropic model (passed through)', native: true },
  { id: 'openai/gpt-5.6-sol', label: 'an OpenAI model (translated)', native: false },
  { id: 'google/gemini-2.5-flash', label: 'a Gemini model (translated)', native: false },
] as const;

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(async () => { if (process.env.GW_DEBUG) console.error(gateway.output); await gateway.close(); });

const anthropicClient = (key: string, form: 'apiKey' | 'authToken' = 'apiKey') =>
  new Anthropic({ baseURL: gateway.url, maxRetries: 0, ...(form === 'apiKey' ? { apiKey: key } : { apiKey: null, authToken: key }) });
const openAiClient = (key: string) => new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });

/** The charge of the call whose x-request-id is `id`, once the ledger has it. */
async function chargeOf(user: string, id: string | null): Promise<bigint> {
  await gateway.ledgerSettled(user);
  const [row] = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where id = ${id}`;
  if (!row) throw new Error(`no transaction ${id}`);
  return -row.credits_nano;
}

const upstreamWith = (marker: string) => gateway.mock.requests().filter((r) => JSON.stringify(r.body ?? '').includes(marker));
const textOf = (message: Anthropic.Message) => message.content.filter((b): b is Anthropic.TextBlock => b.type === 'text').map((b) => b.text).join('');
const words = (text: string) => text.trim().split(/\s+/).filter(Boolean).length;

for (const model of MODELS) {
  t.test(`${model.label}: text, whole and streamed, charged as the same chat call`, async (t) => {
    const user = `msg-text-${model.id.split('/')[0]}`;
    const { key } = await gateway.user(user, '20');
    const client = anthropicClient(key);
    const chat = openAiClient(key);
    const prompt = `Say hello to ${user} [[mock chunks=9]]`;

    const { data: message, response } = await client.messages.create({ model: model.id, max_tokens: 300, system: 'Be brief.', messages: [{ role: 'user', content: prompt }] }).withResponse();
    t.equal(message.type, 'message');
    t.equal(message.role, 'assistant');
    t.equal(words(textOf(message)), 9, 'the answer as the mock generated it');
    t.equal(message.stop_reason, 'end_turn');
    t.equal(message.usage.output_tokens, 9);
    t.ok(message.usage.input_tokens > 0);
    if (model.native) t.equal(message.model, 'claude-sonnet-4-5-20250929', 'the upstream\'s own bytes: its dated snapshot, untouched');
    else {
      t.equal(message.model, model.id);
      t.match(message.id, /^msg_/);
    }
    const { data: completion, response: chatResponse } = await chat.chat.completions.create({ model: model.id, max_tokens: 300, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt }] }).withResponse();
    t.equal(completion.usage!.completion_tokens, 9);
    const messagesCharge = await chargeOf(user, response.headers.get('x-request-id'));
    t.ok(messagesCharge > 0n);
    t.equal(messagesCharge, await chargeOf(user, chatResponse.headers.get('x-request-id')), 'charged exactly what the chat call costs');

    const stream = client.messages.stream({ model: model.id, max_tokens: 300, system: [{ type: 'text', text: 'Be brief.' }], messages: [{ role: 'user', content: `Stream to ${user} [[mock chunks=7]]` }] });
    let streamed = '';
    stream.on('text', (delta) => { streamed += delta; });
    const final = await stream.finalMessage();
    t.equal(words(streamed), 7, 'text deltas as they came');
    t.equal(textOf(final), streamed, 'the SDK\'s accumulated message holds the same text');
    t.equal(final.stop_reason, 'end_turn');
    t.equal(final.usage.output_tokens, 7, 'usage from message_delta');
    const streamId = (await stream.withResponse()).response.headers.get('x-request-id');
    const { response: chatStream } = await chat.chat.completions.create({ model: model.id, max_tokens: 300, stream: true, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: `Stream to ${user} [[mock chunks=7]]` }] }).withResponse();
    const chatStreamId = chatStream.headers.get('x-request-id');
    await chatStream.text();
    t.equal(await chargeOf(user, streamId), await chargeOf(user, chatStreamId), 'a stream is charged as the same chat stream');
    await gateway.ledgerSettled(user);
    const money = await leasesClosed(gateway, user);
    t.equal(money.held, 0n, 'nothing left held');
    t.equal(money.credits, money.ledgerSum, 'Redis and the ledger agree');
  });

  t.test(`${model.label}: a tool round trip, whole and streamed, and an image`, async (t) => {
    const user = `msg-tools-${model.id.split('/')[0]}`;
    const { key } = await gateway.user(user, '20');
    const client = anthropicClient(key, 'authToken');
    const question: Anthropic.MessageParam = { role: 'user', content: `What is the weather in Paris? ${user} [[mock tool=get_weather]]` };
    const { data: first, response: firstResponse } = await client.messages.create({ model: model.id, max_tokens: 400, tools: [WEATHER], messages: [question] }).withResponse();
    t.equal(first.stop_reason, 'tool_use');
    const { response: chatResponse } = await openAiClient(key).chat.completions.create({
      model: model.id, max_tokens: 400, messages: [{ role: 'user', content: question.content as string }],
      tools: [{ type: 'function', function: { name: WEATHER.name, description: WEATHER.description!, parameters: WEATHER.input_schema } }],
    }).withResponse();
    t.equal(await chargeOf(user, firstResponse.headers.get('x-request-id')), await chargeOf(user, chatResponse.headers.get('x-request-id')), 'a tool call is charged as the same chat call');
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    t.ok(call, 'a tool_use block');
    t.equal(call?.name, 'get_weather');
    t.type(call?.input, 'object', 'its input parsed as an object');
    t.match(call?.id, /\S/);
    const followUp = await client.messages.create({
      model: model.id, max_tokens: 400, tools: [WEATHER],
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call!.id, content: 'Sunny, 21 C' }] }],
    });
    t.equal(followUp.stop_reason, 'end_turn', 'the tool result is taken');
    const sent = upstreamWith(user).at(-1)!.body as Record<string, any>;
    const serialised = JSON.stringify(sent);
    t.ok(serialised.includes('Sunny, 21 C'), 'the tool result reaches the upstream');
    // Gemini matches a result to its call by the function's name; the others by the call's id.
    if (!model.id.startsWith('google/')) t.ok(serialised.includes(call!.id), 'with the id of the call it answers');

    const streamed = await client.messages.stream({ model: model.id, max_tokens: 400, tools: [WEATHER], messages: [{ role: 'user', content: `Weather in Rome? ${user} [[mock tool=get_weather]]` }] }).finalMessage();
    t.equal(streamed.stop_reason, 'tool_use');
    const streamedCall = streamed.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    t.equal(streamedCall?.name, 'get_weather');
    t.type(streamedCall?.input, 'object', 'input_json_delta fragments joined into an object by the SDK');

    const image = await client.messages.create({
      model: model.id, max_tokens: 100,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'text', text: `Describe it ${user}-img [[mock chunks=3]]` }] }],
    });
    t.equal(words(textOf(image)), 3);
    t.ok(JSON.stringify(upstreamWith(`${user}-img`).at(-1)!.body).includes(PNG), 'the image reaches the upstream');
  });

  t.test(`${model.label}: thinking, its signature sent back on the next turn, and cache_control`, async (t) => {
    const user = `msg-think-${model.id.split('/')[0]}`;
    const { key } = await gateway.user(user, '20');
    const client = anthropicClient(key);
    const question: Anthropic.MessageParam = { role: 'user', content: `Think first ${user} [[mock reasoning=5 chunks=3]]` };
    const thinking = { type: 'enabled', budget_tokens: 4096 } as const;
    const { data: first, response: firstResponse } = await client.messages.create({ model: model.id, max_tokens: 8192, thinking, messages: [question] }).withResponse();
    const { response: chatResponse } = await openAiClient(key).chat.completions.create({
      model: model.id, max_completion_tokens: 8192, reasoning_effort: 'low', messages: [{ role: 'user', content: question.content as string }],
    }).withResponse();
    t.equal(await chargeOf(user, firstResponse.headers.get('x-request-id')), await chargeOf(user, chatResponse.headers.get('x-request-id')), 'thinking is charged as the same chat call at the matching effort');
    const block = first.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking');
    t.ok(block, 'a thinking block');
    t.ok(block && block.thinking.length > 0, 'with the thinking text');
    t.ok(block && typeof block.signature === 'string' && block.signature.length > 0, 'with a signature');
    t.equal(first.content.at(-1)?.type, 'text', 'the answer after it');

    const streamed = await client.messages.stream({ model: model.id, max_tokens: 8192, thinking, messages: [question] }).finalMessage();
    const streamedBlock = streamed.content.find((b): b is Anthropic.ThinkingBlock => b.type === 'thinking');
    t.ok(streamedBlock && streamedBlock.signature.length > 0, 'a streamed thinking block ends with its signature_delta');

    const next = await client.messages.create({
      model: model.id, max_tokens: 8192, thinking,
      messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: `And then? ${user}-next [[mock chunks=2]]` }],
    });
    t.equal(words(textOf(next)), 2, 'the turn with the thinking block sent back is answered');
    const sent = upstreamWith(`${user}-next`).at(-1)!.body as { messages: { content: unknown }[] };
    if (model.native) t.same((sent.messages[1]!.content as unknown[])[0], block, 'the thinking block reaches Anthropic intact, signature and all');

    // A long system prompt with a breakpoint: Anthropic writes it to its cache, then reads it.
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: `${'Long cached instructions. '.repeat(400)}${user}`, cache_control: { type: 'ephemeral' } }];
    const write = await client.messages.create({ model: model.id, max_tokens: 50, system, messages: [{ role: 'user', content: `Hi ${user}-cache [[mock chunks=2]]` }] });
    const read = await client.messages.create({ model: model.id, max_tokens: 50, system, messages: [{ role: 'user', content: `Hi ${user}-cache [[mock chunks=2]]` }] });
    if (model.native) {
      t.ok((write.usage.cache_creation_input_tokens ?? 0) > 0, 'the first call writes the cache');
      t.ok((read.usage.cache_read_input_tokens ?? 0) > 0, 'the second reads it');
      t.same((upstreamWith(`${user}-cache`).at(-1)!.body as { system: unknown[] }).system.slice(1), system, 'the caller\'s breakpoint reaches Anthropic as sent');
    } else {
      t.equal(words(textOf(read)), 2, 'cache_control is accepted where the upstream caches on its own');
    }
    await gateway.ledgerSettled(user);
    const money = await leasesClosed(gateway, user);
    t.equal(money.held, 0n);
    t.equal(money.credits, money.ledgerSum);
  });
}

t.test('model ids as Anthropic clients send them, the beta and version headers, and the pass-through of new fields', async (t) => {
  const { key } = await gateway.user('msg-ids', '5');
  const client = anthropicClient(key);
  for (const id of ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-sonnet-4-5-latest', 'anthropic/claude-sonnet-4-5']) {
    const message = await client.messages.create({ model: id, max_tokens: 50, messages: [{ role: 'user', content: `Hi msg-ids ${id} [[mock chunks=1]]` }] });
    t.equal(message.type, 'message', `${id} resolves to the catalog's Claude Sonnet 4.5`);
    t.equal((upstreamWith(`msg-ids ${id}`).at(-1)!.body as { model: string }).model, 'claude-sonnet-4-5');
  }
  await client.messages.create(
    { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'Hi msg-ids-beta [[mock chunks=1]]' }], metadata: { user_id: 'end-user-7' }, service_tier: 'auto' },
    { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14' } },
  );
  const record = upstreamWith('msg-ids-beta').at(-1)!;
  t.equal(record.anthropicBeta, 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14', 'anthropic-beta passed on');
  t.equal(record.anthropicVersion, '2023-06-01', 'anthropic-version passed on');
  const body = record.body as Record<string, any>;
  t.equal(body.service_tier, 'auto', 'a field the gateway does not read passes through');
  t.match(body.system[0].text, /^cache-scope:/, 'the per-user cache scope leads the system prompt');
  t.not(body.metadata.user_id, 'end-user-7', 'the upstream sees an opaque partition, not the caller\'s user id');
});

t.test('errors in Anthropic\'s envelope, raised by the SDK as its own typed errors', async (t) => {
  const { key } = await gateway.user('msg-errors', '5');
  const client = anthropicClient(key);
  const rejection = async (call: Promise<unknown>) => {
    try {
      await call;
    } catch (error) {
      return error as InstanceType<typeof Anthropic.APIError>;
    }
    throw new Error('the call succeeded');
  };
  const unauthenticated = await rejection(anthropicClient('sk-gw-nope-nope').messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
  t.ok(unauthenticated instanceof Anthropic.AuthenticationError, '401 is the SDK\'s AuthenticationError');
  t.match(unauthenticated.error, { type: 'error', error: { type: 'authentication_error' }, code: 401 }, 'Anthropic\'s envelope with the spec\'s code and msg');
  t.type((unauthenticated.error as { msg?: unknown }).msg, 'string');
  const missing = await rejection(client.messages.create({ model: 'claude-nonexistent-9', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
  t.ok(missing instanceof Anthropic.NotFoundError, 'an unknown model is the SDK\'s NotFoundError');
  t.match(missing.error, { error: { type: 'not_found_error' } });
  const invalid = await rejection(client.messages.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming));
  t.ok(invalid instanceof Anthropic.BadRequestError, 'a missing max_tokens is the SDK\'s BadRequestError');
  t.match(invalid.error, { error: { type: 'invalid_request_error', message: /max_tokens/ } });
  const { key: poorKey } = await gateway.user('msg-poor', '0');
  const poor = await rejection(anthropicClient(poorKey).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
  t.equal(poor.status, 402);
  t.match(poor.error, { error: { type: 'billing_error' } });
  const upstream = await rejection(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'Fail [[mock fail=400]]' }] }));
  t.ok(upstream instanceof Anthropic.BadRequestError, 'the upstream\'s own 400 reaches the client as a 400');
  const money = await leasesClosed(gateway, 'msg-errors');
  t.equal(money.usageTransactions, 0, 'nothing charged for any of them');
  t.equal(money.held, 0n);
});

t.test('count_tokens: exact through Anthropic\'s endpoint, an estimate elsewhere, never charged', async (t: Test) => {
  const { key } = await gateway.user('msg-count', '5');
  const client = anthropicClient(key);
  const params = { model: 'claude-sonnet-4-5-20250929', system: 'Be brief.', tools: [WEATHER], messages: [{ role: 'user' as const, content: 'How many tokens is this prompt?' }] };
  const counted = await client.messages.countTokens(params);
  const expected = promptAccounting({ ...params, model: 'claude-sonnet-4-5', max_tokens: 1 } as AnthropicRequest, new Map(), Date.now());
  t.equal(counted.input_tokens, expected.input + expected.read + expected.creation, 'the vendor\'s own count');
  t.ok(upstreamWith('How many tokens is this prompt?').some((r) => r.path.endsWith('/v1/messages/count_tokens')), 'asked of the vendor');
  const estimated = await client.messages.countTokens({ ...params, model: 'openai/gpt-4o-mini' });
  t.ok(estimated.input_tokens > 5 && estimated.input_tokens < 200, `an estimate for other families (${estimated.input_tokens})`);
  const money = await leasesClosed(gateway, 'msg-count');
  t.equal(money.usageTransactions, 0, 'not charged');
  t.equal(money.held, 0n);
});

t.test('fallback models: Anthropic names resolve, and only an all-Anthropic chain passes what chat families refuse', async (t) => {
  const { key } = await gateway.user('msg-chain', '5');
  const client = anthropicClient(key);
  const body = (models: string[]) => ({ model: 'claude-sonnet-4-5', models, max_tokens: 20, top_k: 5, messages: [{ role: 'user' as const, content: `Hi msg-chain ${models.join()} [[mock chunks=1]]` }] });
  const passed = await client.messages.create(body(['claude-haiku-4-5-20251001']) as Anthropic.MessageCreateParamsNonStreaming);
  t.equal(passed.type, 'message', 'an all-Anthropic chain passes top_k through');
  const sent = upstreamWith('msg-chain claude-haiku').at(-1)!.body as Record<string, unknown>;
  t.equal(sent.top_k, 5);
  t.notOk('models' in sent, 'the gateway\'s fallback list is not sent to Anthropic');
  try {
    await client.messages.create(body(['openai/gpt-4o-mini']) as Anthropic.MessageCreateParamsNonStreaming);
    t.fail('a chain with a translated model took top_k');
  } catch (error) {
    t.ok(error instanceof Anthropic.BadRequestError, 'a chain that may reach a translated model refuses what it cannot take');
    t.match((error as InstanceType<typeof Anthropic.APIError>).error, { error: { param: 'top_k' } });
  }
});
