import type { AnySql } from './db.js';
import type { LedgerEvent } from '../ledger/event.js';

const NEEDS_ESCAPE = /["\\]/;

type Plain = string | number | boolean;
/** NULL as it stands in an unquoted array literal. */
const NULL = 'NULL';

/** A Postgres array literal of values that need no quoting (numbers, booleans, uuids; NULL as written). */
const plainLiteral = (values: readonly Plain[]) => `{${values.join(',')}}`;

/** A Postgres array literal of text values, each quoted (quotes and backslashes escaped); null is NULL. */
function quotedLiteral(values: readonly (string | null)[]): string {
  let nulls = 0;
  let escapes = false;
  for (const value of values) {
    if (value === null) nulls++;
    else if (NEEDS_ESCAPE.test(value)) escapes = true;
  }
  // The usual cases in one join or one repeat: no nulls (model, user), all null (the error code and trace id of untraced successes).
  if (values.length === 0) return '{}';
  if (nulls === 0 && !escapes) return `{"${values.join('","')}"}`;
  if (nulls === values.length) return `{${NULL}${`,${NULL}`.repeat(nulls - 1)}}`;
  return `{${values.map((value) => (value === null ? NULL : `"${value.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}

/**
 * Settled calls, column by column, for one set-based insert: each becomes a usage charge (unless it
 * cost nothing) and, when its event could be read, a request log. Columns hold literal-ready values
 * (NULL written out in the unquoted ones, see `add`), so each array literal is one join: building them value by
 * value was the ledger writer's main cost under load. Times are epoch milliseconds.
 */
export class UsageRecords {
  readonly id: string[] = [];
  readonly userId: string[] = [];
  readonly costNano: string[] = [];
  /** The request log is written only for a readable event; the charge always. */
  readonly readable: boolean[] = [];
  readonly apiKeyId: Plain[] = [];
  readonly model: string[] = [];
  readonly startedAtMs: number[] = [];
  readonly durationMs: Plain[] = [];
  readonly endpoint: (string | null)[] = [];
  readonly stream: Plain[] = [];
  readonly status: Plain[] = [];
  readonly errorCode: (string | null)[] = [];
  readonly promptTokens: Plain[] = [];
  readonly completionTokens: Plain[] = [];
  readonly cachedTokens: Plain[] = [];
  readonly reasoningTokens: Plain[] = [];
  readonly reservedNano: Plain[] = [];
  readonly ttfbMs: Plain[] = [];
  readonly clientAborted: Plain[] = [];
  readonly attempts: Plain[] = [];
  readonly byok: Plain[] = [];
  readonly traceId: (string | null)[] = [];

  get size(): number {
    return this.id.length;
  }

  /** One settled call: its charge always, its request log when its event could be read. */
  add(id: string, userId: string, costNano: string, event: LedgerEvent | undefined): void {
    this.id.push(id);
    this.userId.push(userId);
    this.costNano.push(costNano);
    this.readable.push(event !== undefined);
    this.apiKeyId.push(event?.keyId ?? NULL);
    this.model.push(event?.model ?? 'unknown');
    // The charge is dated at the end of its call; an unreadable one when it is written.
    this.startedAtMs.push(event?.startedAtMs ?? Date.now());
    this.durationMs.push(event?.durationMs ?? NULL);
    this.endpoint.push(event?.endpoint ?? null);
    this.stream.push(event?.stream ?? NULL);
    this.status.push(event?.status ?? NULL);
    this.errorCode.push(event ? event.errorCode : null);
    this.promptTokens.push(event?.promptTokens ?? NULL);
    this.completionTokens.push(event?.completionTokens ?? NULL);
    this.cachedTokens.push(event?.cachedTokens ?? NULL);
    this.reasoningTokens.push(event?.reasoningTokens ?? NULL);
    this.reservedNano.push(event?.reservedNano ?? NULL);
    this.ttfbMs.push(event?.ttfbMs ?? NULL);
    this.clientAborted.push(event?.clientAborted ?? NULL);
    this.attempts.push(event ? event.attempts ?? 1 : NULL);
    this.byok.push(event?.ownCredential === true);
    this.traceId.push(event?.traceId ?? null);
  }
}

/**
 * Inserts a batch in one statement whatever its size (so it commits or fails as a whole, in one round
 * trip): `unnest` over column arrays keeps the statement text (and so its prepared statement) the
 * same, and a replayed id inserts nothing. A charge is dated at the end of its call, a log at its start.
 * Rows go in in id order: two writers inserting overlapping batches at once (a journal replay) then
 * wait for each other's rows instead of deadlocking over them.
 *
 * The same statement adds what it inserted to usage_rollup (migrations/0013): the charges' amounts
 * and the logs' counts and tokens, as RETURNING gives them, so an id inserted before adds nothing.
 * Both count in the hour the call ended (the charge's created_at; a log's start plus its duration).
 * Rollup rows are upserted in key order, for the same reason as above.
 */
export async function insertUsageRecords(sql: AnySql, r: UsageRecords): Promise<void> {
  if (r.size === 0) return;
  // Every column travels as one text parameter holding an array literal, cast in SQL.
  const a = plainLiteral;
  const q = quotedLiteral;
  await sql`
    with r as (
      select * from unnest(
        ${a(r.id)}::text::uuid[], ${q(r.userId)}::text::text[], ${a(r.costNano)}::text::bigint[], ${a(r.readable)}::text::boolean[],
        ${a(r.apiKeyId)}::text::uuid[], ${q(r.model)}::text::text[], ${a(r.startedAtMs)}::text::bigint[], ${a(r.durationMs)}::text::integer[],
        ${q(r.endpoint)}::text::text[], ${a(r.stream)}::text::boolean[], ${a(r.status)}::text::integer[], ${q(r.errorCode)}::text::text[],
        ${a(r.promptTokens)}::text::integer[], ${a(r.completionTokens)}::text::integer[], ${a(r.cachedTokens)}::text::integer[],
        ${a(r.reasoningTokens)}::text::integer[], ${a(r.reservedNano)}::text::bigint[], ${a(r.ttfbMs)}::text::integer[], ${a(r.clientAborted)}::text::boolean[],
        ${a(r.attempts)}::text::smallint[], ${a(r.byok)}::text::boolean[], ${q(r.traceId)}::text::text[])
      as r(id, user_id, cost_nano, readable, api_key_id, model, started_at_ms, duration_ms, endpoint, stream, status, error_code,
           prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, reserved_nano, ttfb_ms, client_aborted, attempts, byok, trace_id)
    ), charges as (
      insert into transactions (id, user_id, credits_nano, payment_method, status, api_key_id, model, created_at)
      select id, user_id, -cost_nano, 'usage', 'completed', api_key_id, model,
             timestamptz 'epoch' + (started_at_ms + coalesce(duration_ms, 0)) * interval '1 millisecond'
      from r where cost_nano <> 0 order by id
      on conflict (id) do nothing
      returning user_id, api_key_id, model, created_at as ended_at, -credits_nano as cost_nano
    ), logs as (
      insert into request_logs (id, created_at, user_id, api_key_id, model, endpoint, stream, status, error_code, prompt_tokens,
                                completion_tokens, cached_tokens, reasoning_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms, client_aborted, attempts, byok, trace_id)
      select id, timestamptz 'epoch' + started_at_ms * interval '1 millisecond', user_id, api_key_id, model, endpoint, stream, status, error_code,
             prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms, client_aborted, attempts, byok, trace_id
      from r where readable order by id
      on conflict (id, created_at) do nothing
      returning user_id, api_key_id, model, created_at + coalesce(duration_ms, 0) * interval '1 millisecond' as ended_at, status,
                prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens
    ), settled as (
      select user_id, api_key_id, model, ended_at, 0 as requests, 0 as errors, 0 as prompt_tokens, 0 as completion_tokens,
             0 as cached_tokens, 0 as reasoning_tokens, cost_nano from charges
      union all
      select user_id, api_key_id, model, ended_at, 1, (status >= 400)::int, prompt_tokens, completion_tokens,
             cached_tokens, reasoning_tokens, 0 from logs
    )
    insert into usage_rollup as u (user_id, bucket, model, api_key_id, requests, errors, prompt_tokens, completion_tokens,
                                   cached_tokens, reasoning_tokens, cost_nano)
    select user_id, date_trunc('hour', ended_at, 'UTC'), model, coalesce(api_key_id, '00000000-0000-0000-0000-000000000000'::uuid),
           sum(requests), sum(errors), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(reasoning_tokens), sum(cost_nano)
    from settled group by 1, 2, 3, 4 order by 1, 2, 3, 4
    on conflict (user_id, bucket, model, api_key_id) do update set
      requests = u.requests + excluded.requests, errors = u.errors + excluded.errors,
      prompt_tokens = u.prompt_tokens + excluded.prompt_tokens, completion_tokens = u.completion_tokens + excluded.completion_tokens,
      cached_tokens = u.cached_tokens + excluded.cached_tokens, reasoning_tokens = u.reasoning_tokens + excluded.reasoning_tokens,
      cost_nano = u.cost_nano + excluded.cost_nano`;
}
