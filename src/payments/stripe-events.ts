/**
 * What a verified Stripe event means for the ledger, as a pure decision (the webhook applies it).
 * A top-up credits only a Checkout Session this gateway created (its `metadata.gateway_account` and
 * `client_reference_id` name the same account), in payment mode, in USD, once Stripe says it is paid:
 * `checkout.session.completed` with `payment_status: 'paid'` (a card), or
 * `checkout.session.async_payment_succeeded` (a bank debit that settled later). The amount is the
 * session's `amount_total`, never a number a client sent. Refunds and disputes are reported for the
 * operator, not debited (docs/payments.md "Refunds and disputes").
 */
import type Stripe from 'stripe';

/** The metadata key naming the account a session tops up. */
export const ACCOUNT_METADATA_KEY = 'gateway_account';

export type StripeEventAction =
  | { readonly kind: 'credit'; readonly userId: string; readonly sessionId: string; readonly cents: number }
  | { readonly kind: 'reversal'; readonly reversal: 'refund' | 'dispute'; readonly event: string; readonly object: string; readonly paymentIntent: string | null; readonly cents: number; readonly userId: string | null }
  | { readonly kind: 'ignore'; readonly reason: string };

const idOf = (value: string | { id: string } | null | undefined): string | null => (value == null ? null : typeof value === 'string' ? value : value.id);

export function actionOf(event: Stripe.Event): StripeEventAction {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return topUpOf(event.data.object);
    case 'charge.refunded': {
      const charge = event.data.object;
      return { kind: 'reversal', reversal: 'refund', event: event.type, object: charge.id, paymentIntent: idOf(charge.payment_intent), cents: charge.amount_refunded, userId: charge.metadata?.[ACCOUNT_METADATA_KEY] ?? null };
    }
    case 'charge.dispute.created': {
      const dispute = event.data.object;
      return { kind: 'reversal', reversal: 'dispute', event: event.type, object: dispute.id, paymentIntent: idOf(dispute.payment_intent), cents: dispute.amount, userId: dispute.metadata?.[ACCOUNT_METADATA_KEY] ?? null };
    }
    default:
      return { kind: 'ignore', reason: `event type ${event.type} is not one the gateway acts on` };
  }
}

function topUpOf(session: Stripe.Checkout.Session): StripeEventAction {
  const userId = session.metadata?.[ACCOUNT_METADATA_KEY];
  if (!userId || session.client_reference_id !== userId) return { kind: 'ignore', reason: `session ${session.id} was not created by this gateway` };
  if (session.mode !== 'payment') return { kind: 'ignore', reason: `session ${session.id} is in ${session.mode} mode` };
  if (session.payment_status !== 'paid') return { kind: 'ignore', reason: `session ${session.id} is not paid (${session.payment_status})` };
  if (session.currency !== 'usd') return { kind: 'ignore', reason: `session ${session.id} is in ${session.currency}, not usd` };
  const cents = session.amount_total;
  if (cents === null || !Number.isSafeInteger(cents) || cents <= 0) return { kind: 'ignore', reason: `session ${session.id} has no positive amount_total` };
  return { kind: 'credit', userId, sessionId: session.id, cents };
}
