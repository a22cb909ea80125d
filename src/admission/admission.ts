import { randomBytes } from 'node:crypto';
import { ApiError } from '../http/errors.js';
import type { Balances } from '../billing/balances.js';
import { nanoToUsd } from '../billing/pricing.js';
import type { Metrics } from '../metrics.js';
import { seconds } from '../metrics.js';
import { log } from '../log.js';
import { Lease } from './lease.js';
import { NO_KEY_LIMITS, type KeyLimits, type LeaseGrant, type RateLimitName, type RateWindow } from './scripts.js';
import type { ScriptBatcher } from './script-batcher.js';
import type { SettlementJournal } from './settlement-journal.js';

export interface AdmissionLimits {
  readonly requests: number;
  readonly windowMs: number;
  readonly reservationTtlMs: number;
}

/** How far leases go; `maxCalls: 1` turns them off (one admit.lua and one settle.lua per call). */
export interface LeasePolicy {
  /** Most calls one lease may admit. */
  readonly maxCalls: number;
  /** A lease admits nothing after this long (its slots count in the window from its end). */
  readonly lifeMs: number;
  /** A lease unused this long is closed, its unused credit and slots given back. */
  readonly idleMs: number;
  /** Windows smaller than this admit call by call: a lease's spare slots would be a real share of them. */
  readonly minWindowLimit: number;
  /**
   * Longest a call that the balance or the key's credit limit does not cover waits for other leases'
   * unused credit to be recalled before it is refused (see `recall`); 0 refuses at once.
   */
  readonly recallMs: number;
}

export const DEFAULT_LEASE_POLICY: LeasePolicy = Object.freeze({ maxCalls: 256, lifeMs: 1000, idleMs: 250, minWindowLimit: 100, recallMs: 250 });

/** First pause before asking again while a recall runs (doubling after each try); a `d` message ends it sooner. */
const RECALL_FIRST_WAIT_MS = 4;

/**
 * When settlements leave for Redis: `flushMs` 0 sends them at the end of the turn they happen in;
 * above 0 they wait up to that long to leave together, recorded first in `journal` so that a crash
 * in the wait loses none (see SettlementJournal). Either way they leave ahead of this thread's next
 * admit.lua, so no admission here sees a balance, spend or token budget without them.
 */
export interface SettlementPolicy {
  readonly flushMs: number;
  readonly journal?: SettlementJournal;
}

export const IMMEDIATE_SETTLEMENT: SettlementPolicy = Object.freeze({ flushMs: 0 });

/** The key's rate window in the headers OpenAI clients know. */
export type RateLimitHeaders = {
  readonly 'x-ratelimit-limit-requests': string;
  readonly 'x-ratelimit-remaining-requests': string;
  readonly 'x-ratelimit-reset-requests': string;
};

/** The key's rate window in the headers OpenAI clients know (`x-ratelimit-*-requests`). */
export function rateLimitHeaders(window: RateWindow): RateLimitHeaders {
  return {
    'x-ratelimit-limit-requests': String(window.limit),
    'x-ratelimit-remaining-requests': String(Math.max(0, window.remaining)),
    'x-ratelimit-reset-requests': `${Math.max(0, window.resetMs) / 1000}s`,
  };
}

/** The default window as a 429's message names it. */
export const defaultWindowText = (limits: { readonly requests: number; readonly windowMs: number }) =>
  `at most ${limits.requests} requests per ${limits.windowMs / 1000} seconds per API key`;

/** 429 `rate_limit_exceeded`: `which` names the limit that refused; Retry-After (seconds, at least 1) and retry-after-ms say when a retry can pass. */
export function rateLimitExceeded(which: string, retryAfterMs: number, headers: Readonly<Record<string, string>>): ApiError {
  const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError(429, 'rate_limit_exceeded', `Rate limit exceeded: ${which}. Retry after ${retryAfter} seconds.`, null, {
    'retry-after': String(retryAfter), 'retry-after-ms': String(retryAfterMs), ...headers,
  });
}

/** An admitted call: the lease it draws on, and its rate-limit headers. */
export interface Admitted {
  readonly lease: Lease;
  readonly headers: RateLimitHeaders;
}

const slotId = (userId: string, keyId: string) => `${userId}\n${keyId}`;

/** A lease id names its key, so the janitor can find the key's spend hash of a lease it releases. */
export const leaseIdFor = (keyId: string) => `${keyId}:${randomBytes(9).toString('base64url')}`;
export const keyIdOfLease = (leaseId: string) => leaseId.slice(0, leaseId.lastIndexOf(':'));

const sameKeyLimits = (a: KeyLimits, b: KeyLimits) =>
  a === b || (a.rpm === b.rpm && a.tph === b.tph && a.tpd === b.tpd && a.capNano === b.capNano && a.periodStartMs === b.periodStartMs);

const LIMIT_TEXT: Record<Exclude<RateLimitName, 'window'>, (value: number) => string> = {
  rpm: (n) => `this API key's rate_limit_rpm of ${n} requests per minute`,
  tph: (n) => `this API key's rate_limit_tph of ${n} tokens per hour is used up`,
  tpd: (n) => `this API key's rate_limit_tpd of ${n} tokens per day is used up`,
};

/** Leases of one (user, key) pair in this thread. */
interface LeaseSlot {
  lease: Lease | undefined;
  opening: Promise<unknown> | undefined;
  /** Calls waiting for the lease being opened. */
  waiting: number;
  /** How many calls the next lease asks for: doubled while leases run out before their life ends. */
  nextCalls: number;
  lastUsedAtMs: number;
}

/**
 * Admission and settlement of inference calls. Each Redis round trip is one Lua script call
 * (admit.lua opens a lease, settle.lua applies a batch of settled calls to it), and a key under
 * steady load is admitted from its lease in this thread without any round trip: the Lua scripts stay
 * the only place where shared counters change, but a lease amortises them over up to `maxCalls`
 * calls. Settlements of one lease go out together, once per event-loop turn.
 */
export class Admission {
  private readonly slots = new Map<string, LeaseSlot>();
  private readonly flushing = new Set<Lease>();
  private flushScheduled = false;
  /** Runs while a key has a lease here: an idle thread has nothing to sweep and is not woken for it. */
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly admitDuration;
  private readonly settleDuration;
  /** Leases of calls (not task holds) not yet closed in Redis: those with calls in flight keep their deadline fresh. */
  private readonly live = new Set<Lease>();
  /** Runs while `live` has a lease: refreshes the deadlines of leases whose calls outlast a batch's reach. */
  private refreshTimer: NodeJS.Timeout | undefined;
  /** Calls waiting for a recall of their user's leases, woken by its `d` message (or their own timer). */
  private readonly recallWaiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly scripts: ScriptBatcher,
    private readonly balances: Balances,
    private readonly limits: AdmissionLimits,
    private readonly metrics: Metrics,
    private readonly policy: LeasePolicy = DEFAULT_LEASE_POLICY,
    private readonly settlement: SettlementPolicy = IMMEDIATE_SETTLEMENT,
  ) {
    if (settlement.flushMs > 0 && !settlement.journal) throw new Error('settlements that wait to leave need a journal');
    this.admitDuration = metrics.scriptDuration.labels('admit');
    this.settleDuration = metrics.scriptDuration.labels('settle');
  }

  /** Whether a lease is not yet closed in Redis (shutdown waits until none is). */
  get leasesOpen(): boolean {
    if (this.flushing.size > 0) return true;
    for (const slot of this.slots.values()) if (slot.lease && !slot.lease.closed) return true;
    return false;
  }

  /** Admits the call from this thread's current lease if it can take it now; undefined otherwise (then `admit`). */
  admitFromLease(userId: string, keyId: string, callNano: bigint, limits: KeyLimits = NO_KEY_LIMITS, callTokens = 0): Admitted | undefined {
    const slot = this.slots.get(slotId(userId, keyId));
    const lease = slot?.lease;
    if (!slot || !lease || !sameKeyLimits(lease.keyLimits, limits)) return undefined;
    return this.takeFrom(slot, lease, callNano, callTokens, Date.now());
  }

  private takeFrom(slot: LeaseSlot, lease: Lease, callNano: bigint, callTokens: number, nowMs: number): Admitted | undefined {
    if (!lease.take(callNano, callTokens, nowMs, this.policy.lifeMs)) return undefined;
    slot.lastUsedAtMs = nowMs;
    // Within a flush Redis learns that this credit is a call's reservation now, not slack: the
    // balance's `held` as users read it (held without slack) counts the call.
    if (lease.tracked) this.queueFlush(lease);
    return { lease, headers: rateLimitHeaders(lease.rateWindow(nowMs)) };
  }

  /**
   * Admits a call of worst-case cost `callNano` and worst-case `callTokens` for a key with its own
   * `limits`, from this thread's lease or a new one; or throws 429 (with Retry-After), 400 (a call
   * larger than a whole token budget), 402 or 503.
   */
  async admit(userId: string, keyId: string, callNano: bigint, limits: KeyLimits = NO_KEY_LIMITS, callTokens = 0): Promise<Admitted> {
    const id = slotId(userId, keyId);
    let slot = this.slots.get(id);
    if (!slot) {
      slot = { lease: undefined, opening: undefined, waiting: 0, nextCalls: 1, lastUsedAtMs: 0 };
      this.slots.set(id, slot);
    }
    for (;;) {
      const nowMs = Date.now();
      slot.lastUsedAtMs = nowMs;
      let current = slot.lease;
      // A key whose limits changed (an update, or a new credit period) needs a lease granted under the new ones.
      if (current && !sameKeyLimits(current.keyLimits, limits)) {
        this.retire(current, nowMs);
        current = undefined;
      }
      const taken = current && this.takeFrom(slot, current, callNano, callTokens, nowMs);
      if (taken) return taken;
      if (slot.opening) {
        // One lease opens at a time per key and thread; the calls behind it try it first, and if it
        // cannot take them, the next of them opens one sized for all that still wait.
        slot.waiting++;
        await slot.opening.catch(() => {});
        slot.waiting--;
        continue;
      }
      if (current) {
        this.retire(current, nowMs);
        // Its unused credit goes back in the pipeline ahead of the new lease's admit.lua, so this
        // thread never refuses a call for credit its own old lease still held (or, when a batch of
        // it is on its way, right after that batch's reply).
        current.urgent = true;
        this.send(current);
      }
      const opening = this.open(userId, keyId, callNano, callTokens, Math.max(slot.nextCalls, slot.waiting + 1), limits);
      slot.opening = opening;
      try {
        const lease = await opening;
        slot.lease = lease;
        this.track(lease);
        this.sweepTimer ??= setInterval(() => this.sweep(Date.now()), Math.max(10, this.policy.idleMs / 2)).unref();
        return { lease, headers: rateLimitHeaders(lease.rateWindow(Date.now())) };
      } finally {
        if (slot.opening === opening) slot.opening = undefined;
      }
    }
  }

  /**
   * Counts one request of the key in its request windows without admitting anything: for a request
   * of an admission route answered without admission (refused before it: a 400 for its body, an
   * unknown model, a 409 for its Idempotency-Key; or a replayed answer), so that such answers take
   * their slot as admitted requests and refusals for credit do (see lua/admit.lua) and cannot be sent
   * without limit. Leaves with the thread's next batch of scripts (no round trip of its own); a
   * failure is logged, never thrown: the answer is given either way.
   */
  countRequest(userId: string, keyId: string, limits: KeyLimits = NO_KEY_LIMITS): Promise<void> {
    return this.scripts.count({ userId, keyId, memberId: leaseIdFor(keyId), windowMs: this.limits.windowMs, leaseLifeMs: this.policy.lifeMs, rpm: limits.rpm !== null })
      .then(() => undefined, (error: Error) => log.warn('a request answered without admission was not counted in its rate window', { userId, keyId, error }));
  }

  /**
   * Reserves credit for one call whose request the rate windows already counted (a call that falls
   * back from the user's own upstream credential to the platform's): the user's `available`, the
   * key's `credit_limit` and its token budgets apply (the failed attempt's tokens were released), the
   * request windows do not count it again. Its lease admits nothing else and closes when the call settles.
   */
  async admitCredit(userId: string, keyId: string, callNano: bigint, limits: KeyLimits, headers: RateLimitHeaders, callTokens = 0): Promise<Admitted> {
    const lease = await this.open(userId, keyId, callNano, callTokens, 0, limits);
    this.track(lease);
    return { lease, headers };
  }

  /**
   * How often the deadlines of leases with calls in flight are refreshed: a third of the reservation
   * TTL, so a refresh held up by a busy event loop or a slow round trip still lands well before it.
   */
  private get refreshMs(): number {
    return Math.max(100, Math.floor(this.limits.reservationTtlMs / 3));
  }

  /** Watches `lease` until it closes, so that a call running longer than the reservation TTL keeps its hold. */
  private track(lease: Lease): void {
    this.live.add(lease);
    this.refreshTimer ??= setInterval(() => this.refreshHolds(Date.now()), this.refreshMs).unref();
  }

  /**
   * A call keeps its hold for as long as it runs: Redis gives a lease a new deadline (now + the
   * reservation TTL) with each batch (settle.lua), so a lease with calls in flight whose last batch
   * is a third of the TTL old sends one, empty if nothing else is waiting. One round trip per such
   * lease per period, none per call; the janitor still releases the leases of a thread that died,
   * since nothing refreshes them any more. How long a call may run is bounded by the upstream
   * exchange's total deadline, not here.
   */
  private refreshHolds(nowMs: number): void {
    for (const lease of this.live) {
      if (lease.closed) {
        this.live.delete(lease);
      } else if (lease.inFlight > 0 && !lease.refreshDue && nowMs - lease.reportedAtMs >= this.refreshMs) {
        lease.refreshDue = true;
        this.queueFlush(lease);
      }
    }
    if (this.live.size === 0) {
      clearInterval(this.refreshTimer);
      this.refreshTimer = undefined;
    }
  }

  /**
   * Settles one call admitted from `lease` with worst cases `callNano` and `callTokens`: `chargeNano`
   * (capped at `callNano`) is charged, the rest goes back to the lease, `tokens` count in the key's
   * budgets, and the ledger event leaves with the lease's next batch. Returns what is charged.
   */
  settle(lease: Lease, callId: string, callNano: bigint, callTokens: number, chargeNano: bigint, tokens: number, event: string): bigint {
    const settled = lease.settleCall(callId, callNano, callTokens, chargeNano, tokens, event);
    this.settlement.journal?.call(lease, settled);
    // A one-call lease (or one that cannot admit the next call) is done: close it with this batch.
    if (lease.slotsLeft === 0 || lease.creditLeft === 0n || (lease.tokenBudgeted && lease.tokensLeft === 0)) this.retire(lease, Date.now());
    this.queueFlush(lease);
    return settled.chargeNano;
  }

  /**
   * A message on the recall channel (keys.leaseRecallChannel()): `r<user>` recalls this thread's
   * leases of the user, `d<user>` wakes the calls waiting for such a recall.
   */
  onRecallMessage(message: string): void {
    const userId = message.slice(1);
    if (message.startsWith('r')) this.recall(userId);
    else if (message.startsWith('d')) for (const wake of [...(this.recallWaiters.get(userId) ?? [])]) wake();
  }

  /**
   * Gives back now what this thread's leases of `userId` hold beyond their calls in flight: each is
   * retired (its unused credit released, Redis told it holds no slack any more), and its batch, with
   * the settlements waiting to leave, goes at once rather than at the next flush.
   */
  recall(userId: string): void {
    const nowMs = Date.now();
    for (const slot of this.slots.values()) {
      if (slot.lease?.userId === userId) this.retire(slot.lease, nowMs);
    }
    let sent = false;
    for (const lease of this.flushing) {
      if (lease.userId !== userId) continue;
      lease.urgent = true;
      this.send(lease);
      sent = true;
    }
    if (sent) this.scripts.flush();
  }

  /** Resolves after `ms`, or sooner when the recall of the user's leases is over. */
  private recallWait(userId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.recallWaiters.get(userId);
      if (!waiters) {
        waiters = new Set();
        this.recallWaiters.set(userId, waiters);
      }
      const set = waiters;
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.recallWaiters.get(userId) === set) this.recallWaiters.delete(userId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }

  /** Retires every lease and waits (at most `timeoutMs`) until all are closed in Redis. */
  async closeAll(timeoutMs: number): Promise<void> {
    const nowMs = Date.now();
    for (const slot of this.slots.values()) if (slot.lease) this.retire(slot.lease, nowMs);
    const until = Date.now() + timeoutMs;
    while (this.leasesOpen && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /**
   * Reserves a task's cost under `holdId` for as long as the task runs. Its request counts in the
   * key's rate windows, and the user's available credit and the key's credit limit apply, as for any
   * call. The hold has the normal reservation deadline until its task pins it (a submit that dies
   * before that leaves nothing held for long); it ends with task_settle.lua. Returns the rate headers.
   */
  async holdTask(userId: string, keyId: string, holdId: string, costNano: bigint, limits: KeyLimits): Promise<Readonly<Record<string, string>>> {
    const lease = await this.open(userId, keyId, costNano, 0, 1, limits, holdId);
    return rateLimitHeaders(lease.rateWindow(Date.now()));
  }

  private async open(userId: string, keyId: string, callNano: bigint, callTokens: number, wantCalls: number, limits: KeyLimits, holdId?: string): Promise<Lease> {
    const { rpm } = limits;
    const smallWindow = this.limits.requests < this.policy.minWindowLimit || (rpm !== null && rpm < this.policy.minWindowLimit);
    // 0 calls: credit for this one call only, outside the rate windows (see admitCredit).
    const calls = wantCalls === 0 ? 0 : smallWindow ? 1 : Math.min(this.policy.maxCalls, wantCalls);
    // The balance and the key's spend may each need loading first (at most twice in all).
    let loads = 0;
    // A call not covered while other leases hold slack waits (until this time) for their recall.
    let recallUntilMs: number | undefined;
    let recallWaitMs = RECALL_FIRST_WAIT_MS;
    for (;;) {
      // Settlements waiting to leave go first, in the same write: this admission must see them.
      this.sendWaiting();
      const leaseId = holdId ?? leaseIdFor(keyId);
      // The lease's life counts from before the round trip: Redis scored its slots no earlier.
      const sentAtMs = Date.now();
      const recallMs = recallUntilMs === undefined ? this.policy.recallMs : Math.max(0, recallUntilMs - sentAtMs);
      const started = process.hrtime.bigint();
      let result;
      try {
        result = await this.scripts.admit({
          userId, keyId, leaseId, callNano, wantCreditNano: callNano * BigInt(Math.max(1, calls)), wantSlots: calls,
          limit: this.limits.requests, windowMs: this.limits.windowMs, ttlMs: this.limits.reservationTtlMs, leaseLifeMs: this.policy.lifeMs, keyLimits: limits, callTokens,
          recallMs,
        });
      } catch (error) {
        // Without Redis nothing can be admitted safely: a retryable 503, not a 500.
        throw new ApiError(503, 'admission_unavailable', `Admission is unavailable right now (${(error as Error).message}); retry shortly.`, null, { 'retry-after': '1' });
      }
      this.admitDuration.observe(seconds(started));
      switch (result.kind) {
        case 'admitted':
          return this.leaseOf(leaseId, userId, keyId, limits, result.grant, callNano, callTokens, sentAtMs);
        case 'too_large':
          this.metrics.rejections.inc({ reason: 'token_limited' });
          throw new ApiError(400, 'request_too_large',
            `This request may use up to ${callTokens} tokens (its prompt's estimate plus the output allowance), more than this API key's ` +
            `rate_limit_${result.limit} of ${result.budget} tokens per ${result.limit === 'tph' ? 'hour' : 'day'} allows at all: lower max_tokens (or max_completion_tokens, max_output_tokens) or raise the limit.`,
            'max_tokens');
        case 'rate_limited':
          throw this.rateLimited(result.limit, result.retryAfterMs, limits);
        case 'insufficient_credits':
          this.metrics.rejections.inc({ reason: 'insufficient_credits' });
          throw new ApiError(402, 'insufficient_credits',
            `Insufficient credits: this request may cost up to ${nanoToUsd(callNano)} USD and ${nanoToUsd(Math.max(0, result.available))} USD is available.`);
        case 'credit_limit_reached':
          this.metrics.rejections.inc({ reason: 'credit_limit' });
          throw new ApiError(402, 'credit_limit_exceeded',
            `This API key's credit_limit of ${nanoToUsd(limits.capNano ?? 0n)} USD for the period that began ${new Date(limits.periodStartMs).toISOString()} ` +
            `does not cover this request (up to ${nanoToUsd(callNano)} USD; ${nanoToUsd(Math.max(0, result.capLeftNano))} USD left). ` +
            'It resets with the key\'s credit_reset_interval, or raise credit_limit.');
        case 'recalling':
          // Other leases (in any thread or process) hold unused credit that may cover this call:
          // admit.lua asked for it back. Ask again once it is back, or after a short pause; once
          // the wait is over, the answer is final.
          recallUntilMs ??= sentAtMs + this.policy.recallMs;
          await this.recallWait(userId, Math.min(recallWaitMs, Math.max(0, recallUntilMs - Date.now())));
          recallWaitMs *= 2;
          continue;
        case 'not_loaded':
          if (++loads > 2) throw new Error(`balance of ${userId} did not load`);
          await this.balances.load(userId);
          continue;
        case 'spend_not_loaded':
          if (++loads > 2) throw new Error(`spend of key ${keyId} did not load`);
          await this.balances.loadKeySpend(userId, keyId, limits.periodStartMs);
          continue;
      }
    }
  }

  private rateLimited(limit: RateLimitName, retryAfterMs: number, limits: KeyLimits): ApiError {
    this.metrics.rejections.inc({ reason: limit === 'tph' || limit === 'tpd' ? 'token_limited' : 'rate_limited' });
    const value = limit === 'window' ? this.limits.requests : limits[limit]!;
    const which = limit === 'window' ? defaultWindowText(this.limits) : LIMIT_TEXT[limit](value);
    const headers = limit === 'tph' || limit === 'tpd'
      ? { 'x-ratelimit-limit-tokens': String(value), 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': `${retryAfterMs / 1000}s` }
      : rateLimitHeaders({ limit: value, remaining: 0, resetMs: retryAfterMs });
    return rateLimitExceeded(which, retryAfterMs, headers);
  }

  private leaseOf(leaseId: string, userId: string, keyId: string, limits: KeyLimits, grant: LeaseGrant, callNano: bigint, callTokens: number, sentAtMs: number): Lease {
    this.metrics.leaseSlots.observe(grant.slots);
    return new Lease(leaseId, userId, keyId, limits, grant, callNano, callTokens, sentAtMs);
  }

  /** Stops `lease` admitting, sizes its key's next lease from how fast this one ran out, and closes it once idle. */
  private retire(lease: Lease, nowMs: number): void {
    if (!lease.accepting) return;
    const slot = this.slots.get(slotId(lease.userId, lease.keyId));
    if (slot) {
      const ranOut = nowMs - lease.openedAtMs < this.policy.lifeMs && lease.slotsLeft === 0;
      slot.nextCalls = Math.max(1, Math.min(this.policy.maxCalls, ranOut ? lease.admitted * 2 : lease.admitted));
      if (slot.lease === lease) slot.lease = undefined;
    }
    lease.retire();
    this.queueFlush(lease);
  }

  private queueFlush(lease: Lease): void {
    this.flushing.add(lease);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const flush = () => {
      this.sendWaiting();
      this.scripts.flush();
    };
    if (this.settlement.flushMs > 0) setTimeout(flush, this.settlement.flushMs);
    else setImmediate(flush);
  }

  /** Queues the next batch of every lease with settlements or a release waiting. */
  private sendWaiting(): void {
    this.flushScheduled = false;
    for (const waiting of this.flushing) this.send(waiting);
  }

  /** Sends the lease's next batch unless one is already on its way (batches of a lease go in order). */
  private send(lease: Lease): void {
    if (lease.sending) return;
    const close = lease.closable;
    if (lease.pending.length === 0 && lease.releaseNano === 0n && lease.tokensFreed === 0 && !close && !lease.slackReportDue && !lease.refreshDue) {
      this.flushing.delete(lease);
      return;
    }
    const calls = lease.pending;
    const releaseNano = lease.releaseNano;
    const tokensFreed = lease.tokensFreed;
    const batch = lease.batch + 1;
    lease.pending = [];
    lease.releaseNano = 0n;
    lease.tokensFreed = 0;
    lease.sending = true;
    lease.refreshDue = false;
    lease.reportedAtMs = Date.now();
    // What the lease holds beyond its calls in flight once this batch is applied (see Lease).
    const slackNano = lease.accepting ? lease.creditLeft : 0n;
    const retired = !lease.accepting;
    lease.reportedSlack = slackNano;
    if (retired) lease.retirementSent = true;
    const started = process.hrtime.bigint();
    const input = {
      userId: lease.userId, keyId: lease.keyId, leaseId: lease.id, epoch: lease.epoch, batch, ttlMs: this.limits.reservationTtlMs,
      close, unusedSlots: close ? lease.slotsLeft : 0, releaseNano, calls, slackNano, retired, tokensFreed,
    };
    const journaled = this.settlement.journal?.batch(lease, batch, calls, releaseNano, close, input.unusedSlots);
    const attempt = (tries: number): void => {
      this.scripts.settle(input).then(async (result) => {
        this.settleDuration.observe(seconds(started));
        if (result.kind === 'not_loaded') {
          // Redis lost the user's balance (and with it this lease): rebuild it, then charge the batch.
          await this.balances.load(lease.userId);
          attempt(tries + 1);
          return;
        }
        if (result.kind === 'outside') {
          // A batch with no call (a deadline refresh) charges nothing: it only finds the lease gone.
          if (calls.length > 0) {
            this.metrics.settledOutsideLease.inc();
            log.warn('calls charged without their lease (released at its deadline, or lost with Redis\'s data)', {
              leaseId: lease.id, userId: lease.userId, calls: calls.length, chargedNano: String(result.chargedNano),
            });
          }
          if (!close) this.retire(lease, Date.now());
        } else if (result.kind === 'closed' && !close) {
          log.error('settlement batch for a lease Redis says was closed; not charged', { leaseId: lease.id, userId: lease.userId, batch, calls: calls.length });
          this.retire(lease, Date.now());
        }
        if (journaled) this.settlement.journal!.acknowledged(journaled);
        lease.batch = batch;
        lease.sending = false;
        if (close) {
          lease.closed = true;
          this.flushing.delete(lease);
          this.live.delete(lease);
        } else if (this.settlement.flushMs > 0 && !lease.urgent) {
          // What settled meanwhile waits for the next flush too, not just for this reply.
          this.queueFlush(lease);
        } else {
          this.send(lease);
        }
      }).catch((error: Error) => {
        // The same batch number again: applied once whatever happened to the first try.
        if (tries % 10 === 0) log.error('settlement batch failed; retrying', { leaseId: lease.id, batch, calls: calls.length, error });
        setTimeout(() => attempt(tries + 1), Math.min(1000, 10 * 2 ** Math.min(tries, 7))).unref();
      });
    };
    attempt(0);
  }

  /** Retires leases unused for `idleMs` or past their life, and forgets idle keys; stops once no lease is left. */
  private sweep(nowMs: number): void {
    let leased = false;
    for (const [id, slot] of this.slots) {
      const lease = slot.lease;
      if (lease && (nowMs - lease.lastUsedAtMs >= this.policy.idleMs || nowMs - lease.openedAtMs >= this.policy.lifeMs)) this.retire(lease, nowMs);
      if (slot.lease) leased = true;
      else if (!slot.opening && nowMs - slot.lastUsedAtMs > 60_000) this.slots.delete(id);
    }
    if (!leased) {
      clearInterval(this.sweepTimer);
      this.sweepTimer = undefined;
    }
  }
}
