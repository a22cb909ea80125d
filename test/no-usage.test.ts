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

// One tokenizer per process (about 45 MiB resident): http-0 counts, the other threads ask it over a port.
t.test('with two HTTP threads, both threads\' usage-less calls are counted by the process\'s one token counter', async (t) => {
  const pair = await startGateway({ threads: 2, env: { RATE_LIMIT_DEFAULT: '1000/10' } });
  t.teardown(() => pair.close());
  const { key } = await pair.user('counted-pair', '1');
  const content = 'Count me on any thread [[mock chunks=3 no_usage=1]]';
  const calls = 24;
  const before = (await pair.balanceNano('counted-pair')).credits;
  // Concurrent calls open a connection each, which the kernel spreads over both threads (SO_REUSEPORT):
  // the chance that all 24 land on http-0 is 2^-23.
  const answers = await Promise.all(Array.from({ length: calls }, (_, i) => postJson(`${pair.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', stream: i % 2 === 0, messages: [{ role: 'user', content }] })));
  t.same(answers.map((answer) => answer.status), answers.map(() => 200));
  await pair.ledgerSettled('counted-pair');
  const promptTokens = 3 + 3 + tokenize(content);
  t.equal(before - (await pair.balanceNano('counted-pair')).credits, BigInt(calls) * (BigInt(promptTokens) * 150n + 3n * 600n), `${calls} calls of ${promptTokens} prompt and 3 completion tokens`);
  const metrics = await (await fetch(`${pair.url}/metrics`)).text();
  const counters = [...new Set([...metrics.matchAll(/thread="([^"]*(?:count-tokens|token-counter)[^"]*)"/g)].map((match) => match[1]))];
  t.same(counters, ['token-counter'], 'one token-counting thread for the process, no HTTP thread\'s own');
});
