/**
 * The task runtime of one gateway process: per-user actors fed by Redis Streams.
 *
 * Users are spread over S shards (`hash(user) mod S`). Each shard has a stream (messages), a timer
 * set (polls, retries and callback attempts, moved into the stream when due) and a lease. A process
 * owns the shards the rendezvous hash gives it among the live processes (ShardLeases); only the
 * owner reads a shard's stream. Messages go to one mailbox per user, so one user's steps run one at
 * a time and in order (their tasks start in submission order) while different users run in
 * parallel. A step runs the task's next move from its row in Postgres (TaskSteps); its I/O runs in
 * the worker pool. A message is acknowledged once its step's effects are written; a new owner claims
 * the previous owner's unacknowledged messages (XAUTOCLAIM) and schedules every open task of the
 * shard from Postgres, so a dead process, a handed-over shard or a Redis that lost its data leaves
 * no task behind.
 */
import type { Redis } from 'ioredis';
import { connectToKeyOwner, isCluster } from '../store/redis-connect.js';
import { log } from '../log.js';
import { openTasksOfShard, type TaskRow } from '../store/tasks.js';
import { ShardLeases, type OwnedShard } from './shards.js';
import { TaskSteps, type StepKind, type StepLease, type TaskStepDeps } from './task-steps.js';
import { inTaskContext } from './task-tracing.js';

const GROUP = 'actors';
/** Longest a shard reader blocks (closing its connection ends the block at once when the shard goes). */
const READ_BLOCK_MS = 15_000;
const READ_COUNT = 100;
const TIMERS_PER_MOVE = 500;
/** How often waiting starts look for a free slot again, and gauges are refreshed. */
const HOUSEKEEPING_MS = 1000;
/** Gauges are read every this many rounds (each read asks Redis about every owned shard). */
const GAUGE_ROUNDS = 10;
/**
 * Longest pause between timer passes. This process schedules every timer of the shards it owns, so it
 * knows when the next is due and sleeps until then; this bound is a safety net.
 */
const TIMER_IDLE_MS = 5000;
/** Every this many rounds, open tasks older than that many seconds with no timer get one (a lost message). */
const SWEEP_ROUNDS = 60;

interface Message {
  readonly shard: number;
  readonly token: bigint;
  readonly id: string;
  readonly kind: StepKind;
  readonly taskId: string;
  readonly userId: string;
}

interface Mailbox {
  readonly queue: Message[];
  /** Starts waiting for one of the user's slots, in submission order. */
  readonly waiting: Message[];
  running: boolean;
  /** A task of the user ended during this run: a waiting start may find a slot now. */
  slotFreed: boolean;
}

interface Reader {
  readonly token: bigint;
  /** Its own connection, as XREADGROUP blocks it: on a cluster, to the node serving the shard's slot (opened again when that moves). */
  connection: Redis | undefined;
  stopped: boolean;
}

export interface TaskRuntimeOptions extends Omit<TaskStepDeps, 'schedule' | 'onEnded' | 'track'> {
  /** This process's id among the task runtime's members (unique per process start). */
  readonly owner: string;
  /** A task ended (after Postgres recorded it): balance alerts look at its user. */
  readonly onTaskEnded?: (row: TaskRow) => void;
}

/** A counting semaphore: at most `limit` steps at once in this process. */
class Slots {
  private used = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async take(): Promise<void> {
    if (this.used < this.limit) {
      this.used++;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  give(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.used--;
  }
}

export class TaskRuntime {
  readonly leases: ShardLeases;
  private readonly steps: TaskSteps;
  private readonly readers = new Map<number, Reader>();
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly slots: Slots;
  private readonly running = new Set<Promise<void>>();
  private timerLoop: NodeJS.Timeout | undefined;
  /** When the next timer pass is planned (Infinity: none planned). */
  private timerAt = Infinity;
  private housekeeping: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly options: TaskRuntimeOptions) {
    const { redis, keys, config, metrics } = options;
    this.slots = new Slots(config.tasks.maxSteps);
    this.steps = new TaskSteps({
      ...options,
      schedule: (lease, kind, row, delayMs) => this.schedule(lease.shard, kind, row, delayMs),
      track: (work) => this.track(work),
      onEnded: (row) => {
        const box = this.mailboxes.get(row.user_id);
        if (box) box.slotFreed = true;
        this.kick(row.user_id);
        options.onTaskEnded?.(row);
      },
    });
    this.leases = new ShardLeases(redis, keys, options.owner, { shards: config.tasks.shards, leaseMs: config.tasks.leaseMs }, {
      acquired: (owned) => {
        metrics.shardMoves.inc({ event: 'acquired' });
        log.info('task shard acquired', { shard: owned.shard, owner: options.owner });
        this.track(this.open(owned));
      },
      lost: (shard, reason) => {
        metrics.shardMoves.inc({ event: reason === 'released' ? 'released' : 'lost' });
        if (reason === 'expired') log.warn('task shard lease lost; its tasks go on at the next owner', { shard, owner: options.owner });
        this.closeReader(shard);
      },
    }, (error) => log.error('task shard lease round failed; retried', { error }));
  }

  start(): void {
    this.leases.start();
    let rounds = 0;
    this.housekeeping = setInterval(() => {
      for (const [userId, box] of this.mailboxes) if (box.waiting.length > 0) this.kick(userId);
      if (++rounds % GAUGE_ROUNDS === 0) this.track(this.refreshGauges().catch(() => {}));
      if (rounds % SWEEP_ROUNDS === 0) {
        const before = new Date(Date.now() - SWEEP_ROUNDS * HOUSEKEEPING_MS);
        for (const shard of this.leases.tokens.keys()) {
          this.track(this.scheduleOpenTasks(shard, before).catch((error) => log.warn('sweeping open tasks failed; retried', { shard, error })));
        }
      }
    }, HOUSEKEEPING_MS);
  }

  /** Stops reading, lets the steps under way finish (until `deadlineMs`), then hands every shard over. */
  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timerLoop);
    clearInterval(this.housekeeping);
    for (const shard of [...this.readers.keys()]) this.closeReader(shard);
    const until = Date.now() + deadlineMs;
    while (this.running.size > 0 && Date.now() < until) {
      await Promise.race([Promise.allSettled([...this.running]), new Promise((resolve) => setTimeout(resolve, Math.max(1, until - Date.now())))]);
    }
    await this.leases.stop();
    await this.options.workers.close();
  }

  private track(work: Promise<void>): void {
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  // ---- shards ----

  /** A shard just became ours: its group, its unacknowledged messages, its open tasks, then its reader. */
  private async open(owned: OwnedShard): Promise<void> {
    const { redis, keys, owner } = this.options;
    const stream = keys.taskStream(owned.shard);
    try {
      await this.ensureGroup(stream);
      // Whatever earlier owners took and did not acknowledge is ours now (the lease says they lost it).
      for (let cursor = '0-0'; ;) {
        const [next, entries] = await redis.xautoclaim(stream, GROUP, owner, 0, cursor, 'COUNT', 500) as [string, [string, string[]][]];
        for (const entry of entries) if (entry) this.dispatch(owned, entry);
        if (next === '0-0' || entries.length === 0) break;
        cursor = next;
      }
      await this.scheduleOpenTasks(owned.shard);
      this.planTimers(Date.now()); // timers an earlier owner left, and those just made
    } catch (error) {
      log.error('opening a task shard failed; its lease is given up and claimed again', { shard: owned.shard, error });
      await this.leases.giveUp(owned.shard).catch(() => {});
      return;
    }
    if (!this.leases.holds(owned.shard, owned.token) || this.stopping) return;
    const reader: Reader = { token: owned.token, connection: undefined, stopped: false };
    this.readers.set(owned.shard, reader);
    this.track(this.read(owned, reader));
  }

  /**
   * Open work the stream and timers may not know (a Redis that lost its data, a submit that died
   * before its message): every open task of the shard without a timer gets one, in submission order.
   * A task whose step is under way may get a second step; it finds the row moved on and does nothing twice.
   */
  private async scheduleOpenTasks(shard: number, createdBefore?: Date): Promise<void> {
    const { redis, keys, sql } = this.options;
    const open = await openTasksOfShard(sql, shard, createdBefore);
    if (open.length === 0) return;
    const now = Date.now();
    const batch = redis.multi();
    open.forEach((row, index) => batch.zadd(keys.taskTimers(shard), 'NX', now + index, timerMember(row.status === 'pending' ? 'a' : 'c', row)));
    await batch.exec();
    this.planTimers(now);
  }

  private async ensureGroup(stream: string): Promise<void> {
    try {
      await this.options.redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error;
    }
  }

  private async read(owned: OwnedShard, reader: Reader): Promise<void> {
    const { redis, keys, config } = this.options;
    const stream = keys.taskStream(owned.shard);
    while (!reader.stopped && this.leases.holds(owned.shard, owned.token)) {
      try {
        if (!reader.connection) {
          const connection = await connectToKeyOwner(config.redisUrl, redis, stream, { maxRetriesPerRequest: null });
          if (reader.stopped) {
            connection.disconnect();
            break;
          }
          reader.connection = connection;
        }
        const reply = await reader.connection.xreadgroup('GROUP', GROUP, this.options.owner, 'COUNT', READ_COUNT, 'BLOCK', READ_BLOCK_MS, 'STREAMS', stream, '>') as [string, [string, string[]][]][] | null;
        for (const [, entries] of reply ?? []) for (const entry of entries) this.dispatch(owned, entry);
      } catch (error) {
        if (reader.stopped) break;
        // The group is gone when Redis lost its data: make it again (the lease round notices the rest).
        const message = String((error as Error).message);
        if (message.startsWith('NOGROUP')) await this.ensureGroup(stream).catch(() => {});
        else log.warn('reading a task shard failed; retried', { shard: owned.shard, error });
        // On a cluster the connection is to one node, and ends with it: the next one goes where the slot is now.
        const reopen = isCluster(redis) && (!reader.connection || reader.connection.status === 'end' || /^(MOVED|ASK|CLUSTERDOWN|TRYAGAIN) /.test(message));
        if (reopen) {
          reader.connection?.disconnect();
          reader.connection = undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, reopen ? 1000 : 100));
      }
    }
    reader.connection?.disconnect();
  }

  private closeReader(shard: number): void {
    const reader = this.readers.get(shard);
    if (!reader) return;
    this.readers.delete(shard);
    reader.stopped = true;
    reader.connection?.disconnect();
  }

  // ---- timers ----

  /**
   * Plans a pass over the owned shards' timers at `atMs` unless one is planned sooner. Passes are at
   * least TASK_TIMER_TICK_MS apart, so timers due close together move in one pass.
   */
  private planTimers(atMs: number): void {
    if (this.stopping || atMs >= this.timerAt) return;
    clearTimeout(this.timerLoop);
    this.timerAt = atMs;
    this.timerLoop = setTimeout(() => {
      this.timerAt = Infinity;
      const { timerTickMs } = this.options.config.tasks;
      this.track(this.moveDueTimers().then(
        (nextMs) => this.planTimers(Date.now() + Math.max(timerTickMs, Math.min(nextMs, TIMER_IDLE_MS))),
        (error) => {
          log.error('moving due task timers failed; retried', { error });
          this.planTimers(Date.now() + timerTickMs);
        },
      ));
    }, Math.max(0, atMs - Date.now()));
  }

  /** Moves every owned shard's due timers into its stream; returns ms until the next one is due (Infinity: none). */
  private async moveDueTimers(): Promise<number> {
    const { redis, keys } = this.options;
    const shards = [...this.leases.tokens.keys()];
    const replies = await Promise.all(shards.map((shard) => redis.timers_due(keys.taskTimers(shard), keys.taskStream(shard), TIMERS_PER_MOVE)));
    let nextMs = Infinity;
    for (const [moved = 0, untilNext = -1] of replies) {
      if (moved >= TIMERS_PER_MOVE) nextMs = 0; // more are due than one pass moves
      else if (untilNext >= 0) nextMs = Math.min(nextMs, untilNext);
    }
    return nextMs;
  }

  /**
   * A step of `row` on `shard`, `delayMs` from now, as a timer: one per task and kind, so scheduling it
   * again moves it rather than adding a second step (a callback is never attempted twice at once).
   */
  private async schedule(shard: number, kind: StepKind, row: Pick<TaskRow, 'id' | 'user_id'>, delayMs: number): Promise<void> {
    const { redis, keys } = this.options;
    const dueMs = Date.now() + Math.max(0, delayMs);
    await redis.zadd(keys.taskTimers(shard), dueMs, timerMember(kind, row));
    this.planTimers(dueMs);
  }

  // ---- mailboxes ----

  private dispatch(owned: OwnedShard, [id, fields]: [string, string[]]): void {
    const named = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) named.set(fields[i]!, fields[i + 1]!);
    const kind = named.get('k');
    const taskId = named.get('t');
    const userId = named.get('u');
    if ((kind !== 'a' && kind !== 'c' && kind !== 'x') || !taskId || !userId) {
      log.error('unreadable task message dropped', { shard: owned.shard, id });
      void this.ack(owned.shard, id);
      return;
    }
    let box = this.mailboxes.get(userId);
    if (!box) {
      box = { queue: [], waiting: [], running: false, slotFreed: false };
      this.mailboxes.set(userId, box);
    }
    box.queue.push({ shard: owned.shard, token: owned.token, id, kind, taskId, userId });
    this.kick(userId);
  }

  /** Runs the user's mailbox unless it is running already. */
  private kick(userId: string): void {
    const box = this.mailboxes.get(userId);
    if (!box || box.running) return;
    box.running = true;
    box.slotFreed = false;
    this.track(this.runMailbox(userId, box).finally(() => {
      box.running = false;
      if (box.queue.length === 0 && box.waiting.length === 0) this.mailboxes.delete(userId);
      else if (box.queue.length > 0 || box.slotFreed) this.kick(userId);
    }));
  }

  private async runMailbox(userId: string, box: Mailbox): Promise<void> {
    // Waiting starts first, while a slot is free: they were submitted before anything queued behind them.
    while (box.waiting.length > 0 && !this.stopping && await this.steps.slotFree(userId)) {
      if (!(await this.process(box, box.waiting.shift()!, true))) break;
    }
    for (let message = box.queue.shift(); message && !this.stopping; message = box.queue.shift()) {
      await this.process(box, message, false);
    }
  }

  /** One message's step; false when it went (back) to wait for a slot. */
  private async process(box: Mailbox, message: Message, fromWaiting: boolean): Promise<boolean> {
    if (!this.leases.holds(message.shard, message.token)) return true; // the new owner has it
    const lease: StepLease = { shard: message.shard, token: message.token };
    await this.slots.take();
    let row: TaskRow | undefined;
    try {
      row = await this.steps.load(message.taskId);
      if (row && message.kind === 'a' && this.steps.isStart(row)) {
        // A start behind waiting starts waits behind them; one that finds the user's slots taken waits too.
        if ((!fromWaiting && box.waiting.length > 0) || !(await this.steps.slotFree(row.user_id))) {
          if (fromWaiting) box.waiting.unshift(message);
          else box.waiting.push(message);
          return false;
        }
      }
      if (row) await this.steps.run(row, message.kind, lease);
    } catch (error) {
      inTaskContext(row, () => log.error('task step failed; retried', { task: message.taskId, error }));
      this.options.metrics.steps.inc({ kind: message.kind === 'c' ? 'callback' : message.kind === 'x' ? 'cancel' : 'advance', outcome: 'error' });
      try {
        await this.schedule(message.shard, message.kind, { id: message.taskId, user_id: message.userId }, this.options.config.tasks.retryMs);
      } catch {
        return true; // not acknowledged: the message stays pending and comes back with the shard's next owner
      }
    } finally {
      this.slots.give();
    }
    await this.ack(message.shard, message.id);
    return true;
  }

  private async ack(shard: number, id: string): Promise<void> {
    const stream = this.options.keys.taskStream(shard);
    await this.options.redis.multi().xack(stream, GROUP, id).xdel(stream, id).exec();
  }

  private async refreshGauges(): Promise<void> {
    const { metrics, workers, redis, keys } = this.options;
    let depth = 0;
    for (const box of this.mailboxes.values()) depth += box.queue.length + box.waiting.length;
    metrics.mailboxDepth.set(depth);
    metrics.mailboxes.set(this.mailboxes.size);
    metrics.shardsOwned.set(this.leases.tokens.size);
    metrics.workerUtilization.set(workers.utilization);
    metrics.workerQueue.set(workers.queued);
    let timers = 0;
    metrics.streamLag.reset();
    for (const shard of this.leases.tokens.keys()) {
      const [[, pending], [, count]] = (await redis.multi().xpending(keys.taskStream(shard), GROUP).zcard(keys.taskTimers(shard)).exec()) as [[unknown, [number]], [unknown, number]];
      metrics.streamLag.set({ shard: String(shard) }, Number(pending?.[0] ?? 0));
      timers += count;
    }
    metrics.timersPending.set(timers);
  }
}

/** A timer's member: one per task and kind, so scheduling again moves the timer instead of adding one. */
const timerMember = (kind: StepKind, row: Pick<TaskRow, 'id' | 'user_id'>) => `${kind}:${row.id}:${row.user_id}`;

