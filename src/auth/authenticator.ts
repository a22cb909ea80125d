import { timingSafeEqual } from 'node:crypto';
import { IpRanges } from './ip-ranges.js';
import { withinTimeout, type Sql } from '../store/db.js';
import { ApiError, unauthorized } from '../http/errors.js';
import { ensureAccount, setAccountEmail } from '../store/accounts.js';
import { findActiveKeyByPublicId, type ApiKeyRow } from '../store/api-keys.js';
import { parseApiKey, secretMatches, type ParsedApiKey } from './api-key-format.js';
import { DEFAULT_JWT_MAX_LIFETIME_SECONDS, UNSUPPORTED_ALGORITHM, verifyJwt, type JwtResult } from './jwt.js';
import { IdentityProviderUnavailable, type IdentityProviderTokens } from './idp-tokens.js';
import { LruMap } from './lru-map.js';
import { FailureBudget } from './failure-budget.js';
import { credentialKindOf, type CredentialKind } from './credential-roles.js';
import type { RouteWindow } from '../admission/request-windows.js';
import type { CountWindow } from '../admission/scripts.js';

export interface AuthenticatedKey {
  readonly id: string;
  readonly userId: string;
  readonly publicId: string;
  readonly isProvisioning: boolean;
  readonly row: ApiKeyRow;
  /** The key's `ip_whitelist`, compiled; empty means any address. */
  readonly allowedAddresses: IpRanges;
}

/** Who sent a request, as authentication needs it (a RequestContext is one). */
export interface Caller {
  readonly headers: { readonly authorization: string };
  /** Read only for a key with an ip_whitelist. */
  readonly clientAddress: string;
  /** How the route counts a request made with an API key in the key's windows; absent: not at all. */
  readonly window?: RouteWindow;
  /**
   * On a route whose admission counts the request: the key it authenticated with, until admission has
   * counted it (the handler clears it then); an answer given while it is set is counted afterwards.
   */
  windowKey?: AuthenticatedKey;
}

/** Counts a request of an API key in one of its windows before any work, or throws (429 when the window is full). */
export interface KeyWindows {
  enter(userId: string, keyId: string, window: CountWindow): Promise<void>;
}

/** Who a management request acts as: its account, the kind of credential, and the key when it was one. */
export interface Principal {
  readonly userId: string;
  readonly kind: CredentialKind;
  /** The API key (regular or management) that authenticated; undefined for a JWT. */
  readonly key?: AuthenticatedKey;
}

/** The authenticator's limits (Config.auth has them from the environment). */
export interface AuthLimits {
  readonly failureBudget: number;
  readonly failureWindowMs: number;
  readonly keyCacheEntries: number;
  readonly jwtMaxLifetimeSeconds: number;
}

const DEFAULT_LIMITS: AuthLimits = { failureBudget: 30, failureWindowMs: 60_000, keyCacheEntries: 100_000, jwtMaxLifetimeSeconds: DEFAULT_JWT_MAX_LIFETIME_SECONDS };
/** Source addresses whose failures one thread remembers at once. */
const FAILURE_SUBJECTS = 10_000;

interface CacheEntry {
  until: number;
  /** Undefined for a public id that names no live key (remembered briefly too). */
  readonly key: AuthenticatedKey | undefined;
  /** The secret that last matched the stored hash: later requests compare bytes instead of recomputing the HMAC. */
  verifiedSecret?: Buffer;
}

const POSITIVE_TTL_MS = 30_000;
// Unknown public ids are remembered briefly so a flood of bad keys does not reach Postgres.
const NEGATIVE_TTL_MS = 5_000;
/** How long a thread trusts that a JWT's `email` claim is the stored address before writing it again (a no-op when unchanged). */
const ACCOUNT_EMAIL_TTL_MS = 10 * 60_000;

/** Bearer token of an Authorization header, or '' when there is none. */
export function bearerToken(authorization: string): string {
  return authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ' ? authorization.slice(7).trim() : '';
}

export const looksLikeApiKey = (token: string) => token.startsWith('sk-');

/**
 * API keys by public id through an in-process cache (short TTL, dropped at once by a Redis pub/sub
 * message on revoke/update); the secret is checked against its keyed hash in constant time.
 */
export class Authenticator {
  /** Live keys, least recently used evicted first. Unknown public ids live apart, so a flood of them never pushes out a live key. */
  private readonly cache: LruMap<string, CacheEntry>;
  private readonly unknown: LruMap<string, CacheEntry>;
  /** Failed API-key authentications per source address: past the budget, 429 before any Postgres query. */
  private readonly failures: FailureBudget;
  /** Accounts this thread has made sure exist, with the `email` claim (and whether it was verified) it last stored for each. */
  private readonly knownAccounts: LruMap<string, { email: string | undefined; verified: boolean; until: number }>;

  constructor(
    private readonly sql: Sql, private readonly keySecret: string, private readonly keyPrefix: string,
    private readonly limits: AuthLimits = DEFAULT_LIMITS,
    /** Called once per Postgres lookup of a key (gateway_auth_key_lookups_total). */
    private readonly onLookup: (found: boolean) => void = () => {},
    /** Where requests of routes admission does not count are counted (see `counted`); none: they are not. */
    private readonly windows?: KeyWindows,
    /** The OpenID provider whose RS256/ES256 access tokens count as management JWTs (OIDC_ISSUER); none: HS256 only. */
    private readonly idp?: IdentityProviderTokens,
    /** Dashboard sessions: a JWT with a `sid` claim is taken only while its session is open; none: such JWTs are refused. */
    private readonly sessions?: { isLive(sid: string): Promise<boolean> },
  ) {
    this.cache = new LruMap(limits.keyCacheEntries);
    this.unknown = new LruMap(limits.keyCacheEntries);
    this.knownAccounts = new LruMap(limits.keyCacheEntries);
    this.failures = new FailureBudget({ failures: limits.failureBudget, windowMs: limits.failureWindowMs, subjects: FAILURE_SUBJECTS }, 'authentications');
  }

  private readonly revoked = new Map<string, number>();

  /** A key changed elsewhere (pub/sub): forget it; when revoked, in-flight requests must stop too. */
  invalidate(publicId: string, revoked: boolean): void {
    this.cache.delete(publicId);
    this.unknown.delete(publicId);
    if (revoked) {
      const now = Date.now();
      this.revoked.set(publicId, now);
      // Requests outlive the cache by at most the upstream timeout; older entries are of no use.
      for (const [id, at] of this.revoked) if (now - at > 3_600_000) this.revoked.delete(id);
    }
  }

  /** Drops every cached key (their next use reads Postgres again). */
  forgetAll(): void {
    this.cache.clear();
    this.unknown.clear();
  }

  /** Checked before each upstream call of a request that was authenticated earlier: 401 once the key was revoked. */
  requireNotRevoked(key: AuthenticatedKey): void {
    if (this.revoked.has(key.publicId)) throw new ApiError(401, 'key_revoked', 'This API key was revoked.');
  }

  /**
   * The regular key of an inference request from `caller`, or 401/403 (a management key is 403: it
   * manages keys and cannot call models). A cached key is checked and returned at once (no promise
   * on the hot path); an unknown one is read from Postgres.
   */
  apiKey(caller: Caller): AuthenticatedKey | Promise<AuthenticatedKey> {
    return this.key(caller, false);
  }

  /** A regular or a management key (`managementAllowed`: on /api/v1, where ROUTE_CREDENTIALS decides which kinds a route takes). */
  private key(caller: Caller, managementAllowed: boolean): AuthenticatedKey | Promise<AuthenticatedKey> {
    const token = bearerToken(caller.headers.authorization);
    const parsed = token ? parseApiKey(token) : undefined;
    if (!parsed || parsed.prefix !== this.keyPrefix) throw this.failure(caller);
    const now = Date.now();
    const cached = this.cache.get(parsed.publicId) ?? this.unknown.get(parsed.publicId);
    if (cached && cached.until > now) return this.counted(this.check(cached, parsed, caller, managementAllowed), caller);
    // Only a lookup costs Postgres: a source past its failure budget gets none.
    this.failures.check(caller.clientAddress, now);
    return this.lookup(parsed.publicId).then((entry) => this.counted(this.check(entry, parsed, caller, managementAllowed), caller));
  }

  /**
   * Counts the request of a key that passed its checks, as its route says: on a route whose admission
   * counts it, the key is marked (the router counts an answer given before admission afterwards; an
   * admitted call stays without a promise here); on any other route it is counted now, in the default
   * window (writes) or the read window (GET, HEAD), or refused with 429 before the route does any work.
   */
  private counted(key: AuthenticatedKey, caller: Caller): AuthenticatedKey | Promise<AuthenticatedKey> {
    const window = caller.window;
    if (window === 'admission') {
      caller.windowKey = key;
      return key;
    }
    if (window === undefined || this.windows === undefined) return key;
    return this.windows.enter(key.userId, key.id, window).then(() => key);
  }

  /** Records a failed authentication of the caller's address: 401, or 429 once it is past its budget. */
  private failure(caller: Caller): ApiError {
    const address = caller.clientAddress;
    this.failures.check(address);
    this.failures.record(address);
    return unauthorized();
  }

  private check(entry: CacheEntry, parsed: ParsedApiKey, caller: Caller, managementAllowed: boolean): AuthenticatedKey {
    const key = entry.key;
    if (!key || key.isProvisioning !== parsed.provisioning) throw this.failure(caller);
    const { row } = key;
    const given = Buffer.from(parsed.secret);
    const known = entry.verifiedSecret !== undefined && timingSafeEqual(given, entry.verifiedSecret);
    if (!known) {
      if (!secretMatches(this.keySecret, parsed.secret, row.secret_hash)) throw this.failure(caller);
      entry.verifiedSecret = given;
    }
    if (row.disabled) throw new ApiError(403, 'key_disabled', 'This API key is disabled.');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw new ApiError(403, 'key_expired', 'This API key has expired.');
    // Only a key with an ip_whitelist asks for the address (reading it costs a system call).
    if (!key.allowedAddresses.empty && !key.allowedAddresses.contains(caller.clientAddress)) {
      throw new ApiError(403, 'ip_not_allowed', `This API key may not be used from ${caller.clientAddress}: the address is not in its ip_whitelist.`);
    }
    if (key.isProvisioning && !managementAllowed) {
      throw new ApiError(403, 'management_key', 'This is a management key: it manages API keys (/api/v1/api-keys), billing and BYOK, and cannot call models. Use a regular API key.');
    }
    return key;
  }

  /** Reads a key that is not cached (or whose entry expired) from Postgres. */
  private async lookup(publicId: string): Promise<CacheEntry> {
    const now = Date.now();
    const cached = this.cache.get(publicId);
    let row: ApiKeyRow | undefined;
    try {
      row = await withinTimeout(findActiveKeyByPublicId(this.sql, publicId));
      this.onLookup(row !== undefined);
    } catch (error) {
      // Postgres is unreachable: a key seen before stays usable (revocations still arrive over
      // Redis pub/sub); an unknown one gets a retryable 503, not a 500.
      if (cached) {
        cached.until = now + POSITIVE_TTL_MS;
        return cached;
      }
      throw new ApiError(503, 'auth_unavailable', `API keys cannot be checked right now (${(error as Error).message}); retry shortly.`, null, { 'retry-after': '1' });
    }
    const key = row && Object.freeze({
      id: row.id, userId: row.user_id, publicId: row.public_id, isProvisioning: row.is_provisioning, row, allowedAddresses: new IpRanges(row.ip_whitelist),
    });
    const entry: CacheEntry = { key, until: now + (row ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS) };
    if (row) {
      this.unknown.delete(publicId);
      this.cache.set(publicId, entry);
    } else {
      this.cache.delete(publicId);
      this.unknown.set(publicId, entry);
    }
    return entry;
  }

  /**
   * A management JWT: the gateway's own (HS256, JWT_SECRET), or an RS256/ES256 access token of the
   * configured identity provider, whose `sub` is the account id just the same (docs/api.md
   * "Identity-provider tokens"). Creates the account the first time it is seen, and stores the token's
   * `email` claim (verified or not) on it when the claim differs from what this thread last stored (or
   * that was long ago), so a token carrying an unchanged claim costs no write. API keys are refused here.
   */
  async jwt(authorization: string, jwtSecret: string): Promise<string> {
    const token = bearerToken(authorization);
    if (!token) throw unauthorized('Access is not permitted: a dashboard JWT is required in the Authorization header (Bearer).');
    if (looksLikeApiKey(token)) throw unauthorized('Access is not permitted: this endpoint requires a dashboard JWT, not an API key.');
    let result = verifyJwt(jwtSecret, token, Math.floor(Date.now() / 1000), this.limits.jwtMaxLifetimeSeconds);
    // Only a token that is not HS256 goes on to the provider's keys: the gateway's own JWTs cost what they did.
    if (!result.ok && result.reason === UNSUPPORTED_ALGORITHM && this.idp) result = await this.providerToken(token);
    if (!result.ok) throw unauthorized(`Access is not permitted: ${result.reason}.`);
    // Asked of Redis on every call, uncached: management calls are few, and a sign-out must end its JWTs at once.
    if (result.sid !== undefined && !(await this.sessions?.isLive(result.sid))) {
      throw new ApiError(401, 'session_ended', 'Access is not permitted: the dashboard session of this token has ended (signed out or expired); sign in again.');
    }
    const known = this.knownAccounts.get(result.sub);
    const email = result.email;
    // Only a claim the token marks verified lets balance alerts mail the address (docs/api.md "Balance alerts").
    const verified = result.emailVerified === true;
    if (known === undefined || (email !== undefined && (email !== known.email || verified !== known.verified || known.until <= Date.now()))) {
      if (email === undefined) await ensureAccount(this.sql, result.sub);
      else await setAccountEmail(this.sql, result.sub, { email, verified });
      this.knownAccounts.set(result.sub, email === undefined
        ? { email: known?.email, verified: known?.verified ?? false, until: Date.now() + ACCOUNT_EMAIL_TTL_MS }
        : { email, verified, until: Date.now() + ACCOUNT_EMAIL_TTL_MS });
    }
    return result.sub;
  }

  /** An access token of the identity provider, verified; 503 when its keys cannot be had (nothing to check the token against). */
  private async providerToken(token: string): Promise<JwtResult> {
    try {
      return await this.idp!.verify(token);
    } catch (error) {
      if (!(error instanceof IdentityProviderUnavailable)) throw error;
      throw new ApiError(503, 'auth_unavailable', `Identity-provider tokens cannot be checked right now (${error.message}); retry shortly.`, null, { 'retry-after': '1' });
    }
  }

  /**
   * The caller of a management route: a dashboard JWT, a management key or a regular key, by the
   * token's form (the router has already refused a kind the route's ROUTE_CREDENTIALS entry does not
   * allow). A key is checked as for inference (disabled, expires_at, ip_whitelist).
   */
  async principal(caller: Caller, jwtSecret: string): Promise<Principal> {
    const kind = credentialKindOf(bearerToken(caller.headers.authorization));
    if (kind === 'management' || kind === 'regular') {
      const key = await this.key(caller, true);
      return { userId: key.userId, kind, key };
    }
    return { userId: await this.jwt(caller.headers.authorization, jwtSecret), kind: 'jwt' };
  }

  /** The account id of a management request (JWT, regular or management key): `principal`'s userId. */
  async jwtOrApiKey(caller: Caller, jwtSecret: string): Promise<string> {
    return (await this.principal(caller, jwtSecret)).userId;
  }
}
