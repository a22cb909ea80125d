import { ApiError } from '../http/errors.js';
import type { Balances } from '../billing/balances.js';
import { nanoToUsd } from '../billing/pricing.js';
import type { Metrics } from '../metrics.js';
import { seconds } from '../metrics.js';
import type { AdmitResult, RateWindow } from './scripts.js';
import type { ScriptBatcher } from './script-batcher.js';

export interface AdmissionLimits {
  readonly requests: number;
  readonly windowMs: number;
  readonly reservationTtlMs: number;
}

/** The key's rate window in the headers OpenAI clients know (`x-ratelimit-*-requests`). */
export function rateLimitHeaders(window: RateWindow): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(window.limit),
    'x-ratelimit-remaining-requests': String(Math.max(0, window.remaining)),
    'x-ratelimit-reset-requests': `${Math.max(0, window.resetMs) / 1000}s`,
  };
}

/** Admission and settlement of inference calls: one Lua round trip each, errors mapped to API errors. */
export class Admission {
  /** Settlements sent but not yet answered; shutdown waits for them. */
  pendingSettlements = 0;
  private readonly admitDuration;
  private readonly settleDuration;

  constructor(
    private readonly scripts: ScriptBatcher,
    private readonly balances: Balances,
    private readonly limits: AdmissionLimits,
    private readonly metrics: Metrics,
  ) {
    this.admitDuration = metrics.scriptDuration.labels('admit');
    this.settleDuration = metrics.scriptDuration.labels('settle');
  }

  /** Reserves `amountNano` for the call or throws 429 (with Retry-After) or 402. */
  async reserve(userId: string, keyId: string, reservationId: string, amountNano: bigint): Promise<Readonly<Record<string, string>>> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const started = process.hrtime.bigint();
      let result: AdmitResult;
      try {
        result = await this.scripts.admit({
          userId, keyId, reservationId, amountNano,
          limit: this.limits.requests, windowMs: this.limits.windowMs, ttlMs: this.limits.reservationTtlMs,
        });
      } catch (error) {
        // Without Redis nothing can be admitted safely: a retryable 503, not a 500.
        throw new ApiError(503, 'admission_unavailable', `Admission is unavailable right now (${(error as Error).message}); retry shortly.`, null, { 'retry-after': '1' });
      }
      this.admitDuration.observe(seconds(started));
      switch (result.kind) {
        case 'admitted':
          return result.window ? rateLimitHeaders(result.window) : {};
        case 'rate_limited': {
          this.metrics.rejections.inc({ reason: 'rate_limited' });
          const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
          throw new ApiError(429, 'rate_limit_exceeded',
            `Rate limit exceeded: at most ${this.limits.requests} requests per ${this.limits.windowMs / 1000} seconds per API key. Retry after ${retryAfter} seconds.`,
            null, {
              'retry-after': String(retryAfter),
              'retry-after-ms': String(result.retryAfterMs),
              ...rateLimitHeaders({ limit: this.limits.requests, remaining: 0, resetMs: result.retryAfterMs }),
            });
        }
        case 'insufficient_credits':
          this.metrics.rejections.inc({ reason: 'insufficient_credits' });
          throw new ApiError(402, 'insufficient_credits',
            `Insufficient credits: this request may cost up to ${nanoToUsd(amountNano)} USD and ${nanoToUsd(Math.max(0, result.available))} USD is available.`);
        case 'not_loaded':
          await this.balances.load(userId);
          continue;
      }
    }
    throw new Error(`balance of ${userId} did not load`);
  }

  /** Charges `chargeNano` (capped at the reservation), releases the rest and queues the ledger event. */
  async settle(userId: string, reservationId: string, chargeNano: bigint, event: string): Promise<bigint> {
    const started = process.hrtime.bigint();
    this.pendingSettlements++;
    try {
      const result = await this.scripts.settle({ userId, reservationId, chargeNano, event });
      this.settleDuration.observe(seconds(started));
      return result.chargedNano;
    } finally {
      this.pendingSettlements--;
    }
  }
}
