// A key's token budgets (rate_limit_tph, rate_limit_tpd) under concurrency: every call reserves its
// prompt's token estimate plus its output allowance at admission, as it reserves credit, and settles
// its actual count, so calls in flight on every HTTP thread together never take the key past its
// budget by more than their estimation error. Waves of concurrent
// calls (streamed and not) spend one budget down: at no point do the calls served use more tokens
// than it, and the last refusal comes only once the next worst case no longer fits.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { MODEL, leasesClosed, parseJson, sseData } from './helpers/billing-checks.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10' } }); });
t.teardown(() => gateway?.close());

const MAX_TOKENS = 24;

interface Served { status: number; body: any; tokens: number; headers: Record<string, string | string[] | undefined> }

async function chat(key: string, stream: boolean): Promise<Served> {
  // Slow enough (6 chunks, 30 ms apart) that each wave's calls are all in flight together.
  const body = JSON.stringify({
    model: MODEL, max_tokens: MAX_TOKENS, stream, ...(stream ? { stream_options: { include_usage: true } } : {}),
    messages: [{ role: 'user', content: 'race [[mock chunks=6 delay_ms=30]]' }],
  });
  const response = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, timeoutMs: 30_000,
  });
  let tokens = 0;
  if (response.status === 200) {
    const usage = stream
      ? sseData(response.text).filter((d) => d !== '[DONE]').map((d) => parseJson(d)).find((chunk) => chunk.usage)?.usage
      : response.body.usage;
    tokens = usage.prompt_tokens + usage.completion_tokens;
  }
  return { status: response.status, body: response.body, tokens, headers: response.headers };
}

t.test('waves of 24 concurrent calls on two HTTP threads never spend more than rate_limit_tph', async (t) => {
  const user = 'token-race';
  const { token, key } = await fastUser(gateway, user, '5');
  const id = await newestKeyId(gateway.url, token);
  // What each call reserves (its prompt's estimate plus max_tokens, the same streamed or not), as a budget of 1 refuses it.
  await updateKey(gateway.url, token, id, { rate_limit_tph: 1 });
  const probe = await chat(key, true);
  assertEnvelope(t, probe, 400, 'request_too_large', 'a budget of one token');
  const worst = Number(/up to (\d+) tokens/.exec(probe.body.msg)?.[1]);
  const budget = worst * 8;
  await updateKey(gateway.url, token, id, { rate_limit_tph: budget });
  // The documented bound: the budget plus the estimation error of the calls in flight (a wave).
  let worstError = 0;

  let spent = 0;
  let served = 0;
  let refusedSinceLastServed = 0;
  for (let wave = 0; wave < 40; wave++) {
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(key, i % 2 === 0)));
    for (const result of results) {
      if (result.status === 200) {
        spent += result.tokens;
        served++;
        worstError = Math.max(worstError, result.tokens - worst);
      } else {
        assertEnvelope(t, result, 429, 'rate_limit_exceeded', `wave ${wave}: refused by the budget`);
        t.ok(Number(result.headers['retry-after']) >= 1, 'with a Retry-After');
      }
    }
    t.ok(spent <= budget + 24 * worstError, `after wave ${wave}: ${served} calls served ${spent} tokens, within the budget of ${budget} plus the estimation error of 24 calls in flight (${worstError} each)`);
    const admitted = results.filter((result) => result.status === 200).length;
    refusedSinceLastServed = admitted === 0 ? refusedSinceLastServed + 1 : 0;
    if (refusedSinceLastServed === 2) break;
  }
  t.equal(refusedSinceLastServed, 2, 'the budget ran out');
  t.equal(worstError, 0, "no call used more than its reservation: the mock's counts are the estimate's (test/token-estimate.test.ts)");
  t.ok(spent + worst > budget, `refused for good only once the next worst case (${worst}) no longer fits: ${spent} of ${budget} spent`);

  await leasesClosed(gateway, user);
  await gateway.ledgerSettled(user);
  const tokens = await gateway.redis.hgetall(`${gateway.prefix}{u:${user}}:ktok:${id}`);
  const counted = Object.entries(tokens).filter(([field]) => field.startsWith('m')).reduce((sum, [, value]) => sum + Number(value), 0);
  t.equal(counted, spent, "the key's hour counts exactly the tokens its calls used");
  t.equal(tokens.h, '0', 'nothing stays reserved');
  const [row] = await gateway.sql<{ tokens: string }[]>`
    select coalesce(sum(prompt_tokens + completion_tokens), 0)::text as tokens from request_logs where api_key_id = ${id} and status = 200`;
  t.equal(Number(row!.tokens), spent, 'and so do the request logs');
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
});
