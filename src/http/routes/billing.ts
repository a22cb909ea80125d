import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import type { RequestContext } from '../router.js';
import { parseQuery } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { singleLine } from '../schemas/text.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { listTransactions, redeemCoupon } from '../../store/ledger.js';

export const MAX_PER_PAGE = 100;

const RedeemSchema = v.strictObject({
  code: v.pipe(v.string('is required and must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(128, 'must be at most 128 characters'), singleLine()),
});

/** `page` (from 1) and `per_page` (1 to MAX_PER_PAGE) from a query; anything else is a 400 naming the parameter. */
export function pageOf(query: string): { page: number; perPage: number } {
  const params = parseQuery(query);
  const read = (name: string, fallback: number, max: number): number => {
    const raw = params.get(name)?.[0];
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < 1 || value > max) {
      throw new ApiError(400, 'invalid_request', `Invalid value for '${name}': must be a whole number from 1 to ${max}.`, name);
    }
    return value;
  };
  return { page: read('page', 1, 1_000_000), perPage: read('per_page', 20, MAX_PER_PAGE) };
}

/**
 * Failed coupon redemptions per account, across every thread and process (a Redis counter that lives
 * one window from the first failure): past the budget, 429 with Retry-After before the code is looked up.
 */
function couponAttempts(services: Services) {
  const { redis, config } = services;
  const { couponFailureBudget: budget, couponFailureWindowMs: windowMs } = config.auth;
  const keyOf = (userId: string) => `${config.redisPrefix}{u:${userId}}:coupon-failures`;
  return {
    async check(userId: string): Promise<void> {
      const [count, ttlMs] = await Promise.all([redis.get(keyOf(userId)), redis.pttl(keyOf(userId))]);
      if (Number(count ?? 0) < budget) return;
      const retryAfter = String(Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : windowMs) / 1000)));
      throw new ApiError(429, 'too_many_failures', `Too many failed coupon redemptions: ${budget} in ${windowMs / 1000} s; retry in ${retryAfter} s.`, 'code', { 'retry-after': retryAfter });
    },
    async record(userId: string): Promise<void> {
      // SET NX starts the window with its expiry; INCR keeps it.
      await redis.multi().set(keyOf(userId), '0', 'PX', windowMs, 'NX').incr(keyOf(userId)).exec();
    },
  };
}

export function billingRoutes(services: Services) {
  const { auth, config, balances, sql } = services;
  const attempts = couponAttempts(services);

  const balance = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    // held: the pending reservations, lease slack left out (see Balances.get); available = credits - held.
    const { credits, held } = await balances.get(userId);
    ctx.reply.json(200, { credits: nanoToUsd(credits), held: nanoToUsd(held), available: nanoToUsd(credits - held), currency: 'USD' });
  };

  const transactions = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const { page, perPage } = pageOf(ctx.query);
    const { rows, total } = await listTransactions(sql, userId, page, perPage);
    ctx.reply.json(200, {
      data: rows.map((row) => ({
        id: row.id,
        credits: nanoToUsd(row.credits_nano),
        amount: nanoToUsd(row.credits_nano < 0n ? -row.credits_nano : row.credits_nano),
        payment_method: row.payment_method,
        status: row.status,
        created_at: row.created_at.toISOString(),
      })),
      total,
      page,
      per_page: perPage,
    });
  };

  const redeem = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const { code } = parseWith(RedeemSchema, parseJsonObject(await ctx.body()));
    await attempts.check(userId);
    const result = await redeemCoupon(sql, code, userId, randomUUID());
    // Only unknown codes count: guessing is what the budget stops (a spent code reveals nothing new).
    if (result.kind === 'unknown') await attempts.record(userId);
    if (result.kind === 'unknown') throw new ApiError(404, 'coupon_not_found', 'This coupon code is not valid.', 'code');
    if (result.kind === 'unavailable') throw new ApiError(409, 'coupon_redeemed', 'This coupon code was already redeemed or is no longer active.', 'code');
    const credits = await balances.applyCommittedDeposit(userId);
    ctx.reply.json(200, { credited: nanoToUsd(result.creditsNano), currency: 'USD', balance: nanoToUsd(credits) });
  };

  return { balance, transactions, redeem };
}
