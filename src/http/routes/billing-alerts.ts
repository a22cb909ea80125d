import * as v from 'valibot';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, notFound } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { usdToNano } from '../../catalog/model.js';
import { MAX_ALERTS_PER_USER, createAlert } from '../../billing/alerts.js';
import { deleteUserAlert, listUserAlerts, type BillingAlertRow } from '../../store/billing-alerts.js';
import { accountAddress } from '../../store/accounts.js';
import { UUID } from '../../store/ids.js';

const MAX_THRESHOLD_USD = 1e9;

const Email = v.pipe(v.string('must be a string'), v.trim(), v.maxLength(254, 'must be at most 254 characters'), v.email('must be an email address'));

/** Body of POST /api/v1/billing/alerts; violations are 422 naming the field, as for API keys. */
const CreateAlertSchema = v.strictObject({
  threshold: v.pipe(
    v.number('is required and must be a number (USD)'),
    v.gtValue(0, 'must be greater than 0'),
    v.maxValue(MAX_THRESHOLD_USD, `must be at most ${MAX_THRESHOLD_USD}`),
    // Money is nano-USD inside: a finer amount would be rounded, and rounding is refused, not done silently.
    v.check((usd) => Number(usd.toFixed(9)) === usd, 'must have at most 9 decimal places'),
  ),
  email: v.optional(Email),
});

/**
 * The alert record of the API (the spec shows only `threshold` and `id`). `email` is where it would
 * mail now: its own address, else the account's (`email_source` says which).
 */
export function alertRecord(row: BillingAlertRow, account: string | null): Record<string, unknown> {
  return {
    id: row.id,
    threshold: nanoToUsd(row.threshold_nano),
    email: row.email ?? account,
    email_source: row.email === null ? 'account' : 'alert',
    armed: row.armed,
    created_at: row.created_at.toISOString(),
    last_triggered_at: row.last_triggered_at ? row.last_triggered_at.toISOString() : null,
  };
}

export function billingAlertRoutes(services: Services) {
  const { auth, config, sql } = services;

  const create = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const input = parseWith(CreateAlertSchema, parseJsonObject(await ctx.body()), 422);
    // Without its own address the alert follows the account's, read when it fires; an account with
    // none would get an alert that can never mail, so that is refused here, naming `email`.
    const account = await accountAddress(sql, userId);
    if (input.email === undefined && account === null) {
      throw new ApiError(422, 'validation_error',
        "Invalid value for 'email': is required, as this account has no email address (sign in with a token carrying an email claim, or have an operator run `gateway account set-email`).", 'email');
    }
    const result = await createAlert(sql, { userId, thresholdNano: usdToNano(input.threshold.toFixed(9)), email: input.email ?? null });
    if (result.kind === 'limit') {
      throw new ApiError(422, 'alert_limit_reached', `An account may have at most ${MAX_ALERTS_PER_USER} balance alerts; delete one first.`);
    }
    ctx.reply.json(201, alertRecord(result.row, account));
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const [rows, account] = await Promise.all([listUserAlerts(sql, userId), accountAddress(sql, userId)]);
    ctx.reply.json(200, { data: rows.map((row) => alertRecord(row, account)), total: rows.length });
  };

  const remove = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const id = ctx.params[0] ?? '';
    // Another user's alert and a missing one look the same: never reveal which ids exist.
    const deleted = UUID.test(id) && (await deleteUserAlert(sql, userId, id));
    if (!deleted) throw notFound(`No balance alert with id '${id}' belongs to this account.`);
    ctx.reply.send(204, '');
  };

  return { create, list, remove };
}
