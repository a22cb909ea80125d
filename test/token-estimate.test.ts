// Token budgets reserve a call's prompt at its tight estimate (counted with the o200k tokenizer,
// scaled by the family's factor), not at its body's bytes: a call whose real prompt plus its output
// allowance fits the budget is served. The estimation error against each family's reported counts
// in the mock is measured here: it bounds how far concurrent calls can pass a budget (docs/money.md).
import t from 'tap';
import { countTokens as tokenize } from 'gpt-tokenizer';
import { postJson, startGateway, type Gateway } from './helpers/harness.js';
import { MODEL } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10' } }); });
t.teardown(() => gateway?.close());

const WORDS = 'the gateway admits every call whose prompt and output allowance fit what is left of the budget while others wait for their turn'.split(' ');
const prose = (words: number) => Array.from({ length: words }, (_, i) => WORDS[(i * 7) % WORDS.length]).join(' ');

async function chat(key: string, request: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(request), timeoutMs: 30_000,
  });
}

/** A key of a new user with `rate_limit_tph` set. */
async function budgetedKey(user: string, tph: number): Promise<string> {
  const { token, key } = await fastUser(gateway, user, '5');
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { rate_limit_tph: tph });
  return key;
}

t.test('a 2,000-word prompt with max_tokens 100 is served under rate_limit_tph 5000', async (t) => {
  const long = { model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: `${prose(2000)} [[mock chunks=3]]` }] };
  t.ok(JSON.stringify(long).length + 100 > 5000 * 2, 'its body has more than twice as many bytes as the budget has tokens');
  const served = await chat(await budgetedKey('estimate-long', 5000), long);
  t.equal(served.status, 200, 'a 2,000-word prompt with max_tokens 100 under rate_limit_tph 5000');
  t.ok(served.body.usage?.prompt_tokens > 2000 && served.body.usage?.prompt_tokens + 100 <= 5000, `it used ${served.body.usage?.prompt_tokens} prompt tokens`);
});

t.test('a one-word prompt with max_tokens 50 is served under rate_limit_tph 120', async (t) => {
  const short = { model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] };
  t.ok(JSON.stringify(short).length + 50 > 120, 'its body has more bytes than the budget left for the prompt');
  const one = await chat(await budgetedKey('estimate-one-word', 120), short);
  t.equal(one.status, 200, 'a one-word prompt with max_tokens 50 under rate_limit_tph 120');
});

t.test('400 request_too_large only when the tight estimate exceeds the whole budget', async (t) => {
  const request = { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: `${prose(300)} [[mock chunks=2]]` }] };
  const key = await budgetedKey('estimate-too-large', 1);
  const refused = await chat(key, request);
  assertEnvelope(t, refused, 400, 'request_too_large', 'a budget of 1 token');
  const estimate = Number(/up to (\d+) tokens/.exec(refused.body.msg)?.[1]) - 20;
  const served = await chat(await budgetedKey('estimate-fits', estimate + 20), request);
  t.equal(served.status, 200, `a budget of exactly the estimate (${estimate}) plus max_tokens serves it`);
  const used = served.body.usage.prompt_tokens;
  t.ok(estimate >= used, `the estimate ${estimate} covers the ${used} prompt tokens the vendor reported`);
  t.ok(estimate < JSON.stringify(request).length / 3, 'and is far below the body\'s bytes');
  const under = await chat(await budgetedKey('estimate-under', estimate + 19), request);
  assertEnvelope(t, under, 400, 'request_too_large', 'one token less than the estimate plus max_tokens');
});

/** Prompts of every shape the estimate must cover: scripts, code, JSON, tools, system prompts, tool results. */
const TOOLS = [{ type: 'function', function: { name: 'lookup_weather', description: 'The weather at a place, now or forecast for up to ten days.', parameters: { type: 'object', properties: { place: { type: 'string', description: 'A city or coordinates' }, days: { type: 'integer', minimum: 0, maximum: 10 } }, required: ['place'] } } }];
const CORPUS: Record<string, Record<string, unknown>> = {
  prose: { messages: [{ role: 'user', content: prose(400) }] },
  code: { messages: [{ role: 'user', content: 'function fib(n) {\n  if (n < 2) return n;\n  return fib(n - 1) + fib(n - 2);\n}\nconst xs = [1, 2, 3].map((x) => x ** 2);\n'.repeat(20) }] },
  json: { messages: [{ role: 'user', content: JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ id: i, name: `item-${i}`, tags: ['a', 'b'], price: i * 1.25 }))) }] },
  cjk: { messages: [{ role: 'user', content: '網關只接納預算內的請求，其餘的請求等待下一個時段。'.repeat(30) }] },
  cyrillic: { messages: [{ role: 'user', content: 'Шлюз принимает каждый вызов, который помещается в оставшийся бюджет. '.repeat(30) }] },
  emoji: { messages: [{ role: 'user', content: '🚀🔥✨ launch 🎉👍 '.repeat(50) }] },
  special_tokens: { messages: [{ role: 'user', content: `${prose(50)} <|endoftext|> and <|im_start|>system ${prose(20)}` }] },
  digits: { messages: [{ role: 'user', content: Array.from({ length: 300 }, (_, i) => (i * 7919) % 100_003).join(',') }] },
  system: { messages: [{ role: 'system', content: `You answer briefly. ${prose(80)}` }, { role: 'user', content: prose(40) }, { role: 'assistant', content: prose(30) }, { role: 'user', content: 'and then?' }] },
  parts: { messages: [{ role: 'user', content: [{ type: 'text', text: prose(60) }, { type: 'text', text: 'second part' }] }] },
  tools: { tools: TOOLS, messages: [{ role: 'user', content: 'What is the weather in Lisbon?' }] },
  tool_result: {
    tools: TOOLS,
    messages: [
      { role: 'user', content: 'What is the weather in Lisbon?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_weather', arguments: '{"place":"Lisbon","days":2}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: JSON.stringify({ place: 'Lisbon', forecast: [{ day: 1, high: 21, low: 14, sky: 'clear' }, { day: 2, high: 19, low: 13, sky: 'rain' }] }) },
    ],
  },
};
const FAMILIES = { openai: MODEL, anthropic: 'anthropic/claude-haiku-4-5', gemini: 'google/gemini-2.5-flash' };

t.test("the estimation error against each family's reported prompt tokens in the mock", async (t) => {
  const MAX = 16;
  for (const [family, model] of Object.entries(FAMILIES)) {
    const refusing = await budgetedKey(`estimate-${family}-refusing`, 1);
    const serving = await budgetedKey(`estimate-${family}-serving`, 100_000_000);
    const ratios: string[] = [];
    let worstRatio = 0;
    for (const [shape, prompt] of Object.entries(CORPUS)) {
      const request = { model, max_tokens: MAX, ...prompt };
      const refused = await chat(refusing, request);
      assertEnvelope(t, refused, 400, 'request_too_large', `${family} ${shape}: refused by a budget of 1`);
      const estimate = Number(/up to (\d+) tokens/.exec(refused.body.msg)?.[1]) - MAX;
      const served = await chat(serving, request);
      t.equal(served.status, 200, `${family} ${shape}: served`);
      const reported = served.body.usage.prompt_tokens as number;
      t.ok(reported <= estimate, `${family} ${shape}: the vendor reported ${reported} prompt tokens, within the estimate of ${estimate}`);
      // The mock bills no tool definitions (OpenAI, Gemini) nor Anthropic's tool-use system prompt,
      // which a vendor does and the estimate covers: tightness is checked without tools.
      if (!prompt.tools) t.ok(estimate - reported <= 64, `${family} ${shape}: and the estimate is tight (${estimate} for ${reported}; the cache salt is reserved in bytes)`);
      worstRatio = Math.max(worstRatio, reported / estimate);
      ratios.push(`${shape} ${reported}/${estimate}`);
    }
    t.comment(`${family}: reported/estimated ${ratios.join(', ')}; at most ${worstRatio.toFixed(3)}`);
  }
});

t.test('the Responses endpoint: its estimate counts the items it names by reference', async (t) => {
  const responses = (key: string, request: Record<string, unknown>) => rawRequest(`${gateway.v1}/responses`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(request), timeoutMs: 30_000,
  });
  const one = await responses(await budgetedKey('estimate-responses-one-word', 100), { model: MODEL, input: 'hello', max_output_tokens: 50 });
  t.equal(one.status, 200, 'a one-word input with max_output_tokens 50 under rate_limit_tph 100 (its body has 70 bytes)');

  const { token, key: serving } = await fastUser(gateway, 'estimate-responses-items', '5');
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { rate_limit_tph: 100_000_000 });
  const first = await responses(serving, { model: MODEL, input: 'write at length [[mock chunks=300]]', max_output_tokens: 400 });
  t.equal(first.status, 200, 'a long answer kept as an item');
  const item = (first.body as any).output[0].id as string;
  const request = { model: MODEL, input: [{ type: 'item_reference', id: item }, { role: 'user', content: 'and then? [[mock chunks=2]]' }], max_output_tokens: 20 };
  const refusing = await gateway.createKey(token);
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { rate_limit_tph: 1 });
  const refused = await responses(refusing, request);
  assertEnvelope(t, refused, 400, 'request_too_large', 'refused by a budget of 1');
  const estimate = Number(/up to (\d+) tokens/.exec((refused.body as any).msg)?.[1]) - 20;
  const served = await responses(serving, request);
  t.equal(served.status, 200, 'served with the item named by reference');
  const reported = (served.body as any).usage.input_tokens as number;
  t.ok(reported > 300, `the vendor counted the referenced item (${reported} input tokens)`);
  t.ok(estimate >= reported && estimate - reported <= 64, `the estimate ${estimate} covers them, tightly`);
});

t.test('text a message carries in fields of its own (passed upstream as they are) counts in the estimate', async (t) => {
  const key = await budgetedKey('estimate-extra-fields', 1);
  const estimateOf = async (message: Record<string, unknown>) => {
    const refused = await chat(key, { model: MODEL, max_tokens: 10, messages: [message] });
    assertEnvelope(t, refused, 400, 'request_too_large');
    return Number(/up to (\d+) tokens/.exec(refused.body.msg)?.[1]);
  };
  const plain = await estimateOf({ role: 'user', content: 'hi' });
  const carrying = await estimateOf({ role: 'user', content: 'hi', note: prose(200) });
  t.ok(carrying - plain >= 200, `200 words in an unknown field add ${carrying - plain} tokens`);
});

t.test("a special token's text in a prompt is plain text to the counter, as to the vendor", async (t) => {
  const { key } = await gateway.user('estimate-special-usage', '1');
  const content = 'Before <|endoftext|> after [[mock chunks=5 no_usage=1]]';
  const before = (await gateway.balanceNano('estimate-special-usage')).credits;
  const response = await postJson(`${gateway.v1}/chat/completions`, key, { model: MODEL, messages: [{ role: 'user', content }] });
  t.equal(response.status, 200, 'a call without upstream usage is served');
  await gateway.ledgerSettled('estimate-special-usage');
  const promptTokens = 3 + 3 + tokenize(content, { disallowedSpecial: new Set() });
  t.equal(before - (await gateway.balanceNano('estimate-special-usage')).credits, BigInt(promptTokens) * 150n + 5n * 600n, `and charged for its ${promptTokens} counted prompt tokens and 5 completion tokens`);
});
