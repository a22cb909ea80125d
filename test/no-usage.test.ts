import t from 'tap';
import { countTokens as tokenize } from 'gpt-tokenizer';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

// An upstream that reports no usage is billed by counting with the o200k tokenizer (OpenAI's message scheme).
t.test('a completion without upstream usage is counted with the tokenizer', async (t) => {
  const { key } = await gateway.user('counted', '1');
  const content = 'Count me please [[mock chunks=5 no_usage=1]]';
  for (const stream of [false, true]) {
    const before = (await gateway.balanceNano('counted')).credits;
    const response = await postJson(`${gateway.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', stream, messages: [{ role: 'user', content }] });
    t.equal(response.status, 200);
    await gateway.ledgerSettled('counted');
    const promptTokens = 3 + 3 + tokenize(content);
    const expected = BigInt(promptTokens) * 150n + 5n * 600n;
    t.equal(before - (await gateway.balanceNano('counted')).credits, expected, `stream=${stream}: prompt ${promptTokens} and 5 completion tokens`);
  }
});
