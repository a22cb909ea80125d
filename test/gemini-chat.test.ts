// google/gemini-2.5-flash end to end: the official OpenAI client against the gateway, the gateway
// against the mock vendor's Gemini API over real HTTP, money checked in Redis and the Postgres ledger.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './helpers/harness.js';
import { eventually, moneyView, parseJson, sseData } from './helpers/billing-checks.js';
import { promptTokens } from '../src/mock-vendor/usage.js';
import { CONTENT_WORDS } from '../src/mock-vendor/words.js';

const MODEL = 'google/gemini-2.5-flash';
// List prices in nano-USD per token: input 0.30, cached 0.03, output 2.50 USD per 1M (thoughts billed as output).
const PRICE = Object.freeze({ input: 300n, cachedInput: 30n, output: 2_500n });
const INITIAL_NANO = 5_000_000_000n;

function cost(usage: OpenAI.CompletionUsage): bigint {
  const cached = BigInt((usage.prompt_tokens_details as { cached_tokens?: number } | undefined)?.cached_tokens ?? 0);
  return (BigInt(usage.prompt_tokens) - cached) * PRICE.input + cached * PRICE.cachedInput + BigInt(usage.completion_tokens) * PRICE.output;
}

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

const clientFor = (key: string) => new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
const lastGeminiRequest = (marker: string) => gateway.mock.requests().filter((r) => r.path.includes(':') && JSON.stringify(r.body ?? '').includes(marker)).at(-1);

t.test('the OpenAI client completes and streams through the Gemini API; usage and charges are exact', async (t) => {
  const user = 'gemini-sdk';
  const { key } = await gateway.user(user, '5');
  const client = clientFor(key);
  const marker = randomBytes(4).toString('hex');

  const completion = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: `Say hello ${marker} [[mock chunks=6 reasoning=4]]` }],
    max_tokens: 500,
  });
  t.equal(completion.model, MODEL);
  t.equal(completion.object, 'chat.completion');
  t.equal(completion.choices[0]!.finish_reason, 'stop');
  t.equal(completion.choices[0]!.message.content, CONTENT_WORDS.slice(0, 6).join(''));
  t.equal((completion.choices[0]!.message as { reasoning_content?: string }).reasoning_content!.trim().split(/\s+/).length, 4);
  t.equal(completion.usage!.completion_tokens, 10, 'answer plus thoughts');
  t.same(completion.usage!.completion_tokens_details, { reasoning_tokens: 4 });
  t.notOk(completion.usage!.prompt_tokens_details, 'no cache details when nothing was cached');
  const upstream = lastGeminiRequest(marker)!;
  t.match(upstream.path, /\/models\/gemini-2\.5-flash:generateContent$/);
  t.ok(upstream.authorization, 'the x-goog-api-key header reached the upstream');
  t.match(upstream.body, { generationConfig: { maxOutputTokens: 500, thinkingConfig: { thinkingBudget: 250, includeThoughts: true } } });

  const stream = await client.chat.completions.create({
    model: MODEL, stream: true,
    messages: [{ role: 'user', content: `Stream ${marker} [[mock chunks=7 reasoning=2]]` }],
  });
  let text = '';
  let reasoning = '';
  let usage: OpenAI.CompletionUsage | undefined | null;
  let finish: string | null | undefined;
  const models = new Set<string>();
  for await (const chunk of stream) {
    models.add(chunk.model);
    text += chunk.choices[0]?.delta?.content ?? '';
    reasoning += (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  t.same([...models], [MODEL]);
  t.equal(text, CONTENT_WORDS.slice(0, 7).join(''));
  t.equal(reasoning.trim().split(/\s+/).length, 2);
  t.equal(finish, 'stop');
  t.equal(usage!.completion_tokens, 9);
  t.match(lastGeminiRequest(`Stream ${marker}`)!.path, /:streamGenerateContent$/);

  await gateway.ledgerSettled(user);
  const expected = INITIAL_NANO - cost(completion.usage!) - cost(usage!);
  const money = await moneyView(gateway, user);
  t.equal(money.credits, expected, 'Redis credits moved by exactly the two charges at the model prices');
  t.equal(money.ledgerSum, expected, 'the Postgres ledger agrees');
  t.equal(money.held, 0n);
});

t.test('a streamed tool call arrives whole and its arguments parse', async (t) => {
  const { key } = await gateway.user('gemini-tools', '5');
  const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const stream = await clientFor(key).chat.completions.create({
    model: MODEL, stream: true, tools,
    messages: [{ role: 'user', content: 'Weather in Paris? [[mock tool=get_weather]]' }],
  });
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) {
      const at = (calls[call.index] ??= { arguments: '' });
      if (call.id) at.id = call.id;
      if (call.function?.name) at.name = call.function.name;
      at.arguments += call.function?.arguments ?? '';
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  t.equal(calls.length, 1);
  t.match(calls[0]!.id, /^call_/);
  t.equal(calls[0]!.name, 'get_weather');
  t.same(JSON.parse(calls[0]!.arguments), { city: 'Paris' });
  t.equal(finish, 'tool_calls');

  const whole = await clientFor(key).chat.completions.create({
    model: MODEL, tools, tool_choice: 'required',
    messages: [{ role: 'user', content: 'Weather? [[mock tool=get_weather]]' }],
  });
  const call = whole.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
  t.same(JSON.parse(call.function.arguments), { city: 'Paris' });
  t.equal(whole.choices[0]!.finish_reason, 'tool_calls');
});

t.test('include_reasoning false drops reasoning but not its cost', async (t) => {
  const { key } = await gateway.user('gemini-reasoning', '5');
  const post = async (stream: boolean, includeReasoning?: boolean) => (await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream, messages: [{ role: 'user', content: 'think [[mock reasoning=5 chunks=3]]' }], ...(includeReasoning === undefined ? {} : { include_reasoning: includeReasoning }) }),
  })).text();
  const without = JSON.parse(await post(false, false));
  t.notOk('reasoning_content' in without.choices[0].message);
  t.equal(without.usage.completion_tokens, 8);
  t.equal(without.usage.completion_tokens_details.reasoning_tokens, 5);
  const streamed = await post(true, false);
  t.notMatch(streamed, /reasoning_content/);
  t.match(streamed, /"completion_tokens":8/);
  t.match(streamed, /data: \[DONE\]\n\n$/);
  t.match(await post(true), /"reasoning_content"/);
});

t.test('upstream 429 and 500 map like the OpenAI family, and cost nothing', async (t) => {
  const user = 'gemini-fail';
  const { key } = await gateway.user(user, '5');
  const post = async (status: number, stream: boolean) => fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream, messages: [{ role: 'user', content: `x [[mock fail=${status}]]` }] }),
  });
  for (const stream of [false, true]) {
    const limited = await post(429, stream);
    t.equal(limited.status, 429);
    t.ok(limited.headers.get('retry-after'));
    const body = (await limited.json()) as { error: { code: string; message: string } };
    t.equal(body.error.code, 'upstream_rate_limited');
    t.match(body.error.message, /Mock failure \(429\)/, "Gemini's error.message is carried");
    const failed = await post(500, stream);
    t.equal(failed.status, 502);
    t.equal(((await failed.json()) as { error: { code: string } }).error.code, 'upstream_error');
  }
  await gateway.ledgerSettled(user);
  const money = await moneyView(gateway, user);
  t.equal(money.credits, INITIAL_NANO, 'nothing charged');
  t.equal(money.held, 0n, 'every reservation released');
});

t.test('a client abort mid-stream is charged once, for the prompt and what was generated', async (t) => {
  const user = 'gemini-abort';
  const { key } = await gateway.user(user, '5');
  const marker = `abort-${randomBytes(4).toString('hex')}`;
  const messages = [{ role: 'user', content: `stream ${marker} [[mock chunks=200 delay_ms=20]]` }];
  const controller = new AbortController();
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, stream: true, messages }), signal: controller.signal,
  });
  t.equal(response.status, 200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let received = '';
  const contentEvents = (text: string) => sseData(text).filter((d) => typeof parseJson(d)?.choices?.[0]?.delta?.content === 'string' && parseJson(d).choices[0].delta.content !== '').length;
  while (contentEvents(received) < 5) {
    const { value, done } = await reader.read();
    if (done) break;
    received += decoder.decode(value, { stream: true });
  }
  const seen = contentEvents(received.slice(0, received.lastIndexOf('\n\n') + 2));
  controller.abort();
  await reader.read().catch(() => undefined);
  const record = await eventually('the upstream connection to close', () => {
    const found = lastGeminiRequest(marker);
    return found?.clientAborted ? found : undefined;
  });
  t.ok(record.contentChunksWritten < 100, `the upstream stopped early (${record.contentChunksWritten} chunks)`);

  await gateway.ledgerSettled(user);
  await sleep(300);
  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(rows.length, 1, 'exactly one usage transaction');
  const charged = -rows[0]!.credits_nano;
  // No usage came back: the gateway counts the prompt (OpenAI's scheme) and the words relayed.
  const promptCost = BigInt(promptTokens(messages)) * PRICE.input;
  t.equal((charged - promptCost) % PRICE.output, 0n, 'a whole number of output tokens');
  const generated = (charged - promptCost) / PRICE.output;
  t.ok(generated >= BigInt(seen) && generated <= BigInt(record.contentChunksWritten), `charged for ${generated} tokens: between the ${seen} seen and the ${record.contentChunksWritten} written`);
  const money = await moneyView(gateway, user);
  t.equal(money.held, 0n);
  t.equal(money.credits, INITIAL_NANO - charged);
  t.equal(money.ledgerSum, money.credits);
});

t.test('implicit prompt caching stays per user: a long shared prompt is cached only for the user who sent it before', async (t) => {
  const longPrompt = `Reference manual ${randomBytes(4).toString('hex')}:${Array.from({ length: 1200 }, (_, i) => CONTENT_WORDS[i % CONTENT_WORDS.length]).join('')}`;
  const ask = async (key: string, question: string) => clientFor(key).chat.completions.create({
    model: MODEL, messages: [{ role: 'system', content: longPrompt }, { role: 'user', content: `${question} [[mock chunks=3]]` }],
  });
  const alice = await gateway.user('gemini-cache-alice', '5');
  const bob = await gateway.user('gemini-cache-bob', '5');
  const first = await ask(alice.key, 'First question?');
  t.ok(first.usage!.prompt_tokens > 1024, `a long prompt (${first.usage!.prompt_tokens} tokens)`);
  t.notOk(first.usage!.prompt_tokens_details, 'no cache read on the first call');
  const other = await ask(bob.key, 'First question?');
  t.notOk(other.usage!.prompt_tokens_details, "another user's identical prompt does not read the first user's cache");
  const again = await ask(alice.key, 'Second question?');
  const cached = (again.usage!.prompt_tokens_details as { cached_tokens?: number; cache_read_input_tokens?: number }).cached_tokens!;
  t.ok(cached > 1024 && cached < again.usage!.prompt_tokens, `the repeat read ${cached} tokens from cache`);
  t.equal((again.usage!.prompt_tokens_details as { cache_read_input_tokens?: number }).cache_read_input_tokens, cached);

  await gateway.ledgerSettled('gemini-cache-alice');
  const money = await moneyView(gateway, 'gemini-cache-alice');
  t.equal(money.credits, INITIAL_NANO - cost(first.usage!) - cost(again.usage!), 'the repeat is charged at the cached price');
  t.ok(cost(again.usage!) < cost(first.usage!), 'and costs less');
});
