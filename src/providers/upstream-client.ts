import { Pool, type Dispatcher } from 'undici';

/** An upstream URL split once, so the hot path parses no URLs. */
export interface UpstreamEndpoint {
  readonly origin: string;
  readonly path: string;
}

export function endpointOf(baseUrl: string, path: string): UpstreamEndpoint {
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  return Object.freeze({ origin: url.origin, path: url.pathname + url.search });
}

/** Keep-alive connection pools, one per upstream origin. */
export class UpstreamClient {
  private readonly pools = new Map<string, Pool>();
  constructor(private readonly timeoutMs: number) {}

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: 256,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        connectTimeout: 10_000,
      });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  post(endpoint: UpstreamEndpoint, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<Dispatcher.ResponseData> {
    return this.pool(endpoint.origin).request({ method: 'POST', path: endpoint.path, headers, body, signal });
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()));
    this.pools.clear();
  }
}
