import type { Config } from './config.js';
import type { Sql } from './store/db.js';
import type { ScriptedRedis } from './admission/scripts.js';
import type { RedisKeys } from './admission/keys.js';
import type { Authenticator } from './auth/authenticator.js';
import type { Balances } from './billing/balances.js';
import type { Admission } from './admission/admission.js';
import type { CatalogSnapshot } from './catalog/snapshot.js';
import type { UpstreamClient, UpstreamEndpoint } from './providers/upstream-client.js';
import type { Metrics } from './metrics.js';

export interface VendorRoute {
  readonly chatCompletions: UpstreamEndpoint;
  readonly headers: Readonly<Record<string, string>>;
}

/** Everything a request handler of one HTTP thread may use. */
export interface Services {
  readonly config: Config;
  readonly sql: Sql;
  readonly redis: ScriptedRedis;
  readonly keys: RedisKeys;
  readonly auth: Authenticator;
  readonly balances: Balances;
  readonly admission: Admission;
  readonly catalog: () => CatalogSnapshot;
  readonly upstream: UpstreamClient;
  /** By vendor name (the catalog's `upstreamVendor`). */
  readonly vendors: Readonly<Record<string, VendorRoute | undefined>>;
  readonly metrics: Metrics;
  /** Requests in progress; shutdown waits for them. */
  readonly inflight: { count: number };
}
