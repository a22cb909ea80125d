/**
 * A development OpenID provider, so a person can sign in to the console on a fresh machine without
 * registering the gateway anywhere (DEV_IDENTITY_PROVIDER, docs/configuration.md "Development sign-in").
 * It is `oidc-provider` (a certified OpenID Provider) with its development login form: any login and
 * password are taken, and the login becomes the account (`sub`). It listens on 127.0.0.1 only, with a
 * client made at start-up whose redirect is the gateway's /auth/callback. Never in production: the
 * configuration refuses it there, and `oidc-provider` is a development dependency, loaded only here.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import { emailAddress } from '../store/accounts.js';

export interface DevIdentityProvider {
  readonly issuer: string;
  /** The settings that point the gateway's sign-in at this provider (OIDC_CLIENT_ID and the rest). */
  readonly signInEnv: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

/** The development login page's sessions and grants: no longer than a working day. */
const SESSION_SECONDS = 8 * 3600;

/** Starts the provider on 127.0.0.1:`port` for a gateway whose sign-in callback is `redirectUrl`. */
export async function startDevIdentityProvider(port: number, redirectUrl: string): Promise<DevIdentityProvider> {
  // A development dependency: `npm ci --omit=dev` leaves it out, and only this path (never production) loads it.
  const { default: Provider } = await import('oidc-provider');
  const server: Server = createServer();
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const clientId = `gateway-dev-${randomBytes(6).toString('hex')}`;
  const clientSecret = randomBytes(32).toString('base64url');
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId, client_secret: clientSecret, grant_types: ['authorization_code'], response_types: ['code'],
      redirect_uris: [redirectUrl], token_endpoint_auth_method: 'client_secret_post',
    }],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'dev-1', alg: 'RS256', use: 'sig' }] },
    scopes: ['openid', 'email', 'profile'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    // The login typed in is the account; one that is a mail address is also its (verified) address.
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => (emailAddress(id) === undefined ? { sub: id } : { sub: id, email: id, email_verified: true }),
    }),
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    ttl: { Session: SESSION_SECONDS, Grant: SESSION_SECONDS, Interaction: 3600 },
    features: { devInteractions: { enabled: true } },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    signInEnv: Object.freeze({ OIDC_SIGNIN_ISSUER: issuer, OIDC_CLIENT_ID: clientId, OIDC_CLIENT_SECRET: clientSecret, OIDC_REDIRECT_URL: redirectUrl }),
    async close() {
      if (!server.listening) return;
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
