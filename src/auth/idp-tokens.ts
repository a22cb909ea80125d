/**
 * Access tokens of the operator's OpenID provider on the management API (docs/api.md
 * "Identity-provider tokens"): RS256 or ES256 JWTs verified against the provider's published keys
 * (JWKS), with its issuer, the gateway's audience, `exp` and `nbf`. The key set is fetched once and
 * kept (jose's remote set: refetched when it is older than JWKS_MAX_AGE_MS, and at once for a token
 * whose `kid` it does not hold, at most once per cooldown, which is how a rotated key arrives).
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { accountClaims, CLOCK_SKEW_SECONDS, type JwtResult } from './jwt.js';
import { fetchBounded } from './bounded-fetch.js';

export interface OidcConfig {
  /** The provider's issuer identifier, exactly as its tokens' `iss` spell it. */
  readonly issuer: string;
  /** The `aud` a token must name: this gateway's API as the provider knows it. */
  readonly audience: string;
  /** The key set's address; undefined: the discovery document's `jwks_uri`. */
  readonly jwksUrl: string | undefined;
  /** Bound of each fetch of the discovery document or the key set, body included. */
  readonly fetchTimeoutMs: number;
  /** Least time between two fetches of the key set caused by unknown `kid`s. */
  readonly jwksCooldownMs: number;
}

/** The only algorithms taken: the provider's asymmetric keys; never `none` and never HS* (a public key is no secret). */
export const IDP_ALGORITHMS = ['RS256', 'ES256'];
/** Largest discovery document or key set read (real ones are a few KiB). */
export const IDP_MAX_DOCUMENT_BYTES = 256 * 1024;
/** A key set older than this is fetched again before use (keys the provider withdrew stop working). */
export const JWKS_MAX_AGE_MS = 10 * 60_000;
/** After a failed discovery, requests wait this long before one tries again (a provider that is down is not asked per request). */
const DISCOVERY_RETRY_MS = 1_000;

/** The provider's discovery document or keys could not be had: the token can be neither taken nor refused (503). */
export class IdentityProviderUnavailable extends Error {
  override readonly name = 'IdentityProviderUnavailable';
}

/** jose's errors that say the token is wrong (401); any other failure is the provider's (503). */
const TOKEN_ERRORS: ReadonlyMap<string, string> = new Map([
  [errors.JWTExpired.code, 'token expired'],
  [errors.JOSEAlgNotAllowed.code, 'unsupported algorithm'],
  [errors.JWSInvalid.code, 'malformed token'],
  [errors.JWTInvalid.code, 'malformed token'],
  [errors.JWSSignatureVerificationFailed.code, 'bad signature'],
  [errors.JWKSNoMatchingKey.code, 'no key of the identity provider matches the token'],
  [errors.JWKSMultipleMatchingKeys.code, 'the token matches several keys of the identity provider'],
  [errors.JOSENotSupported.code, 'unsupported token'],
]);

const CLAIM_REASONS: Readonly<Record<string, string>> = {
  iss: 'token is not from the configured identity provider (iss)',
  aud: 'token is not for this gateway (aud)',
  nbf: 'token not yet valid',
  exp: 'token has no valid exp',
  sub: 'token has no valid sub',
};

export class IdentityProviderTokens {
  private keys: Promise<JWTVerifyGetKey> | undefined;
  private discoveryFailedAt = 0;
  private discoveryFailure = '';

  constructor(
    private readonly config: OidcConfig,
    /** The lifetime bound every management JWT has (JWT_MAX_LIFETIME_SECONDS). */
    private readonly maxLifetimeSeconds: number,
  ) {}

  /** The account a provider's access token names, or why it is refused; throws IdentityProviderUnavailable. */
  async verify(token: string, nowSeconds = Math.floor(Date.now() / 1000)): Promise<JwtResult> {
    const keys = await this.keySet();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        algorithms: IDP_ALGORITHMS,
        issuer: this.config.issuer,
        audience: this.config.audience,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: CLOCK_SKEW_SECONDS,
        currentDate: new Date(nowSeconds * 1000),
      }));
    } catch (error) {
      return { ok: false, reason: reasonOf(error) };
    }
    const exp = payload.exp!;
    // As for the gateway's own JWTs: a token that would live longer than the bound is refused whole.
    if (exp - nowSeconds > this.maxLifetimeSeconds) return { ok: false, reason: `token lives longer than ${this.maxLifetimeSeconds} s` };
    if (payload.iat !== undefined) {
      if (payload.iat > nowSeconds + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'token has an invalid iat' };
      if (exp - payload.iat > this.maxLifetimeSeconds) return { ok: false, reason: `token lives longer than ${this.maxLifetimeSeconds} s` };
    }
    return accountClaims(payload as Record<string, unknown>);
  }

  /** The provider's key set, discovering its address first when OIDC_JWKS_URL does not give it. */
  private keySet(): Promise<JWTVerifyGetKey> {
    if (this.keys) return this.keys;
    if (Date.now() - this.discoveryFailedAt < DISCOVERY_RETRY_MS) {
      return Promise.reject(new IdentityProviderUnavailable(this.discoveryFailure));
    }
    const keys = this.jwksUrl().then((url) => createRemoteJWKSet(new URL(url), {
      timeoutDuration: this.config.fetchTimeoutMs,
      cooldownDuration: this.config.jwksCooldownMs,
      cacheMaxAge: JWKS_MAX_AGE_MS,
      [customFetch]: (input: string | URL, init: RequestInit) => fetchBounded(input, init, IDP_MAX_DOCUMENT_BYTES),
    }));
    this.keys = keys;
    keys.catch((error: Error) => {
      this.keys = undefined;
      this.discoveryFailedAt = Date.now();
      this.discoveryFailure = error.message;
    });
    return keys;
  }

  private async jwksUrl(): Promise<string> {
    if (this.config.jwksUrl !== undefined) return this.config.jwksUrl;
    const issuer = this.config.issuer;
    const address = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    let document: unknown;
    try {
      const response = await fetchBounded(address, {
        redirect: 'manual', signal: AbortSignal.timeout(this.config.fetchTimeoutMs), headers: { accept: 'application/json' },
      }, IDP_MAX_DOCUMENT_BYTES);
      if (response.status !== 200) throw new Error(`it answered ${response.status}`);
      document = await response.json();
    } catch (error) {
      throw new IdentityProviderUnavailable(`the identity provider's discovery document (${address}) could not be read: ${(error as Error).message}`);
    }
    const fields = document !== null && typeof document === 'object' ? document as Record<string, unknown> : {};
    // OpenID Connect Discovery 1.0, section 4.3: the document's issuer must be the one it was asked for.
    if (fields.issuer !== issuer) throw new IdentityProviderUnavailable(`the discovery document at ${address} names another issuer (${String(fields.issuer)})`);
    const jwksUri = fields.jwks_uri;
    if (typeof jwksUri !== 'string' || !URL.canParse(jwksUri)) throw new IdentityProviderUnavailable(`the discovery document at ${address} has no valid jwks_uri`);
    // Keys fetched in clear could be swapped on the way: https, unless the issuer itself is plain http (development only).
    if (new URL(jwksUri).protocol !== 'https:' && new URL(issuer).protocol === 'https:') {
      throw new IdentityProviderUnavailable(`the discovery document at ${address} gives a jwks_uri that is not https`);
    }
    return jwksUri;
  }
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === errors.JWTClaimValidationFailed.code) {
    const claim = (error as errors.JWTClaimValidationFailed).claim;
    return CLAIM_REASONS[claim] ?? `token has an invalid ${claim}`;
  }
  const reason = typeof code === 'string' ? TOKEN_ERRORS.get(code) : undefined;
  if (reason !== undefined) return reason;
  throw new IdentityProviderUnavailable(`the identity provider's keys could not be read: ${(error as Error).message}`);
}
