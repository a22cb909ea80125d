// The management API as the pages call it: typed paths over the session's authenticated request.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Session } from './session.js';
import { useLoad, type Loaded } from './components.js';

export type Query = Record<string, string | number | boolean | null | undefined>;

/** `path?query` with the empty values left out. */
export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.append(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export type Api = {
  get<T>(path: string, query?: Query): Promise<T>;
  post<T>(path: string, body?: unknown): Promise<T>;
  put<T>(path: string, body: unknown): Promise<T>;
  del<T = void>(path: string): Promise<T>;
};

export function apiOf(session: Session): Api {
  return {
    get: (path, query) => session.request('GET', withQuery(path, query)),
    post: (path, body) => session.request('POST', path, body ?? {}),
    put: (path, body) => session.request('PUT', path, body),
    del: (path) => session.request('DELETE', path),
  };
}

export const ApiContext = createContext<Api | null>(null);

export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi outside the signed-in console');
  return api;
}

/** A path segment from an id the API gave (ids are UUIDs, but never trust that in a URL). */
export const segment = (id: string) => encodeURIComponent(id);

// The records the pages read (docs/api.md).
export type ApiKey = {
  id: string;
  name: string;
  key_prefix: string;
  ip_whitelist: string[];
  rate_limit_rpm: number | null;
  rate_limit_tph: number | null;
  rate_limit_tpd: number | null;
  is_provisioning: boolean;
  disabled: boolean;
  created_at: string;
  credit_limit: number | null;
  credit_reset_interval: 'none' | 'daily' | 'weekly' | 'monthly';
  credit_used: number;
  credit_period_start: string | null;
  expires_at: string | null;
};

export type CreatedKey = { id: string; name: string; key: string; created_at: string };

export type RequestRecord = {
  id: string;
  created_at: string;
  key_id: string | null;
  model: string | null;
  endpoint: string;
  modality: string | null;
  status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  cost: number;
  reserved: number;
  latency_ms: number | null;
  ttfb_ms: number | null;
  stream: boolean;
  client_aborted: boolean;
  byok: boolean;
  attempts: number;
};

export type CursorPage<T> = { data: T[]; has_more: boolean; next_cursor: string | null };
export type NumberedPage<T> = { data: T[]; total: number; page: number; per_page: number; total_pages?: number };

/** The account's keys, for the pages that say which key made a call. */
export function useKeys(): Loaded<ApiKey[]> {
  const api = useApi();
  return useLoad(() => api.get<ApiKey[]>('/api/v1/api-keys'), []);
}

/** A key's name; a revoked key (no longer listed) by the start of its id. */
export function keyName(keys: ApiKey[] | null, id: string | null): string {
  if (id === null) return '—';
  return keys?.find((key) => key.id === id)?.name ?? `Key ${id.slice(0, 8)}`;
}
