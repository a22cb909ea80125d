import type { AnySql } from './db.js';
import { afterCursor, createdUsColumn, type PageCursor } from './page-cursor.js';

/** The modalities GET /api/v1/requests filters by, each the request-log endpoint names that serve it. */
export const MODALITY_ENDPOINTS = Object.freeze({
  chat: ['chat.completions', 'responses', 'messages'],
  image: ['images.generations'],
  video: ['videos.generations'],
  audio: ['audio.speech', 'audio.generations'],
  embedding: ['embeddings'],
} as const satisfies Record<string, readonly string[]>);

export type Modality = keyof typeof MODALITY_ENDPOINTS;
export const MODALITIES = Object.keys(MODALITY_ENDPOINTS) as Modality[];

const MODALITY_OF: ReadonlyMap<string, Modality> = new Map(
  MODALITIES.flatMap((modality) => MODALITY_ENDPOINTS[modality].map((endpoint) => [endpoint, modality] as const)));

/** The modality of a request-log endpoint; null for one that is no model call (an upload). */
export const modalityOf = (endpoint: string): Modality | null => MODALITY_OF.get(endpoint) ?? null;

export interface RequestLogRow {
  id: string;
  created_at: Date;
  /** created_at in microseconds since the epoch, as text: the cursor's exact position (a Date keeps milliseconds). */
  created_us: string;
  api_key_id: string | null;
  model: string;
  endpoint: string;
  stream: boolean;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost_nano: bigint;
  reserved_nano: bigint;
  duration_ms: number | null;
  ttfb_ms: number | null;
  client_aborted: boolean;
  byok: boolean;
  attempts: number;
  trace_id: string | null;
}

export interface RequestLogFilter {
  readonly userId: string;
  readonly keyId?: string;
  readonly model?: string;
  readonly modality?: Modality;
  /** An exact status, or 'error' for every status from 400. */
  readonly status?: number | 'error';
  readonly from?: Date;
  readonly to?: Date;
  readonly after?: PageCursor;
  readonly limit: number;
}

const COLUMNS = (sql: AnySql) => sql`
  id, created_at, ${createdUsColumn(sql)}, api_key_id, model, endpoint, stream, status,
  error_code, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_nano, reserved_nano, duration_ms, ttfb_ms,
  client_aborted, byok, attempts, trace_id`;

/**
 * One user's request log, newest first, `limit` rows after the cursor (one more is read to tell
 * whether a next page exists). Served by request_logs_user_created (user_id, created_at desc, id desc).
 */
export async function listRequestLogs(sql: AnySql, f: RequestLogFilter): Promise<{ rows: RequestLogRow[]; more: boolean }> {
  const rows = await sql<RequestLogRow[]>`
    select ${COLUMNS(sql)} from request_logs
    where user_id = ${f.userId}
      ${f.keyId === undefined ? sql`` : sql`and api_key_id = ${f.keyId}::uuid`}
      ${f.model === undefined ? sql`` : sql`and model = ${f.model}`}
      ${f.modality === undefined ? sql`` : sql`and endpoint = any(${sql.array([...MODALITY_ENDPOINTS[f.modality]])}::text[])`}
      ${f.status === undefined ? sql`` : f.status === 'error' ? sql`and status >= 400` : sql`and status = ${f.status}`}
      ${f.from === undefined ? sql`` : sql`and created_at >= ${f.from}`}
      ${f.to === undefined ? sql`` : sql`and created_at < ${f.to}`}
      ${afterCursor(sql, f.after)}
    order by created_at desc, id desc
    limit ${f.limit + 1}`;
  return { rows: rows.slice(0, f.limit), more: rows.length > f.limit };
}

/** One request log of the user (and of the key, when given); undefined for an id that is not theirs. */
export async function findRequestLog(sql: AnySql, userId: string, id: string, keyId?: string): Promise<RequestLogRow | undefined> {
  const [row] = await sql<RequestLogRow[]>`
    select ${COLUMNS(sql)} from request_logs
    where id = ${id}::uuid and user_id = ${userId} ${keyId === undefined ? sql`` : sql`and api_key_id = ${keyId}::uuid`}
    limit 1`;
  return row;
}
