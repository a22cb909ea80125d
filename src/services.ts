import type { Config } from './config.js';
import type { Sql } from './store/db.js';
import type { ScriptedRedis } from './admission/scripts.js';
import type { RedisKeys } from './admission/keys.js';
import type { Authenticator } from './auth/authenticator.js';
import type { DashboardSessions } from './auth/dashboard-sessions.js';
import type { Balances } from './billing/balances.js';
import type { Admission } from './admission/admission.js';
import type { CatalogSnapshot } from './catalog/snapshot.js';
import type { UpstreamClient } from './providers/upstream-client.js';
import type { ChatFamily, UpstreamTarget } from './providers/family.js';
import type { Family } from './catalog/model.js';
import type { Metrics } from './metrics.js';
import type { ByokCredentials } from './providers/byok-credentials.js';
import type { MediaStore } from './media/store.js';
import type { Routing } from './routing/routing.js';
import type { SignInWindow } from './admission/request-windows.js';

/** Everything a request handler of one HTTP thread may use. */
export interface Services {
  readonly config: Config;
  readonly sql: Sql;
  readonly redis: ScriptedRedis;
  readonly keys: RedisKeys;
  readonly auth: Authenticator;
  /** Dashboard sessions (sign-in): the refresh cookie's store, and what ends a session JWT. */
  readonly sessions: DashboardSessions;
  readonly balances: Balances;
  readonly admission: Admission;
  /** The per-address window of the sign-in routes (RATE_LIMIT_SIGNIN). */
  readonly signInWindow: SignInWindow;
  readonly catalog: () => CatalogSnapshot;
  readonly upstream: UpstreamClient;
  /** The platform credential and base URL of each vendor, by name (the catalog's `upstreamVendor`). */
  readonly vendors: Readonly<Record<string, UpstreamTarget | undefined>>;
  /** The platform targets of each model (routing file, else `vendors`) and the choice among them. */
  readonly routing: Routing;
  /** Users' own upstream credentials (BYOK), as the call path reads them. */
  readonly byok: ByokCredentials;
  /** The wire families this gateway speaks. */
  readonly families: Readonly<Partial<Record<Family, ChatFamily>>>;
  readonly metrics: Metrics;
  /** Media storage (uploads, rehosted results); undefined when MEDIA_STORAGE=off. */
  readonly media: MediaStore | undefined;
  /** Requests in progress; shutdown waits for them. */
  readonly inflight: { count: number };
}
