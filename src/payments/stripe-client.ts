/**
 * The official Stripe SDK, configured from the environment: one client per HTTP thread. STRIPE_API_BASE
 * points it at another origin (the mock vendor in tests and the demo) through the SDK's own
 * `protocol`/`host`/`port` options; every call is bounded by STRIPE_TIMEOUT_MS.
 */
import Stripe from 'stripe';
import type { PaymentsConfig } from '../config.js';

export type StripeSettings = NonNullable<PaymentsConfig['stripe']>;

export function stripeClient(settings: StripeSettings): Stripe {
  return new Stripe(settings.secretKey, {
    timeout: settings.timeoutMs,
    // The SDK retries network failures and 409/429/5xx with the same idempotency key: at most one session.
    maxNetworkRetries: 2,
    telemetry: false,
    ...(settings.apiBase ?? {}),
  });
}
