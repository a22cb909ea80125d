/**
 * Stripe's API for the calls the gateway's Checkout top-ups make through the official SDK, in Stripe's
 * wire format: form-encoded requests (`line_items[0][price_data][unit_amount]=500`), JSON answers,
 * Stripe's error shape (`{"error":{"type","code","message","param"}}`) and its `Idempotency-Key`
 * semantics (the same key and parameters replay the first answer; other parameters are an
 * `idempotency_error`). The SDK reaches it through its `protocol`/`host`/`port` options, so it serves
 * Stripe's own paths at the root (`/v1/checkout/sessions`).
 *
 * Each session's `url` is the mock's own hosted checkout page (`/checkout/pay/{id}`): a plain HTML form
 * whose Pay button marks the session paid, delivers `checkout.session.completed` to the webhook the mock
 * was given (signed with its secret by the SDK's own helper), and sends the browser to the session's
 * success_url; Cancel sends it to cancel_url. Without a webhook, Pay only marks the session paid.
 * Node code can play the payer and Stripe's event sender directly: `complete` marks a session paid (or
 * not) as Checkout would, and `event` wraps an object in an Event as Stripe delivers it to a webhook.
 */
import type http from 'node:http';
import Stripe from 'stripe';
import { randomId } from './ids.js';
import { isRevokedCredential, type MockError } from './errors.js';

export const STRIPE_SESSIONS_PATH = '/v1/checkout/sessions';
const SESSION_PATH = /^\/v1\/checkout\/sessions\/([A-Za-z0-9_]+)$/;
/** The hosted checkout page of a session (its `url`). */
export const CHECKOUT_PAGE_PREFIX = '/checkout/pay/';
const CHECKOUT_PAGE_PATH = /^\/checkout\/pay\/([A-Za-z0-9_]+)$/;
/** Largest form the checkout page takes: its one button's name and value. */
const MAX_FORM_BYTES = 1024;
/** Bound of one webhook delivery to the gateway (Stripe's own is 30 s; a local gateway answers in milliseconds). */
const WEBHOOK_TIMEOUT_MS = 10_000;
/** The page's policy: no script at all, only its own inline style, never framed. */
const PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'";
/** Sessions and idempotent answers kept (the oldest go first): a long-running demo mock stays small. */
const KEEP = 10_000;
const API_VERSION = '2026-10-28.endive'; // the stripe SDK's pinned version (node_modules/stripe/esm/apiVersion.js)

interface StripeError { status: number; type: string; code?: string; message: string; param?: string }

type Form = { [key: string]: string | Form };

/** Nests `a[b][0][c]=v` pairs into objects (list indexes stay object keys, read in order). */
export function parseStripeForm(text: string): Form {
  const root: Form = {};
  for (const [name, value] of new URLSearchParams(text)) {
    const path = name.split(/\[|\]\[|\]/).filter((part) => part !== '');
    let node = root;
    path.forEach((part, i) => {
      if (i === path.length - 1) node[part] = value;
      else node = (typeof node[part] === 'object' ? node[part] : (node[part] = {})) as Form;
    });
  }
  return root;
}

function keep<V>(map: Map<string, V>, key: string, value: V): void {
  map.set(key, value);
  if (map.size > KEEP) map.delete(map.keys().next().value!);
}

export type CheckoutSession = Record<string, unknown> & { id: string; amount_total: number; currency: string | undefined; metadata: Record<string, string>; payment_status: string; status: string; success_url: string; cancel_url: string | null };

/** Where the checkout page delivers its events: the gateway's webhook and that endpoint's signing secret. */
export interface StripeWebhookTarget {
  readonly url: string;
  readonly secret: string;
}

/** What one webhook delivery of the checkout page met: the gateway's status, or why none came. */
export interface WebhookDelivery {
  readonly type: string;
  readonly session: string;
  readonly status: number | undefined;
  readonly error: string | undefined;
}

export class StripeMock {
  private readonly sessions = new Map<string, CheckoutSession>();
  private readonly replies = new Map<string, { form: string; status: number; body: string }>();
  private readonly delivered: WebhookDelivery[] = [];
  /** The mock's own URL (set once it listens): sessions' checkout pages live under it. */
  url = '';

  constructor(private readonly webhook: StripeWebhookTarget | undefined) {}

  static handles(path: string): boolean {
    return path === STRIPE_SESSIONS_PATH || SESSION_PATH.test(path);
  }

  static handlesPage(path: string): boolean {
    return CHECKOUT_PAGE_PATH.test(path);
  }

  /** The checkout page's webhook deliveries, oldest first (the last KEEP). */
  deliveries(): WebhookDelivery[] {
    return [...this.delivered];
  }

  /**
   * The hosted checkout page: GET shows the amount with Pay and Cancel buttons; POST with `action=pay`
   * completes the session, delivers its event and redirects (303) to success_url; `action=cancel`
   * redirects to cancel_url and leaves the session open, as Stripe does.
   */
  page(req: http.IncomingMessage, res: http.ServerResponse, path: string,
    readBody: (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void): void {
    const html = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(body), 'content-security-policy': PAGE_POLICY, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      res.end(body);
    };
    const session = this.sessions.get(CHECKOUT_PAGE_PATH.exec(path)![1]!);
    if (!session) {
      req.resume();
      return html(404, pageHtml('Checkout not found', '<p>This checkout session does not exist (the mock keeps sessions in memory: a restarted mock has forgotten them).</p>'));
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      req.resume();
      return html(200, checkoutPageHtml(session));
    }
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { allow: 'GET, POST' }).end();
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > MAX_FORM_BYTES) {
      req.resume();
      return html(413, pageHtml('Form too large', '<p>The checkout form has one button; this request carried more.</p>'));
    }
    readBody(req, (err, text) => {
      if (err || Buffer.byteLength(text) > MAX_FORM_BYTES) return html(413, pageHtml('Form too large', '<p>The checkout form has one button; this request carried more.</p>'));
      const action = new URLSearchParams(text).get('action');
      const redirect = (location: string) => res.writeHead(303, { location, 'content-length': 0, 'cache-control': 'no-store' }).end();
      if (action === 'cancel') return redirect(session.cancel_url ?? session.success_url.replaceAll('{CHECKOUT_SESSION_ID}', session.id));
      if (action !== 'pay') return html(400, pageHtml('Unknown action', '<p>Choose Pay or Cancel.</p>'));
      // Paying again redelivers the event (as Stripe's "resend"): the gateway credits a session once.
      const paid = session.status === 'complete' && session.payment_status === 'paid' ? { ...session } : this.complete(session.id, 'paid');
      void this.deliver('checkout.session.completed', paid).then(() => redirect(session.success_url.replaceAll('{CHECKOUT_SESSION_ID}', session.id)));
    });
  }

  /** Sends one event to the webhook, signed as Stripe signs it; records the outcome, never throws. */
  private async deliver(type: string, object: CheckoutSession): Promise<void> {
    if (!this.webhook) return;
    const payload = this.event(type, object);
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: this.webhook.secret });
    let status: number | undefined;
    let error: string | undefined;
    try {
      const answer = await fetch(this.webhook.url, {
        method: 'POST', body: payload, signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
        headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
      });
      status = answer.status;
      await answer.body?.cancel();
    } catch (failure) {
      error = (failure as Error).message;
    }
    this.delivered.push({ type, session: object.id, status, error });
    if (this.delivered.length > KEEP) this.delivered.shift();
  }

  route(req: http.IncomingMessage, send: (status: number, body: string, headers?: Record<string, string>) => void, path: string,
    readBody: (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void): void {
    const requestId = randomId('req_', 14);
    const reply = (status: number, body: string, headers: Record<string, string> = {}) => send(status, body, { 'request-id': requestId, 'stripe-version': API_VERSION, ...headers });
    const fail = (err: StripeError) => reply(err.status, JSON.stringify({ error: { type: err.type, code: err.code, message: err.message, param: err.param, request_log_url: `https://dashboard.stripe.com/test/logs/${requestId}` } }));
    readBody(req, (err, text) => {
      if (err) return fail({ status: err.status, type: 'invalid_request_error', message: err.message });
      const key = /^Bearer\s+((?:sk|rk)_\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (key === undefined) {
        return fail({ status: 401, type: 'invalid_request_error', message: 'You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. \'Authorization: Bearer YOUR_SECRET_KEY\').' });
      }
      if (isRevokedCredential(key)) {
        return fail({ status: 401, type: 'invalid_request_error', code: 'api_key_expired', message: `Expired API Key provided: ${key.slice(0, 8)}***` });
      }
      const one = SESSION_PATH.exec(path);
      if (one) {
        if (req.method !== 'GET') return fail({ status: 404, type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path}).` });
        const session = this.sessions.get(one[1]!);
        if (!session) return fail({ status: 404, type: 'invalid_request_error', code: 'resource_missing', param: 'session', message: `No such checkout.session: '${one[1]}'` });
        return reply(200, JSON.stringify(session));
      }
      if (req.method !== 'POST') return fail({ status: 404, type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path}).` });
      const idempotencyKey = req.headers['idempotency-key'];
      const scoped = typeof idempotencyKey === 'string' ? `${key}\n${idempotencyKey}` : undefined;
      const earlier = scoped === undefined ? undefined : this.replies.get(scoped);
      if (earlier) {
        if (earlier.form !== text) {
          return fail({ status: 400, type: 'idempotency_error', message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey as string}' if you meant to execute a different request.` });
        }
        return reply(earlier.status, earlier.body, { 'idempotent-replayed': 'true' });
      }
      const created = this.create(parseStripeForm(text));
      if ('error' in created) return fail(created.error);
      const body = JSON.stringify(created.session);
      if (scoped !== undefined) keep(this.replies, scoped, { form: text, status: 200, body });
      reply(200, body);
    });
  }

  private create(form: Form): { session: CheckoutSession } | { error: StripeError } {
    const missing = (param: string): { error: StripeError } => ({ error: { status: 400, type: 'invalid_request_error', code: 'parameter_missing', param, message: `Missing required param: ${param}.` } });
    const invalid = (param: string, message: string): { error: StripeError } => ({ error: { status: 400, type: 'invalid_request_error', code: 'parameter_invalid_integer', param, message } });
    const mode = form.mode;
    if (typeof mode !== 'string') return missing('mode');
    if (!['payment', 'setup', 'subscription'].includes(mode)) return { error: { status: 400, type: 'invalid_request_error', code: 'invalid_request_error', param: 'mode', message: `Invalid mode: must be one of payment, setup, or subscription` } };
    if (typeof form.success_url !== 'string') return missing('success_url');
    const items = typeof form.line_items === 'object' ? Object.values(form.line_items) : [];
    if (items.length === 0) return missing('line_items');
    let total = 0;
    let currency: string | undefined;
    for (const [index, item] of items.entries()) {
      if (typeof item !== 'object') return missing(`line_items[${index}][price_data]`);
      const price = item.price_data;
      if (typeof price !== 'object') return missing(`line_items[${index}][price_data]`);
      if (typeof price.currency !== 'string') return missing(`line_items[${index}][price_data][currency]`);
      const unit = Number(price.unit_amount);
      if (typeof price.unit_amount !== 'string' || !/^\d+$/.test(price.unit_amount)) return invalid(`line_items[${index}][price_data][unit_amount]`, 'Invalid integer: ' + String(price.unit_amount));
      const quantity = item.quantity === undefined ? 1 : Number(item.quantity);
      if (!Number.isSafeInteger(quantity) || quantity < 1) return invalid(`line_items[${index}][quantity]`, `Invalid integer: ${String(item.quantity)}`);
      if (unit * quantity > 99_999_999) {
        return { error: { status: 400, type: 'invalid_request_error', code: 'amount_too_large', param: `line_items[${index}][price_data][unit_amount]`, message: 'Amount must be no more than $999,999.99' } };
      }
      total += unit * quantity;
      currency = price.currency.toLowerCase();
    }
    const id = randomId('cs_test_', 58);
    const asStrings = (value: string | Form | undefined) => (typeof value === 'object' ? Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string')) : {});
    const session: CheckoutSession = {
      id,
      object: 'checkout.session',
      amount_subtotal: total,
      amount_total: total,
      cancel_url: typeof form.cancel_url === 'string' ? form.cancel_url : null,
      client_reference_id: typeof form.client_reference_id === 'string' ? form.client_reference_id : null,
      created: Math.floor(Date.now() / 1000),
      currency,
      customer: null,
      expires_at: Math.floor(Date.now() / 1000) + 86_400,
      livemode: false,
      metadata: asStrings(form.metadata),
      mode,
      payment_intent: null,
      payment_status: 'unpaid',
      status: 'open',
      success_url: form.success_url,
      url: `${this.url}${CHECKOUT_PAGE_PREFIX}${id}`,
    };
    keep(this.sessions, id, session);
    return { session };
  }

  /** A created session, as Stripe would answer GET /v1/checkout/sessions/{id}. */
  session(id: string): CheckoutSession | undefined {
    return this.sessions.get(id);
  }

  /**
   * The payer finished the Checkout page: the session is complete, paid (a card) or still unpaid (a
   * delayed method such as a bank debit, paid later: call again with 'paid').
   */
  complete(id: string, paymentStatus: 'paid' | 'unpaid' = 'paid'): CheckoutSession {
    const session = this.sessions.get(id);
    if (!session) throw new Error(`no checkout session ${id}`);
    Object.assign(session, { status: 'complete', payment_status: paymentStatus, payment_intent: session.payment_intent ?? randomId('pi_', 24) });
    return { ...session };
  }

  /** An Event as Stripe sends it to a webhook endpoint (the JSON the signature covers). */
  event(type: string, object: Record<string, unknown>): string {
    return JSON.stringify({
      id: randomId('evt_', 24), object: 'event', api_version: API_VERSION, created: Math.floor(Date.now() / 1000),
      data: { object }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type,
    }, null, 2);
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function pageHtml(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Mock Stripe Checkout</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#1a1a1a}button{font-size:1rem;padding:.6rem 1.2rem;margin-right:.5rem;cursor:pointer}.pay{background:#635bff;color:#fff;border:0;border-radius:4px}.cancel{background:none;border:1px solid #888;border-radius:4px}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

/** The amount in the session's currency, as the button says it (`$25.50`). */
function priceOf(session: CheckoutSession): string {
  const amount = (session.amount_total / 100).toFixed(2);
  return session.currency === 'usd' || session.currency === undefined ? `$${amount}` : `${amount} ${session.currency.toUpperCase()}`;
}

function checkoutPageHtml(session: CheckoutSession): string {
  const price = priceOf(session);
  const state = session.status === 'complete' ? `<p role="status">This session is already ${escapeHtml(session.payment_status)}.</p>\n` : '';
  return pageHtml(`Pay ${price}`, `<p>Test mode: the mock vendor plays Stripe Checkout. No card is charged; paying tells the gateway, as Stripe would, that the payment succeeded.</p>
${state}<form method="post" action="${CHECKOUT_PAGE_PREFIX}${escapeHtml(session.id)}" aria-label="Test payment of ${escapeHtml(price)}">
<button type="submit" class="pay" name="action" value="pay">Pay ${escapeHtml(price)}</button>
<button type="submit" class="cancel" name="action" value="cancel">Cancel</button>
</form>
<p><small>Session <code>${escapeHtml(session.id)}</code></small></p>`);
}
