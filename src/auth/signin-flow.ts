/**
 * The relying-party side of dashboard sign-in (docs/api.md "Sign-in"): OpenID Connect Authorization
 * Code with PKCE, state and nonce, through `openid-client` v6 (discovery, buildAuthorizationUrl,
 * authorizationCodeGrant, which checks state, exchanges the code with the verifier and validates the
 * ID token: signature against the provider's JWKS, iss, aud, exp, nonce). Every request to the
 * provider is bounded in time (the library's `timeout`) and size (fetchBounded).
 */
import * as client from 'openid-client';
import type { SignInConfig } from '../config.js';
import { ResponseTooLarge, fetchBounded } from './bounded-fetch.js';

/** Largest answer read from the provider (discovery, token, keys): real ones are a few KiB. */
export const PROVIDER_MAX_RESPONSE_BYTES = 256 * 1024;
/** After a failed discovery, sign-ins wait this long before one asks the provider again. */
const DISCOVERY_RETRY_MS = 1_000;

/** What the gateway must keep between the redirect to the provider and the callback. */
export interface PendingSignIn {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
}

/** Who signed in: the ID token's claims the gateway uses. */
export interface SignedInUser {
  readonly sub: string;
  readonly email: string | undefined;
  readonly emailVerified: boolean;
}

/** The provider could not be reached or answered nonsense (502): not the browser's fault. */
export class ProviderUnavailable extends Error {
  override readonly name = 'ProviderUnavailable';
}

/** The callback does not complete a sign-in (400): wrong state, a used or forged code, a failed PKCE or ID token check. */
export class SignInRefused extends Error {
  override readonly name = 'SignInRefused';
}

export class OidcSignIn {
  private configuration: Promise<client.Configuration> | undefined;
  private failedAt = 0;
  private failure = '';

  constructor(private readonly settings: SignInConfig) {}

  /** A fresh state, nonce and PKCE verifier, and the provider's authorization URL carrying them. */
  async begin(): Promise<{ url: string; pending: PendingSignIn }> {
    const configuration = await this.discovered();
    const pending = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier() };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.settings.redirectUrl,
      scope: this.settings.scopes,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, pending };
  }

  /** Completes the sign-in the provider redirected back with (`query`: the callback's query string). */
  async finish(query: string, pending: PendingSignIn): Promise<SignedInUser> {
    const configuration = await this.discovered();
    // The callback URL as registered plus what the provider appended: openid-client reads state, code, iss and error from it.
    const current = new URL(this.settings.redirectUrl);
    current.search = query;
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: pending.verifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true,
      });
    } catch (error) {
      throw classify(error);
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInRefused('the provider returned no ID token');
    return {
      sub: claims.sub,
      email: typeof claims.email === 'string' ? claims.email : undefined,
      emailVerified: claims.email_verified === true,
    };
  }

  /** The provider's metadata, discovered once (a failure is retried by a later sign-in, not by every one). */
  private discovered(): Promise<client.Configuration> {
    if (this.configuration) return this.configuration;
    if (Date.now() - this.failedAt < DISCOVERY_RETRY_MS) return Promise.reject(new ProviderUnavailable(this.failure));
    const { issuer, clientId, clientSecret, fetchTimeoutMs, allowHttp } = this.settings;
    const configuration = client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretPost(clientSecret), {
      timeout: Math.ceil(fetchTimeoutMs / 1000),
      [client.customFetch]: (url: string, options: client.CustomFetchOptions) =>
        fetchBounded(url, { ...options, redirect: 'manual' } as RequestInit, PROVIDER_MAX_RESPONSE_BYTES),
      execute: allowHttp && issuer.startsWith('http://') ? [client.allowInsecureRequests] : [],
    }).catch((error: unknown) => {
      this.configuration = undefined;
      this.failedAt = Date.now();
      this.failure = `the identity provider's discovery document (${issuer}) could not be read: ${describe(error)}`;
      throw new ProviderUnavailable(this.failure);
    });
    this.configuration = configuration;
    return configuration;
  }
}

/** Network failures, timeouts, oversized or 5xx answers are the provider's; anything else refuses the callback. */
function classify(error: unknown): Error {
  if (error instanceof client.ResponseBodyError) {
    return error.status >= 500 ? new ProviderUnavailable(`the token endpoint answered ${error.status}`) : new SignInRefused(`the provider refused the code: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`);
  }
  if (error instanceof client.AuthorizationResponseError) return new SignInRefused(`the provider answered ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`);
  if (error instanceof TypeError) return new ProviderUnavailable(`the provider could not be reached: ${describe(error)}`);
  if (error instanceof ResponseTooLarge || (error as { cause?: unknown }).cause instanceof ResponseTooLarge) return new ProviderUnavailable(describe(error));
  const code = (error as { code?: unknown }).code;
  if (code === 'OAUTH_TIMEOUT' || code === 'OAUTH_ABORT' || code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || code === 'OAUTH_RESPONSE_IS_NOT_JSON') {
    return new ProviderUnavailable(`the provider did not answer usably: ${describe(error)}`);
  }
  if (error instanceof client.ClientError) return new SignInRefused(describe(error));
  return error as Error;
}

function describe(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const message = (error as Error).message ?? String(error);
  return cause instanceof Error && cause.message !== message ? `${message}: ${cause.message}` : message;
}
