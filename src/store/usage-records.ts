import type { AnySql } from './db.js';

/**
 * A Postgres array literal, built here rather than by the driver's per-element serializer (the
 * ledger writer's main cost under load). Numbers, booleans, uuids and timestamps need no quoting;
 * text is quoted with its quotes and backslashes escaped; null is NULL.
 */
function arrayLiteral(values: readonly (string | null)[], quoted: boolean): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ',';
    if (value === null || value === undefined) literal += 'NULL';
    else if (quoted) literal += `"${value.replace(/["\\]/g, '\\$&')}"`;
    else literal += value;
  }
  return `${literal}}`;
}

/** Usage charges and request logs, column by column, for set-based inserts. */
export class UsageRecords {
  readonly charges = { id: [] as string[], userId: [] as string[], creditsNano: [] as string[], apiKeyId: [] as (string | null)[], model: [] as string[], createdAt: [] as string[] };
  readonly logs = {
    id: [] as string[], createdAt: [] as string[], userId: [] as string[], apiKeyId: [] as (string | null)[], model: [] as string[],
    endpoint: [] as string[], stream: [] as string[], status: [] as string[], errorCode: [] as (string | null)[],
    promptTokens: [] as string[], completionTokens: [] as string[], cachedTokens: [] as string[], reasoningTokens: [] as string[],
    costNano: [] as string[], reservedNano: [] as string[], durationMs: [] as string[], ttfbMs: [] as (string | null)[], clientAborted: [] as string[],
  };
}

/**
 * Inserts a batch with one statement per table whatever its size: `unnest` over column arrays keeps
 * the statement text (and so its prepared statement) the same, and a replayed id inserts nothing.
 */
export async function insertUsageRecords(sql: AnySql, records: UsageRecords): Promise<void> {
  const c = records.charges;
  // Every column travels as one text parameter holding an array literal, cast in SQL.
  const a = (values: readonly (string | null)[]) => arrayLiteral(values, false);
  const q = (values: readonly (string | null)[]) => arrayLiteral(values, true);
  if (c.id.length > 0) {
    await sql`
      insert into transactions (id, user_id, credits_nano, payment_method, status, api_key_id, model, created_at)
      select id, user_id, credits_nano, 'usage', 'completed', api_key_id, model, created_at
      from unnest(${a(c.id)}::text::uuid[], ${q(c.userId)}::text::text[], ${a(c.creditsNano)}::text::bigint[], ${a(c.apiKeyId)}::text::uuid[],
                  ${q(c.model)}::text::text[], ${a(c.createdAt)}::text::timestamptz[])
        as r(id, user_id, credits_nano, api_key_id, model, created_at)
      on conflict (id) do nothing`;
  }
  const l = records.logs;
  if (l.id.length > 0) {
    await sql`
      insert into request_logs (id, created_at, user_id, api_key_id, model, endpoint, stream, status, error_code, prompt_tokens,
                                completion_tokens, cached_tokens, reasoning_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms, client_aborted)
      select * from unnest(
        ${a(l.id)}::text::uuid[], ${a(l.createdAt)}::text::timestamptz[], ${q(l.userId)}::text::text[], ${a(l.apiKeyId)}::text::uuid[], ${q(l.model)}::text::text[],
        ${q(l.endpoint)}::text::text[], ${a(l.stream)}::text::boolean[], ${a(l.status)}::text::integer[], ${q(l.errorCode)}::text::text[],
        ${a(l.promptTokens)}::text::integer[], ${a(l.completionTokens)}::text::integer[], ${a(l.cachedTokens)}::text::integer[],
        ${a(l.reasoningTokens)}::text::integer[], ${a(l.costNano)}::text::bigint[], ${a(l.reservedNano)}::text::bigint[], ${a(l.durationMs)}::text::integer[],
        ${a(l.ttfbMs)}::text::integer[], ${a(l.clientAborted)}::text::boolean[])
      on conflict (id, created_at) do nothing`;
  }
}
