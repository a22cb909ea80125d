// Prompt caching is kept per end user: the upstream sees an opaque partition per user (never the user
// id), a caller's own prompt_cache_key only partitions the caller's space, and cache reads are billed
// at the model's cache-read price. The mock vendor caches like the vendors do (same prompt, same
// partition, at least 1,024 tokens, in 128-token blocks).
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser } from './helpers/http-tools.js';
import { costNano, moneyView } from './helpers/billing-checks.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10' } }); });
t.teardown(() => gateway?.close());

// About 1,500 tokens of the same words for everybody.
const LONG_PROMPT = `${'The quick brown fox jumps over the lazy dog. '.repeat(150)}[[mock chunks=2]]`;

interface Answer { status: number; usage: any; charge: bigint; upstreamBody: any }

async function ask(key: string, model: string, extra: Record<string, unknown> = {}): Promise<Answer> {
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: LONG_PROMPT }], max_tokens: 10, ...extra }),
  });
  const body = (await response.json()) as any;
  const upstream = gateway.mock.requests().filter((r) => r.path.endsWith('/chat/completions')).at(-1);
  const usage = body.usage;
  return { status: response.status, usage, charge: usage ? costNano(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0) : 0n, upstreamBody: upstream?.body };
}

const cachedOf = (answer: Answer) => answer.usage?.prompt_tokens_details?.cached_tokens ?? 0;

t.test('OpenAI family: two users with the same long prompt never share a partition; one user\'s repeat does', async (t) => {
  const alice = await fastUser(gateway, 'cache-alice', '1');
  const bob = await fastUser(gateway, 'cache-bob', '1');
  const model = 'openai/gpt-4o-mini';
  const first = await ask(alice.key, model);
  t.equal(first.status, 200);
  t.ok(first.usage.prompt_tokens >= 1024, `a prompt long enough to be cached (${first.usage.prompt_tokens} tokens)`);
  t.equal(cachedOf(first), 0, "alice's first call reads nothing from cache");
  t.notOk(first.usage.prompt_tokens_details, 'cache details are omitted when zero');
  const partition = first.upstreamBody.prompt_cache_key as string;
  t.match(partition, /^[A-Za-z0-9_-]{32}$/, 'the upstream gets an opaque partition');
  t.notMatch(partition, /cache-alice/, 'never the user id');

  const other = await ask(bob.key, model);
  t.equal(cachedOf(other), 0, 'bob sending the same prompt reads nothing of alice\'s');
  t.not(other.upstreamBody.prompt_cache_key, partition, 'bob has his own partition');

  const again = await ask(alice.key, model);
  t.ok(cachedOf(again) >= 1024, `alice's repeat reads ${cachedOf(again)} tokens from cache`);
  t.equal(again.usage.prompt_tokens_details.cache_read_input_tokens, cachedOf(again), 'under both names');
  t.equal(again.upstreamBody.prompt_cache_key, partition, 'the same partition each time');

  const chosen = await ask(alice.key, model, { prompt_cache_key: 'tenant-42' });
  t.equal(cachedOf(chosen), 0, "a caller's own prompt_cache_key is a fresh partition");
  t.not(chosen.upstreamBody.prompt_cache_key, 'tenant-42', 'combined with the user, not passed as sent');
  t.equal(cachedOf(await ask(alice.key, model, { prompt_cache_key: 'tenant-42' })), cachedOf(again), 'and is reused by its repeats');
  t.equal(cachedOf(await ask(bob.key, model, { prompt_cache_key: 'tenant-42' })), 0, 'another user naming the same key reaches nothing of alice\'s');

  await gateway.ledgerSettled('cache-alice');
  const money = await moneyView(gateway, 'cache-alice');
  const charges = await gateway.sql<{ credits_nano: bigint }[]>`
    select credits_nano from transactions where user_id = 'cache-alice' and payment_method = 'usage' order by created_at`;
  t.equal(charges.length, 4);
  t.equal(-charges[1]!.credits_nano, again.charge, 'the repeat is charged with its cached tokens at the cache-read price');
  t.ok(again.charge < first.charge, `cheaper than the first call (${again.charge} < ${first.charge} nano-USD)`);
  t.equal(money.credits, money.ledgerSum);
});

t.test('a family whose cache has no key (DeepSeek): a per-user salt ahead of the prompt, billed', async (t) => {
  const carol = await fastUser(gateway, 'cache-carol', '1');
  const dave = await fastUser(gateway, 'cache-dave', '1');
  const model = 'deepseek/deepseek-v4-flash';
  const first = await ask(carol.key, model);
  t.equal(cachedOf(first), 0);
  const salt = first.upstreamBody.messages[0];
  t.equal(salt.role, 'system', 'a system message first');
  t.match(salt.content, /^cache-scope:[A-Za-z0-9_-]{32}$/, 'carrying the partition');
  t.notOk('prompt_cache_key' in first.upstreamBody, 'no prompt_cache_key for a vendor without one');
  t.equal(cachedOf(await ask(dave.key, model)), 0, "dave's identical prompt has another prefix");
  t.ok(cachedOf(await ask(carol.key, model)) >= 1024, "carol's repeat is read from cache");
});
