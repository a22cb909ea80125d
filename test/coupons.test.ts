// Coupons: a prepaid code credits exactly once however many redeem it at the same time; the
// credit is a 'coupon' transaction, shows in the balance, and the endpoint takes a JWT or a management key.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { envelopeProblems, jwtFor, moneyView, usdToNano } from './helpers/billing-checks.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

async function createCoupon(usd = '2.5'): Promise<string> {
  const code = await gateway.cli('coupon', 'create', '--credits', usd);
  if (!/^\S{4,128}$/.test(code)) throw new Error(`coupon create printed ${JSON.stringify(code)}`);
  return code;
}

async function redeem(credential: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}/api/v1/billing/coupons/redeem`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: response.status, body: parsed };
}

async function couponRows(code: string) {
  return gateway.sql<{ user_id: string; credits_nano: bigint; payment_method: string }[]>`
    select user_id, credits_nano, payment_method from transactions where reference = ${code}`;
}

t.test('20 concurrent redemptions by the same user credit exactly once', async (t) => {
  const user = 'coupon-same';
  const { token } = await gateway.user(user, '1');
  const code = await createCoupon('2.5');
  const results = await Promise.all(Array.from({ length: 20 }, () => redeem(token, { code })));
  const won = results.filter((r) => r.status === 200);
  const lost = results.filter((r) => r.status === 409);
  t.equal(won.length, 1, 'one redemption succeeds');
  t.equal(lost.length, 19, 'the other 19 get 409');
  t.same(won[0]?.body, { credited: 2.5, currency: 'USD', balance: 3.5 }, 'credited 2.5 USD; balance is the raw balance after it');
  for (const r of lost) t.same(envelopeProblems(r.body, 409), [], '409 envelope');

  const rows = await couponRows(code);
  t.equal(rows.length, 1, 'one transaction for the code');
  t.equal(rows[0]?.payment_method, 'coupon');
  t.equal(rows[0]?.credits_nano, 2_500_000_000n);
  t.equal(rows[0]?.user_id, user);

  const money = await moneyView(gateway, user);
  t.equal(money.credits, 3_500_000_000n, 'Redis credits include the coupon once');
  t.equal(money.held, 0n);
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');
  const balance = await gateway.balance(token);
  t.same(balance, { credits: 3.5, held: 0, available: 3.5, currency: 'USD' }, 'GET balance reflects it');

  const response = await fetch(`${gateway.url}/api/v1/billing/transactions`, { headers: { authorization: `Bearer ${token}` } });
  const listed = (await response.json()) as { data: { credits: number; amount: number; payment_method: string; status: string }[]; total: number };
  t.equal(listed.total, 2, 'the top-up and the coupon');
  t.match(listed.data[0], { credits: 2.5, amount: 2.5, payment_method: 'coupon', status: 'completed' }, 'newest first: the coupon');

  const again = await redeem(token, { code });
  t.equal(again.status, 409, 'a later redemption is still refused');
});

t.test('20 different users redeeming one code at once: exactly one is credited', async (t) => {
  const code = await createCoupon('2.5');
  const users = Array.from({ length: 20 }, (_, i) => `coupon-many-${i}`);
  const tokens = users.map((u) => jwtFor(gateway, u));
  const results = await Promise.all(tokens.map((token) => redeem(token, { code })));
  const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []));
  t.equal(winners.length, 1, 'one user wins');
  t.equal(results.filter((r) => r.status === 409).length, 19, 'the other 19 get 409');
  const winner = winners[0] ?? 0;
  t.same(results[winner]?.body, { credited: 2.5, currency: 'USD', balance: 2.5 });

  const rows = await couponRows(code);
  t.equal(rows.length, 1, 'one transaction for the code, over all users');
  t.equal(rows[0]?.user_id, users[winner], "it is the winner's");
  t.equal(rows[0]?.payment_method, 'coupon');

  for (const [i, user] of users.entries()) {
    const expected = i === winner ? 2_500_000_000n : 0n;
    const balance = await gateway.balance(tokens[i]!);
    t.equal(usdToNano(balance.credits), expected, `${user}: API balance`);
    t.equal((await gateway.balanceNano(user)).credits, expected, `${user}: Redis credits`);
    t.equal(await gateway.ledgerSum(user), expected, `${user}: Postgres ledger`);
  }
});

t.test('10 different coupons redeemed at once by one user all credit, each once', async (t) => {
  const user = 'coupon-several';
  const { token } = await gateway.user(user, '0');
  const amounts = ['0.1', '0.2', '0.3', '0.4', '0.5', '0.6', '0.7', '0.8', '0.9', '1'];
  const codes = await Promise.all(amounts.map((usd) => createCoupon(usd)));
  const results = await Promise.all(codes.map((code) => redeem(token, { code })));
  t.same(results.map((r) => r.status), Array(10).fill(200), 'every code redeems');
  t.same(results.map((r) => r.body?.credited), amounts.map(Number), 'each credits its own amount');
  t.ok(results.every((r) => r.body.balance > 0 && r.body.balance <= 5.5), 'each reports a balance within the total');
  t.ok(results.some((r) => r.body.balance === 5.5), 'the last to land reports the full total');
  const money = await moneyView(gateway, user);
  t.equal(money.credits, 5_500_000_000n, 'Redis credits are the exact sum');
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum equals Redis credits');
  const [row] = await gateway.sql<{ n: bigint }[]>`select count(*)::bigint as n from transactions where user_id = ${user} and payment_method = 'coupon'`;
  t.equal(row?.n, 10n, "ten 'coupon' transactions");
});

t.test('the reported balance is the raw balance (credits), not what is available', async (t) => {
  const user = 'coupon-held';
  const { token, key } = await gateway.user(user, '1');
  const code = await createCoupon('2.5');
  const inFlight = fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', max_tokens: 100, messages: [{ role: 'user', content: 'slow [[mock chunks=3 latency_ms=3000]]' }] }),
  }).then((r) => r.text());
  const until = Date.now() + 5_000;
  while ((await gateway.balanceNano(user)).held === 0n && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  t.ok((await gateway.balanceNano(user)).held > 0n, 'a reservation is open');
  const result = await redeem(token, { code });
  t.ok((await gateway.balanceNano(user)).held > 0n, 'the reservation was still open when the coupon was credited');
  t.equal(result.status, 200);
  t.same(result.body, { credited: 2.5, currency: 'USD', balance: 3.5 }, 'balance = credits, the reservation not subtracted');
  await inFlight;
});

t.test('unknown and inactive codes', async (t) => {
  const { token } = await gateway.user('coupon-unknown', '0');
  const unknown = await redeem(token, { code: 'GW-NO-SUCH-CODE-EVER' });
  t.equal(unknown.status, 404);
  t.same(envelopeProblems(unknown.body, 404), [], '404 envelope');

  const code = await createCoupon('1');
  await gateway.sql`update coupons set active = false where code = ${code}`;
  const inactive = await redeem(token, { code });
  t.equal(inactive.status, 409, 'a code no longer active is 409');
  t.same(envelopeProblems(inactive.body, 409), []);
  t.equal((await gateway.balance(token)).credits, 0, 'nothing credited');
  t.equal(await gateway.ledgerSum('coupon-unknown'), 0n);
});

t.test('redeem works with the dashboard JWT and with a management key; a regular key is 401', async (t) => {
  const user = 'coupon-cred';
  const { token, key } = await gateway.user(user, '0');
  const viaJwt = await redeem(token, { code: await createCoupon('1.25') });
  t.equal(viaJwt.status, 200, 'JWT');
  t.same(viaJwt.body, { credited: 1.25, currency: 'USD', balance: 1.25 });
  const management = await gateway.createKey(token, { name: 'automation', is_provisioning: true });
  const viaKey = await redeem(management, { code: await createCoupon('0.5') });
  t.equal(viaKey.status, 200, 'management key');
  t.same(viaKey.body, { credited: 0.5, currency: 'USD', balance: 1.75 });
  const unspent = await createCoupon('2');
  const viaRegular = await redeem(key, { code: unspent });
  t.equal(viaRegular.status, 401, 'a regular key redeems nothing (docs/api.md "Credentials and roles")');
  t.equal(viaRegular.body.error.code, 'credential_not_allowed');
  const money = await moneyView(gateway, user);
  t.equal(money.credits, 1_750_000_000n);
  t.equal(money.ledgerSum, money.credits);

  const anonymous = await fetch(`${gateway.url}/api/v1/billing/coupons/redeem`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: await createCoupon('1') }),
  });
  t.equal(anonymous.status, 401, 'no credential: 401');
  const badKey = await redeem('sk-gw-AAAAAAAAAAAA-' + 'B'.repeat(48), { code: 'whatever' });
  t.equal(badKey.status, 401, 'an unknown API key: 401');
});

t.test('malformed bodies are 400 and credit nothing', async (t) => {
  const user = 'coupon-bad';
  const { token } = await gateway.user(user, '0');
  const code = await createCoupon('1');
  const cases: [string, unknown][] = [
    ['not JSON', '{"code": '],
    ['empty body', ''],
    ['an array', JSON.stringify([code])],
    ['missing code', {}],
    ['code not a string', { code: 5 }],
    ['empty code', { code: '' }],
  ];
  for (const [name, body] of cases) {
    const r = await redeem(token, body);
    t.equal(r.status, 400, `${name}: 400`);
    t.same(envelopeProblems(r.body, 400), [], `${name}: 400 envelope`);
  }
  t.equal((await gateway.balance(token)).credits, 0, 'nothing credited');
  const still = await redeem(token, { code });
  t.equal(still.status, 200, 'the code is still redeemable after the bad attempts');
});
