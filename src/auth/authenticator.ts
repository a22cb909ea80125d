import { timingSafeEqual } from 'node:crypto';
import { IpRanges } from './ip-ranges.js';
import { withinTimeout, type Sql } from '../store/db.js';
import { ApiError, unauthorized } from '../http/errors.js';
import { ensureAccount, setAccountEmail } from '../store/accounts.js';
import { findActiveKeyByPublicId, type ApiKeyRow } from '../store/api-keys.js';
import { parseApiKey, secretMatches, type ParsedApiKey } from './api-key-format.js';
import { verifyJwt } from './jwt.js';

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
}

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
const MAX_CACHE_ENTRIES = 100_000;
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
  private readonly cache = new Map<string, CacheEntry>();
  /** Accounts this thread has made sure exist, with the `email` claim it last stored for each. */
  private readonly knownAccounts = new Map<string, { email: string | undefined; until: number }>();

  constructor(private readonly sql: Sql, private readonly keySecret: string, private readonly keyPrefix: string) {}

  private readonly revoked = new Map<string, number>();

  /** A key changed elsewhere (pub/sub): forget it; when revoked, in-flight requests must stop too. */
  invalidate(publicId: string, revoked: boolean): void {
    this.cache.delete(publicId);
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

  /** A regular or a management key (billing, BYOK, catalog: either acts for its owner). */
  private key(caller: Caller, managementAllowed: boolean): AuthenticatedKey | Promise<AuthenticatedKey> {
    const token = bearerToken(caller.headers.authorization);
    const parsed = token ? parseApiKey(token) : undefined;
    if (!parsed || parsed.prefix !== this.keyPrefix) throw unauthorized();
    const cached = this.cache.get(parsed.publicId);
    if (cached && cached.until > Date.now()) return this.check(cached, parsed, caller, managementAllowed);
    return this.lookup(parsed.publicId).then((entry) => this.check(entry, parsed, caller, managementAllowed));
  }

  private check(entry: CacheEntry, parsed: ParsedApiKey, caller: Caller, managementAllowed: boolean): AuthenticatedKey {
    const key = entry.key;
    if (!key || key.isProvisioning !== parsed.provisioning) throw unauthorized();
    const { row } = key;
    const given = Buffer.from(parsed.secret);
    const known = entry.verifiedSecret !== undefined && timingSafeEqual(given, entry.verifiedSecret);
    if (!known) {
      if (!secretMatches(this.keySecret, parsed.secret, row.secret_hash)) throw unauthorized();
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
    } catch (error) {
      // Postgres is unreachable: a key seen before stays usable (revocations still arrive over
      // Redis pub/sub); an unknown one gets a retryable 503, not a 500.
      if (cached) {
        cached.until = now + POSITIVE_TTL_MS;
        return cached;
      }
      throw new ApiError(503, 'auth_unavailable', `API keys cannot be checked right now (${(error as Error).message}); retry shortly.`, null, { 'retry-after': '1' });
    }
    if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
    const key = row && Object.freeze({
      id: row.id, userId: row.user_id, publicId: row.public_id, isProvisioning: row.is_provisioning, row, allowedAddresses: new IpRanges(row.ip_whitelist),
    });
    const entry: CacheEntry = { key, until: now + (row ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS) };
    this.cache.set(publicId, entry);
    return entry;
  }

  /**
   * A dashboard JWT; creates the account the first time it is seen, and stores the token's `email`
   * claim on it when the claim differs from what this thread last stored (or that was long ago), so
   * a token carrying an unchanged claim costs no write. API keys are refused here.
   */
  async jwt(authorization: string, jwtSecret: string): Promise<string> {
    const token = bearerToken(authorization);
    if (!token) throw unauthorized('Access is not permitted: a dashboard JWT is required in the Authorization header (Bearer).');
    if (looksLikeApiKey(token)) throw unauthorized('Access is not permitted: this endpoint requires a dashboard JWT, not an API key.');
    const result = verifyJwt(jwtSecret, token);
    if (!result.ok) throw unauthorized(`Access is not permitted: ${result.reason}.`);
    const known = this.knownAccounts.get(result.sub);
    const email = result.email;
    if (known === undefined || (email !== undefined && (email !== known.email || known.until <= Date.now()))) {
      if (email === undefined) await ensureAccount(this.sql, result.sub);
      else await setAccountEmail(this.sql, result.sub, email);
      if (this.knownAccounts.size >= MAX_CACHE_ENTRIES) this.knownAccounts.clear();
      this.knownAccounts.set(result.sub, { email: email ?? known?.email, until: Date.now() + ACCOUNT_EMAIL_TTL_MS });
    }
    return result.sub;
  }

  /** JWT, regular or management key (billing, BYOK, catalog); returns the account id. */
  async jwtOrApiKey(caller: Caller, jwtSecret: string): Promise<string> {
    const authorization = caller.headers.authorization;
    return looksLikeApiKey(bearerToken(authorization)) ? (await this.key(caller, true)).userId : this.jwt(authorization, jwtSecret);
  }

  /**
   * Key management (`/api/v1/api-keys`): a dashboard JWT, or a management key (`sk-<prefix>-prov-…`,
   * as OpenRouter's provisioning keys: the way to manage keys from code). A regular key is 401, as the
   * spec answers an API key there. `management` tells the route which it was.
   */
  async keyManager(caller: Caller, jwtSecret: string): Promise<{ userId: string; management: boolean }> {
    const token = bearerToken(caller.headers.authorization);
    if (looksLikeApiKey(token) && parseApiKey(token!)?.provisioning === true) {
      return { userId: (await this.key(caller, true)).userId, management: true };
    }
    return { userId: await this.jwt(caller.headers.authorization, jwtSecret), management: false };
  }
}
