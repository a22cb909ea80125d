import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, notFound } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { CreateApiKeySchema, UpdateApiKeySchema } from '../schemas/api-keys.js';
import { parseIsoTimestamp } from '../schemas/text.js';
import { generateApiKey, hashSecret, maskKey } from '../../auth/api-key-format.js';
import type { SealedBox } from '../../auth/sealed-box.js';
import {
  countLiveKeys, findUserKey, insertApiKey, listUserKeys, lockUserKeys, revokeUserKey, updateUserKey, type ApiKeyChanges, type ApiKeyRow,
} from '../../store/api-keys.js';
import type { Principal } from '../../auth/authenticator.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { keyPeriodStartMs } from '../../billing/credit-period.js';
import { keyPeriodSpend } from '../../store/ledger-check.js';
import type { Sql } from '../../store/db.js';
import { UUID } from '../../store/ids.js';
import { publishAcknowledged } from '../../store/redis-connect.js';

/**
 * `key_prefix` of a key whose text was not kept: the spec's form (first 12 characters, `...`, last 4)
 * from what is known of it, `sk-<prefix>-[prov-]<public_id>` for the head; the secret is not known,
 * so its last 4 characters show as `****`.
 */
export function keyPrefixWithoutText(row: Pick<ApiKeyRow, 'public_id' | 'is_provisioning'>, prefix: string): string {
  return `${`sk-${prefix}-${row.is_provisioning ? 'prov-' : ''}${row.public_id}`.slice(0, 12)}...****`;
}

/**
 * The masked record of the spec; `full_key` only for keys whose text was kept (encrypted), and never
 * a management key's to a management key (`showFullKey` false): one cannot take over another.
 */
export function maskedKeyRecord(row: ApiKeyRow, box: SealedBox, spend: KeySpend, prefix: string, showFullKey = true): Record<string, unknown> {
  const fullKey = row.full_key_enc ? box.open(row.full_key_enc) : undefined;
  const limited = row.credit_limit_nano !== null;
  return {
    id: row.id,
    name: row.name,
    key_prefix: fullKey ? maskKey(fullKey) : keyPrefixWithoutText(row, prefix),
    ...(fullKey && showFullKey ? { full_key: fullKey } : {}),
    ip_whitelist: row.ip_whitelist,
    rate_limit_rpm: row.rate_limit_rpm,
    rate_limit_tph: row.rate_limit_tph === null ? null : Number(row.rate_limit_tph),
    rate_limit_tpd: row.rate_limit_tpd === null ? null : Number(row.rate_limit_tpd),
    is_provisioning: row.is_provisioning,
    disabled: row.disabled,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    credit_limit: limited ? nanoToUsd(row.credit_limit_nano!) : null,
    credit_reset_interval: row.credit_reset_interval,
    credit_used: nanoToUsd(spend.usedNano),
    credit_period_start: spend.periodStartMs === null ? null : new Date(spend.periodStartMs).toISOString(),
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
  };
}

interface KeySpend {
  readonly usedNano: bigint;
  readonly periodStartMs: number | null;
}

/** What a key spent in its current credit period (Postgres, so it trails live charges by the ledger writer's pace). */
/** Each key's spend in its current credit period (keys without a `credit_limit`: none), in one query. */
async function keySpendsOf(sql: Sql, rows: readonly ApiKeyRow[], nowMs: number): Promise<KeySpend[]> {
  const periods = rows.map((row) => (row.credit_limit_nano === null ? null : { keyId: row.id, since: new Date(keyPeriodStartMs(row, nowMs)) }));
  const spent = await keyPeriodSpend(sql, periods.filter((period) => period !== null));
  return periods.map((period) => (period === null
    ? { usedNano: 0n, periodStartMs: null }
    : { usedNano: spent.get(period.keyId) ?? 0n, periodStartMs: period.since.getTime() }));
}

/** Whether `caller` may see `row`'s full key: a management key never sees a management key's. */
const showsFullKey = (caller: Principal, row: ApiKeyRow) => caller.kind !== 'management' || !row.is_provisioning;

/**
 * A management key changes and revokes regular keys only (and may revoke itself): 403 for another
 * management key, whose ip_whitelist or life it must not touch. Every other caller passes.
 */
function requireMayChange(caller: Principal, row: ApiKeyRow, revoking: boolean): void {
  if (caller.kind !== 'management' || !row.is_provisioning) return;
  if (revoking && row.id === caller.key?.id) return;
  throw new ApiError(403, 'management_key', `A management key may ${revoking ? 'revoke' : 'change'} regular keys only${revoking ? ' (and itself)' : ''}; use a dashboard JWT for management keys.`);
}

export function apiKeyRoutes(services: Services, box: SealedBox) {
  const { auth, config, sql, redis, keys } = services;
  // Every thread's cached copy of the key goes before the change answers: the next request sees it.
  const announce = (message: string) => {
    const nonce = randomUUID();
    return publishAcknowledged(redis, keys.keyEvents(), message, keys.keyEventAcks(nonce), nonce);
  };
  const record = (caller: Principal, row: ApiKeyRow, spend: KeySpend) => maskedKeyRecord(row, box, spend, config.keyPrefix, showsFullKey(caller, row));
  const notOwned = (id: string) => notFound(`No API key with id '${id}' belongs to this account.`);

  const create = async (ctx: RequestContext): Promise<void> => {
    const caller = await auth.principal(ctx, config.jwtSecret);
    const { userId } = caller;
    const management = caller.kind === 'management';
    const input = parseWith(CreateApiKeySchema, parseJsonObject(await ctx.body()), 422);
    // A management key mints regular keys only: another management key takes a dashboard session.
    if (management && input.is_provisioning) {
      throw new ApiError(403, 'management_key', 'A management key may create regular keys only; create management keys with a dashboard JWT.', 'is_provisioning');
    }
    const expiresAt = input.expires_at ? parseIsoTimestamp(input.expires_at)! : null;
    const generated = generateApiKey(config.keyPrefix, input.is_provisioning);
    const row = await sql.begin(async (tx) => {
      await lockUserKeys(tx, userId);
      if ((await countLiveKeys(tx, userId)) >= config.auth.keysPerAccount) return undefined;
      return insertApiKey(tx, {
      id: randomUUID(),
      userId,
      publicId: generated.publicId,
      secretHash: hashSecret(config.keySecret, generated.secret),
      fullKeyEnc: box.seal(generated.key),
      name: input.name,
      isProvisioning: input.is_provisioning,
      ipWhitelist: input.ip_whitelist ?? [],
      rateLimitRpm: input.rate_limit_rpm ?? null,
      rateLimitTph: input.rate_limit_tph ?? null,
      rateLimitTpd: input.rate_limit_tpd ?? null,
      creditLimitNano: input.credit_limit ?? null,
      creditResetInterval: input.credit_reset_interval,
      expiresAt,
      });
    });
    if (!row) {
      throw new ApiError(409, 'key_limit_reached', `An account may hold at most ${config.auth.keysPerAccount} API keys; revoke one first.`);
    }
    ctx.reply.json(201, { id: row.id, name: row.name, key: generated.key, created_at: row.created_at.toISOString() });
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const caller = await auth.principal(ctx, config.jwtSecret);
    const rows = await listUserKeys(sql, caller.userId);
    const nowMs = Date.now();
    const spends = await keySpendsOf(sql, rows, nowMs);
    ctx.reply.json(200, rows.map((row, i) => record(caller, row, spends[i]!)));
  };

  const update = async (ctx: RequestContext): Promise<void> => {
    const caller = await auth.principal(ctx, config.jwtSecret);
    const { userId } = caller;
    const id = ctx.params[0] ?? '';
    const input = parseWith(UpdateApiKeySchema, parseJsonObject(await ctx.body()), 422);
    const changes: ApiKeyChanges = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.ip_whitelist !== undefined) changes.ip_whitelist = input.ip_whitelist ?? [];
    if (input.rate_limit_rpm !== undefined) changes.rate_limit_rpm = input.rate_limit_rpm;
    if (input.rate_limit_tph !== undefined) changes.rate_limit_tph = input.rate_limit_tph;
    if (input.rate_limit_tpd !== undefined) changes.rate_limit_tpd = input.rate_limit_tpd;
    if (input.disabled !== undefined) changes.disabled = input.disabled;
    if (input.credit_limit !== undefined) changes.credit_limit_nano = input.credit_limit;
    if (input.credit_reset_interval !== undefined) changes.credit_reset_interval = input.credit_reset_interval;
    if (input.expires_at !== undefined) changes.expires_at = input.expires_at === null ? null : parseIsoTimestamp(input.expires_at)!;
    // The role of a key never changes, so checking it before the update is as good as within it.
    const target = UUID.test(id) ? await findUserKey(sql, userId, id) : undefined;
    if (!target) throw notOwned(id);
    requireMayChange(caller, target, false);
    const row = await updateUserKey(sql, userId, id, changes);
    if (!row) throw notOwned(id);
    // Every thread's cached copy of the key goes, so `disabled` and `expires_at` apply to the next request.
    await announce(`change:${row.public_id}`);
    ctx.reply.json(200, record(caller, row, (await keySpendsOf(sql, [row], Date.now()))[0]!));
  };

  const revoke = async (ctx: RequestContext): Promise<void> => {
    const caller = await auth.principal(ctx, config.jwtSecret);
    const { userId } = caller;
    const id = ctx.params[0] ?? '';
    // Another user's key and a missing key look the same: never reveal which ids exist.
    const target = UUID.test(id) ? await findUserKey(sql, userId, id) : undefined;
    if (!target) throw notOwned(id);
    requireMayChange(caller, target, true);
    const row = await revokeUserKey(sql, userId, id);
    if (!row) throw notOwned(id);
    // Not one MULTI: on a cluster the key event goes to the node its subscribers listen on, not the user's.
    // Neither needs the other: the key is revoked in Postgres already, and its counters serve nothing now.
    await Promise.all([
      redis.del(
        keys.rateWindow(userId, row.id), keys.rateWeights(userId, row.id), keys.minuteWindow(userId, row.id), keys.minuteWeights(userId, row.id),
        keys.readWindow(userId, row.id), keys.readWeights(userId, row.id), keys.keySpend(userId, row.id), keys.keyTokens(userId, row.id),
      ),
      announce(`revoke:${row.public_id}`),
    ]);
    ctx.reply.send(204, '');
  };

  return { create, list, update, revoke };
}
