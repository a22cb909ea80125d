import type { Admission, Admitted } from '../admission/admission.js';
import type { CatalogModel, TokenPrices } from '../catalog/model.js';
import type { LedgerEvent } from '../ledger/event.js';
import { NO_USAGE, type NormalizedUsage } from '../providers/usage.js';
import { tokenCostNano } from './pricing.js';
import { log } from '../log.js';
import { ApiError } from '../http/errors.js';
import type { Span } from '../tracing/tracing.js';
import { recordSettlement } from '../tracing/call-spans.js';

export { NO_USAGE };

/** Metrics of what a settled call used and was charged. */
export type UsageRecorder = (modelId: string, usage: NormalizedUsage, chargedNano: bigint) => void;

/** A chat model (settled by tokens with `settle`) or a media model (settled by `settleCharge`). */
export type CalledModel = { readonly id: string; readonly prices?: TokenPrices };

export interface CallIdentity<M extends CalledModel = CatalogModel> {
  readonly userId: string;
  readonly keyId: string;
  readonly model: M;
  readonly endpoint: string;
  readonly stream: boolean;
  /** The request id: the key of its request log and of its usage transaction. */
  readonly callId: string;
  /** The call's worst-case cost, held for it on its lease (0 for a call on the user's own credential). */
  readonly reservedNano: bigint;
  /** The call's worst-case tokens, reserved under the key's token budgets; absent for a call that spends none. */
  readonly reservedTokens?: number;
  /** Served with the user's own upstream credential (BYOK): counted, never charged. */
  readonly ownCredential?: boolean;
  /** The request's span while tracing is on: the settlement is recorded on it and in a child span. */
  readonly span?: Span;
}

/**
 * One admitted inference call's money: its reservation, what it used, and its settlement, exactly
 * once. A failed call settles for nothing, which releases the whole reservation.
 */
export class MeteredCall<M extends CalledModel = CatalogModel> {
  usage: NormalizedUsage | undefined;
  status = 200;
  errorCode: string | null = null;
  clientAborted = false;
  ttfbMs: number | null = null;
  /** Upstream attempts the call made, its caller's own credentials' first (its request log's `attempts`). */
  attempts = 1;
  readonly startedAtMs = Date.now();
  private failed = false;
  private settled = false;

  constructor(private readonly admission: Admission, private readonly admitted: Admitted, private readonly recordUsage: UsageRecorder, private who: CallIdentity<M>) {}

  get identity(): CallIdentity<M> {
    return this.who;
  }

  /**
   * The call goes on with another model (a fallback, docs/routing.md): it is answered, charged,
   * logged and metered as that model. Its reservation stays as admitted (it covers the dearest).
   */
  serveAs(model: M): void {
    this.who = { ...this.who, model };
  }

  /** The upstream failed (or the call never reached it): nothing is charged. */
  fail(status: number, errorCode: string): void {
    this.failed = true;
    this.status = status;
    this.errorCode = errorCode;
  }

  /** Runs `work` for this call; whatever happens, the call is settled once (a failure releases its reservation). */
  async run(work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.fail(error instanceof ApiError ? error.status : 500, error instanceof ApiError ? error.code : 'internal_error');
      throw error;
    } finally {
      this.settle();
    }
  }

  /** Records the first upstream byte; true the first time only. */
  firstByte(): boolean {
    if (this.ttfbMs !== null) return false;
    this.ttfbMs = Date.now() - this.startedAtMs;
    return true;
  }

  /**
   * Settles the call (once; later calls do nothing). Callers settle before the response's last bytes
   * are written, so the charge is journaled (or queued for this turn's batch) before the client has
   * its answer; nobody waits for Redis.
   */
  settle(usage?: NormalizedUsage): void {
    if (usage) this.usage = usage;
    if (this.settled) return;
    const billed = this.failed || !this.usage ? undefined : this.usage;
    if (billed && !this.identity.model.prices) throw new Error(`${this.identity.model.id} is not priced by tokens: settle it with settleCharge`);
    const charge = billed ? this.chargeFor(billed) : 0n;
    const charged = this.close(charge, this.usage ?? NO_USAGE, billed ? billed.promptTokens + billed.completionTokens : 0);
    // Metrics once the caller has written the response (settle comes just before it): off the latency path.
    if (billed && charged > 0n) queueMicrotask(() => this.recordUsage(this.identity.model.id, billed, charged));
  }

  /**
   * What `settle` charges for `usage` on this call (0 for the caller's own credential): the one rule
   * that both the settlement and the answer's `usage.cost` (docs/api.md) use, so they always agree.
   */
  chargeFor(usage: NormalizedUsage): bigint {
    const prices = this.identity.model.prices;
    if (this.failed || !prices || this.identity.ownCredential) return 0n;
    return tokenCostNano(prices, usage);
  }

  /**
   * Settles a call priced by what it delivered rather than by tokens (an image call): `chargeNano`,
   * or nothing when the call failed. Once, like `settle`. Returns what was charged.
   */
  settleCharge(chargeNano: bigint): bigint {
    if (this.settled) return 0n;
    return this.close(this.failed || this.identity.ownCredential ? 0n : chargeNano, NO_USAGE, 0);
  }

  private close(charge: bigint, counted: NormalizedUsage, tokens: number): bigint {
    this.settled = true;
    const { keyId, model, endpoint, stream, callId, reservedNano, reservedTokens = 0, span } = this.identity;
    const event: LedgerEvent = {
      keyId, model: model.id, endpoint, stream, status: this.status, errorCode: this.errorCode,
      promptTokens: counted.promptTokens, completionTokens: counted.completionTokens, cachedTokens: counted.cachedTokens,
      reasoningTokens: counted.reasoningTokens, reservedNano: reservedNano.toString(), startedAtMs: this.startedAtMs,
      durationMs: Date.now() - this.startedAtMs, ttfbMs: this.ttfbMs, clientAborted: this.clientAborted, attempts: this.attempts,
      ...(this.identity.ownCredential ? { ownCredential: true } : {}),
      traceId: span?.spanContext().traceId, // left out of the JSON when undefined
    };
    const charged = this.admission.settle(this.admitted.lease, callId, reservedNano, reservedTokens, charge, tokens, JSON.stringify(event));
    if (charge > charged) log.error('charge exceeded its reservation', { callId, model: model.id, charge: String(charge), reserved: String(reservedNano) });
    if (span !== undefined) {
      recordSettlement(span, {
        responseModel: model.id, status: this.status, errorCode: this.errorCode, promptTokens: counted.promptTokens,
        completionTokens: counted.completionTokens, cachedTokens: counted.cachedTokens, chargedNano: charged, attempts: this.attempts,
      });
    }
    return charged;
  }
}
