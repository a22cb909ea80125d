import type { AnySql } from './db.js';

const TEXT = 25; // Postgres OID of text: every column travels as text[] and is cast in SQL

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
  const a = (values: readonly (string | null)[]) => sql.array(values as string[], TEXT);
  if (c.id.length > 0) {
    await sql`
      insert into transactions (id, user_id, credits_nano, payment_method, status, api_key_id, model, created_at)
      select id, user_id, credits_nano, 'usage', 'completed', api_key_id, model, created_at
      from unnest(${a(c.id)}::uuid[], ${a(c.userId)}::text[], ${a(c.creditsNano)}::bigint[], ${a(c.apiKeyId)}::uuid[],
                  ${a(c.model)}::text[], ${a(c.createdAt)}::timestamptz[])
        as r(id, user_id, credits_nano, api_key_id, model, created_at)
      on conflict (id) do nothing`;
  }
  const l = records.logs;
  if (l.id.length > 0) {
    await sql`
      insert into request_logs (id, created_at, user_id, api_key_id, model, endpoint, stream, status, error_code, prompt_tokens,
                                completion_tokens, cached_tokens, reasoning_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms, client_aborted)
      select * from unnest(
        ${a(l.id)}::uuid[], ${a(l.createdAt)}::timestamptz[], ${a(l.userId)}::text[], ${a(l.apiKeyId)}::uuid[], ${a(l.model)}::text[],
        ${a(l.endpoint)}::text[], ${a(l.stream)}::boolean[], ${a(l.status)}::integer[], ${a(l.errorCode)}::text[],
        ${a(l.promptTokens)}::integer[], ${a(l.completionTokens)}::integer[], ${a(l.cachedTokens)}::integer[],
        ${a(l.reasoningTokens)}::integer[], ${a(l.costNano)}::bigint[], ${a(l.reservedNano)}::bigint[], ${a(l.durationMs)}::integer[],
        ${a(l.ttfbMs)}::integer[], ${a(l.clientAborted)}::boolean[])
      on conflict (id, created_at) do nothing`;
  }
}
