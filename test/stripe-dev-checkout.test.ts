// Card top-ups out of the box in development (docs/payments.md "Development: the mock plays Stripe"):
// a gateway started as `npm start` starts it, without STRIPE_SECRET_KEY, has the built-in mock vendor
// play Stripe. A browser opens the checkout URL the gateway answers, presses Pay on the mock's page, is
// sent to the success URL, and the balance is credited exactly once (the mock delivered the signed
// event to the gateway's webhook); Cancel credits nothing. Production never plays Stripe with the mock.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { freePort, startGateway, type Gateway } from './helpers/harness.js';
import { jwtFor, moneyView } from './helpers/billing-checks.js';
import { loadConfig } from '../src/config.js';

let gateway: Gateway;
let mockPort: number;

t.before(async () => {
  mockPort = await freePort();
  // The harness gives every vendor a key, so the mock starts for Stripe alone.
  gateway = await startGateway({ env: { MOCK_VENDOR: 'auto', MOCK_VENDOR_PORT: String(mockPort), LOG_LEVEL: 'info' } });
});
t.teardown(() => gateway.close());

const startCheckout = async (token: string, amountUsd: number) => {
  const response = await fetch(`${gateway.url}/api/v1/billing/checkout`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount_usd: amountUsd }),
  });
  return { status: response.status, body: await response.json() as { id: string; url: string; amount_usd: number } };
};

/** The page's form as a browser reads it: where it posts, and its submit buttons (name, value, text). */
function formOf(html: string) {
  const form = /<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
  const buttons = [...(form?.[2] ?? '').matchAll(/<button type="submit"[^>]* name="([^"]+)" value="([^"]+)">([^<]+)<\/button>/g)]
    .map(([, name, value, text]) => ({ name: name!, value: value!, text: text! }));
  return { action: form?.[1], buttons };
}

/** Presses a button as a browser submits a form: urlencoded, and the redirect left to the caller. */
async function press(pageUrl: string, html: string, label: RegExp) {
  const { action, buttons } = formOf(html);
  const button = buttons.find((candidate) => label.test(candidate.text));
  if (action === undefined || button === undefined) throw new Error(`no ${label} button on the page:\n${html}`);
  return fetch(new URL(action, pageUrl), {
    method: 'POST', redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ [button.name]: button.value }).toString(),
  });
}

const stripeRows = (user: string) => gateway.sql<{ credits_nano: bigint; reference: string }[]>`
  select credits_nano, reference from transactions where user_id = ${user} and payment_method = 'stripe'`;

t.test('Pay on the mock\'s checkout page credits the balance exactly once and returns to the success URL', async (t) => {
  const user = 'dev-checkout-pay';
  const token = jwtFor(gateway, user);
  const started = await startCheckout(token, 12.5);
  t.equal(started.status, 201, JSON.stringify(started.body));
  t.equal(started.body.url, `http://127.0.0.1:${mockPort}/checkout/pay/${started.body.id}`, 'the session\'s url is the mock\'s own page');

  const page = await fetch(started.body.url);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.headers.get('content-security-policy'), /default-src 'none'/, 'no script may run on the page');
  const html = await page.text();
  t.notMatch(html, /<script/i, 'the page has no script');
  const { buttons } = formOf(html);
  t.same(buttons.map((button) => button.text), ['Pay $12.50', 'Cancel'], 'a Pay button with the amount, and Cancel');
  t.same(await stripeRows(user), [], 'opening the page credits nothing');

  const paid = await press(started.body.url, html, /^Pay/);
  t.equal(paid.status, 303, 'See Other, as a form post is redirected');
  t.equal(paid.headers.get('location'), `http://127.0.0.1:${new URL(gateway.url).port}/console/billing?checkout=success&session_id=${started.body.id}`,
    'to the success URL, the session id filled in');
  const rows = await stripeRows(user);
  t.equal(rows.length, 1, 'credited by the time the browser is redirected');
  t.equal(rows[0]?.credits_nano, 12_500_000_000n);
  t.equal(rows[0]?.reference, started.body.id);
  t.same(await gateway.balance(token), { credits: 12.5, held: 0, available: 12.5, currency: 'USD' });

  const again = await press(started.body.url, html, /^Pay/);
  t.equal(again.status, 303, 'paying again (the event delivered again) is harmless');
  t.equal((await stripeRows(user)).length, 1, 'still one transaction');
  const money = await moneyView(gateway, user);
  t.equal(money.credits, 12_500_000_000n, 'credited once');
  t.equal(money.ledgerSum, money.credits, 'the ledger and Redis agree');
  t.match(await (await fetch(started.body.url)).text(), /already paid/, 'the page says the session is paid');
});

t.test('Cancel returns to the cancel URL and credits nothing', async (t) => {
  const user = 'dev-checkout-cancel';
  const token = jwtFor(gateway, user);
  const started = await startCheckout(token, 20);
  t.equal(started.status, 201);
  const html = await (await fetch(started.body.url)).text();
  const cancelled = await press(started.body.url, html, /^Cancel$/);
  t.equal(cancelled.status, 303);
  t.equal(cancelled.headers.get('location'), `http://127.0.0.1:${new URL(gateway.url).port}/console/billing?checkout=cancelled`);
  t.same(await stripeRows(user), [], 'no transaction');
  t.same(await gateway.balance(token), { credits: 0, held: 0, available: 0, currency: 'USD' });
});

t.test('the page refuses what a browser would not send', async (t) => {
  t.equal((await fetch(`http://127.0.0.1:${mockPort}/checkout/pay/cs_test_unknown`)).status, 404, 'an unknown session');
  const started = await startCheckout(jwtFor(gateway, 'dev-checkout-odd'), 5);
  const post = (body: string) => fetch(started.body.url, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  t.equal((await post('action=refund')).status, 400, 'an unknown action');
  t.equal((await post(`action=pay&padding=${'x'.repeat(2048)}`)).status, 413, 'a form larger than its one button');
  t.equal((await fetch(started.body.url, { method: 'PUT' })).status, 405);
  t.same(await stripeRows('dev-checkout-odd'), [], 'none of them paid');
});

t.test('development plays Stripe with the mock; production and MOCK_VENDOR=off never do', async (t) => {
  const development = loadConfig({ PORT: '8080' }).payments.stripe;
  t.ok(development?.mock, 'development without STRIPE_SECRET_KEY: the mock plays Stripe');
  t.equal(development?.mock?.webhookUrl, 'http://127.0.0.1:8080/hooks/stripe', 'and delivers to this gateway\'s webhook');
  t.same(development?.apiBase, { protocol: 'http', host: '127.0.0.1', port: 8090 }, 'at MOCK_VENDOR_PORT');
  t.match(development?.secretKey, /^sk_test_/, 'a test key');
  t.match(development?.webhookSecret, /^whsec_test_[0-9a-f]{64}$/);
  t.not(loadConfig({ KEY_SECRET: 'another-key-secret-for-this-test-0123456789' }).payments.stripe?.webhookSecret, development?.webhookSecret,
    'the webhook secret follows KEY_SECRET, not a published constant');
  t.equal(loadConfig({ MOCK_VENDOR: 'off' }).payments.stripe, undefined, 'MOCK_VENDOR=off: no mock, card top-ups off');
  const generated = () => randomBytes(36).toString('base64');
  const production = { NODE_ENV: 'production', JWT_SECRET: generated(), KEY_SECRET: generated(), METRICS_PUBLIC: 'true' };
  t.equal(loadConfig(production).payments.stripe, undefined, 'production without STRIPE_SECRET_KEY: card top-ups off');
  t.equal(loadConfig({ ...production, MOCK_VENDOR: 'on' }).payments.stripe, undefined, 'even with MOCK_VENDOR=on');
  const real = loadConfig({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x', PUBLIC_URL: 'https://gw.example.com' }).payments.stripe;
  t.equal(real?.mock, undefined, 'a configured key is Stripe itself');
  t.equal(real?.apiBase, undefined);
});
