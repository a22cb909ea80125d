/**
 * Card top-ups through Stripe Checkout (docs/payments.md). `POST /api/v1/billing/checkout` (a dashboard
 * JWT only: the spec has no API endpoint for a top-up by payment) creates a Checkout Session for an
 * amount within the operator's bounds and answers its id and the URL to send the payer to. Stripe's
 * webhook (`POST /hooks/stripe`) confirms the payment on the server side: its signature is verified
 * with the SDK, and a paid session is credited exactly once, whatever Stripe redelivers.
 */
import { createHash, randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import * as v from 'valibot';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, badRequest } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { stripeClient } from '../../payments/stripe-client.js';
import { NANO_PER_CENT, topUpCents } from '../../payments/checkout-amount.js';
import { ACCOUNT_METADATA_KEY, actionOf } from '../../payments/stripe-events.js';
import { paymentTransactionId } from '../../payments/transaction-id.js';
import { log } from '../../log.js';

/** The processor's name in a transaction's `payment_method`. */
export const STRIPE_METHOD = 'stripe';
/** Largest webhook body read: Stripe's events are a few kilobytes (a Checkout Session with its metadata). */
export const STRIPE_WEBHOOK_MAX_BYTES = 256 * 1024;
export const STRIPE_SIGNATURE_HEADER = 'stripe-signature';

const CheckoutSchema = v.strictObject({ amount_usd: v.unknown() });

const paymentsUnavailable = () =>
  new ApiError(503, 'payments_unavailable', 'Card top-ups are not configured on this gateway (STRIPE_SECRET_KEY); ask the operator for a coupon or a top-up.');

export function stripeTopUpRoutes(services: Services) {
  const { auth, balances, config, metrics } = services;
  const settings = config.payments.stripe;
  const stripe = settings && stripeClient(settings);

  const checkout = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwt(ctx.headers.authorization, config.jwtSecret);
    if (!settings || !stripe) throw paymentsUnavailable();
    const { amount_usd: amount } = parseWith(CheckoutSchema, parseJsonObject(await ctx.body()));
    const cents = topUpCents(amount, config.payments);
    // A caller's Idempotency-Key makes its retries one session (scoped to the account); without one each
    // request is a new session, and the key only covers the SDK's own retries of this request.
    const given = ctx.headers.idempotencyKey ?? '';
    const idempotencyKey = given === '' ? `gw-checkout-${randomUUID()}` : `gw-checkout-${createHash('sha256').update(`${userId}\n${given}`).digest('hex')}`;
    let session: Stripe.Checkout.Session;
    try {
      session = await stripe.checkout.sessions.create({
        mode: 'payment',
        line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: cents, product_data: { name: 'Model gateway credit' } } }],
        client_reference_id: userId,
        metadata: { [ACCOUNT_METADATA_KEY]: userId },
        // On the PaymentIntent too, so its charge, a refund or a dispute in Stripe's dashboard names the account.
        payment_intent_data: { metadata: { [ACCOUNT_METADATA_KEY]: userId } },
        // The operator's pages, never the caller's: a caller-given URL would make this an open redirect.
        success_url: settings.successUrl,
        cancel_url: settings.cancelUrl,
      }, { idempotencyKey });
    } catch (error) {
      throw processorError(error);
    }
    if (!session.url) throw new ApiError(502, 'payment_processor_error', 'The payment processor created a session without a payment page URL.');
    ctx.reply.json(201, { id: session.id, url: session.url, amount_usd: cents / 100, currency: 'USD' });
  };

  const webhook = async (ctx: RequestContext): Promise<void> => {
    const payload = await ctx.body();
    if (!settings) throw paymentsUnavailable();
    const signature = ctx.headers.signature ?? '';
    if (signature === '') throw badRequest('The Stripe-Signature header is required.', STRIPE_SIGNATURE_HEADER);
    let event: Stripe.Event;
    try {
      event = Stripe.webhooks.constructEvent(payload, signature, settings.webhookSecret, settings.webhookToleranceSeconds);
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError) {
        throw new ApiError(400, 'invalid_signature', `The Stripe-Signature header does not verify: ${error.message}`, STRIPE_SIGNATURE_HEADER);
      }
      if (error instanceof SyntaxError) throw badRequest('The event body is not JSON.');
      throw error;
    }
    const action = actionOf(event);
    switch (action.kind) {
      case 'credit': {
        const id = paymentTransactionId(STRIPE_METHOD, action.sessionId);
        const amountNano = BigInt(action.cents) * NANO_PER_CENT;
        const { inserted, credits } = await balances.depositOnce(action.userId, id, amountNano, STRIPE_METHOD, action.sessionId);
        if (inserted) {
          metrics.topUps.inc({ processor: STRIPE_METHOD });
          metrics.topUpUsd.inc({ processor: STRIPE_METHOD }, nanoToUsd(amountNano));
        }
        log.info(inserted ? 'stripe top-up credited' : 'stripe top-up already credited', { user: action.userId, session: action.sessionId, event: event.id, usd: nanoToUsd(amountNano), credits_usd: nanoToUsd(credits) });
        ctx.reply.json(200, { received: true, credited: inserted, transaction_id: id });
        return;
      }
      case 'reversal':
        // Not debited automatically (docs/payments.md "Refunds and disputes"): the operator decides.
        metrics.paymentReversals.inc({ processor: STRIPE_METHOD, kind: action.reversal });
        log.warn('stripe payment reversed: not debited, for the operator', { event: action.event, event_id: event.id, object: action.object, payment_intent: action.paymentIntent, usd: action.cents / 100, user: action.userId });
        ctx.reply.json(200, { received: true, credited: false });
        return;
      case 'ignore':
        if (event.type.startsWith('checkout.session.')) log.info('stripe event ignored', { event: event.id, type: event.type, reason: action.reason });
        ctx.reply.json(200, { received: true, credited: false });
    }
  };

  return { checkout, webhook };
}

/** A failed Stripe call as the caller's answer: a conflict for a reused Idempotency-Key, else 502 (logged with Stripe's detail). */
function processorError(error: unknown): ApiError {
  if (!(error instanceof Stripe.errors.StripeError)) throw error;
  if (error.type === 'StripeIdempotencyError') {
    return new ApiError(409, 'idempotency_key_reused', 'This Idempotency-Key was used for a checkout with another amount.', 'idempotency-key');
  }
  log.error('stripe checkout session failed', { type: error.type, code: error.code, status: error.statusCode, request: error.requestId, message: error.message });
  return new ApiError(502, 'payment_processor_error', 'The payment processor could not start the checkout; try again shortly.');
}
