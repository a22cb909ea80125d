/**
 * Shared checks for the admission, abort and coupon tests: exact nano-USD arithmetic, the error
 * envelope, SSE parsing and Redis/Postgres views of one user's money. Builds on harness.ts.
 */
import type { Gateway } from './harness.js';
import { loadConfig } from '../../src/config.js';
import { signJwt } from '../../src/auth/jwt.js';

/** A dashboard JWT for `user`, signed in-process with the gateway's own secret (no CLI process per user). */
export function jwtFor(gateway: Gateway, user: string, ttlSeconds = 3600): string {
  return signJwt(loadConfig({ ...process.env, ...gateway.env }).jwtSecret, { sub: user, exp: Math.floor(Date.now() / 1000) + ttlSeconds });
}

/** gpt-4o-mini list prices in nano-USD per token. */
export const PRICE = Object.freeze({ input: 150n, cachedInput: 75n, output: 600n });
export const MODEL = 'openai/gpt-4o-mini';

/** Exact charge of one gpt-4o-mini call, nano-USD. */
export function costNano(promptTokens: number, completionTokens: number, cachedTokens = 0): bigint {
  return BigInt(promptTokens - cachedTokens) * PRICE.input + BigInt(cachedTokens) * PRICE.cachedInput + BigInt(completionTokens) * PRICE.output;
}

interface Usage { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } }

/** The exact charge of a successful non-streaming gpt-4o-mini answer, from its usage. */
export function chargeOf(text: string): bigint {
  const usage = (JSON.parse(text) as { usage: Usage }).usage;
  return costNano(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0);
}

/** The gateway's worst-case reservation for a gpt-4o-mini body: every body byte an input token, plus the output cap. */
export function reserveNano(body: string, maxTokens: number): bigint {
  return BigInt(Buffer.byteLength(body)) * PRICE.input + BigInt(maxTokens) * PRICE.output;
}

/** nano-USD as the CLI's USD argument (at most 9 decimals). */
export function usdString(nano: bigint): string {
  if (nano < 0n) throw new Error('negative amount');
  const whole = nano / 1_000_000_000n;
  const fraction = (nano % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

/** USD number from the API as exact nano-USD (the API renders Number(nano) / 1e9). */
export function usdToNano(usd: number): bigint {
  return BigInt(Math.round(usd * 1e9));
}

export interface ErrorEnvelope {
  code: number;
  msg: string;
  error: { message: string; type: string; code: string; param?: string | null };
}

/** Problems with an error envelope for `status` (empty when it is right). */
export function envelopeProblems(body: unknown, status: number): string[] {
  const problems: string[] = [];
  if (typeof body !== 'object' || body === null) return [`body is not a JSON object: ${String(body)}`];
  const b = body as Record<string, any>;
  if (b.code !== status) problems.push(`code is ${JSON.stringify(b.code)}, want ${status}`);
  if (typeof b.msg !== 'string' || b.msg === '') problems.push('msg is not a non-empty string');
  if (typeof b.error !== 'object' || b.error === null) problems.push('error object missing');
  else {
    if (typeof b.error.message !== 'string' || b.error.message === '') problems.push('error.message is not a non-empty string');
    if (b.error.message !== b.msg) problems.push('error.message differs from msg');
    if (typeof b.error.type !== 'string' || b.error.type === '') problems.push('error.type is not a non-empty string');
    if (typeof b.error.code !== 'string' || b.error.code === '') problems.push('error.code is not a non-empty string');
  }
  return problems;
}

/** A chat body as the exact string the test sends (so its byte size, and so the reservation, is known). */
export function chatBody(content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], ...extra });
}

/** POST a raw body to /v1/chat/completions; returns status, headers and the text. */
export async function postChat(gateway: Gateway, key: string, body: string, signal?: AbortSignal): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
    ...(signal ? { signal } : {}),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

export function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The `data:` payloads of an SSE text, in order. */
export function sseData(text: string): string[] {
  const out: string[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const line = event.split(/\r?\n/).find((l) => l.startsWith('data:'));
    if (line !== undefined) out.push(line.slice(5).trim());
  }
  return out;
}

export interface MoneyView {
  credits: bigint;
  held: bigint;
  openReservations: number;
  ledgerPending: number;
  usageTransactions: number;
  ledgerSum: bigint;
}

/** One user's money as Redis and Postgres see it. */
export async function moneyView(gateway: Gateway, user: string): Promise<MoneyView> {
  const [{ credits, held }, openReservations, ledgerPending, ledgerSum, rows] = await Promise.all([
    gateway.balanceNano(user),
    gateway.redis.hlen(`${gateway.prefix}{u:${user}}:res`),
    gateway.redis.xlen(`${gateway.prefix}{u:${user}}:ledger`),
    gateway.ledgerSum(user),
    gateway.sql<{ n: bigint }[]>`select count(*)::bigint as n from transactions where user_id = ${user} and payment_method = 'usage'`,
  ]);
  return { credits, held, openReservations, ledgerPending, usageTransactions: Number(rows[0]!.n), ledgerSum };
}

/** Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Samples `credits - held` of a user in Redis until stopped; returns the minimum seen and the largest `held`. */
export function sampleAvailable(gateway: Gateway, user: string): { stop(): Promise<{ min: bigint; maxHeld: bigint; samples: number }> } {
  let running = true;
  let min: bigint | undefined;
  let maxHeld = 0n;
  let samples = 0;
  const loop = (async () => {
    while (running) {
      const [credits, held] = await gateway.redis.hmget(`${gateway.prefix}{u:${user}}:bal`, 'credits', 'held');
      if (credits != null) {
        const available = BigInt(credits) - BigInt(held ?? '0');
        if (min === undefined || available < min) min = available;
        if (BigInt(held ?? '0') > maxHeld) maxHeld = BigInt(held ?? '0');
        samples++;
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { min: min ?? 0n, maxHeld, samples };
    },
  };
}

/**
 * Waits until every admission lease of `user` is closed in Redis (no open reservation left: a lease
 * closes about 250 ms after its last call, releasing its unused credit and returning its unused
 * slots), then returns the user's money view. Throws after `timeoutMs`. Call it before asserting
 * `held == 0` or no open reservations right after traffic.
 */
export async function leasesClosed(gateway: Gateway, user: string, timeoutMs = 3_000): Promise<MoneyView> {
  await eventually(`the leases of ${user} to close`, async () =>
    ((await gateway.redis.hlen(`${gateway.prefix}{u:${user}}:res`)) === 0 ? true : undefined), timeoutMs);
  return moneyView(gateway, user);
}

/** What `user` was charged for usage in all, once the leases closed and the ledger drained, with the money view. */
export async function usageSettled(gateway: Gateway, user: string): Promise<MoneyView & { charged: bigint }> {
  const view = await leasesClosed(gateway, user);
  await gateway.ledgerSettled(user);
  const [row] = await gateway.sql<{ sum: bigint }[]>`
    select coalesce(-sum(credits_nano), 0)::bigint as sum from transactions where user_id = ${user} and payment_method = 'usage'`;
  return { ...view, charged: row!.sum };
}
