import { randomUUID } from 'node:crypto';
import { redisUnavailable } from '../http/errors.js';
import type { Metrics } from '../metrics.js';
import { defaultWindowText, leaseIdFor, rateLimitExceeded, rateLimitHeaders } from './admission.js';
import type { CountWindow } from './scripts.js';
import type { ScriptBatcher } from './script-batcher.js';

/** A sliding window: at most `requests` per `windowMs`. */
export interface WindowLimit {
  readonly requests: number;
  readonly windowMs: number;
}

/**
 * How a route counts the requests made with an API key: `admission` (the calls that run a model, and
 * uploads) leaves it to admission, which counts them in the default window; the rest are counted
 * before their work, writes in the `default` window and reads (GET, HEAD) in the `reads` window.
 */
export type RouteWindow = 'admission' | CountWindow;

/**
 * Counts the API-key requests admission never sees (management calls, task reads and cancels) as
 * they arrive: one count.lua, which counts the request while its window has room and otherwise
 * leaves it uncounted, refused here with 429 before it does any work. Writes share the key's default
 * window (`RATE_LIMIT_DEFAULT`) with its admitted calls; reads have a window of their own
 * (`RATE_LIMIT_READS`), wide enough for clients that poll their tasks.
 */
export class RequestWindows {
  constructor(
    private readonly scripts: ScriptBatcher,
    private readonly limits: Readonly<Record<CountWindow, WindowLimit>>,
    /** The default window's keys live for a window plus a lease's life, as admit.lua sets them. */
    private readonly leaseLifeMs: number,
    private readonly metrics: Metrics,
  ) {}

  /** Counts one request of the key in `window`; 429 when the window is full, 503 when Redis cannot say. */
  async enter(userId: string, keyId: string, window: CountWindow): Promise<void> {
    const limit = this.limits[window];
    let result;
    try {
      result = await this.scripts.count({
        userId, keyId, memberId: leaseIdFor(keyId), window, windowMs: limit.windowMs, leaseLifeMs: this.leaseLifeMs, rpm: false, limit: limit.requests,
      });
    } catch {
      throw redisUnavailable();
    }
    if (result.counted) return;
    this.metrics.rejections.inc({ reason: window === 'reads' ? 'reads_limited' : 'rate_limited' });
    const which = window === 'reads'
      ? `at most ${limit.requests} reads (GET and HEAD requests) per ${limit.windowMs / 1000} seconds per API key`
      : defaultWindowText(limit);
    throw rateLimitExceeded(which, result.retryAfterMs, rateLimitHeaders({ limit: limit.requests, remaining: 0, resetMs: result.retryAfterMs }));
  }
}

/**
 * The sign-in window (RATE_LIMIT_SIGNIN): `GET /auth/login` and `GET /auth/callback` counted together per
 * client address in Redis (all gateways share it), so one address cannot make the gateway call the
 * identity provider, or start login cookies and sessions, without limit.
 */
export class SignInWindow {
  constructor(private readonly scripts: ScriptBatcher, private readonly limit: WindowLimit, private readonly metrics: Metrics) {}

  /** Counts one sign-in request from `address`; 429 when its window is full, 503 when Redis cannot say. */
  async enter(address: string): Promise<void> {
    const { requests, windowMs } = this.limit;
    let result;
    try {
      result = await this.scripts.countSignIn(address, randomUUID(), windowMs, requests);
    } catch {
      throw redisUnavailable();
    }
    if (result.counted) return;
    this.metrics.rejections.inc({ reason: 'signin_limited' });
    throw rateLimitExceeded(`at most ${requests} sign-in requests (/auth/login, /auth/callback) per ${windowMs / 1000} seconds from one address`, result.retryAfterMs,
      rateLimitHeaders({ limit: requests, remaining: 0, resetMs: result.retryAfterMs }));
  }
}
