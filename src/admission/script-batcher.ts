import type { RedisKeys } from './keys.js';
import { dirtyMarks } from '../ledger/dirty-set.js';
import { RespError, type RedisPipe, type RespCommand, type RespValue } from '../store/redis-pipe.js';
import {
  admitResultOf, countResultOf, loadScript, settleResultOf, type AdmitInput, type AdmitResult, type CountInput, type CountResult, type LuaScript, type Reply, type SettleInput, type SettleResult,
} from './scripts.js';

interface Queued {
  readonly script: LuaScript;
  /** KEYS then ARGV. */
  readonly args: readonly (string | number)[];
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
}

const evalsha = (item: Queued): RespCommand => ['EVALSHA', item.script.sha, item.script.numberOfKeys, ...item.args];
const evalSource = (item: Queued): RespCommand => ['EVAL', item.script.lua, item.script.numberOfKeys, ...item.args];

/**
 * Runs admit.lua and settle.lua for the hot path. Every call made during one turn of the event loop
 * leaves in one batch at the end of that turn (setImmediate): one write and, under load, one read
 * for all of them, instead of a write and a wake-up per request. Each script stays one atomic call;
 * a lone request pays nothing extra but the rest of its own turn. Scripts go by SHA; one Redis has
 * not cached yet (a restart, SCRIPT FLUSH) is sent again with its source.
 */
export class ScriptBatcher {
  private queue: Queued[] = [];
  private dirtyUsers = new Set<string>();
  private scheduled = false;
  private readonly admitScript = loadScript('admit');
  private readonly settleScript = loadScript('settle');
  private readonly countScript = loadScript('count');

  /** `onLedgerMarked`: settle.lua appended ledger events and their users are marked for the ledger writer. */
  constructor(private readonly redis: RedisPipe, private readonly keys: RedisKeys, private readonly onLedgerMarked?: () => void) {}

  admit(input: AdmitInput): Promise<AdmitResult> {
    const { keys } = this;
    const { userId, keyId, keyLimits: limits } = input;
    return this.enqueue(this.admitScript, [
      keys.rateWindow(userId, keyId), keys.rateWeights(userId, keyId), keys.minuteWindow(userId, keyId), keys.minuteWeights(userId, keyId),
      keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.keySpend(userId, keyId), keys.keyTokens(userId, keyId),
      keys.leaseSlack(userId), keys.leaseRecall(userId),
      input.leaseId, input.callNano.toString(), input.wantCreditNano.toString(), input.wantSlots, input.limit, input.windowMs, input.ttlMs, input.leaseLifeMs,
      limits.rpm ?? -1, limits.capNano === null ? -1 : limits.capNano.toString(), limits.periodStartMs, limits.tph ?? -1, limits.tpd ?? -1,
      input.callTokens, keyId, input.recallMs ?? 0, keys.leaseRecallChannel(), userId,
    ]).then((reply) => admitResultOf(reply, input.limit));
  }

  /**
   * count.lua: one request of the key counted in one of its request windows, nothing admitted (see
   * Admission.countRequest and RequestWindows); with a limit, only while the window has room.
   */
  count(input: CountInput): Promise<CountResult> {
    const { keys } = this;
    const { userId, keyId } = input;
    const reads = input.window === 'reads';
    return this.enqueue(this.countScript, [
      reads ? keys.readWindow(userId, keyId) : keys.rateWindow(userId, keyId), reads ? keys.readWeights(userId, keyId) : keys.rateWeights(userId, keyId),
      keys.minuteWindow(userId, keyId), keys.minuteWeights(userId, keyId),
      input.memberId, input.windowMs, input.leaseLifeMs, input.rpm && !reads ? 1 : 0, input.limit ?? -1,
    ]).then(countResultOf);
  }

  /**
   * count.lua on a client address's sign-in window: the request counted while the window holds fewer
   * than `limit`. The script's per-minute keys are the same two (never touched: no per-minute window).
   */
  countSignIn(address: string, memberId: string, windowMs: number, limit: number): Promise<CountResult> {
    const window = this.keys.signInWindow(address);
    const weights = this.keys.signInWeights(address);
    return this.enqueue(this.countScript, [window, weights, window, weights, memberId, windowMs, 0, 0, limit]).then(countResultOf);
  }

  /** settle.lua, and the user marked for the ledger writer (once per batch, whatever the number of calls). */
  settle(input: SettleInput): Promise<SettleResult> {
    const { keys } = this;
    const { userId, keyId } = input;
    if (input.calls.length > 0) this.dirtyUsers.add(userId);
    const args: (string | number)[] = [
      keys.balance(userId), keys.reservations(userId), keys.reservationDeadlines(userId), keys.ledger(userId),
      keys.rateWindow(userId, keyId), keys.rateWeights(userId, keyId), keys.leaseBatches(userId), keys.expiredLeases(userId),
      keys.minuteWindow(userId, keyId), keys.minuteWeights(userId, keyId), keys.keySpend(userId, keyId), keys.keyTokens(userId, keyId),
      keys.leaseSlack(userId), keys.leaseRecall(userId),
      input.leaseId, input.batch, input.ttlMs, input.close ? 1 : 0, input.unusedSlots, input.releaseNano.toString(), input.epoch,
      input.slackNano === undefined ? -1 : input.slackNano.toString(), input.retired ? 1 : 0, keys.leaseRecallChannel(), userId,
      input.tokensFreed ?? 0,
    ];
    for (const call of input.calls) args.push(call.callId, call.chargeNano.toString(), call.tokens, call.event);
    return this.enqueue(this.settleScript, args).then(settleResultOf);
  }

  private enqueue(script: LuaScript, args: readonly (string | number)[]): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      this.queue.push({ script, args, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Sends what is queued now. The end-of-turn flush calls it; so does admission's own end-of-turn
   * pass, whose settlements would otherwise wait one more loop iteration (and an extra epoll call).
   */
  flush(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    const commands = batch.map(evalsha);
    // One SADD per dirty set the batch's users fall in (see ledger/dirty-set.ts).
    const markDirty: RespCommand[] = [];
    if (this.dirtyUsers.size > 0) for (const [key, users] of dirtyMarks(this.keys, this.dirtyUsers)) markDirty.push(['SADD', key, ...users]);
    this.dirtyUsers.clear();
    // One node runs a batch in order, so the mark rides behind the scripts; a cluster's nodes do not
    // (the mark's node might run it first): there it leaves once the scripts have answered.
    const markAfter = this.redis.cluster;
    if (!markAfter) commands.push(...markDirty);
    const marked = () => {
      if (markDirty.length === 0) return;
      if (!markAfter) this.onLedgerMarked?.();
      // A lost mark only delays the writer until its periodic scan.
      else this.redis.exec(markDirty).then(() => this.onLedgerMarked?.(), () => {});
    };
    this.redis.exec(commands).then(
      (replies) => {
        const uncached: Queued[] = [];
        batch.forEach((item, i) => {
          const reply = replies[i];
          if (reply instanceof RespError && reply.message.startsWith('NOSCRIPT')) uncached.push(item);
          else settleItem(item, reply);
        });
        if (uncached.length > 0) {
          // The script was not run: running it now by its source is the same single atomic call.
          // The users are marked again after it, so the ledger writer cannot miss what it appends.
          this.redis.exec([...uncached.map(evalSource), ...(markAfter ? [] : markDirty)]).then(
            (again) => {
              uncached.forEach((item, i) => settleItem(item, again[i]));
              marked();
            },
            (error: Error) => uncached.forEach((item) => item.reject(error)),
          );
        } else {
          marked();
        }
      },
      (error: Error) => batch.forEach((item) => item.reject(error)),
    );
  }
}

function settleItem(item: Queued, reply: RespValue | undefined): void {
  if (reply instanceof RespError) item.reject(reply);
  else if (!Array.isArray(reply)) item.reject(new Error(`a Lua script answered ${JSON.stringify(reply)}, not an array`));
  else item.resolve(reply as Reply);
}
