import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { badRequest } from '../errors.js';
import { QueryParams, checkRange } from '../query/management-params.js';
import { keyFilterOf } from './request-logs.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { usageSeries, type UsageGrouping, type UsageInterval, type UsageRow } from '../../store/usage-rollup.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest range per interval: bounded work and answer size (a year and a month by day, a month by hour). */
const MAX_SPAN_MS: Readonly<Record<UsageInterval, number>> = { day: 400 * DAY_MS, hour: 31 * DAY_MS };
const INTERVAL_MS: Readonly<Record<UsageInterval, number>> = { day: DAY_MS, hour: HOUR_MS };

type Counters = Pick<UsageRow, 'requests' | 'errors' | 'prompt_tokens' | 'completion_tokens' | 'cached_tokens' | 'reasoning_tokens' | 'cost_nano'>;

const counters = (row: Counters) => ({
  requests: Number(row.requests),
  errors: Number(row.errors),
  prompt_tokens: Number(row.prompt_tokens),
  completion_tokens: Number(row.completion_tokens),
  cached_tokens: Number(row.cached_tokens),
  reasoning_tokens: Number(row.reasoning_tokens),
  cost: nanoToUsd(row.cost_nano),
});

/** GET /api/v1/usage: requests, tokens and cost from the hourly rollup (docs/api.md "Usage"). */
export function usageRoutes(services: Services) {
  const { auth, config, sql } = services;

  const usage = async (ctx: RequestContext): Promise<void> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    const q = new QueryParams(ctx.query);
    const interval = q.oneOf<UsageInterval>('interval', ['day', 'hour']) ?? 'day';
    const groupBy = q.oneOf<UsageGrouping>('group_by', ['model', 'key', 'none']) ?? 'none';
    const keyId = keyFilterOf(principal, q.uuid('key_id'));
    const model = q.text('model');
    const step = INTERVAL_MS[interval];
    // Rounded out to whole intervals (UTC): every period shown is complete.
    const to = new Date(Math.ceil((q.time('to') ?? new Date()).getTime() / step) * step);
    const from = new Date(Math.floor((q.time('from') ?? new Date(to.getTime() - 30 * DAY_MS)).getTime() / step) * step);
    checkRange(from, to);
    if (to.getTime() - from.getTime() > MAX_SPAN_MS[interval]) {
      throw badRequest(`Invalid value for 'from': by ${interval}, a range spans at most ${MAX_SPAN_MS[interval] / DAY_MS} days.`, 'from');
    }
    const rows = keyId === null ? [] : await usageSeries(sql, { userId: principal.userId, keyId, model, from, to, interval, groupBy });
    const total: Counters = { requests: 0n, errors: 0n, prompt_tokens: 0n, completion_tokens: 0n, cached_tokens: 0n, reasoning_tokens: 0n, cost_nano: 0n };
    for (const row of rows) for (const name of Object.keys(total) as (keyof Counters)[]) total[name] += BigInt(row[name]);
    ctx.reply.json(200, {
      from: from.toISOString(),
      to: to.toISOString(),
      interval,
      group_by: groupBy,
      data: rows.map((row) => ({
        start: row.start.toISOString(),
        ...(groupBy === 'model' ? { model: row.group } : groupBy === 'key' ? { key_id: row.group } : {}),
        ...counters(row),
      })),
      total: counters(total),
    });
  };

  return { usage };
}
