// A key's own spend and token limits over HTTP (credit_limit per period with 402, rate_limit_tph
// and rate_limit_tpd with 429 and Retry-After), and Redis losing its data: balances and key spend
// rebuilt from Postgres, calls in flight during the loss still charged once.
import http from 'node:http';
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, newestKeyId, rawRequest, updateKey } from './helpers/http-tools.js';
import { MODEL, costNano, leasesClosed, parseJson, reserveNano, sseData, usdToNano } from './helpers/billing-checks.js';
import { deleteKeysWithPrefix } from '../bench/namespaces.js';

let gateway: Gateway;
// One HTTP thread: a call's settlement and the next call's admission share one Redis connection, in order.
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10' } }); });
t.teardown(() => gateway?.close());

const MAX_TOKENS = 20;
const bodyOf = (text: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: text }], max_tokens: MAX_TOKENS, ...extra });

interface Call { status: number; body: any; text: string; headers: Record<string, string | string[] | undefined>; chargeNano: bigint }

/** One chat call; `chargeNano` is what its usage costs at list price (0 unless it succeeded). */
async function chat(key: string, body: string): Promise<Call> {
  const response = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, timeoutMs: 30_000,
  });
  let usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } } | undefined;
  if (response.status === 200) {
    usage = typeof response.body === 'object'
      ? response.body.usage
      : sseData(response.text).filter((d) => d !== '[DONE]').map((d) => parseJson(d)).find((chunk) => chunk.usage)?.usage;
  }
  const chargeNano = usage ? costNano(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0) : 0n;
  return { status: response.status, body: response.body, text: response.text, headers: response.headers, chargeNano };
}

async function keySpend(keyId: string): Promise<bigint> {
  const [row] = await gateway.sql<{ spent: bigint }[]>`
    select coalesce(-sum(credits_nano), 0)::bigint as spent from transactions where api_key_id = ${keyId} and payment_method = 'usage'`;
  return row!.spent;
}

async function listedKey(token: string, id: string): Promise<any> {
  const response = await rawRequest(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as any[]).find((record) => record.id === id);
}

t.test('credit_limit: calls until the cap would be passed, then 402 credit_limit_exceeded; credit_used reports the spend', async (t) => {
  const user = 'cap-user';
  const { token, key } = await fastUser(gateway, user, '5');
  const id = await newestKeyId(gateway.url, token);
  const body = bodyOf('spend [[mock chunks=2]]');
  const reserve = reserveNano(body, MAX_TOKENS);
  const capNano = reserve * 5n + reserve / 2n;
  const record = await updateKey(gateway.url, token, id, { credit_limit: Number(capNano) / 1e9, credit_reset_interval: 'daily' });
  t.equal(usdToNano(record.credit_limit), capNano, 'the cap as set');
  t.ok(Date.parse(record.credit_period_start) <= Date.now(), 'a period started');

  const calls: Call[] = [];
  for (let i = 0; i < 200; i++) {
    const call = await chat(key, body);
    calls.push(call);
    if (call.status !== 200) break;
  }
  const refused = calls.at(-1)!;
  assertEnvelope(t, refused, 402, 'credit_limit_exceeded', 'the call past the cap');
  t.match(refused.body.msg, /credit_limit/, 'the message names the limit');
  t.ok(calls.length > 5, `more calls than worst cases fit, since each costs less than its reservation (${calls.length - 1} admitted)`);
  await gateway.ledgerSettled(user);
  const spent = await keySpend(id);
  t.equal(spent, calls.reduce((sum, call) => sum + call.chargeNano, 0n), 'the key spent exactly what its calls cost');
  t.ok(spent <= capNano, `spend ${spent} within the cap ${capNano}`);
  t.ok(spent + reserve > capNano, 'refused only once the next worst case no longer fit');
  const listed = await listedKey(token, id);
  t.equal(usdToNano(listed.credit_used), spent, 'credit_used is the spend of the period');
  t.equal(listed.credit_period_start, record.credit_period_start, 'in the period the update started');

  const otherKey = await gateway.createKey(token);
  t.equal((await chat(otherKey, body)).status, 200, "the user's other key is not capped");

  const raised = await updateKey(gateway.url, token, id, { credit_limit: Number(capNano * 2n) / 1e9 });
  t.equal(raised.credit_used, 0, 'changing the limit starts a new period');
  t.equal((await chat(key, body)).status, 200, 'admitted again under the new limit');
  await gateway.ledgerSettled(user);
  t.same(await gateway.redis.hgetall(`${gateway.prefix}{u:${user}}:kspend:${id}`), {
    period: String(Date.parse(raised.credit_period_start)), spent: String((await keySpend(id)) - spent), held: '0',
  }, "Redis holds the key's spend of the new period and nothing held");

  const deleted = await rawRequest(`${gateway.url}/api/v1/api-keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  t.equal(deleted.status, 204);
  t.equal(await gateway.redis.exists(`${gateway.prefix}{u:${user}}:kspend:${id}`, `${gateway.prefix}{u:${user}}:ktok:${id}`), 0, "DELETE clears the key's counters");
});

t.test('rate_limit_tph and rate_limit_tpd: each call reserves its estimated prompt plus its output allowance; spent budgets answer 429 with Retry-After and the token headers', async (t) => {
  const user = 'token-user';
  const { token, key } = await fastUser(gateway, user, '5');
  const id = await newestKeyId(gateway.url, token);
  const body = bodyOf('tokens [[mock chunks=2]]');
  // The worst case the gateway reserves: the prompt's token estimate plus max_tokens, as a budget of 1 refuses it.
  await updateKey(gateway.url, token, id, { rate_limit_tph: 1 });
  const probe = await chat(key, body);
  assertEnvelope(t, probe, 400, 'request_too_large', 'a budget of one token');
  const worst = Number(/up to (\d+) tokens/.exec(probe.body.msg)?.[1]);
  t.ok(worst > MAX_TOKENS && worst < Buffer.byteLength(body) + MAX_TOKENS, `the worst case ${worst} counts the prompt's tokens, fewer than its body's bytes`);
  await updateKey(gateway.url, token, id, { rate_limit_tph: worst - 1 });
  const tooLarge = await chat(key, body);
  assertEnvelope(t, tooLarge, 400, 'request_too_large', 'a call whose worst case exceeds the whole budget');
  t.match(tooLarge.body.msg, new RegExp(`up to ${worst} tokens.*rate_limit_tph of ${worst - 1} tokens per hour`), 'the message gives both figures');

  const budget = worst * 3;
  await updateKey(gateway.url, token, id, { rate_limit_tph: budget });
  const first = await chat(key, body);
  t.equal(first.status, 200);
  const used = first.body.usage.prompt_tokens + first.body.usage.completion_tokens;
  t.ok(used > 0 && used < worst, `one call uses ${used} tokens of its worst case ${worst}`);
  const estimate = worst - MAX_TOKENS;
  const prompt = first.body.usage.prompt_tokens;
  t.ok(estimate >= prompt && estimate - prompt <= 64, `the prompt's estimate ${estimate} covers the ${prompt} tokens reported, tightly (the cache salt counts in bytes)`);
  const results: Call[] = [first];
  while (results.length < 100 && results.at(-1)!.status === 200) results.push(await chat(key, body));
  const refused = results.at(-1)!;
  assertEnvelope(t, refused, 429, 'rate_limit_exceeded', 'once the next worst case no longer fits the hour');
  const admitted = results.length - 1;
  t.equal(admitted, Math.floor((budget - worst) / used) + 1, `admitted while used + the worst case fit the budget of ${budget} (${admitted} calls)`);
  t.ok(admitted * used <= budget, 'the hour spent no more than its budget');
  t.match(refused.body.msg, new RegExp(`rate_limit_tph of ${budget} tokens per hour`));
  const retryAfter = Number(refused.headers['retry-after']);
  t.ok(retryAfter > 3500 && retryAfter <= 3600, `Retry-After ${retryAfter} s: when this minute's tokens leave the hour`);
  t.equal(refused.headers['x-ratelimit-limit-tokens'], String(budget));
  t.equal(refused.headers['x-ratelimit-remaining-tokens'], '0');

  const otherKey = await gateway.createKey(token);
  t.equal((await chat(otherKey, body)).status, 200, 'token budgets are per key');
  await updateKey(gateway.url, token, id, { rate_limit_tph: null, rate_limit_tpd: 1_000_000 });
  t.equal((await chat(key, body)).status, 200, 'a day budget with room admits');
  await updateKey(gateway.url, token, id, { rate_limit_tpd: budget });
  const daily = await chat(key, body);
  assertEnvelope(t, daily, 429, 'rate_limit_exceeded', 'the day counts the same tokens');
  t.match(daily.body.msg, new RegExp(`rate_limit_tpd of ${budget} tokens per day`));
  t.ok(Number(daily.headers['retry-after']) > 85_000, 'Retry-After: when the quarter hour leaves the day');
  const money = await leasesClosed(gateway, user);
  t.equal(money.held, 0n, 'refused calls hold nothing');
  const tokens = await gateway.redis.hgetall(`${gateway.prefix}{u:${user}}:ktok:${id}`);
  t.equal(tokens.h, '0', 'and no tokens stay reserved');
  t.same(Object.keys(tokens).filter((field) => field.startsWith('l')), [], 'no lease keeps a share');
});

t.test("Redis loses the gateway's data: balances and key spend rebuilt from Postgres, calls in flight charged once", async (t) => {
  const user = 'loss-user';
  const initial = 2_000_000_000n;
  const { token, key } = await fastUser(gateway, user, '2');
  const id = await newestKeyId(gateway.url, token);
  await updateKey(gateway.url, token, id, { credit_limit: 1 });
  const quick = bodyOf('before [[mock chunks=2]]');
  const calls: Call[] = [];
  for (let i = 0; i < 3; i++) calls.push(await chat(key, quick));
  await gateway.ledgerSettled(user);
  const spentBefore = await keySpend(id);

  // Streams that are mid-way when the data goes: their leases vanish with it.
  const slow = bodyOf('during [[mock chunks=20 delay_ms=50]]', { stream: true, stream_options: { include_usage: true } });
  const inFlight = Array.from({ length: 4 }, () => chat(key, slow));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.ok(await gateway.redis.hlen(`${gateway.prefix}{u:${user}}:res`) > 0, 'leases are open when Redis loses everything');
  await deleteKeysWithPrefix(gateway.redis, gateway.prefix); // FLUSHALL, limited to this gateway's namespace
  calls.push(...(await Promise.all(inFlight)));
  for (let i = 0; i < 3; i++) calls.push(await chat(key, quick));
  t.same(calls.map((c) => c.status), Array(calls.length).fill(200), 'every call before, during and after the loss succeeded');

  await gateway.ledgerSettled(user);
  const charged = calls.reduce((sum, call) => sum + call.chargeNano, 0n);
  const money = await leasesClosed(gateway, user);
  t.equal(money.usageTransactions, calls.length, 'one usage transaction per call, none lost and none twice');
  t.equal(money.ledgerSum, initial - charged, 'Postgres: the top-up less every call, to the nano-dollar');
  t.equal(money.credits, money.ledgerSum, 'the rebuilt Redis balance agrees with Postgres');
  t.equal(money.held, 0n);
  const spentAfter = await keySpend(id);
  t.equal(spentAfter, charged, "the key's spend counts every call");
  t.ok(spentAfter > spentBefore, 'including those after the loss');
  t.match(gateway.output, /charged without their lease/, 'the lost leases were reported');
  t.notMatch(gateway.output, /unexpected error/);
});

t.test('a key revoked while its request is still uploading fails with 401 key_revoked before any upstream call', async (t) => {
  const user = 'revoke-inflight';
  const { token, key } = await fastUser(gateway, user, '1');
  const id = await newestKeyId(gateway.url, token);
  const body = Buffer.from(bodyOf('never sent upstream [[mock chunks=2]]'));
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    const request = http.request(`${gateway.v1}/chat/completions`, {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(body.length) },
    }, (res) => {
      let text = '';
      res.on('data', (part: Buffer) => { text += part.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: parseJson(text) }));
    });
    request.on('error', reject);
    // Half the body now (the key is already authenticated), the rest after the key is revoked.
    request.write(body.subarray(0, 20));
    setTimeout(async () => {
      const revoked = await rawRequest(`${gateway.url}/api/v1/api-keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
      t.equal(revoked.status, 204, 'revoked mid-upload');
      request.end(body.subarray(20));
    }, 200);
  });
  const result = await response;
  assertEnvelope(t, result, 401, 'key_revoked', 'the request in flight');
  const seen = gateway.mock.requests().filter((record) => JSON.stringify(record.body ?? '').includes('never sent upstream'));
  t.equal(seen.length, 0, 'the upstream never saw it');
  const money = await leasesClosed(gateway, user);
  t.equal(money.held, 0n, 'its reservation was released');
  t.equal(money.usageTransactions, 0, 'and nothing charged');
});
