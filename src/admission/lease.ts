import type { KeyLimits, LeaseGrant, RateWindow, SettledCall } from './scripts.js';

/**
 * One admission lease as its HTTP thread sees it: credit and rate-window slots reserved in Redis by
 * admit.lua, handed out to the key's calls locally, and settled back in numbered batches.
 * Invariant: granted credit = creditLeft + the worst cases of calls in flight + what was charged.
 */
export class Lease {
  creditLeft: bigint;
  slotsLeft: number;
  /** Calls admitted from this lease and not yet settled. */
  inFlight = 1;
  /** Calls admitted from this lease, the asking one included. */
  admitted = 1;
  /** False once retired: it admits nothing more and closes when its last call settles. */
  accepting = true;
  closed = false;
  readonly openedAtMs: number;
  lastUsedAtMs: number;
  /** Settled calls not yet sent to Redis. */
  pending: SettledCall[] = [];
  /** Credit to give back to the balance with the next batch (a retired lease's unused credit). */
  releaseNano = 0n;
  /** Number of the last batch sent; batches of one lease leave one at a time, in order. */
  batch = 0;
  sending = false;
  /** When its last batch left (or it opened): Redis set its deadline then (see `Admission.refreshHolds`). */
  reportedAtMs: number;
  /** Its deadline in Redis is due for a refresh: the next batch leaves even with nothing else in it. */
  refreshDue = false;
  /** The balance epoch it was opened in (settle.lua's test for a lease Redis lost). */
  readonly epoch: string;
  /**
   * Granted credit beyond its asking call: Redis then tracks its slack (see lua/admit.lua), and each
   * change of `creditLeft`, and its retirement, is reported with a batch.
   */
  readonly tracked: boolean;
  /** The slack Redis has for it (the last one sent). */
  reportedSlack: bigint;
  /** Its retirement was sent: Redis no longer counts it among the leases with slack. */
  retirementSent = false;
  /** Recalled (or replaced): its batches leave at once instead of waiting for the next flush. */
  urgent = false;
  /** The key has token budgets: each call's worst-case tokens are reserved, as its credit is (see lua/admit.lua). */
  readonly tokenBudgeted: boolean;
  /** Tokens reserved in Redis and not yet handed to a call. */
  tokensLeft: number;
  /** Tokens Redis reserves for this lease that the next batch gives up (settled calls' worst cases, a retired lease's rest). */
  tokensFreed = 0;
  private readonly window: RateWindow;
  private readonly windowResetAtMs: number;

  constructor(
    readonly id: string,
    readonly userId: string,
    readonly keyId: string,
    /** The key's limits it was granted under. */
    readonly keyLimits: KeyLimits,
    grant: LeaseGrant,
    askingCallNano: bigint,
    askingCallTokens: number,
    nowMs: number,
  ) {
    this.window = grant.window;
    this.epoch = grant.epoch;
    // The asking call is admitted from the grant at once.
    this.creditLeft = grant.creditNano - askingCallNano;
    this.tracked = this.creditLeft > 0n;
    this.reportedSlack = this.creditLeft;
    this.slotsLeft = Math.max(0, grant.slots - 1); // a credit-only grant has no slot
    this.tokenBudgeted = keyLimits.tph !== null || keyLimits.tpd !== null;
    // admit.lua reserved the asking call's worst case for each slot (one slot for a credit-only grant).
    this.tokensLeft = this.tokenBudgeted && askingCallTokens > 0 ? this.slotsLeft * askingCallTokens : 0;
    this.openedAtMs = nowMs;
    this.lastUsedAtMs = nowMs;
    this.reportedAtMs = nowMs;
    this.windowResetAtMs = nowMs + grant.window.resetMs;
  }

  /** Admits a call of worst case `callNano` and `callTokens` locally, if the lease still has room and time for it. */
  take(callNano: bigint, callTokens: number, nowMs: number, lifeMs: number): boolean {
    if (!this.accepting || this.slotsLeft < 1 || this.creditLeft < callNano || nowMs - this.openedAtMs >= lifeMs) return false;
    if (this.tokenBudgeted && callTokens > this.tokensLeft) return false;
    this.slotsLeft--;
    this.creditLeft -= callNano;
    if (this.tokenBudgeted) this.tokensLeft -= callTokens;
    this.inFlight++;
    this.admitted++;
    this.lastUsedAtMs = nowMs;
    return true;
  }

  /** Stops admitting; the credit nobody holds goes back with the next batch. */
  retire(): void {
    if (!this.accepting) return;
    this.accepting = false;
    this.releaseNano += this.creditLeft;
    this.creditLeft = 0n;
    this.tokensFreed += this.tokensLeft;
    this.tokensLeft = 0;
  }

  /**
   * A call admitted from this lease settled for `chargeNano` (at most its worst case `callNano`)
   * and `tokens` (its reservation of `callTokens` ends with the batch that counts them).
   */
  settleCall(callId: string, callNano: bigint, callTokens: number, chargeNano: bigint, tokens: number, event: string): SettledCall {
    const charge = chargeNano > callNano ? callNano : chargeNano < 0n ? 0n : chargeNano;
    this.inFlight--;
    if (this.tokenBudgeted) this.tokensFreed += callTokens;
    if (this.accepting) this.creditLeft += callNano - charge;
    else this.releaseNano += callNano - charge;
    const settled = { callId, chargeNano: charge, tokens, event };
    this.pending.push(settled);
    return settled;
  }

  /** Redis's record of its slack is out of date: a batch (even with no call) should tell it. */
  get slackReportDue(): boolean {
    return this.tracked && (this.accepting ? this.creditLeft !== this.reportedSlack : !this.retirementSent);
  }

  /** Retired with no call in flight: the next batch closes it. */
  get closable(): boolean {
    return !this.accepting && this.inFlight === 0 && !this.closed;
  }

  /** The key's request window as a client would see it from this lease. */
  rateWindow(nowMs: number): RateWindow {
    return { limit: this.window.limit, remaining: this.window.remaining + this.slotsLeft, resetMs: this.windowResetAtMs - nowMs };
  }
}
