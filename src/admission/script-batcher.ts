import type { ChainableCommander } from 'ioredis';
import type { RedisKeys } from './keys.js';
import { admitResultOf, settleResultOf, type AdmitInput, type AdmitResult, type Reply, type ScriptedRedis, type SettleInput, type SettleResult } from './scripts.js';

interface Queued {
  readonly add: (pipeline: ChainableCommander) => void;
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Runs admit.lua and settle.lua for the hot path. Every call made during one turn of the event loop
 * leaves in one pipeline at the end of that turn (setImmediate): one write and, under load, one read
 * for all of them, instead of a write and a wake-up per request. Each script stays one atomic call;
 * a lone request pays nothing extra but the rest of its own turn.
 */
export class ScriptBatcher {
  private queue: Queued[] = [];
  private dirtyUsers = new Set<string>();
  private scheduled = false;

  constructor(private readonly redis: ScriptedRedis, private readonly keys: RedisKeys) {}

  admit(input: AdmitInput): Promise<AdmitResult> {
    const { keys } = this;
    const { userId, keyId, keyLimits: limits } = input;
    return this.enqueue((pipeline) => pipeline.admit(
      keys.rateWindow(userId, keyId), keys.rateWeights(userId, keyId), keys.minuteWindow(userId, keyId), keys.minuteWeights(userId, keyId),
      keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.keySpend(userId, keyId), keys.keyTokens(userId, keyId),
      input.leaseId, input.callNano.toString(), input.wantCreditNano.toString(), input.wantSlots, input.limit, input.windowMs, input.ttlMs, input.leaseLifeMs,
      limits.rpm ?? -1, limits.capNano === null ? -1 : limits.capNano.toString(), limits.periodStartMs, limits.tph ?? -1, limits.tpd ?? -1,
      input.callTokens,
    )).then((reply) => admitResultOf(reply, input.limit));
  }

  /** settle.lua, and the user marked for the ledger writer (once per batch, whatever the number of calls). */
  settle(input: SettleInput): Promise<SettleResult> {
    const { keys } = this;
    const { userId, keyId } = input;
    if (input.calls.length > 0) this.dirtyUsers.add(userId);
    const argv: (string | number)[] = [
      keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.ledger(userId),
      keys.rateWindow(userId, keyId), keys.rateWeights(userId, keyId), keys.leaseBatches(userId), keys.expiredLeases(userId),
      keys.minuteWindow(userId, keyId), keys.minuteWeights(userId, keyId), keys.keySpend(userId, keyId), keys.keyTokens(userId, keyId),
      input.leaseId, input.batch, input.ttlMs, input.close ? 1 : 0, input.unusedSlots, input.releaseNano.toString(), input.epoch,
    ];
    for (const call of input.calls) argv.push(call.callId, call.chargeNano.toString(), call.tokens, call.event);
    return this.enqueue((pipeline) => pipeline.settle(...argv)).then(settleResultOf);
  }

  private enqueue(add: (pipeline: ChainableCommander) => void): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      this.queue.push({ add, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    const dirty = [...this.dirtyUsers];
    this.queue = [];
    this.dirtyUsers.clear();
    const pipeline = this.redis.pipeline();
    for (const item of batch) item.add(pipeline);
    if (dirty.length > 0) pipeline.sadd(this.keys.ledgerDirty(), ...dirty);
    pipeline.exec().then(
      (results) => batch.forEach((item, i) => {
        const [error, reply] = results?.[i] ?? [new Error('no reply from Redis'), null];
        if (error) item.reject(error);
        else item.resolve(reply as Reply);
      }),
      (error: Error) => batch.forEach((item) => item.reject(error)),
    );
  }
}
