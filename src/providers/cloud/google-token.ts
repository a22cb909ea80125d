import { createHash, sign } from 'node:crypto';
import { UpstreamError, endpointOf, type UpstreamClient } from '../upstream-client.js';
import { log } from '../../log.js';
import type { ServiceAccount } from './forms.js';

/** The scope Vertex AI accepts. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** A token is replaced this long before it expires (at most half its lifetime for short ones). */
const REFRESH_MARGIN_S = 300;
const ASSERTION_LIFETIME_S = 3600;
const MAX_CACHED = 10_000;
/** An OAuth error code (RFC 6749 5.2: invalid_grant, unauthorized_client, ...): the one word of a refusal passed on. */
const OAUTH_ERROR_CODE = /^[a-z_]{1,40}$/;
/** A kept token whose fetch failed is fetched again after this, doubling up to the longest wait. */
const KEEP_RETRY_FIRST_MS = 1_000;
const KEEP_RETRY_LONGEST_MS = 30_000;

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

/** The RS256 JWT a service account presents to its token_uri (RFC 7523), signed with its private key. */
export function serviceAccountAssertion(account: ServiceAccount, nowS: number, scope = CLOUD_PLATFORM_SCOPE): string {
  const header = { alg: 'RS256', typ: 'JWT', ...(account.privateKeyId ? { kid: account.privateKeyId } : {}) };
  const claims = { iss: account.clientEmail, scope, aud: account.tokenUri, iat: nowS, exp: nowS + ASSERTION_LIFETIME_S };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), account.privateKey).toString('base64url')}`;
}

export class TokenError extends Error {
  override name = 'TokenError';
}

interface Cached { token: string; refreshAtMs: number; expiresAtMs: number }

/**
 * A service account's access token for a caller that needs it synchronously (a platform Vertex AI
 * target of the routing file: the family reads the key as it builds a request). Fetched at once and
 * again before it expires, in the background; a failed fetch is retried with a growing wait.
 */
export interface KeptToken {
  /** The access token while it is valid; undefined before the first one arrives, or once it expired unreplaced. */
  current(): string | undefined;
  /** Settles once the first fetch has (with a token or not): start-up waits for it, bounded. */
  readonly ready: Promise<void>;
}

/**
 * OAuth 2.0 access tokens for service accounts (the JWT bearer grant), cached per account (its
 * email, key and token_uri) until shortly before they expire; concurrent callers share one fetch.
 * A failed fetch is not remembered: the next call tries again.
 */
export class ServiceAccountTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<Cached>>();
  /** Tokens kept fresh in the background, by account: never dropped (the routing file names a few accounts). */
  private readonly kept = new Map<string, KeptToken>();

  constructor(private readonly client: UpstreamClient, private readonly now: () => number = Date.now) {}

  token(account: ServiceAccount): Promise<string> {
    return this.entry(account).then((entry) => entry.token);
  }

  /** The account's token kept fresh from now on (one keeper per account, however many targets name it). */
  keep(account: ServiceAccount): KeptToken {
    const key = keyOf(account);
    let kept = this.kept.get(key);
    if (!kept) this.kept.set(key, kept = new KeptAccessToken(() => this.entry(account), this.now, account.clientEmail));
    return kept;
  }

  private entry(account: ServiceAccount): Promise<Cached> {
    const key = keyOf(account);
    const cached = this.cache.get(key);
    if (cached && cached.refreshAtMs > this.now()) return Promise.resolve(cached);
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetch(account).then(({ token, expiresIn }) => {
        const lifetime = Math.max(0, expiresIn);
        const margin = Math.min(REFRESH_MARGIN_S, lifetime / 2);
        const now = this.now();
        const entry = { token, refreshAtMs: now + (lifetime - margin) * 1000, expiresAtMs: now + lifetime * 1000 };
        if (this.cache.size >= MAX_CACHED) this.cache.clear();
        this.cache.set(key, entry);
        return entry;
      }).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private async fetch(account: ServiceAccount): Promise<{ token: string; expiresIn: number }> {
    let assertion: string;
    try {
      assertion = serviceAccountAssertion(account, Math.floor(this.now() / 1000));
    } catch (error) {
      throw new TokenError(`the service account's private_key cannot sign: ${(error as Error).message}`);
    }
    const body = new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString();
    // The token URI is the user's choice (held to Google's own host): a guarded endpoint, and what it
    // or the transport says never reaches the caller or last_error beyond a short, fixed vocabulary.
    const response = await this.client.post(endpointOf(account.tokenUri, '', true), { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body)
      .catch((error: Error) => { throw new TokenError(`the token endpoint could not be reached${error instanceof UpstreamError ? ` (${error.reason})` : ''}`); });
    const text = await response.text();
    let answer: Record<string, unknown> = {};
    try {
      answer = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // reported below
    }
    if (response.status !== 200) {
      const code = typeof answer.error === 'string' && OAUTH_ERROR_CODE.test(answer.error) ? `: ${answer.error}` : '';
      throw new TokenError(`the token endpoint refused the service account (${response.status}${code})`);
    }
    const token = answer.access_token;
    const expiresIn = Number(answer.expires_in ?? 3600);
    if (typeof token !== 'string' || token === '' || !Number.isFinite(expiresIn)) throw new TokenError('the token endpoint answered without an access_token');
    return { token, expiresIn };
  }
}

const keyOf = (account: ServiceAccount) => createHash('sha256').update(`${account.clientEmail}\n${account.tokenUri}\n${account.privateKey}`).digest('base64url');

/** KeptToken: a timer (not holding the process open) fetches the next token when the cache says it is due. */
class KeptAccessToken implements KeptToken {
  readonly ready: Promise<void>;
  private token: string | undefined;
  private expiresAtMs = 0;
  private retryMs = KEEP_RETRY_FIRST_MS;

  constructor(private readonly fetchEntry: () => Promise<Cached>, private readonly now: () => number, private readonly clientEmail: string) {
    this.ready = this.refresh();
  }

  current(): string | undefined {
    return this.token !== undefined && this.expiresAtMs > this.now() ? this.token : undefined;
  }

  private async refresh(): Promise<void> {
    try {
      const entry = await this.fetchEntry();
      this.token = entry.token;
      this.expiresAtMs = entry.expiresAtMs;
      this.retryMs = KEEP_RETRY_FIRST_MS;
      this.after(entry.refreshAtMs - this.now());
    } catch (error) {
      // The token in hand (if any) stays in use until it expires; TokenError's words are the short, fixed ones.
      log.warn('a service account access token could not be fetched', { account: this.clientEmail, error: (error as Error).message, retryInMs: this.retryMs });
      this.after(this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, KEEP_RETRY_LONGEST_MS);
    }
  }

  private after(ms: number): void {
    setTimeout(() => void this.refresh(), Math.max(ms, KEEP_RETRY_FIRST_MS)).unref();
  }
}
