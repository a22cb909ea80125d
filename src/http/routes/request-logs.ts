import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { Principal } from '../../auth/authenticator.js';
import { badRequest, notFound } from '../errors.js';
import { QueryParams, checkRange } from '../query/management-params.js';
import { nanoToUsd } from '../../billing/pricing.js';
import { UUID } from '../../store/ids.js';
import { decodePageCursor, encodePageCursor } from '../query/page-cursor.js';
import {
  MODALITIES, findRequestLog, listRequestLogs, modalityOf, type RequestLogRow,
} from '../../store/request-log-reads.js';

export const MAX_REQUESTS_PER_PAGE = 100;
const DEFAULT_REQUESTS_PER_PAGE = 20;

/** The key a caller's reads are confined to: a regular key sees only its own calls; a JWT or a management key the whole account's. */
export const ownKeyOf = (principal: Principal): string | undefined => (principal.kind === 'regular' ? principal.key!.id : undefined);

/**
 * The key filter of a read: the caller's own key for a regular key (another `key_id` then matches
 * nothing: null), else the `key_id` asked for.
 */
export function keyFilterOf(principal: Principal, asked: string | undefined): string | undefined | null {
  const own = ownKeyOf(principal);
  if (own === undefined) return asked;
  return asked === undefined || asked === own ? own : null;
}

/** A request-log row as the API shows it: costs in USD, the request id is the call's `x-request-id`. */
function record(row: RequestLogRow) {
  return {
    id: row.id,
    created_at: row.created_at.toISOString(),
    key_id: row.api_key_id,
    model: row.model,
    endpoint: row.endpoint,
    modality: modalityOf(row.endpoint),
    status: row.status,
    error_code: row.error_code,
    prompt_tokens: row.prompt_tokens,
    completion_tokens: row.completion_tokens,
    cached_tokens: row.cached_tokens,
    reasoning_tokens: row.reasoning_tokens,
    cost: nanoToUsd(row.cost_nano),
    reserved: nanoToUsd(row.reserved_nano),
    latency_ms: row.duration_ms,
    ttfb_ms: row.ttfb_ms,
    stream: row.stream,
    client_aborted: row.client_aborted,
    byok: row.byok,
    attempts: row.attempts,
    trace_id: row.trace_id,
  };
}

/** GET /api/v1/requests and GET /api/v1/requests/:id: the caller's request log (docs/api.md "Request log"). */
export function requestLogRoutes(services: Services) {
  const { auth, config, sql } = services;

  const list = async (ctx: RequestContext): Promise<void> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    const q = new QueryParams(ctx.query);
    const limit = q.integer('limit', 1, MAX_REQUESTS_PER_PAGE) ?? DEFAULT_REQUESTS_PER_PAGE;
    const cursor = q.text('cursor', 128);
    const keyId = keyFilterOf(principal, q.uuid('key_id'));
    const model = q.text('model');
    const modality = q.oneOf('modality', MODALITIES);
    const statusText = q.text('status', 16);
    let status: number | 'error' | undefined;
    if (statusText !== undefined) {
      if (statusText !== 'error' && !/^[1-5]\d\d$/.test(statusText)) {
        throw badRequest(`Invalid value for 'status': must be an HTTP status (100 to 599) or 'error' (every status from 400).`, 'status');
      }
      status = statusText === 'error' ? 'error' : Number(statusText);
    }
    const from = q.time('from');
    const to = q.time('to');
    if (from && to) checkRange(from, to);
    const after = cursor === undefined ? undefined : decodePageCursor(cursor);
    if (keyId === null) {
      ctx.reply.json(200, { data: [], has_more: false, next_cursor: null });
      return;
    }
    const { rows, more } = await listRequestLogs(sql, { userId: principal.userId, keyId, model, modality, status, from, to, after, limit });
    ctx.reply.json(200, { data: rows.map(record), has_more: more, next_cursor: more ? encodePageCursor(rows[rows.length - 1]!) : null });
  };

  const one = async (ctx: RequestContext): Promise<void> => {
    const principal = await auth.principal(ctx, config.jwtSecret);
    const id = ctx.params[0] ?? '';
    // Another account's id, another key's (for a regular key) and no id at all answer alike.
    const row = UUID.test(id) ? await findRequestLog(sql, principal.userId, id.toLowerCase(), ownKeyOf(principal)) : undefined;
    if (!row) throw notFound(`No request with id '${id.slice(0, 64)}' belongs to this account.`);
    ctx.reply.json(200, record(row));
  };

  return { list, one };
}
