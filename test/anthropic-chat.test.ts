// The Anthropic family over real HTTP: the official openai client against the gateway, the mock
// vendor speaking the Messages API behind it, charges checked in Redis and the Postgres ledger.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './helpers/harness.js';
import { eventually, moneyView, parseJson, sseData } from './helpers/billing-checks.js';
import type { MockRequestRecord } from '../src/mock-vendor/server.js';
import { CONTENT_WORDS } from '../src/mock-vendor/words.js';

const MODEL = 'anthropic/claude-sonnet-4-5';
// Sonnet 4.5 in nano-USD per token: input 3.00, cache read 0.30, cache write 3.75, output 15.00 USD per 1M.
const PRICE = Object.freeze({ input: 3000n, cacheRead: 300n, cacheWrite: 3750n, output: 15000n });
const INITIAL_NANO = 5_000_000_000n;
const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(async () => { if (process.env.GW_DEBUG) console.error(gateway.output); await gateway.close(); });

function costOf(usage: OpenAI.CompletionUsage): bigint {
  const details = (usage.prompt_tokens_details ?? {}) as Record<string, number>;
  const read = BigInt(details.cached_tokens ?? 0);
  const write = BigInt(details.cache_creation_input_tokens ?? 0);
  return (BigInt(usage.prompt_tokens) - read - write) * PRICE.input + read * PRICE.cacheRead + write * PRICE.cacheWrite + BigInt(usage.completion_tokens) * PRICE.output;
}

function upstreamRecord(marker: string): MockRequestRecord | undefined {
  return gateway.mock.requests().find((r) => JSON.stringify(r.body ?? '').includes(marker));
}

async function usageRows(user: string): Promise<bigint[]> {
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
  return rows.map((row) => -row.credits_nano);
}

t.test('the openai client gets a completion, a stream and a streamed tool call, charged at the Anthropic usage', async (t) => {
  const user = 'claude-sdk';
  const { key } = await gateway.user(user, '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const marker = randomBytes(4).toString('hex');

  const completion = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: `Say hello ${marker} [[mock chunks=12]]` }],
    max_tokens: 100,
  });
  t.equal(completion.object, 'chat.completion');
  t.equal(completion.model, MODEL, 'the gateway model id, not the upstream snapshot');
  t.match(completion.id, /^chatcmpl-/);
  t.equal(completion.choices.length, 1);
  t.equal(completion.choices[0]!.finish_reason, 'stop');
  t.equal(completion.choices[0]!.message.content!.trim().split(/\s+/).length, 12);
  t.equal(completion.usage!.completion_tokens, 12);
  t.equal(completion.usage!.total_tokens, completion.usage!.prompt_tokens + 12);
  t.notOk(completion.usage!.prompt_tokens_details, 'no cache details below the cacheable minimum');

  const sent = upstreamRecord(marker)!.body as Record<string, any>;
  t.equal(upstreamRecord(marker)!.path, '/anthropic/v1/messages');
  t.equal(sent.model, 'claude-sonnet-4-5');
  t.equal(sent.max_tokens, 100);
  t.match(sent.system[0].text, /^cache-scope:/, 'the per-user salt leads the system prompt');
  t.same(sent.system[1], { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }, 'the breakpoint closes the system prompt');
  t.equal(sent.metadata.user_id, sent.system[0].text.slice('cache-scope:'.length), 'metadata.user_id is the cache partition');
  t.same(sent.messages, [{ role: 'user', content: [{ type: 'text', text: `Say hello ${marker} [[mock chunks=12]]` }] }]);

  const stream = await client.chat.completions.create({
    model: MODEL, stream: true,
    messages: [{ role: 'user', content: 'Stream please [[mock chunks=7]]' }],
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  let finish: string | null | undefined;
  const models = new Set<string>();
  for await (const chunk of stream) {
    models.add(chunk.model);
    t.equal(chunk.object, 'chat.completion.chunk');
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  t.same([...models], [MODEL]);
  t.equal(text.trim().split(/\s+/).length, 7);
  t.equal(finish, 'stop');
  t.equal(usage?.completion_tokens, 7, 'the usage chunk arrives though the client did not ask');

  const toolStream = await client.chat.completions.create({
    model: MODEL, stream: true, tools: TOOLS,
    messages: [{ role: 'user', content: 'Weather in Paris? [[mock tool=get_weather]]' }],
  });
  const calls: { id?: string; name?: string; args: string }[] = [];
  let toolFinish: string | null | undefined;
  let toolUsage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of toolStream) {
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) {
      const entry = (calls[call.index] ??= { args: '' });
      if (call.id) entry.id = call.id;
      if (call.function?.name) entry.name = call.function.name;
      entry.args += call.function?.arguments ?? '';
    }
    toolFinish = chunk.choices[0]?.finish_reason ?? toolFinish;
    if (chunk.usage) toolUsage = chunk.usage;
  }
  t.equal(calls.length, 1);
  t.match(calls[0]!.id, /^toolu_/);
  t.equal(calls[0]!.name, 'get_weather');
  t.same(JSON.parse(calls[0]!.args), { city: 'Paris' }, 'the streamed arguments parse');
  t.equal(toolFinish, 'tool_calls');
  t.ok(toolUsage);

  // The stream helper assembles the tool call from the deltas too.
  const runner = client.chat.completions.stream({ model: MODEL, tools: TOOLS, messages: [{ role: 'user', content: 'Again [[mock tool=get_weather]]' }] });
  const final = await runner.finalChatCompletion();
  t.same(JSON.parse(final.choices[0]!.message.tool_calls![0]!.type === 'function' ? (final.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.arguments : '{}'), { city: 'Paris' });

  // A tool round trip: the assistant call and the tool result go back upstream as tool_use / tool_result.
  const answer = await client.chat.completions.create({
    model: MODEL, tools: TOOLS,
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_1', content: `sunny ${marker}-tool [[mock chunks=3]]` },
    ],
  });
  t.equal(answer.choices[0]!.finish_reason, 'stop');
  const roundTrip = upstreamRecord(`${marker}-tool`)!.body as Record<string, any>;
  t.same(roundTrip.messages[1].content, [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } }]);
  t.same(roundTrip.messages[2].content, [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: `sunny ${marker}-tool [[mock chunks=3]]` }] }]);

  await gateway.ledgerSettled(user);
  const charges = await usageRows(user);
  t.equal(charges.length, 5);
  t.equal(charges[0], costOf(completion.usage!), 'the completion is charged at Sonnet prices');
  t.equal(charges[1], costOf(usage!), 'the stream is charged at its usage');
  t.equal(charges[2], costOf(toolUsage!));
  const money = await moneyView(gateway, user);
  t.equal(money.credits, INITIAL_NANO - charges.reduce((a, b) => a + b, 0n), 'Redis credits moved by exactly the charges');
  t.equal(money.ledgerSum, money.credits, 'the Postgres ledger agrees');
  t.equal(money.held, 0n);
});

t.test('reasoning_effort turns on thinking; include_reasoning false drops it and costs the same', async (t) => {
  const user = 'claude-thinker';
  const { key } = await gateway.user(user, '5');
  const call = async (stream: boolean, includeReasoning?: boolean) => {
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL, stream, reasoning_effort: 'low', max_tokens: 8000,
        messages: [{ role: 'user', content: 'think [[mock reasoning=5 chunks=3]]' }],
        ...(includeReasoning === undefined ? {} : { include_reasoning: includeReasoning }),
      }),
    });
    t.equal(response.status, 200);
    return response.text();
  };
  const withReasoning = JSON.parse(await call(false));
  t.equal(withReasoning.choices[0].message.reasoning_content.trim().split(/\s+/).length, 5);
  t.equal(withReasoning.usage.completion_tokens, 8, 'thinking counts as output');
  const without = JSON.parse(await call(false, false));
  t.notOk('reasoning_content' in without.choices[0].message);
  t.equal(without.usage.completion_tokens, 8);
  const sent = gateway.mock.requests().at(-1)!.body as Record<string, any>;
  t.same(sent.thinking, { type: 'enabled', budget_tokens: 4096 });

  const streamed = await call(true);
  t.match(streamed, /"reasoning_content":" think"/);
  const streamedWithout = await call(true, false);
  t.notMatch(streamedWithout, /reasoning_content/);
  t.match(streamedWithout, /"completion_tokens":8/);
  t.match(streamedWithout, /data: \[DONE\]\n\n$/);
});

t.test('requests Anthropic cannot serve are refused with a 400 naming the field, before any charge', async (t) => {
  const user = 'claude-refused';
  const { key } = await gateway.user(user, '5');
  const post = async (extra: Record<string, unknown>) => {
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  for (const [extra, param] of [[{ temperature: 1.5 }, 'temperature'], [{ n: 2 }, 'n'], [{ seed: 1 }, 'seed'], [{ logprobs: true }, 'logprobs'], [{ temperature: 0.5, top_p: 0.9 }, 'top_p']] as const) {
    const { status, body } = await post(extra);
    t.equal(status, 400, JSON.stringify(extra));
    t.equal(body.error.param, param);
  }
  await gateway.ledgerSettled(user);
  t.equal((await moneyView(gateway, user)).usageTransactions, 0);
});

t.test('upstream 429 and 500 map as for the OpenAI family and cost nothing', async (t) => {
  const user = 'claude-failures';
  const { key } = await gateway.user(user, '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const limited = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x [[mock fail=429]]' }] }).catch((e: unknown) => e);
  t.ok(limited instanceof OpenAI.APIError);
  const limitedError = limited as InstanceType<typeof OpenAI.APIError>;
  t.equal(limitedError.status, 429);
  t.equal(limitedError.code, 'upstream_rate_limited');
  t.equal(limitedError.headers?.get('retry-after'), '1');
  const broken = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x [[mock fail=500]]' }], stream: true }).catch((e: unknown) => e);
  t.equal((broken as InstanceType<typeof OpenAI.APIError>).status, 502);
  t.equal((broken as InstanceType<typeof OpenAI.APIError>).code, 'upstream_error');
  t.match((broken as Error).message, /Mock failure \(500\)/, 'Anthropic error.message is passed on');
  await gateway.ledgerSettled(user);
  const money = await moneyView(gateway, user);
  t.equal(money.usageTransactions, 0);
  t.equal(money.credits, INITIAL_NANO);
  t.equal(money.held, 0n);
});

t.test('a stream cut upstream mid-way ends with the error event and costs nothing', async (t) => {
  const user = 'claude-cut';
  const { key } = await gateway.user(user, '5');
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: 'x [[mock chunks=20 disconnect_after=4]]' }] }),
  });
  const text = await response.text();
  t.match(text, /upstream_stream_broken/);
  t.notMatch(text, /\[DONE\]/);
  await gateway.ledgerSettled(user);
  t.equal((await moneyView(gateway, user)).credits, INITIAL_NANO);
});

t.test('a client abort mid-stream is charged once, for what was generated', async (t) => {
  const user = 'claude-abort';
  const { key } = await gateway.user(user, '5');
  const marker = `abort-${randomBytes(4).toString('hex')}`;
  const controller = new AbortController();
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', signal: controller.signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content: `stream ${marker} [[mock chunks=200 delay_ms=20]]` }] }),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let received = '';
  const contentEvents = () => sseData(received.slice(0, received.lastIndexOf('\n\n') + 2)).filter((d) => parseJson(d)?.choices?.[0]?.delta?.content).length;
  while (contentEvents() < 5) {
    const { value, done } = await reader.read();
    if (done) break;
    received += decoder.decode(value, { stream: true });
  }
  const seen = contentEvents();
  controller.abort();
  await reader.read().catch(() => undefined);
  const record = await eventually('the upstream connection to close', () => {
    const found = upstreamRecord(marker);
    return found?.clientAborted ? found : undefined;
  });
  await gateway.ledgerSettled(user);
  await sleep(300);
  await gateway.ledgerSettled(user);
  const charges = await usageRows(user);
  t.equal(charges.length, 1, 'exactly one charge');
  // No usage arrived: the gateway counted the prompt and the generated text with its tokenizer.
  t.ok(charges[0]! >= BigInt(seen) * PRICE.output, `charged ${charges[0]} >= the ${seen} tokens the client saw`);
  t.ok(charges[0]! <= BigInt(record.contentChunksWritten) * PRICE.output + 100n * PRICE.input, 'and no more than what the upstream wrote');
  t.ok(record.contentChunksWritten < 100, 'the upstream was stopped early');
  const money = await moneyView(gateway, user);
  t.equal(money.held, 0n);
  t.equal(money.ledgerSum, money.credits);
});

t.test('prompt caching is per user: no cross-user hits, a user repeat reads the cache at the cache-read price', async (t) => {
  const longSystem = `You are a careful assistant.${Array.from({ length: 1500 }, (_, i) => CONTENT_WORDS[i % CONTENT_WORDS.length]).join('')}`;
  const ask = async (client: OpenAI, question: string) => client.chat.completions.create({
    model: MODEL, max_tokens: 50,
    messages: [{ role: 'system', content: longSystem }, { role: 'user', content: `${question} [[mock chunks=4]]` }],
  });
  const alice = await gateway.user('claude-cache-a', '5');
  const bob = await gateway.user('claude-cache-b', '5');
  const a = new OpenAI({ baseURL: gateway.v1, apiKey: alice.key, maxRetries: 0 });
  const b = new OpenAI({ baseURL: gateway.v1, apiKey: bob.key, maxRetries: 0 });

  const a1 = await ask(a, 'first');
  const b1 = await ask(b, 'first');
  for (const [name, first] of [['alice', a1], ['bob', b1]] as const) {
    const details = first.usage!.prompt_tokens_details as Record<string, number>;
    t.notOk(details.cached_tokens, `${name}'s first call reads nothing from the cache`);
    t.ok((details.cache_creation_input_tokens ?? 0) > 1024, `${name}'s first call writes the prefix (${details.cache_creation_input_tokens})`);
  }
  const a2 = await ask(a, 'second question');
  const details = a2.usage!.prompt_tokens_details as Record<string, number>;
  t.equal(details.cached_tokens, (a1.usage!.prompt_tokens_details as Record<string, number>).cache_creation_input_tokens, 'the repeat reads what the first call wrote');
  t.equal(details.cache_read_input_tokens, details.cached_tokens);
  t.notOk(details.cache_creation_input_tokens);
  t.ok(a2.usage!.prompt_tokens > details.cached_tokens!, 'prompt_tokens includes the cached tokens');

  await gateway.ledgerSettled('claude-cache-a');
  const charges = await usageRows('claude-cache-a');
  t.same(charges, [costOf(a1.usage!), costOf(a2.usage!)], 'cache writes at 3.75, reads at 0.30 USD per 1M');
  t.ok(charges[1]! < charges[0]!, 'the repeat is cheaper');
  const money = await moneyView(gateway, 'claude-cache-a');
  t.equal(money.ledgerSum, money.credits);
});

t.test('claude-haiku-4-5 is served the same way, at its own prices', async (t) => {
  const { key } = await gateway.user('claude-haiku', '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const completion = await client.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi [[mock chunks=6]]' }] });
  t.equal(completion.model, 'anthropic/claude-haiku-4-5');
  t.equal((gateway.mock.requests().at(-1)!.body as { model: string }).model, 'claude-haiku-4-5');
  await gateway.ledgerSettled('claude-haiku');
  // Haiku 4.5: input 1.00, output 5.00 USD per 1M = 1000 and 5000 nano-USD per token.
  t.same(await usageRows('claude-haiku'), [BigInt(completion.usage!.prompt_tokens) * 1000n + 6n * 5000n]);
});
