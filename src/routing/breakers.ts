/**
 * Circuit breakers of the routing targets, one fixed slot per target in memory every HTTP thread of
 * the process shares (a SharedArrayBuffer the main thread creates): what one thread learns about a
 * failing target, the others skip at once. Not shared across processes: that would put a network
 * round trip on every call, and each process learns a target's state in a few calls by itself.
 *
 * A slot holds, read and written with Atomics: the time until which the target is cooled down (0:
 * closed), the time until which a half-open probe call holds it (0: none), and the consecutive
 * retryable failures. A cooled-down target past its time is half-open: one caller claims the probe;
 * its success closes the breaker, its failure cools the target down again.
 */

export type BreakerState = 'closed' | 'open' | 'half_open';

/** A state change, for metrics and logs. */
export type BreakerListener = (slot: number, to: BreakerState) => void;

export interface BreakerPolicy {
  /** Consecutive retryable failures that open the breaker. */
  readonly failures: number;
  readonly cooldownMs: number;
  /** A probe that neither succeeded nor failed within this frees the target for another probe. */
  readonly probeMs: number;
}

/** 8 bytes each: cooldown-until and probe-until (epoch ms); then 4 bytes of failure count. */
const BYTES_PER_SLOT = 8 + 8 + 4;

export function breakerMemory(slots: number): SharedArrayBuffer {
  return new SharedArrayBuffer(Math.max(1, slots) * BYTES_PER_SLOT + 8);
}

export class Breakers {
  private readonly until: BigInt64Array;
  private readonly probe: BigInt64Array;
  private readonly failures: Int32Array;

  constructor(memory: SharedArrayBuffer, readonly slots: number, private readonly policy: BreakerPolicy,
    private readonly now: () => number = Date.now, private readonly onChange: BreakerListener = () => {}) {
    const n = Math.max(1, slots);
    this.until = new BigInt64Array(memory, 0, n);
    this.probe = new BigInt64Array(memory, 8 * n, n);
    this.failures = new Int32Array(memory, 16 * n, n);
  }

  state(slot: number): BreakerState {
    const until = Number(Atomics.load(this.until, slot));
    if (until === 0) return 'closed';
    return this.now() < until ? 'open' : 'half_open';
  }

  /** When a cooled-down target is due again (0 when it is not cooled down). */
  dueAt(slot: number): number {
    return Number(Atomics.load(this.until, slot));
  }

  /** May take a call now: closed, or half-open with no probe under way (claim it with `claim`). */
  available(slot: number): boolean {
    const until = Atomics.load(this.until, slot);
    if (until === 0n) return true;
    const now = this.now();
    return now >= Number(until) && now >= Number(Atomics.load(this.probe, slot));
  }

  /**
   * Takes the target for a call: always for a closed one; for a half-open one, only the caller that
   * wins the probe (false for the others). `force`: the call has nowhere else to go.
   */
  claim(slot: number, force = false): boolean {
    const until = Atomics.load(this.until, slot);
    if (until === 0n || force) return true;
    const now = this.now();
    if (now < Number(until)) return false;
    const held = Atomics.load(this.probe, slot);
    if (now < Number(held)) return false;
    if (Atomics.compareExchange(this.probe, slot, held, BigInt(now + this.policy.probeMs)) !== held) return false;
    this.onChange(slot, 'half_open');
    return true;
  }

  /**
   * The target answered (anything but a retryable failure): resets its failure count, and closes a
   * half-open breaker. An open one stays open: the answer is to an attempt sent before the target
   * was cooled down (or to a call that had nowhere else to go), which says nothing of its recovery;
   * only a call after the cooldown (the probe) may close it.
   */
  succeeded(slot: number): void {
    if (Atomics.load(this.failures, slot) !== 0) Atomics.store(this.failures, slot, 0);
    const until = Atomics.load(this.until, slot);
    if (until === 0n || this.now() < Number(until)) return;
    Atomics.store(this.probe, slot, 0n);
    if (Atomics.exchange(this.until, slot, 0n) !== 0n) this.onChange(slot, 'closed');
  }

  /**
   * A retryable failure: cools the target down after `policy.failures` in a row, at once after a
   * failed probe, and until `retryAfterMs` from now when the upstream said when to come back.
   */
  failed(slot: number, retryAfterMs?: number): void {
    const count = Atomics.add(this.failures, slot, 1) + 1;
    const until = Atomics.load(this.until, slot);
    const cooled = until !== 0n; // open, or half-open: a probe (or a call with nowhere else to go) failed
    if (retryAfterMs === undefined && !cooled && count < this.policy.failures) return;
    const now = this.now();
    const next = BigInt(now + (retryAfterMs ?? this.policy.cooldownMs));
    if (next > until) Atomics.store(this.until, slot, next);
    Atomics.store(this.probe, slot, 0n);
    if (!cooled || now >= Number(until)) this.onChange(slot, 'open');
  }
}
