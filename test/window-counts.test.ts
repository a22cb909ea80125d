// Every authenticated request counts in the key's default window whatever its answer (issue 24, item
// 8): refusals for credit (402 insufficient_credits) or for the key's credit limit (402
// credit_limit_exceeded) take their slot, so the 21st request in 10 s is 429 whatever the earlier
// answers were; and a request refused before admission can be counted with one cheap call
// (Admission.countRequest, count.lua), which admission then sees.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser, newestKeyId, updateKey } from './helpers/http-tools.js';
import { NO_KEY_LIMITS } from '../src/admission/scripts.js';
import { luaTestbed } from './helpers/lua-testbed.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };

let gateway: Gateway;
t.before(async () => {
  // The default window: 20 requests per 10 s per key.
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } });
});
t.teardown(() => gateway.close());

/** `count` requests one after another; their statuses and error codes. */
async function burst(key: string, count: number): Promise<string[]> {
  const answers: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
    answers.push(`${response.status} ${response.body?.error?.code ?? ''}`.trim());
  }
  return answers;
}

t.test('a $0 account: 20 answers of 402, then 429, whatever the earlier answers were', async (t) => {
  const { key } = await fastUser(gateway, 'zero', '0');
  const answers = await burst(key, 25);
  t.same(answers, [...Array(20).fill('402 insufficient_credits'), ...Array(5).fill('429 rate_limit_exceeded')]);
});

t.test("refusals for the key's credit limit count the same", async (t) => {
  const { key, token } = await fastUser(gateway, 'capped', '1');
  await updateKey(gateway.url, token, await newestKeyId(gateway.url, token), { credit_limit: 0.000001 });
  const answers = await burst(key, 22);
  t.same(answers, [...Array(20).fill('402 credit_limit_exceeded'), ...Array(2).fill('429 rate_limit_exceeded')]);
});

t.test('requests refused before admission (a malformed body, an unknown model) take their slot too', async (t) => {
  const { key } = await fastUser(gateway, 'malformed', '1');
  const answers: string[] = [];
  for (let i = 0; i < 20; i++) {
    const body = i % 2 === 0 ? { ...CHAT, max_tokens: -1 } : { ...CHAT, model: 'nobody/no-such-model' };
    const response = await postJson(`${gateway.v1}/chat/completions`, key, body);
    answers.push(String(response.status));
  }
  t.same(answers, Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? '400' : '404')), 'twenty refusals');
  // The counts leave with the thread's next batch of scripts: the request after them may go out in
  // that batch, ahead of the last count; the one after it cannot. Uncounted, both would be served.
  let next = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
  if (next.status === 200) next = await postJson(`${gateway.v1}/chat/completions`, key, CHAT);
  t.equal(next.status, 429, 'a valid request is refused by the window they filled');
  t.equal(next.body.error.code, 'rate_limit_exceeded');
});

t.test('count.lua: a request counted before admission takes its slot in the window admit.lua checks', async (t) => {
  const { redis, keys, scripts } = luaTestbed(t, 'counts', REDIS_URL);
  await redis.hset(keys.balance('u'), 'credits', '1000', 'held', '0', 'deposits', '1000', 'epoch', '1');
  const admit = (leaseId: string) => scripts.admit({
    userId: 'u', keyId: 'k', leaseId, callNano: 1n, wantCreditNano: 1n, wantSlots: 1, limit: 5, windowMs: 10_000, ttlMs: 60_000, leaseLifeMs: 1000,
    keyLimits: { ...NO_KEY_LIMITS, rpm: 3 }, callTokens: 0,
  });
  t.equal((await admit('k:a')).kind, 'admitted');
  await Promise.all([1, 2].map((i) => scripts.count({ userId: 'u', keyId: 'k', memberId: `k:c${i}`, windowMs: 10_000, leaseLifeMs: 1000, rpm: true })));
  t.equal(await redis.hget(keys.rateWeights('u', 'k'), '#'), '3', 'the default window holds the admitted request and the two counted');
  t.equal(await redis.hget(keys.minuteWeights('u', 'k'), '#'), '3', 'so does the per-minute window of a key with rate_limit_rpm');
  t.match(await admit('k:b'), { kind: 'rate_limited', limit: 'rpm' }, 'the key\'s rate_limit_rpm of 3 is used up by them');
});
