import t from 'tap';
import { tokenCostNano, worstCaseCostNano, nanoToUsd } from '../src/billing/pricing.js';
import { usdToNano } from '../src/catalog/model.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';

const perMillion = (usd: string) => usdToNano(usd);
const gpt4oMini = { input: perMillion('0.15'), cachedInput: perMillion('0.075'), cacheWrite: 0n, output: perMillion('0.60') };
const deepseek = { input: perMillion('0.14'), cachedInput: perMillion('0.0028'), cacheWrite: 0n, output: perMillion('0.28') };
const sonnet = { input: perMillion('3.00'), cachedInput: perMillion('0.30'), cacheWrite: perMillion('3.75'), output: perMillion('15.00') };

t.test('usdToNano is exact to the nano-dollar', async (t) => {
  t.equal(usdToNano('0.075'), 75_000_000n);
  t.equal(usdToNano('0.0028'), 2_800_000n);
  t.equal(usdToNano('15'), 15_000_000_000n);
  t.equal(usdToNano('0.000000001'), 1n);
  t.throws(() => usdToNano('0.0000000001'), 'more than 9 decimals refused');
  t.throws(() => usdToNano('-1'));
  t.throws(() => usdToNano('1e3'));
});

t.test('token cost by hand', async (t) => {
  // 1,000 prompt (200 cached) and 500 completion tokens of gpt-4o-mini:
  // 800 * 0.15/1M + 200 * 0.075/1M + 500 * 0.60/1M = 0.00012 + 0.000015 + 0.0003 = 0.000435 USD
  t.equal(tokenCostNano(gpt4oMini, { promptTokens: 1000, cachedTokens: 200, cacheWriteTokens: 0, completionTokens: 500 }), 435_000n);
  // DeepSeek cache reads cost 2.8 nano-USD per token: 3 cached tokens = 8.4 -> rounded to 8; 5 -> 14
  t.equal(tokenCostNano(deepseek, { promptTokens: 3, cachedTokens: 3, cacheWriteTokens: 0, completionTokens: 0 }), 8n);
  t.equal(tokenCostNano(deepseek, { promptTokens: 5, cachedTokens: 5, cacheWriteTokens: 0, completionTokens: 0 }), 14n);
  // half rounds up: 0.5 nano -> 1 (a 0.0005 USD/1M price does not exist; 2.8*5/... use 1 token at 0.0005 via custom prices)
  t.equal(tokenCostNano({ input: 500_000n, cachedInput: 0n, cacheWrite: 0n, output: 0n }, { promptTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0 }), 1n);
  t.equal(tokenCostNano({ input: 499_999n, cachedInput: 0n, cacheWrite: 0n, output: 0n }, { promptTokens: 1, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0 }), 0n);
  // Anthropic-style: 100 prompt tokens of which 40 cache reads and 50 cache writes:
  // 10 * 3 + 40 * 0.30 + 50 * 3.75 = 30 + 12 + 187.5 = 229.5 USD/1M -> 229.5 nano... in nano: (10*3e9 + 40*3e8 + 50*3.75e9)/1e6
  t.equal(tokenCostNano(sonnet, { promptTokens: 100, cachedTokens: 40, cacheWriteTokens: 50, completionTokens: 0 }), 229_500n);
});

t.test('the worst case bounds every actual cost within the same limits', async (t) => {
  for (const prices of [gpt4oMini, deepseek, sonnet]) {
    const worst = worstCaseCostNano(prices, 1000, 500);
    for (const cached of [0, 500, 1000]) {
      for (const writes of [0, 1000 - cached]) {
        const actual = tokenCostNano(prices, { promptTokens: 1000, cachedTokens: cached, cacheWriteTokens: writes, completionTokens: 500 });
        t.ok(actual <= worst, `actual ${actual} <= worst ${worst}`);
      }
    }
  }
  t.equal(worstCaseCostNano(gpt4oMini, 1, 0), 150n, '1 token at 0.15 USD/1M is 150 nano-USD');
  t.equal(worstCaseCostNano(deepseek, 0, 0), 0n);
  t.equal(worstCaseCostNano({ ...deepseek, input: deepseek.cachedInput }, 1, 0), 3n, '2.8 nano-USD rounds up to 3 for the reservation');
  t.equal(worstCaseCostNano(sonnet, 1000, 0), 3_750_000n, 'input at the dearest input rate (cache write)');
});

t.test('nanoToUsd', async (t) => {
  t.equal(nanoToUsd(435_000n), 0.000435);
  t.equal(nanoToUsd(10_000_000_000n), 10);
});

t.test('the seed prices every chat model of the issue at its list price', async (t) => {
  const ids = CHAT_MODELS.map((m) => m.id);
  for (const id of ['openai/gpt-4o-mini', 'openai/gpt-4.1', 'openai/o4-mini', 'deepseek/deepseek-chat', 'deepseek/deepseek-reasoner',
    'anthropic/claude-sonnet-4-5', 'anthropic/claude-haiku-4-5', 'google/gemini-2.5-flash', 'google/gemini-2.5-pro']) {
    t.ok(ids.includes(id), id);
  }
  const byId = new Map(CHAT_MODELS.map((m) => [m.id, m]));
  t.same(byId.get('openai/gpt-4.1')!.usdPerMillion, { input: '2.00', cachedInput: '0.50', cacheWrite: '0', output: '8.00' });
  t.same(byId.get('anthropic/claude-haiku-4-5')!.usdPerMillion, { input: '1.00', cachedInput: '0.10', cacheWrite: '1.25', output: '5.00' });
  t.ok(byId.get('openai/o4-mini')!.capabilities.reasoning);
  t.ok(byId.get('deepseek/deepseek-reasoner')!.capabilities.reasoning);
  for (const id of ['openai/o4-mini', 'deepseek/deepseek-chat', 'deepseek/deepseek-reasoner']) t.equal(byId.get(id)!.isActive, false, `${id}: retired upstream, kept inactive`);
  t.notOk(byId.get('openai/gpt-4o-mini')!.capabilities.reasoning);
});

t.test('a long-context tier prices every token of a call whose prompt passes its threshold', async (t) => {
  const pro = {
    input: perMillion('1.25'), cachedInput: perMillion('0.125'), cacheWrite: 0n, output: perMillion('10.00'),
    longContext: { aboveTokens: 200_000, input: perMillion('2.50'), cachedInput: perMillion('0.25'), cacheWrite: 0n, output: perMillion('15.00') },
  };
  const usage = (promptTokens: number) => ({ promptTokens, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 1000 });
  // 200,000 * 1.25 + 1,000 * 10 = 260,000 USD/1M = 0.26 USD; one token more: 200,001 * 2.50 + 1,000 * 15 = 0.5150025 USD
  t.equal(tokenCostNano(pro, usage(200_000)), 260_000_000n, 'at the threshold: the base prices');
  t.equal(tokenCostNano(pro, usage(200_001)), 515_002_500n, 'above it: the long-context prices for all of it');
  t.equal(worstCaseCostNano(pro, 200_000, 1000), 260_000_000n, 'a worst case within the threshold reserves base prices');
  t.equal(worstCaseCostNano(pro, 300_000, 1000), 765_000_000n, 'one that may pass it reserves the dearer tier');
  t.ok(worstCaseCostNano(pro, 300_000, 1000) >= tokenCostNano(pro, usage(300_000)), 'and bounds the actual cost');
  const seeded = CHAT_MODELS.find((m) => m.id === 'google/gemini-2.5-pro');
  t.same(seeded?.longContext, { aboveTokens: 200_000, usdPerMillion: { input: '2.50', cachedInput: '0.25', cacheWrite: '0', output: '15.00' } }, 'the seed carries the tier');
});
