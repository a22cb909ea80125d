/**
 * Checks for the money-race tests: one user's money read atomically from Redis (so `held` and the
 * open reservations are compared at one instant) beside the Postgres ledger, a key's spend, a
 * streaming call a test can watch and cut, and the gateway's log since a mark. Builds on harness.ts.
 */
import type { Test } from 'tap';
import type { Gateway } from './harness.js';
import { chargeOf, leasesClosed } from './billing-checks.js';

export interface LedgerSnapshot {
  credits: bigint;
  held: bigint;
  /** Sum of the values of the user's open reservations hash (`{u}:res`). */
  openHeld: bigint;
  openReservations: number;
  /** Entries of the reservation deadlines zset (`{u}:resexp`). */
  deadlines: number;
  /** Ledger events in Redis not yet written to Postgres. */
  ledgerPending: number;
  /** Sum of every transaction of the user in Postgres (deposits and usage). */
  ledgerSum: bigint;
  usageTransactions: number;
}

/** One user's money: the Redis part in one MULTI (one instant), then the Postgres ledger. */
export async function ledgerSnapshot(gateway: Gateway, user: string): Promise<LedgerSnapshot> {
  const base = `${gateway.prefix}{u:${user}}`;
  const replies = await gateway.redis.multi()
    .hmget(`${base}:bal`, 'credits', 'held')
    .hvals(`${base}:res`)
    .zcard(`${base}:resexp`)
    .xlen(`${base}:ledger`)
    .exec();
  if (!replies) throw new Error('MULTI aborted');
  for (const [error] of replies) if (error) throw error;
  const [credits, held] = replies[0]![1] as (string | null)[];
  const open = replies[1]![1] as string[];
  const [row] = await gateway.sql<{ sum: bigint; usage: bigint }[]>`
    select coalesce(sum(credits_nano), 0)::bigint as sum, count(*) filter (where payment_method = 'usage')::bigint as usage
    from transactions where user_id = ${user}`;
  return {
    credits: BigInt(credits ?? '0'),
    held: BigInt(held ?? '0'),
    openHeld: open.reduce((sum, value) => sum + BigInt(value), 0n),
    openReservations: open.length,
    deadlines: replies[2]![1] as number,
    ledgerPending: replies[3]![1] as number,
    ledgerSum: row!.sum,
    usageTransactions: Number(row!.usage),
  };
}

/** Usage transactions of a user in Postgres: id -> { charge (positive nano-USD), api key }. */
export async function usageRows(gateway: Gateway, user: string): Promise<Map<string, { chargeNano: bigint; keyId: string | null }>> {
  const rows = await gateway.sql<{ id: string; credits_nano: bigint; api_key_id: string | null }[]>`
    select id, credits_nano, api_key_id from transactions where user_id = ${user} and payment_method = 'usage'`;
  return new Map(rows.map((row) => [row.id, { chargeNano: -row.credits_nano, keyId: row.api_key_id }]));
}

/** What a key spent in Postgres (all its usage transactions), nano-USD. */
export async function keySpendNano(gateway: Gateway, keyId: string): Promise<bigint> {
  const [row] = await gateway.sql<{ spent: bigint }[]>`
    select coalesce(-sum(credits_nano), 0)::bigint as spent from transactions where api_key_id = ${keyId} and payment_method = 'usage'`;
  return row!.spent;
}

/** The key's spend hash in Redis (`{u}:kspend:<key>`: spent and held in its credit period), or undefined when absent. */
export async function keySpendInRedis(gateway: Gateway, user: string, keyId: string): Promise<{ spent: bigint; held: bigint } | undefined> {
  const [spent, held] = await gateway.redis.hmget(`${gateway.prefix}{u:${user}}:kspend:${keyId}`, 'spent', 'held');
  if (spent == null && held == null) return undefined;
  return { spent: BigInt(spent ?? '0'), held: BigInt(held ?? '0') };
}

export interface StreamOutcome {
  status: number;
  text: string;
  /** The stream ended with `data: [DONE]`. */
  completed: boolean;
  /** The body broke off (connection reset) rather than ending. */
  broken: boolean;
}

/**
 * A streaming chat call the test can watch: `started` resolves once the first content delta
 * arrived (the call is admitted and streaming), `outcome` once the body ended or broke off.
 */
export function watchStream(gateway: Gateway, key: string, body: string): { started: Promise<void>; outcome: Promise<StreamOutcome> } {
  let markStarted!: () => void;
  let failStart!: (error: Error) => void;
  const started = new Promise<void>((resolve, reject) => { markStarted = resolve; failStart = reject; });
  started.catch(() => undefined);
  const outcome = (async (): Promise<StreamOutcome> => {
    const response = await fetch(`${gateway.v1}/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body,
    });
    if (response.status !== 200 || !response.body) {
      const text = await response.text();
      failStart(new Error(`stream refused: ${response.status} ${text.slice(0, 200)}`));
      return { status: response.status, text, completed: false, broken: false };
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let broken = false;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
        if (text.includes('"content":"')) markStarted();
      }
    } catch {
      broken = true;
    }
    failStart(new Error('stream ended before its first content delta'));
    return { status: 200, text, completed: /data: \[DONE\]/.test(text), broken };
  })();
  return { started, outcome };
}

/** A mark in each gateway's log, and the lines written since it that say `unexpected error`. */
export function logMark(gateways: Gateway[]): () => string[] {
  const offsets = gateways.map((g) => g.output.length);
  return () => gateways.flatMap((g, i) => g.output.slice(offsets[i]).split('\n').filter((line) => line.includes('unexpected error')));
}

/** A successful non-streaming call of a burst, on the key that made it. */
export interface ServedCall {
  readonly headers: Headers;
  readonly text: string;
  readonly keyId: string;
}

/**
 * The charge of each 200 under its `x-request-id` (each unique), each at most its reservation: what
 * the ledger must hold. Returns them with their sum and the smallest.
 */
export function chargesOfServed(t: Test, served: readonly ServedCall[], reserveNano: bigint): { charges: Map<string, { chargeNano: bigint; keyId: string }>; sum: bigint; minCharge: bigint } {
  const charges = new Map<string, { chargeNano: bigint; keyId: string }>();
  let sum = 0n;
  let minCharge = reserveNano;
  for (const r of served) {
    const id = r.headers.get('x-request-id');
    if (!id || charges.has(id)) {
      t.fail(`a 200 without a unique x-request-id (${id})`);
      continue;
    }
    const charge = chargeOf(r.text);
    if (charge > reserveNano) t.fail(`charge ${charge} above its reservation ${reserveNano}`);
    if (charge < minCharge) minCharge = charge;
    charges.set(id, { chargeNano: charge, keyId: r.keyId });
    sum += charge;
  }
  t.equal(charges.size, served.length, 'every 200 carries its own x-request-id');
  return { charges, sum, minCharge };
}

/**
 * Once the burst's leases closed and the ledger drained: Redis credits are the starting balance less
 * exactly the served calls' charges, Postgres agrees, nothing is held, one usage transaction per 200.
 */
export async function assertSpentExactly(t: Test, gateway: Gateway, user: string, initialNano: bigint, sumNano: bigint, servedCount: number, wait = { leasesMs: 5_000, ledgerMs: 15_000 }): Promise<LedgerSnapshot> {
  await leasesClosed(gateway, user, wait.leasesMs);
  await gateway.ledgerSettled(user, wait.ledgerMs);
  const money = await ledgerSnapshot(gateway, user);
  t.equal(money.credits, initialNano - sumNano, `Redis credits = the starting ${initialNano} nano-USD less the exact sum of the ${servedCount} charges (${sumNano} nano-USD)`);
  t.equal(money.ledgerSum, money.credits, 'Postgres ledger sum = Redis credits, to the nano-USD');
  t.equal(money.held, 0n, 'nothing held');
  t.equal(money.openReservations, 0, 'no open reservation');
  t.equal(money.usageTransactions, servedCount, 'one usage transaction per 200, none for a 402');
  return money;
}
