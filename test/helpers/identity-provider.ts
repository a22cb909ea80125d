/**
 * A real OpenID provider (`oidc-provider`, a certified OpenID Provider) in the test process, over real
 * HTTP on a port of its own: its clients get JWT access tokens for a resource (an API) through the
 * client_credentials grant with a resource indicator (RFC 8707), signed with the provider's keys and
 * published at its discovery document's `jwks_uri`. `rotate` restarts it on the same address with a
 * new signing key, as a provider rotates its keys.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A signing key of the provider: the private JWK it signs with and publishes (public half only). */
export interface SigningKey {
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly privateJwk: JWK;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicKey, privateJwk: { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' } };
}

export interface ProviderClient {
  readonly clientId: string;
  readonly secret: string;
  /** The algorithm of the access tokens it gets (the provider signs with its first key of that algorithm). */
  readonly alg: 'RS256' | 'ES256';
  /** Claims added to its access tokens (`email`, `email_verified`, ...). */
  readonly claims?: Record<string, unknown>;
}

/** A relying party that signs people in (Authorization Code, PKCE required): the gateway's dashboard sign-in. */
export interface SignInClient {
  readonly clientId: string;
  readonly secret: string;
  readonly redirectUri: string;
}

/** The person the provider signs in next: its login page is skipped and consent given at once (an automated browser). */
export interface ProviderUser {
  readonly sub: string;
  readonly email?: string;
  readonly email_verified?: boolean;
}

export class IdentityProvider {
  /** Who the provider's (automatic) login page signs in. */
  user: ProviderUser = { sub: 'user-1' };

  private constructor(
    private server: Server, private readonly port: number, readonly issuer: string, private readonly clients: readonly ProviderClient[], public keys: readonly SigningKey[],
    private readonly signIn: SignInClient | undefined,
  ) {}

  static async start(clients: readonly ProviderClient[], keys: readonly SigningKey[], signIn?: SignInClient): Promise<IdentityProvider> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const provider = new IdentityProvider(server, port, `http://127.0.0.1:${port}`, clients, keys, signIn);
    provider.serve();
    return provider;
  }

  /** An access token of `clientId` for `resource` (the `aud` it gets), from the token endpoint. */
  async accessToken(clientId: string, resource: string): Promise<string> {
    const client = this.clients.find((entry) => entry.clientId === clientId)!;
    const response = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${client.secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'manage', resource }),
    });
    const body = (await response.json()) as { access_token?: string };
    if (response.status !== 200 || !body.access_token) throw new Error(`token endpoint: ${response.status} ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** (Re)starts on the same address with `keys` (the provider signs with the first of each algorithm). */
  async rotate(keys: readonly SigningKey[]): Promise<void> {
    if (this.server.listening) await this.close();
    this.server = createServer();
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.keys = keys;
    this.serve();
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private serve(): void {
    const byId = new Map(this.clients.map((client) => [client.clientId, client]));
    const signIn = this.signIn;
    const users = new Map<string, ProviderUser>();
    const provider = new Provider(this.issuer, {
      clients: [
        ...this.clients.map((client) => ({
          client_id: client.clientId, client_secret: client.secret, grant_types: ['client_credentials'], redirect_uris: [], response_types: [],
        })),
        ...(signIn ? [{
          client_id: signIn.clientId, client_secret: signIn.secret, grant_types: ['authorization_code'], response_types: ['code'],
          redirect_uris: [signIn.redirectUri], token_endpoint_auth_method: 'client_secret_post',
        }] : []),
      ],
      jwks: { keys: this.keys.map((key) => key.privateJwk) },
      scopes: ['manage', 'openid', 'email', 'profile'],
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      // The ID token carries the email claims (as Google's, Okta's and Entra ID's do), not only the userinfo endpoint.
      conformIdTokenClaims: false,
      pkce: { required: () => true },
      findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ ...users.get(id), sub: id }) }),
      cookies: { keys: ['identity-provider-test-cookie-key'] },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          getResourceServerInfo: (_ctx, resource, client) => ({
            scope: 'manage', audience: resource, accessTokenTTL: 600, accessTokenFormat: 'jwt',
            jwt: { sign: { alg: byId.get(client.clientId)!.alg } },
          }),
        },
      },
      extraTokenClaims: (_ctx, token) => (token.clientId === undefined ? undefined : byId.get(token.clientId)?.claims),
    });
    const callback = provider.callback();
    this.server.on('request', (req, res) => {
      if (!req.url?.startsWith('/interaction/')) return void callback(req, res);
      // The login and consent pages, answered at once for `user`: what a person clicking through would do.
      void (async () => {
        const details = await provider.interactionDetails(req, res);
        if (details.prompt.name === 'login') {
          users.set(this.user.sub, this.user);
          return provider.interactionFinished(req, res, { login: { accountId: this.user.sub } }, { mergeWithLastSubmission: false });
        }
        const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
        grant.addOIDCScope(String(details.params.scope));
        return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
      })().catch((error: Error) => {
        res.statusCode = 500;
        res.end(error.message);
      });
    });
  }
}
