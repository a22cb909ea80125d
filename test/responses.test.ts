// POST /v1/responses over real HTTP: the official openai client's responses.create (whole and
// streamed) and responses.stream against the gateway, the mock vendor behind it speaking each
// upstream family's wire format; charges checked in Redis and the Postgres ledger; every refusal.
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import OpenAI from 'openai';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { envelopeProblems, moneyView } from './helpers/billing-checks.js';

// List prices in nano-USD per token (input, cached input, output).
const MODELS = [
  { id: 'openai/gpt-4o-mini', price: { input: 150n, cached: 75n, output: 600n } },
  { id: 'anthropic/claude-sonnet-4-5', price: { input: 3000n, cached: 300n, output: 15_000n } },
  { id: 'google/gemini-2.5-flash', price: { input: 300n, cached: 30n, output: 2_500n } },
] as const;
const INITIAL_NANO = 5_000_000_000n;
const TOOLS: OpenAI.Responses.FunctionTool[] = [
  { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, strict: null },
];

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(async () => { if (process.env.GW_DEBUG) console.error(gateway.output); await gateway.close(); });

type Price = (typeof MODELS)[number]['price'];
function costOf(usage: OpenAI.Responses.ResponseUsage, price: Price): bigint {
  const cached = BigInt(usage.input_tokens_details.cached_tokens);
  return (BigInt(usage.input_tokens) - cached) * price.input + cached * price.cached + BigInt(usage.output_tokens) * price.output;
}

async function usageCharges(user: string): Promise<bigint[]> {
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
  return rows.map((row) => -row.credits_nano);
}

/** Checks the Response object's shape as the spec lists it. */
function checkResponse(t: Test, response: OpenAI.Responses.Response, model: string): void {
  t.match(response.id, /^resp_[0-9a-f]{32}$/);
  t.equal(response.object, 'response');
  t.equal(response.model, model, 'the gateway model id');
  t.ok(Number.isInteger(response.created_at) && Math.abs(response.created_at - Date.now() / 1000) < 60, 'created_at in Unix seconds');
  t.equal(typeof response.parallel_tool_calls, 'boolean');
  const usage = response.usage!;
  t.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
  t.equal(typeof usage.input_tokens_details.cached_tokens, 'number');
  t.equal(typeof usage.output_tokens_details.reasoning_tokens, 'number');
}

for (const { id: MODEL, price } of MODELS) {
  t.test(`${MODEL}: a two-turn function-calling exchange with responses.create, whole and streamed, charged once each`, async (t) => {
    const user = `resp-${MODEL.split('/')[0]}`;
    const { key } = await gateway.user(user, '5');
    const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
    const marker = randomBytes(4).toString('hex');
    const usages: OpenAI.Responses.ResponseUsage[] = [];

    // Non-streaming: the call, then the answer to its output.
    const question: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: `Weather in Paris? ${marker} [[mock tool=get_weather]]` }];
    const first = await client.responses.create({ model: MODEL, instructions: 'Be brief.', input: question, tools: TOOLS, store: false });
    checkResponse(t, first, MODEL);
    t.equal(first.status, 'completed');
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    t.ok(call, 'a function_call item');
    t.equal(call.name, 'get_weather');
    t.ok(call.call_id, 'with a call_id');
    t.same(JSON.parse(call.arguments), { city: 'Paris' });
    usages.push(first.usage!);

    const second = await client.responses.create({
      model: MODEL, tools: TOOLS, instructions: 'Be brief.',
      // The SDK's own pattern: the previous output items go back as input, plus the tool result.
      input: [...question, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: call.call_id, output: `sunny ${marker}-out` }],
    });
    checkResponse(t, second, MODEL);
    t.equal(second.status, 'completed');
    const message = second.output[0] as OpenAI.Responses.ResponseOutputMessage;
    t.equal(message.type, 'message');
    t.equal(message.role, 'assistant');
    t.equal(message.status, 'completed');
    t.match(message.id, /^msg_/);
    t.equal(message.content[0]!.type, 'output_text');
    t.same((message.content[0] as OpenAI.Responses.ResponseOutputText).annotations, []);
    t.ok(second.output_text.trim().length > 0, 'a final answer');
    t.notOk(second.output.some((item) => item.type === 'function_call'), 'no second call');
    usages.push(second.usage!);

    // Streaming through responses.create: the events in order, the items complete at output_item.done.
    const stream = await client.responses.create({ model: MODEL, input: question, tools: TOOLS, stream: true });
    const types: string[] = [];
    let streamedCall: OpenAI.Responses.ResponseFunctionToolCall | undefined;
    let completed: OpenAI.Responses.Response | undefined;
    let sequence = -1;
    let argumentDeltas = '';
    for await (const event of stream) {
      types.push(event.type);
      t.equal(event.sequence_number, sequence + 1, 'sequence numbers count up from 0');
      sequence = event.sequence_number;
      if (event.type === 'response.function_call_arguments.delta') argumentDeltas += event.delta;
      if (event.type === 'response.output_item.done' && event.item.type === 'function_call') streamedCall = event.item;
      if (event.type === 'response.completed') completed = event.response;
    }
    t.equal(types[0], 'response.created');
    t.equal(types.at(-1), 'response.completed');
    t.ok(types.indexOf('response.output_item.added') < types.indexOf('response.output_item.done'));
    t.equal(streamedCall?.name, 'get_weather');
    t.same(JSON.parse(streamedCall!.arguments), { city: 'Paris' }, 'the function call arrives complete in output_item.done');
    t.equal(argumentDeltas, streamedCall!.arguments);
    checkResponse(t, completed!, MODEL);
    t.same(completed!.output.map((item) => item.type), ['function_call']);
    usages.push(completed!.usage!);

    // The stream helper assembles the final turn.
    const helper = client.responses.stream({
      model: MODEL, tools: TOOLS,
      input: [...question, streamedCall!, { type: 'function_call_output', call_id: streamedCall!.call_id, output: 'sunny [[mock chunks=5]]' }],
    });
    let deltas = '';
    helper.on('response.output_text.delta', (event) => { deltas += event.delta; });
    const final = await helper.finalResponse();
    checkResponse(t, final, MODEL);
    t.equal(final.status, 'completed');
    t.ok(final.output_text.trim().length > 0, 'a final answer');
    t.equal(final.output_text, deltas, 'the text is what the deltas said');
    // Only the OpenAI wire carries the tool result as plain text, where the mock reads its directive.
    if (MODEL.startsWith('openai/')) t.equal(final.usage!.output_tokens, 5);
    usages.push(final.usage!);

    await gateway.ledgerSettled(user);
    const charges = await usageCharges(user);
    t.equal(charges.length, 4, 'each call charged once');
    t.same(charges, usages.map((usage) => costOf(usage, price)), 'at the usage each response reports');
    const money = await moneyView(gateway, user);
    t.equal(money.credits, INITIAL_NANO - charges.reduce((a, b) => a + b, 0n), 'Redis credits moved by exactly the charges');
    t.equal(money.ledgerSum, money.credits, 'the Postgres ledger agrees');
    t.equal(money.held, 0n);
    const logs = await gateway.sql<{ endpoint: string; stream: boolean }[]>`select endpoint, stream from request_logs where user_id = ${user} order by created_at`;
    t.same(logs.map((row) => row.endpoint), ['responses', 'responses', 'responses', 'responses'], 'logged as the responses endpoint');
    t.same(logs.map((row) => row.stream), [false, false, true, true]);
  });
}

t.test('the raw stream: SSE events with event: and data: lines, in the standard order', async (t) => {
  const { key } = await gateway.user('resp-raw', '5');
  const response = await fetch(`${gateway.v1}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', input: 'Hi [[mock chunks=3]]', stream: true }),
  });
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type'), /^text\/event-stream/);
  t.match(response.headers.get('x-request-id'), /^[0-9a-f-]{36}$/);
  const text = await response.text();
  const events = text.split('\n\n').filter(Boolean).map((block) => {
    const [eventLine, dataLine, ...rest] = block.split('\n');
    t.same(rest, [], 'two lines per event');
    t.match(eventLine, /^event: response\./);
    t.match(dataLine, /^data: \{/);
    const data = JSON.parse(dataLine!.slice(6));
    t.equal(data.type, eventLine!.slice(7), 'the data names the event type');
    return data;
  });
  t.same(events.map((e) => e.type), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
    'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
  ]);
  t.same(events.map((e) => e.sequence_number), events.map((_, i) => i));
  t.equal(events[0].response.status, 'in_progress');
  t.equal(events[0].response.usage, null);
  const done = events.at(-1).response;
  t.equal(done.status, 'completed');
  t.equal(done.id, events[0].response.id);
  t.equal(done.output[0].content[0].text, events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''));
  t.equal(done.usage.output_tokens, 3);
  t.equal(events[4].item_id, done.output[0].id);
  t.equal(events[4].output_index, 0);
  t.equal(events[4].content_index, 0);
});

t.test('a vendor error that ends the stream ends the Response stream with an `error` event, not response.completed; 502, nothing charged', async (t) => {
  const user = 'resp-stream-error';
  const { key } = await gateway.user(user, '5');
  for (const model of MODELS.map((m) => m.id)) {
    const response = await fetch(`${gateway.v1}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: 'Hi [[mock chunks=6 fault=error cut_after=2]]', stream: true }),
    });
    t.equal(response.status, 200, model);
    const requestId = response.headers.get('x-request-id')!;
    const events = (await response.text()).split('\n\n').filter(Boolean).map((block) => JSON.parse(block.split('\n')[1]!.slice(6)));
    const types = events.map((e) => e.type);
    t.equal(types.filter((type) => type === 'response.output_text.delta').length, 2, `${model}: the deltas before the vendor's error`);
    t.equal(types.at(-1), 'error', `${model}: the last event is error`);
    t.notOk(types.some((type) => type === 'response.completed' || type === 'response.incomplete'), `${model}: the response never completes`);
    t.equal(events.at(-1).code, 'upstream_error', `${model}: code upstream_error`);
    t.type(events.at(-1).message, 'string');
    t.same(events.map((e) => e.sequence_number), events.map((_, i) => i), `${model}: numbered in order`);
    await gateway.ledgerSettled(user);
    const logged = await gateway.sql<{ status: number; error_code: string; cost_nano: bigint }[]>`select status, error_code, cost_nano from request_logs where id = ${requestId}`;
    t.same(logged, [{ status: 502, error_code: logged[0]?.error_code, cost_nano: 0n }], `${model}: logged 502, no cost`);
  }
  const money = await moneyView(gateway, user);
  t.equal(money.usageTransactions, 0, 'nothing charged');
  t.equal(money.credits, INITIAL_NANO);
  t.equal(money.held, 0n);
});

t.test('a cut-off answer is incomplete, whole and streamed', async (t) => {
  const { key } = await gateway.user('resp-cut', '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const whole = await client.responses.create({ model: 'openai/gpt-4o-mini', input: 'Long [[mock chunks=50]]', max_output_tokens: 4 });
  t.equal(whole.status, 'incomplete');
  t.same(whole.incomplete_details, { reason: 'max_output_tokens' });
  t.equal(whole.max_output_tokens, 4);
  const types: string[] = [];
  for await (const event of await client.responses.create({ model: 'anthropic/claude-sonnet-4-5', input: 'Long [[mock chunks=50]]', max_output_tokens: 4, stream: true })) types.push(event.type);
  t.equal(types.at(-1), 'response.incomplete');
});

t.test('rejected inputs: 400 in the error envelope naming the field, nothing charged', async (t) => {
  const user = 'resp-refused';
  const { key } = await gateway.user(user, '5');
  const base = { model: 'openai/gpt-4o-mini', input: 'hi' };
  const cases: [Record<string, unknown>, string, string?][] = [
    [{ model: undefined }, 'model'],
    [{ input: undefined }, 'input'],
    [{ input: '' }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: 42 }, 'input'],
    [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input[0].id'], // not an item this gateway issued to the caller
    [{ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, 'input[0].content[0].type'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] }, 'input[0].content[0].image_url'],
    [{ input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }, 'input[0].content[0].type'],
    [{ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
    [{ input: [{ type: 'function_call_output', call_id: 'c' }] }, 'input[0].output'],
    [{ input: [{ type: 'reasoning', summary: [] }] }, 'input'],
    [{ instructions: 7 }, 'instructions'],
    [{ max_output_tokens: 0 }, 'max_output_tokens'],
    [{ max_output_tokens: 1.5 }, 'max_output_tokens'],
    [{ max_output_tokens: 10_000_000 }, 'max_output_tokens'],
    [{ temperature: 3 }, 'temperature'],
    [{ top_p: -0.1 }, 'top_p'],
    [{ stream: 'yes' }, 'stream'],
    [{ store: 'no' }, 'store'],
    [{ tools: [{ type: 'function', name: 'bad name!' }] }, 'tools[0].name'],
    [{ tools: [{ type: 'function', name: 'f', parameters: 'x' }] }, 'tools[0].parameters'],
    [{ tools: [{ name: 'f' }] }, 'tools[0].type'],
    [{ tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } }, 'tool_choice.name'],
    [{ truncation: 'auto' }, 'truncation'],
    [{ background: true }, 'background', 'unsupported_parameter'],
    [{ frobnicate: 1 }, 'frobnicate'],
    [{ previous_response_id: 'resp_123' }, 'previous_response_id', 'previous_response_not_supported'],
    [{ conversation: 'conv_1' }, 'conversation', 'previous_response_not_supported'],
  ];
  for (const [patch, param, code] of cases) {
    const body = JSON.parse(JSON.stringify({ ...base, ...patch }));
    const { status, body: answer } = await postJson(`${gateway.v1}/responses`, key, body);
    t.equal(status, 400, `${JSON.stringify(patch)} -> 400`);
    t.same(envelopeProblems(answer, 400), [], 'the error envelope');
    t.equal(answer.error?.param, param, `${JSON.stringify(patch)} names ${param}`);
    if (code) t.equal(answer.error.code, code);
  }
  const previous = await postJson(`${gateway.v1}/responses`, key, { ...base, previous_response_id: 'resp_1' });
  t.match(previous.body.error.message, /stateless/);
  t.match(previous.body.error.message, /full item history/);

  t.equal((await postJson(`${gateway.v1}/responses`, key, { model: 'nope/nope', input: 'hi' })).status, 404);
  const images = await postJson(`${gateway.v1}/responses`, key, { model: 'deepseek/deepseek-v4-flash', input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] });
  t.equal(images.status, 400, 'images for a model without vision');
  t.equal(images.body.error.param, 'input');
  const anthropic = await postJson(`${gateway.v1}/responses`, key, { model: 'anthropic/claude-sonnet-4-5', input: 'hi', temperature: 0.5, top_p: 0.9 });
  t.equal(anthropic.status, 400, 'what the family refuses');
  t.equal(anthropic.body.error.param, 'top_p');
  const badJson = await fetch(`${gateway.v1}/responses`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{' });
  t.equal(badJson.status, 400);
  const noKey = await fetch(`${gateway.v1}/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(base) });
  t.equal(noKey.status, 401);

  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  await t.rejects(client.responses.create({ model: 'openai/gpt-4o-mini', input: 'hi', previous_response_id: 'resp_1' }), { status: 400, code: 'previous_response_not_supported' });

  await gateway.ledgerSettled(user);
  const money = await moneyView(gateway, user);
  t.equal(money.usageTransactions, 0, 'nothing charged');
  t.equal(money.credits, INITIAL_NANO);
});

t.test('accepted and dropped: hosted tools, store, developer messages, reasoning items, image parts', async (t) => {
  const { key } = await gateway.user('resp-accepted', '5');
  const marker = randomBytes(4).toString('hex');
  const { status, body } = await postJson(`${gateway.v1}/responses`, key, {
    model: 'openai/gpt-4o-mini', store: true, instructions: 'Be brief.', metadata: { a: 'b' }, include: [],
    tools: [{ type: 'web_search_preview' }, TOOLS[0]], tool_choice: 'auto', parallel_tool_calls: false,
    input: [
      { type: 'message', role: 'developer', content: 'Answer in English.' },
      { type: 'reasoning', id: 'rs_1', summary: [] },
      { role: 'user', content: [{ type: 'input_text', text: `Look ${marker}` }, { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' }] },
      { role: 'assistant', content: [{ type: 'output_text', text: 'A cat.', annotations: [] }] },
      { role: 'user', content: 'More [[mock chunks=2]]' },
    ],
  });
  t.equal(status, 200);
  t.equal(body.parallel_tool_calls, false);
  t.same(body.tools.map((tool: { name: string }) => tool.name), ['get_weather'], 'only the function tool is kept');
  const sent = gateway.mock.requests().find((r) => JSON.stringify(r.body ?? '').includes(marker))!.body as Record<string, any>;
  t.same(sent.tools.map((tool: any) => tool.function.name), ['get_weather']);
  t.equal(sent.parallel_tool_calls, false);
  t.notOk('store' in sent && sent.store === true, 'store is not sent upstream');
  const roles = sent.messages.map((m: any) => m.role);
  t.same(roles.slice(-5), ['system', 'system', 'user', 'assistant', 'user'], 'instructions and developer as system, reasoning skipped');
  t.same(sent.messages.at(-3).content, [{ type: 'text', text: `Look ${marker}` }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }]);
});
