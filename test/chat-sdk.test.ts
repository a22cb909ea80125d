import t from 'tap';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './helpers/harness.js';

// gpt-4o-mini list prices in nano-USD per token: input 150, output 600.
const INPUT_NANO = 150n;
const OUTPUT_NANO = 600n;

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

t.test('the official OpenAI client completes and streams, and the exact charge shows in balance and transactions', async (t) => {
  const { token, key } = await gateway.user('sdk-user', '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });

  const completion = await client.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Say hello [[mock chunks=12]]' }],
  });
  t.equal(completion.model, 'openai/gpt-4o-mini', 'the gateway model id, not the upstream snapshot name');
  t.equal(completion.object, 'chat.completion');
  t.equal(completion.choices[0]!.finish_reason, 'stop');
  t.equal(completion.usage!.completion_tokens, 12);
  t.notOk(completion.usage!.prompt_tokens_details, 'cache details omitted when zero');
  const first = BigInt(completion.usage!.prompt_tokens) * INPUT_NANO + 12n * OUTPUT_NANO;
  const { data: withHeaders, response: raw } = await client.chat.completions
    .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Headers [[mock chunks=1]]' }] })
    .withResponse();
  const requestId = raw.headers.get('x-request-id');
  t.match(requestId, /^[0-9a-f-]{36}$/, 'x-request-id names the call');
  await gateway.ledgerSettled('sdk-user');
  const [row] = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where id = ${requestId}`;
  const third = BigInt(withHeaders.usage!.prompt_tokens) * INPUT_NANO + 1n * OUTPUT_NANO;
  t.equal(row?.credits_nano, -third, 'the usage transaction has the request id as its id');

  const stream = await client.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'Stream please [[mock chunks=7]]' }],
    stream: true,
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined | null;
  const models = new Set<string>();
  for await (const chunk of stream) {
    models.add(chunk.model);
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  t.same([...models], ['openai/gpt-4o-mini'], 'every chunk carries the gateway model id');
  t.equal(text.trim().split(/\s+/).length, 7);
  t.ok(usage, 'the final chunk carries usage even though the client did not ask');
  t.equal(usage!.completion_tokens, 7);
  const second = BigInt(usage!.prompt_tokens) * INPUT_NANO + 7n * OUTPUT_NANO;

  await gateway.ledgerSettled('sdk-user');
  const expectedNano = 5_000_000_000n - first - second - third;
  t.equal((await gateway.balanceNano('sdk-user')).credits, expectedNano, 'Redis credits moved by exactly the two charges');
  t.equal(await gateway.ledgerSum('sdk-user'), expectedNano, 'Postgres ledger adds up to the same nano-USD');
  const balance = await gateway.balance(token);
  t.equal(balance.credits, Number(expectedNano) / 1e9);
  t.equal(balance.held, 0);
  t.equal(balance.available, balance.credits);
  t.equal(balance.currency, 'USD');

  const response = await fetch(`${gateway.url}/api/v1/billing/transactions`, { headers: { authorization: `Bearer ${token}` } });
  const transactions = (await response.json()) as { data: { credits: number; payment_method: string }[]; total: number };
  t.equal(transactions.total, 4);
  t.same(transactions.data.map((row) => row.payment_method), ['usage', 'usage', 'usage', 'test-processor'], 'newest first');
  t.same(transactions.data.slice(0, 3).map((row) => row.credits).sort(), [-Number(second) / 1e9, -Number(third) / 1e9, -Number(first) / 1e9].sort());
});

t.test('reasoning models return reasoning_content unless include_reasoning is false, and cost the same', async (t) => {
  const { key } = await gateway.user('reasoner', '5');
  const call = async (includeReasoning: boolean | undefined, stream: boolean) => {
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'deepseek/deepseek-v4-flash', stream,
        messages: [{ role: 'user', content: 'think [[mock reasoning=5 chunks=3]]' }],
        ...(includeReasoning === undefined ? {} : { include_reasoning: includeReasoning }),
      }),
    });
    return response.text();
  };
  const withReasoning = JSON.parse(await call(undefined, false));
  t.equal(withReasoning.choices[0].message.reasoning_content.trim().split(/\s+/).length, 5);
  t.equal(withReasoning.usage.completion_tokens_details.reasoning_tokens, 5);
  const without = JSON.parse(await call(false, false));
  t.notOk('reasoning_content' in without.choices[0].message);
  t.equal(without.usage.completion_tokens, withReasoning.usage.completion_tokens, 'reasoning is still generated and billed');

  const streamed = await call(undefined, true);
  t.match(streamed, /"reasoning_content"/);
  const streamedWithout = await call(false, true);
  t.notMatch(streamedWithout, /reasoning_content/);
  t.match(streamedWithout, /"completion_tokens":8/);
  t.match(streamedWithout, /data: \[DONE\]\n\n$/);
});

t.test('cached prompt tokens are reported as the spec words them and billed at the cache-read price', async (t) => {
  const { key } = await gateway.user('cache-user', '5');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const before = (await gateway.balanceNano('cache-user')).credits;
  const completion = await client.chat.completions.create({
    model: 'openai/gpt-4o-mini',
    messages: [{ role: 'user', content: 'A long stable prefix [[mock cached=4 chunks=2]]' }],
  });
  const details = completion.usage!.prompt_tokens_details as Record<string, number>;
  t.equal(details.cached_tokens, 4);
  t.equal(details.cache_read_input_tokens, 4);
  t.notOk('cache_creation_input_tokens' in details, 'omitted when zero');
  await gateway.ledgerSettled('cache-user');
  const prompt = BigInt(completion.usage!.prompt_tokens);
  // cached input 0.075 USD/1M = 75 nano per token
  const expected = (prompt - 4n) * INPUT_NANO + 4n * 75n + 2n * OUTPUT_NANO;
  t.equal(before - (await gateway.balanceNano('cache-user')).credits, expected);
});
