// Card top-ups through Stripe Checkout (issue 28 item 3, docs/payments.md): a dashboard session starts a
// checkout through the official SDK against the mock vendor's Stripe; the webhook, signed with the
// SDK's own test-header helper, credits a paid session exactly once, however often it is delivered
// and after a restart; unsigned, wrongly signed and stale events are refused; API keys are refused.
import t from 'tap';
import Stripe from 'stripe';
import { startGateway, type Gateway } from './helpers/harness.js';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { jwtFor, moneyView } from './helpers/billing-checks.js';
import { assertEnvelope, parsePrometheus, sumSamples } from './helpers/http-tools.js';
import { ConfigError, loadConfig } from '../src/config.js';

const WEBHOOK_SECRET = 'whsec_test_gateway_0123456789abcdefghijklmnop';
let mock: MockVendor;
let gateway: Gateway;
let restarted: Gateway | undefined;

const envOf = (mockUrl: string) => ({
  STRIPE_SECRET_KEY: 'sk_test_gateway0123456789',
  STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
  STRIPE_API_BASE: mockUrl,
  STRIPE_SUCCESS_URL: 'https://console.example.com/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}',
  STRIPE_CANCEL_URL: 'https://console.example.com/billing?checkout=cancelled',
  TOPUP_MIN_USD: '5',
  TOPUP_MAX_USD: '10000',
});

t.before(async () => {
  mock = await startMockVendor({ port: 0 });
  gateway = await startGateway({ mock, env: envOf(mock.url) });
});
t.teardown(async () => {
  await restarted?.close();
  await gateway.close();
  await mock.close();
});

async function call(target: Gateway, path: string, init: { credential?: string; body?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any }> {
  const response = await fetch(`${target.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(init.credential ? { authorization: `Bearer ${init.credential}` } : {}), ...init.headers },
    body: init.body ?? '',
  });
  const text = await response.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: response.status, body: parsed };
}

const checkout = (credential: string, body: unknown, target = gateway) =>
  call(target, '/api/v1/billing/checkout', { credential, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** Delivers an event as Stripe does: the raw JSON and its `Stripe-Signature`, made by the SDK's own helper. */
function deliver(payload: string, options: { secret?: string; timestamp?: number; signature?: string | null } = {}, target = gateway) {
  const signature = options.signature !== undefined ? options.signature
    : Stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? WEBHOOK_SECRET, ...(options.timestamp !== undefined ? { timestamp: options.timestamp } : {}) });
  return call(target, '/hooks/stripe', { body: payload, headers: signature === null ? {} : { 'stripe-signature': signature } });
}

async function stripeRows(user: string) {
  return gateway.sql<{ id: string; credits_nano: bigint; payment_method: string; reference: string }[]>`
    select id, credits_nano, payment_method, reference from transactions where user_id = ${user} and payment_method = 'stripe'`;
}

t.test('a dashboard session starts a checkout; an API key and a management key cannot', async (t) => {
  const user = 'stripe-start';
  const token = jwtFor(gateway, user);
  const started = await checkout(token, { amount_usd: 25.5 });
  t.equal(started.status, 201, JSON.stringify(started.body));
  t.match(started.body, { id: /^cs_test_/, url: `${mock.url}/checkout/pay/${started.body.id}`, amount_usd: 25.5, currency: 'USD' });
  const session = mock.stripe.session(started.body.id)!;
  t.ok(session, 'the session exists at (the mock of) Stripe');
  t.equal(session.amount_total, 2550, 'one line of 2550 cents');
  t.equal(session.currency, 'usd');
  t.equal(session.mode, 'payment');
  t.equal(session.client_reference_id, user, 'client_reference_id names the account');
  t.same(session.metadata, { gateway_account: user }, 'so does the metadata');
  t.equal(session.success_url, envOf(mock.url).STRIPE_SUCCESS_URL, 'return URLs are the operator\'s');
  t.same(await stripeRows(user), [], 'nothing is credited before Stripe confirms the payment');

  const key = await gateway.createKey(token, { name: 'inference' });
  const management = await gateway.createKey(token, { name: 'automation', is_provisioning: true });
  assertEnvelope(t, await checkout(key, { amount_usd: 25 }), 401, 'credential_not_allowed', 'a regular API key');
  assertEnvelope(t, await checkout(management, { amount_usd: 25 }), 401, 'credential_not_allowed', 'a management key');
  assertEnvelope(t, await checkout('', { amount_usd: 25 }), 401, undefined, 'no credential');
});

t.test('the amount must be a number of whole cents within the bounds', async (t) => {
  const token = jwtFor(gateway, 'stripe-bounds');
  for (const [body, label] of [
    [{ amount_usd: 4.99 }, 'below TOPUP_MIN_USD'],
    [{ amount_usd: 10000.01 }, 'above TOPUP_MAX_USD'],
    [{ amount_usd: 0 }, 'zero'],
    [{ amount_usd: -10 }, 'negative'],
    [{ amount_usd: 10.005 }, 'a fraction of a cent'],
    [{ amount_usd: '10' }, 'a string'],
    [{}, 'missing'],
  ] as const) {
    const answer = await checkout(token, body);
    assertEnvelope(t, answer, 400, 'invalid_request', label);
    t.equal(answer.body.error?.param, 'amount_usd', `${label}: names the field`);
  }
  const extra = await checkout(token, { amount_usd: 10, success_url: 'https://evil.example/' });
  assertEnvelope(t, extra, 400, undefined, 'a caller-given success_url');
  t.equal(extra.body.error?.param, 'success_url', 'refused by name: the return URLs are not the caller\'s');
  const edges = await Promise.all([checkout(token, { amount_usd: 5 }), checkout(token, { amount_usd: 10000 }), checkout(token, { amount_usd: 0.1 + 0.2 + 9.7 })]);
  t.same(edges.map((answer) => answer.status), [201, 201, 201], 'the bounds themselves, and a float\'s noise, are taken');
  t.same(edges.map((answer) => mock.stripe.session(answer.body.id)?.amount_total), [500, 1_000_000, 1000]);
});

t.test('a paid session is credited exactly once: three deliveries, a replay after a restart', async (t) => {
  const user = 'stripe-paid';
  const token = jwtFor(gateway, user);
  const started = await checkout(token, { amount_usd: 42.37 });
  t.equal(started.status, 201);
  const payload = mock.stripe.event('checkout.session.completed', mock.stripe.complete(started.body.id, 'paid'));

  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await deliver(payload));
  t.same(answers.map((answer) => answer.status), [200, 200, 200], 'each delivery is acknowledged');
  t.same(answers.map((answer) => answer.body.credited), [true, false, false], 'only the first credits');
  const concurrent = await Promise.all(Array.from({ length: 5 }, () => deliver(payload)));
  t.ok(concurrent.every((answer) => answer.status === 200 && answer.body.credited === false), 'five more at once credit nothing');

  const rows = await stripeRows(user);
  t.equal(rows.length, 1, 'one transaction');
  t.equal(rows[0]?.credits_nano, 42_370_000_000n, 'amount_total (4237 cents) in nano-USD');
  t.equal(rows[0]?.reference, started.body.id, 'the reference is the session id');
  let money = await moneyView(gateway, user);
  t.equal(money.credits, 42_370_000_000n, 'Redis credits include it once');
  t.equal(money.ledgerSum, money.credits, 'the ledger and Redis agree');
  t.same(await gateway.balance(token), { credits: 42.37, held: 0, available: 42.37, currency: 'USD' });

  // The same event again, and the async-payment event for the same session, after a restart.
  await gateway.stop();
  restarted = await startGateway({ mock, shared: { database: gateway.database, prefix: gateway.prefix }, env: envOf(mock.url) });
  const replay = await deliver(payload, {}, restarted);
  t.equal(replay.status, 200);
  t.equal(replay.body.credited, false, 'a replay after the restart credits nothing');
  const late = await deliver(mock.stripe.event('checkout.session.async_payment_succeeded', mock.stripe.session(started.body.id)!), {}, restarted);
  t.equal(late.body.credited, false, 'nor does the session\'s other paid event');
  t.equal((await stripeRows(user)).length, 1, 'still one transaction');
  money = await moneyView(gateway, user);
  t.equal(money.credits, 42_370_000_000n, 'Redis credits unchanged');
  t.equal(money.ledgerSum, money.credits);
  t.match(await restarted.cli('ledger', 'check'), /^ledger check: ok/);
});

t.test('an unpaid completed session is not credited; its async payment later is, once', async (t) => {
  const user = 'stripe-async';
  const token = jwtFor((restarted ?? gateway), user);
  const target = restarted ?? gateway;
  const started = await checkout(token, { amount_usd: 10 }, target);
  t.equal(started.status, 201);
  const unpaid = await deliver(mock.stripe.event('checkout.session.completed', mock.stripe.complete(started.body.id, 'unpaid')), {}, target);
  t.equal(unpaid.status, 200, 'acknowledged');
  t.equal(unpaid.body.credited, false, 'not credited');
  t.same(await stripeRows(user), [], 'no transaction');
  const paid = mock.stripe.event('checkout.session.async_payment_succeeded', mock.stripe.complete(started.body.id, 'paid'));
  t.equal((await deliver(paid, {}, target)).body.credited, true, 'the bank debit settled: credited');
  t.equal((await deliver(paid, {}, target)).body.credited, false, 'once');
  const money = await moneyView(gateway, user);
  t.equal(money.credits, 10_000_000_000n);
  t.equal(money.ledgerSum, money.credits);
});

t.test('unsigned, wrongly signed, stale and oversized events are refused and credit nothing', async (t) => {
  const user = 'stripe-forged';
  const target = restarted ?? gateway;
  const started = await checkout(jwtFor(target, user), { amount_usd: 100 }, target);
  const payload = mock.stripe.event('checkout.session.completed', mock.stripe.complete(started.body.id, 'paid'));
  assertEnvelope(t, await deliver(payload, { signature: null }, target), 400, 'invalid_request', 'no signature');
  assertEnvelope(t, await deliver(payload, { signature: 't=1,v1=deadbeef' }, target), 400, 'invalid_signature', 'a made-up signature');
  assertEnvelope(t, await deliver(payload, { secret: 'whsec_someone_elses_secret_0123456789' }, target), 400, 'invalid_signature', 'another secret');
  assertEnvelope(t, await deliver(payload, { timestamp: Math.floor(Date.now() / 1000) - 301 }, target), 400, 'invalid_signature', 'older than the tolerance');
  const signed = Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
  const tampered = payload.replace('"amount_total": 10000', '"amount_total": 99999999');
  t.not(tampered, payload, 'the test tampers with the amount');
  assertEnvelope(t, await call(target, '/hooks/stripe', { body: tampered, headers: { 'stripe-signature': signed } }), 400, 'invalid_signature', 'a body changed after signing');
  const big = JSON.stringify({ ...JSON.parse(payload), padding: 'x'.repeat(256 * 1024) });
  assertEnvelope(t, await deliver(big, {}, target), 413, 'payload_too_large', 'over the webhook body limit');
  t.same(await stripeRows(user), [], 'nothing credited');
  t.equal((await moneyView(gateway, user)).credits, 0n);
});

t.test('other events are acknowledged and ignored; refunds and disputes are not debited', async (t) => {
  const target = restarted ?? gateway;
  const ignored = await deliver(mock.stripe.event('customer.created', { id: 'cus_123', object: 'customer' }), {}, target);
  t.equal(ignored.status, 200);
  t.equal(ignored.body.credited, false);
  const foreign = await deliver(mock.stripe.event('checkout.session.completed', {
    id: 'cs_test_foreign', object: 'checkout.session', mode: 'payment', payment_status: 'paid', currency: 'usd', amount_total: 5000, client_reference_id: null, metadata: {},
  }), {}, target);
  t.equal(foreign.body.credited, false, 'a session this gateway did not create credits nobody');

  const user = 'stripe-refund';
  const started = await checkout(jwtFor(target, user), { amount_usd: 20 }, target);
  const session = mock.stripe.complete(started.body.id, 'paid');
  t.equal((await deliver(mock.stripe.event('checkout.session.completed', session), {}, target)).body.credited, true);
  const refund = await deliver(mock.stripe.event('charge.refunded', {
    id: 'ch_refunded', object: 'charge', amount: 2000, amount_refunded: 2000, currency: 'usd', payment_intent: session.payment_intent, metadata: { gateway_account: user }, refunded: true,
  }), {}, target);
  t.equal(refund.status, 200, 'a refund is acknowledged');
  const dispute = await deliver(mock.stripe.event('charge.dispute.created', {
    id: 'dp_1', object: 'dispute', amount: 2000, currency: 'usd', charge: 'ch_refunded', payment_intent: session.payment_intent, metadata: {}, reason: 'fraudulent', status: 'needs_response',
  }), {}, target);
  t.equal(dispute.status, 200, 'so is a dispute');
  const money = await moneyView(gateway, user);
  t.equal(money.credits, 20_000_000_000n, 'the balance is left for the operator to settle (docs/payments.md)');
  t.equal(money.ledgerSum, money.credits);
});

t.test('an Idempotency-Key makes retries one session; another amount under it is refused', async (t) => {
  const target = restarted ?? gateway;
  const token = jwtFor(target, 'stripe-idempotent');
  const send = (amount: number, key: string) => call(target, '/api/v1/billing/checkout', { credential: token, body: JSON.stringify({ amount_usd: amount }), headers: { 'idempotency-key': key } });
  const first = await send(30, 'topup-1');
  const again = await send(30, 'topup-1');
  t.equal(first.status, 201);
  t.equal(again.status, 201);
  t.equal(again.body.id, first.body.id, 'the same session');
  assertEnvelope(t, await send(31, 'topup-1'), 409, 'idempotency_key_reused', 'another amount under the key');
  const other = await send(30, 'topup-2');
  t.not(other.body.id, first.body.id, 'another key, another session');
  const otherUser = await call(target, '/api/v1/billing/checkout', { credential: jwtFor(target, 'stripe-idempotent-2'), body: JSON.stringify({ amount_usd: 30 }), headers: { 'idempotency-key': 'topup-1' } });
  t.not(otherUser.body.id, first.body.id, 'keys are per account');
});

t.test('without Stripe settings: 503 payments_unavailable; a key Stripe refuses: 502, nothing created', async (t) => {
  const off = await startGateway({ mock, env: { TOPUP_MIN_USD: '5' } });
  t.teardown(() => off.close());
  assertEnvelope(t, await checkout(jwtFor(off, 'stripe-off'), { amount_usd: 10 }, off), 503, 'payments_unavailable', 'checkout');
  assertEnvelope(t, await deliver('{}', {}, off), 503, 'payments_unavailable', 'webhook');
  const refused = await startGateway({ mock, env: { ...envOf(mock.url), STRIPE_SECRET_KEY: 'sk_test_revoked_key' } });
  t.teardown(() => refused.close());
  assertEnvelope(t, await checkout(jwtFor(refused, 'stripe-refused'), { amount_usd: 10 }, refused), 502, 'payment_processor_error', 'Stripe answers 401');
});

t.test('the settings are all or nothing, and the bounds are ordered', async (t) => {
  const base = { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x', STRIPE_SUCCESS_URL: 'https://a.example/ok', STRIPE_CANCEL_URL: 'https://a.example/no' };
  t.equal(loadConfig({ MOCK_VENDOR: 'off' }).payments.stripe, undefined, 'off by default (outside development, where the mock plays Stripe: stripe-dev-checkout.test.ts)');
  t.same([loadConfig({}).payments.minUsd, loadConfig({}).payments.maxUsd], [5, 10000], 'default bounds');
  t.throws(() => loadConfig({ ...base, STRIPE_WEBHOOK_SECRET: '' }), new ConfigError('invalid STRIPE_WEBHOOK_SECRET: required when STRIPE_SECRET_KEY is set (payments could not be credited without it)'));
  t.throws(() => loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_x' }), /invalid STRIPE_SECRET_KEY/);
  t.throws(() => loadConfig({ ...base, STRIPE_SUCCESS_URL: '' }), /invalid STRIPE_SUCCESS_URL/, 'no return URL and no PUBLIC_URL');
  t.throws(() => loadConfig({ ...base, STRIPE_SECRET_KEY: 'pk_test_x' }), /invalid STRIPE_SECRET_KEY/, 'a publishable key');
  t.throws(() => loadConfig({ ...base, STRIPE_API_BASE: 'http://127.0.0.1:9/v1' }), /invalid STRIPE_API_BASE/, 'a path');
  t.throws(() => loadConfig({ TOPUP_MIN_USD: '100', TOPUP_MAX_USD: '50' }), /invalid TOPUP_MIN_USD/);
  const fromPublic = loadConfig({ ...base, STRIPE_SUCCESS_URL: '', STRIPE_CANCEL_URL: '', PUBLIC_URL: 'https://gw.example.com/' }).payments.stripe!;
  t.equal(fromPublic.successUrl, 'https://gw.example.com/console/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}');
  t.equal(fromPublic.cancelUrl, 'https://gw.example.com/console/billing?checkout=cancelled');
  t.same(loadConfig({ ...base, STRIPE_API_BASE: 'http://127.0.0.1:8090' }).payments.stripe!.apiBase, { protocol: 'http', host: '127.0.0.1', port: 8090 });
});

t.test('/metrics counts each credited top-up once, its USD, and the refunds and disputes seen', async (t) => {
  // The restarted gateway credited two top-ups above (10 and 20 USD, each event delivered twice or more),
  // and saw one refund and one dispute.
  const target = restarted ?? gateway;
  const samples = parsePrometheus(await (await fetch(`${target.url}/metrics`)).text());
  t.equal(sumSamples(samples, 'gateway_topups_total', { processor: 'stripe' }), 2, 'two top-ups credited, whatever the redeliveries');
  t.equal(sumSamples(samples, 'gateway_topup_usd_total', { processor: 'stripe' }), 30, 'their USD');
  t.equal(sumSamples(samples, 'gateway_payment_reversals_total', { processor: 'stripe', kind: 'refund' }), 1, 'one refund');
  t.equal(sumSamples(samples, 'gateway_payment_reversals_total', { processor: 'stripe', kind: 'dispute' }), 1, 'one dispute');
});
