import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../router.js';
import { parseQuery } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, notFound } from '../errors.js';
import { parseJsonObject, parseWith } from '../schemas/issues.js';
import { CreateByokSchema, UpdateByokSchema, checkAddresses, checkCloudForm } from '../schemas/byok.js';
import type { SealedBox } from '../../auth/sealed-box.js';
import { configCarriesCredential, maskApiKey, maskConfig } from '../../auth/byok-mask.js';
import {
  BYOK_PROVIDERS, deleteByok, findUserByok, insertByokUpTo, listByok, updateByok, type ByokChanges, type ByokProvider, type ByokRow,
} from '../../store/byok.js';
import { UUID } from '../../store/ids.js';
import { publishAcknowledged } from '../../store/redis-connect.js';

const credentialRequired = () => new ApiError(
  422, 'validation_error',
  "Invalid value for 'api_key': is required unless config_json carries the credential (a service_account, a private_key, or accessKeyId with secretAccessKey).",
  'api_key',
);
const rowLimit = (provider: ByokProvider, max: number) => new ApiError(
  409, 'byok_limit_reached',
  `This account already holds ${max} ${provider} credentials, the most one provider may have; delete one before adding another.`,
  'provider',
);
const noSuchRow = (id: string) => notFound(`No BYOK credential with id '${id}' belongs to this account.`);
const notThisKeysRow = (id: string) => new ApiError(
  403, 'byok_row_of_account',
  `The BYOK credential '${id}' serves the whole account or another key: an API key may change only the rows it made. Use a dashboard session or a management key.`,
);

/**
 * Who manages BYOK rows: a dashboard session or a management key acts for the whole account
 * (`keyId` undefined); a regular API key acts for itself: the rows it makes serve its own calls only,
 * and it may change only those, so one leaked key cannot route every other key's prompts elsewhere.
 */
interface ByokCaller {
  readonly userId: string;
  readonly keyId?: string;
}

/** The rows a caller may change: any of the account's, or, for a regular key, the ones it made. */
const mayChange = (caller: ByokCaller, row: ByokRow) => caller.keyId === undefined || row.api_key_id === caller.keyId;
/** The rows a caller sees: a regular key sees the account's rows and its own, never another key's. */
const maySee = (caller: ByokCaller, row: ByokRow) => caller.keyId === undefined || row.api_key_id === null || row.api_key_id === caller.keyId;

/** The record every BYOK endpoint answers with: never the api_key, config_json with its secrets as `***`. */
export function byokRecord(row: ByokRow, box: SealedBox): Record<string, unknown> {
  return {
    id: row.id,
    provider: row.provider,
    label: row.label,
    api_key_prefix: row.api_key_prefix,
    base_url: row.base_url,
    config_json: row.config_enc ? maskConfig(JSON.parse(box.open(row.config_enc))) : null,
    always_use: row.always_use,
    disabled: row.disabled,
    priority: row.priority,
    api_key_id: row.api_key_id,
    last_used_at: row.last_used_at ? row.last_used_at.toISOString() : null,
    last_error: row.last_error,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The `provider` query of GET: absent, or one of the providers (anything else is a 400 naming it). */
function providerFilter(query: string): ByokProvider | undefined {
  const values = parseQuery(query).get('provider');
  if (values === undefined) return undefined;
  const value = values[0] ?? '';
  if (values.length === 1 && (BYOK_PROVIDERS as readonly string[]).includes(value)) return value as ByokProvider;
  throw new ApiError(400, 'invalid_request', `Invalid value for 'provider': must be one of ${BYOK_PROVIDERS.map((p) => `'${p}'`).join(', ')}.`, 'provider');
}

export function byokRoutes(services: Services, box: SealedBox) {
  const { auth, config, sql, redis, keys } = services;
  const caller = async (ctx: RequestContext): Promise<ByokCaller> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    return principal.kind === 'regular' ? { userId: principal.userId, keyId: principal.key!.id } : { userId: principal.userId };
  };
  // Call-path caches of the user's candidates drop them at once, on every thread of every process.
  // This thread forgets the user's rows at once (the caller's next request may come straight back
  // here, before the pub/sub message); the message tells every other thread and process.
  const announce = (userId: string) => {
    services.byok.invalidate(userId);
    const nonce = randomUUID();
    return publishAcknowledged(redis, keys.keyEvents(), `byok:${userId}`, keys.keyEventAcks(nonce), nonce);
  };
  const sealKey = (apiKey: string) => ({ api_key_enc: box.seal(apiKey), api_key_prefix: maskApiKey(apiKey) });
  const sealConfig = (value: Record<string, unknown>) => box.seal(JSON.stringify(value));

  const create = async (ctx: RequestContext): Promise<void> => {
    const who = await caller(ctx);
    const { userId } = who;
    const input = parseWith(CreateByokSchema, parseJsonObject(await ctx.body()), 422);
    if (input.api_key === undefined && !configCarriesCredential(input.config_json)) throw credentialRequired();
    const form = checkCloudForm(input.provider, input.config_json ?? null, input.api_key !== undefined, input.base_url ?? null);
    await checkAddresses(input.base_url ?? null, form, config.fetch.allowLoopback);
    const key = input.api_key === undefined ? undefined : sealKey(input.api_key);
    const row = await insertByokUpTo(sql, {
      id: randomUUID(),
      userId,
      provider: input.provider,
      label: input.label,
      apiKeyEnc: key?.api_key_enc ?? null,
      apiKeyPrefix: key?.api_key_prefix ?? null,
      baseUrl: input.base_url ?? null,
      configEnc: input.config_json === undefined ? null : sealConfig(input.config_json),
      alwaysUse: input.always_use,
      disabled: input.disabled,
      priority: input.priority,
      apiKeyId: who.keyId ?? null,
    }, config.byok.maxRowsPerProvider);
    if (!row) throw rowLimit(input.provider, config.byok.maxRowsPerProvider);
    await announce(userId);
    ctx.reply.json(201, byokRecord(row, box));
  };

  const list = async (ctx: RequestContext): Promise<void> => {
    const who = await caller(ctx);
    const rows = await listByok(sql, who.userId, providerFilter(ctx.query));
    ctx.reply.json(200, rows.filter((row) => maySee(who, row)).map((row) => byokRecord(row, box)));
  };

  const update = async (ctx: RequestContext): Promise<void> => {
    const who = await caller(ctx);
    const { userId } = who;
    const id = ctx.params[0] ?? '';
    const input = parseWith(UpdateByokSchema, parseJsonObject(await ctx.body()), 422);
    if (!UUID.test(id)) throw noSuchRow(id);
    const row = await sql.begin(async (tx) => {
      // Locked, so the api_key-or-config rule holds against a concurrent PUT of the other field.
      const current = await findUserByok(tx, userId, id, true);
      if (!current || !maySee(who, current)) return undefined;
      if (!mayChange(who, current)) throw notThisKeysRow(id);
      const changes: ByokChanges = {};
      if (input.label !== undefined) changes.label = input.label;
      if (input.api_key !== undefined) Object.assign(changes, input.api_key === null ? { api_key_enc: null, api_key_prefix: null } : sealKey(input.api_key));
      if (input.base_url !== undefined) changes.base_url = input.base_url;
      if (input.config_json !== undefined) changes.config_enc = input.config_json === null ? null : sealConfig(input.config_json);
      if (input.always_use !== undefined) changes.always_use = input.always_use;
      if (input.disabled !== undefined) changes.disabled = input.disabled;
      if (input.priority !== undefined) changes.priority = input.priority;
      const keepsKey = input.api_key === undefined ? current.api_key_enc !== null : input.api_key !== null;
      const configAfter = input.config_json !== undefined ? input.config_json
        : current.config_enc ? JSON.parse(box.open(current.config_enc)) as Record<string, unknown> : null;
      if (!keepsKey && !configCarriesCredential(configAfter)) throw credentialRequired();
      const baseUrlAfter = input.base_url !== undefined ? input.base_url : current.base_url;
      const form = checkCloudForm(current.provider, configAfter, keepsKey, baseUrlAfter);
      // An address the change sets is vetted; a row's others were vetted when they were set (and are at each connect).
      if (input.base_url !== undefined || input.config_json !== undefined) await checkAddresses(baseUrlAfter, form, config.fetch.allowLoopback);
      return updateByok(tx, userId, id, changes);
    });
    // Another user's row and a missing row look the same: never reveal which ids exist.
    if (!row) throw noSuchRow(id);
    await announce(userId);
    ctx.reply.json(200, byokRecord(row, box));
  };

  const remove = async (ctx: RequestContext): Promise<void> => {
    const who = await caller(ctx);
    const id = ctx.params[0] ?? '';
    const current = UUID.test(id) ? await findUserByok(sql, who.userId, id) : undefined;
    if (!current || !maySee(who, current)) throw noSuchRow(id);
    if (!mayChange(who, current)) throw notThisKeysRow(id);
    if (!(await deleteByok(sql, who.userId, id, who.keyId))) throw noSuchRow(id);
    await announce(who.userId);
    ctx.reply.send(204, '');
  };

  return { create, list, update, remove };
}
