/**
 * Stripe's API for the calls the gateway's Checkout top-ups make through the official SDK, in Stripe's
 * wire format: form-encoded requests (`line_items[0][price_data][unit_amount]=500`), JSON answers,
 * Stripe's error shape (`{"error":{"type","code","message","param"}}`) and its `Idempotency-Key`
 * semantics (the same key and parameters replay the first answer; other parameters are an
 * `idempotency_error`). The SDK reaches it through its `protocol`/`host`/`port` options, so it serves
 * Stripe's own paths at the root (`/v1/checkout/sessions`).
 *
 * Tests play the payer and Stripe's event sender: `complete` marks a session paid (or not) as
 * Checkout would, and `event` wraps an object in an Event as Stripe delivers it to a webhook.
 */
import type http from 'node:http';
import { randomId } from './ids.js';
import { isRevokedCredential, type MockError } from './errors.js';

export const STRIPE_SESSIONS_PATH = '/v1/checkout/sessions';
const SESSION_PATH = /^\/v1\/checkout\/sessions\/([A-Za-z0-9_]+)$/;
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

export type CheckoutSession = Record<string, unknown> & { id: string; amount_total: number; metadata: Record<string, string>; payment_status: string; status: string };

export class StripeMock {
  private readonly sessions = new Map<string, CheckoutSession>();
  private readonly replies = new Map<string, { form: string; status: number; body: string }>();

  static handles(path: string): boolean {
    return path === STRIPE_SESSIONS_PATH || SESSION_PATH.test(path);
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
      url: `https://checkout.stripe.com/c/pay/${id}`,
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
