import * as v from 'valibot';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, notFound } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { MAX_ALERTS_PER_USER, alertDelivery, createAlert } from '../../billing/alerts.js';
import { usdAmount } from '../../billing/usd.js';
import { deleteUserAlert, listUserAlerts, type BillingAlertRow } from '../../store/billing-alerts.js';
import { accountEmail, type AccountEmail } from '../../store/accounts.js';
import { UUID } from '../../store/ids.js';

const Email = v.pipe(v.string('must be a string'), v.trim(), v.maxLength(254, 'must be at most 254 characters'), v.email('must be an email address'));

/** Body of POST /api/v1/billing/alerts; violations are 422 naming the field, as for API keys. */
const CreateAlertSchema = v.strictObject({
  threshold: usdAmount({ least: 'positive' }, 'is required and must be a number (USD)'),
  email: v.optional(Email),
});

/**
 * The alert record of the API (the spec shows only `threshold` and `id`). `email` is where it would
 * mail now: its own address, else the account's (`email_source` says which; null: none yet), and
 * `deliverable` says whether it mails at all (alertDelivery), `undeliverable_reason` why not.
 */
export function alertRecord(row: BillingAlertRow, account: AccountEmail | null): Record<string, unknown> {
  const delivery = alertDelivery(row.email, account);
  return {
    id: row.id,
    threshold: nanoToUsd(row.threshold_nano),
    email: delivery.recipient,
    email_source: row.email === null ? 'account' : 'alert',
    deliverable: delivery.deliverable,
    undeliverable_reason: delivery.deliverable ? null : delivery.reason,
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
    // Created whatever the addresses: the record says when it has nowhere (verified) to mail yet.
    const result = await createAlert(sql, { userId, thresholdNano: input.threshold, email: input.email ?? null });
    if (result.kind === 'limit') {
      throw new ApiError(422, 'alert_limit_reached', `An account may have at most ${MAX_ALERTS_PER_USER} balance alerts; delete one first.`);
    }
    ctx.reply.json(201, alertRecord(result.row, await accountEmail(sql, userId)));
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const userId = await auth.jwtOrApiKey(ctx, config.jwtSecret);
    const [rows, account] = await Promise.all([listUserAlerts(sql, userId), accountEmail(sql, userId)]);
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
