// USD amounts as JSON clients and operators write them (0.1 + 0.2 prints 0.30000000000000004): every
// finite amount in range is taken and rounded DOWN to nano-USD, the same for credit_limit, an alert's
// threshold and the CLI's coupon and top-up amounts; a cap so rounded never lets a key spend more than
// the number sent. Negative, out-of-range, non-finite and non-number amounts stay 422 naming the field.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, mintToken, rawRequest } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '100000/10' } }); });
t.teardown(() => gateway?.close());

/** A JSON body sent byte for byte (so a number keeps exactly the digits written here). */
async function send(method: string, path: string, token: string, body: string): Promise<{ status: number; body: any }> {
  const response = await rawRequest(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  return { status: response.status, body: response.body };
}

async function keyRecord(token: string, id: string): Promise<{ credit_limit: number | null }> {
  const response = await rawRequest(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${token}` } });
  return (response.body as { id: string; credit_limit: number | null }[]).find((record) => record.id === id)!;
}

async function capNano(id: string): Promise<bigint | null> {
  const [row] = await gateway.sql<{ credit_limit_nano: bigint | null }[]>`select credit_limit_nano from api_keys where id = ${id}`;
  return row!.credit_limit_nano;
}

t.test('credit_limit 0.30000000000000004 (0.1 + 0.2) makes a key whose cap reads 0.3; finer amounts round down', async (t) => {
  t.equal(JSON.stringify(0.1 + 0.2), '0.30000000000000004', 'what a JavaScript client sends for 0.1 + 0.2');
  const token = mintToken('usd-keys');
  const created = await send('POST', '/api/v1/api-keys', token, '{"name":"sum","credit_limit":0.30000000000000004}');
  t.equal(created.status, 201, `created: ${JSON.stringify(created.body)}`);
  t.equal(await capNano(created.body.id), 300_000_000n, 'kept as 0.3 USD in nano-USD');
  t.equal((await keyRecord(token, created.body.id)).credit_limit, 0.3, 'the cap reads 0.3');

  const cases: [string, string, bigint][] = [
    ['a price times a count', '0.7000000000000001', 700_000_000n], // 0.07 * 10
    ['just below a nano-USD boundary', '0.29999999999999993', 299_999_999n],
    ['ten decimals', '1.0000000009', 1_000_000_000n],
    ['an exponent', '1.5e-7', 150n],
    ['finer than a nano-USD', '1e-12', 0n],
    ['the largest', '1e9', 1_000_000_000_000_000_000n],
  ];
  for (const [label, json, nano] of cases) {
    const updated = await send('PUT', `/api/v1/api-keys/${created.body.id}`, token, `{"credit_limit":${json}}`);
    t.equal(updated.status, 200, `${label} (${json}): taken`);
    t.equal(await capNano(created.body.id), nano, `${label} (${json}): rounded down to ${nano} nano-USD`);
  }
});

t.test('bad amounts stay 422 naming the field', async (t) => {
  const token = mintToken('usd-refusals');
  const refusals: [string, string, string, RegExp][] = [
    ['POST', '/api/v1/api-keys', '{"name":"k","credit_limit":-0.1}', /must not be negative/],
    ['POST', '/api/v1/api-keys', '{"name":"k","credit_limit":1000000000.5}', /at most 1000000000/],
    ['POST', '/api/v1/api-keys', '{"name":"k","credit_limit":1e400}', /finite|at most/],
    ['POST', '/api/v1/api-keys', '{"name":"k","credit_limit":"0.3"}', /must be a number/],
    ['POST', '/api/v1/api-keys', '{"name":"k","credit_limit":true}', /must be a number/],
    ['POST', '/api/v1/billing/alerts', '{"threshold":0}', /greater than 0/],
    ['POST', '/api/v1/billing/alerts', '{"threshold":1e-10}', /at least 0\.000000001/],
    ['POST', '/api/v1/billing/alerts', '{"threshold":-5}', /must not be negative/],
    ['POST', '/api/v1/billing/alerts', '{"threshold":1e10}', /at most/],
    ['POST', '/api/v1/billing/alerts', '{"threshold":"1"}', /must be a number/],
  ];
  for (const [method, path, body, message] of refusals) {
    const response = await send(method, path, token, body);
    assertEnvelope(t, response, 422, 'validation_error', body);
    const field = path.endsWith('alerts') ? 'threshold' : 'credit_limit';
    t.equal(response.body.error?.param, field, `${body}: names ${field}`);
    t.match(response.body.error?.message, message, `${body}: says why`);
  }
});

t.test('an alert threshold of 0.1 + 0.2 is taken as 0.3', async (t) => {
  const token = mintToken('usd-alerts');
  const alert = await send('POST', '/api/v1/billing/alerts', token, '{"threshold":0.30000000000000004}');
  t.equal(alert.status, 201, `created: ${JSON.stringify(alert.body)}`);
  t.equal(alert.body.threshold, 0.3);
  const [row] = await gateway.sql<{ threshold_nano: bigint }[]>`select threshold_nano from billing_alerts where id = ${alert.body.id}`;
  t.equal(row?.threshold_nano, 300_000_000n);
});

t.test('the CLI rounds coupon and top-up amounts the same way', async (t) => {
  const code = await gateway.cli('coupon', 'create', '--credits', '0.30000000000000004');
  const [coupon] = await gateway.sql<{ credits_nano: bigint }[]>`select credits_nano from coupons where code = ${code}`;
  t.equal(coupon?.credits_nano, 300_000_000n, 'a coupon of 0.1 + 0.2 credits 0.3');
  const printed = await gateway.cli('topup', '--user', 'usd-topup', '--amount', '1.0000000019', '--method', 'card');
  t.match(printed, /credited 1\.000000001 USD/, 'a top-up finer than a nano-USD is rounded down');
  t.equal(await gateway.ledgerSum('usd-topup'), 1_000_000_001n);
  await t.rejects(gateway.cli('topup', '--user', 'usd-topup', '--amount', '0.0000000001', '--method', 'card'), 'an amount that rounds to nothing is refused');
  await t.rejects(gateway.cli('topup', '--user', 'usd-topup', '--amount', '-1', '--method', 'card'), 'a negative amount is refused');
  t.equal(await gateway.ledgerSum('usd-topup'), 1_000_000_001n, 'the refused ones credited nothing');
});

// Each call costs exactly 0.05 USD (gpt-image-1.5, medium, 1536x1024: a list price per image, reserved as charged).
const IMAGE = { model: 'openai/gpt-image-1.5', prompt: 'a coin', n: 1, size: '1536x1024', quality: 'medium' };
const IMAGE_NANO = 50_000_000n;

/** Calls until one is refused; returns the admitted count, the refusal and the key's spend in the ledger. */
async function spendThrough(user: string, creditLimitJson: string): Promise<{ admitted: number; refused: { status: number; body: any }; spentNano: bigint; capNano: bigint | null }> {
  const token = mintToken(user);
  await gateway.topup(user, '5');
  const created = await send('POST', '/api/v1/api-keys', token, `{"name":"capped","credit_limit":${creditLimitJson}}`);
  if (created.status !== 201) throw new Error(`key: ${created.status} ${JSON.stringify(created.body)}`);
  let admitted = 0;
  for (;;) {
    const response = await postJson(`${gateway.v1}/images/generations`, created.body.key, IMAGE);
    if (response.status !== 200) {
      await gateway.ledgerSettled(user);
      const [row] = await gateway.sql<{ spent: bigint }[]>`
        select coalesce(-sum(credits_nano), 0)::bigint as spent from transactions where api_key_id = ${created.body.id} and payment_method = 'usage'`;
      return { admitted, refused: response, spentNano: row!.spent, capNano: await capNano(created.body.id) };
    }
    if (++admitted > 10) throw new Error('the cap never refused a call');
  }
}

t.test('a cap of 0.1 + 0.2 is never passed: calls costing 0.05 each stop at 0.3', async (t) => {
  const { admitted, refused, spentNano } = await spendThrough('usd-spend-sum', '0.30000000000000004');
  t.equal(admitted, 6, 'six calls of 0.05 fit in 0.3');
  assertEnvelope(t, refused, 402, 'credit_limit_exceeded', 'the seventh would pass the cap');
  t.equal(spentNano, 6n * IMAGE_NANO, 'the key spent 0.3 USD');
  t.ok(spentNano <= 300_000_000n, 'at most the cap');
});

t.test('a cap a hair below 0.3 rounds down: the key never spends more than the number sent', async (t) => {
  // 0.29999999999999993 is the double just below 0.3: rounded to the nearest nano-USD it would be 0.3,
  // and six calls (0.3 USD) would spend more than the number sent.
  const { admitted, refused, spentNano, capNano: cap } = await spendThrough('usd-spend-below', '0.29999999999999993');
  t.equal(cap, 299_999_999n, 'the cap rounded down');
  t.equal(admitted, 5, 'five calls fit');
  assertEnvelope(t, refused, 402, 'credit_limit_exceeded', 'the sixth would pass it');
  t.equal(spentNano, 5n * IMAGE_NANO);
  t.ok(Number(spentNano) / 1e9 <= 0.29999999999999993, 'never more than the number sent');
});
