// Access tokens of an identity provider on the management API (issue 28 item 2): a real OpenID provider
// (oidc-provider) runs in this process and issues RS256 and ES256 JWT access tokens through the
// client_credentials grant with a resource indicator; the gateway verifies them against the
// provider's discovered JWKS, maps `sub` to the account, refuses wrong issuers, audiences, keys,
// algorithms and expired tokens, picks up a rotated key, and keeps its own HS256 JWTs working.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { createHmac, randomBytes } from 'node:crypto';
import { SignJWT, exportSPKI, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, mintToken, sleep } from './helpers/http-tools.js';
import { IdentityProvider, signingKey, type SigningKey } from './helpers/identity-provider.js';
import { IdentityProviderTokens, IDP_MAX_DOCUMENT_BYTES } from '../src/auth/idp-tokens.js';
import { loadConfig } from '../src/config.js';

const AUDIENCE = 'https://gateway.test/api';
const COOLDOWN_MS = 300;

let provider: IdentityProvider;
let gateway: Gateway;
let rsaKey: SigningKey;
let ecKey: SigningKey;

t.before(async () => {
  rsaKey = await signingKey('rsa-1', 'RS256');
  ecKey = await signingKey('ec-1', 'ES256');
  provider = await IdentityProvider.start([
    { clientId: 'acme-backend', secret: 'acme-client-pass', alg: 'RS256', claims: { email: 'ops@acme.test', email_verified: true } },
    { clientId: 'acme-reports', secret: 'reports-client-pass', alg: 'ES256' },
  ], [rsaKey, ecKey]);
  gateway = await startGateway({
    vendors: ['openai'],
    env: { JWT_SECRET: TEST_JWT_SECRET, OIDC_ISSUER: provider.issuer, OIDC_AUDIENCE: AUDIENCE, OIDC_JWKS_COOLDOWN_MS: String(COOLDOWN_MS) },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await provider?.close();
});

const call = async (method: string, path: string, token: string, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
};

/** A token signed with `key` as the provider would, with claims changed; `kid` defaults to the key's. */
async function signed(key: { privateKey: CryptoKey; alg: string; kid: string }, claims: Record<string, unknown>, kid = key.kid): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: provider.issuer, aud: AUDIENCE, sub: 'acme-backend', iat: now, exp: now + 600, scope: 'manage', client_id: 'acme-backend', ...claims })
    .setProtectedHeader({ alg: key.alg, typ: 'at+jwt', kid })
    .sign(key.privateKey);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

t.test('an RS256 access token of the provider creates an API key for the account named by its sub, and lists it', async (t) => {
  const token = await provider.accessToken('acme-backend', AUDIENCE);
  const [header, payload] = token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()));
  t.match(header, { alg: 'RS256', kid: 'rsa-1' }, 'the provider signed it with its RSA key');
  t.match(payload, { iss: provider.issuer, aud: AUDIENCE, sub: 'acme-backend' });

  const created = await call('POST', '/api/v1/api-keys', token, { name: 'from the identity provider' });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.match(created.body.key, /^sk-gw-[A-Za-z0-9]{12}-/);
  const listed = await call('GET', '/api/v1/api-keys', token);
  t.equal(listed.status, 200);
  t.same(listed.body.map((key: { name: string }) => key.name), ['from the identity provider']);
  const [owner] = await gateway.sql<{ user_id: string }[]>`select user_id from api_keys where id = ${created.body.id}`;
  t.equal(owner?.user_id, 'acme-backend', 'the account id is the token\'s sub');
  const [account] = await gateway.sql<{ email: string | null; email_verified: boolean }[]>`select email, email_verified from accounts where id = 'acme-backend'`;
  t.same(account, { email: 'ops@acme.test', email_verified: true }, 'the email claim is stored as a dashboard JWT\'s is');

  const chat = await fetch(`${gateway.v1}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
  t.equal(chat.status, 401, 'an identity-provider token calls no model, as a dashboard JWT does not');
  await chat.body?.cancel();
});

t.test('the gateway\'s HS256 JWT of the same sub is the same account; other HS256 JWTs work as before', async (t) => {
  const listed = await call('GET', '/api/v1/api-keys', mintToken('acme-backend'));
  t.equal(listed.status, 200);
  t.same(listed.body.map((key: { name: string }) => key.name), ['from the identity provider']);
  const created = await call('POST', '/api/v1/api-keys', mintToken('dev-user'), { name: 'dev' });
  t.equal(created.status, 201, 'a development JWT still manages keys');
  t.equal((await call('GET', '/api/v1/billing/balance', mintToken('dev-user'))).status, 200);
});

t.test('an ES256 access token of the provider manages its own account', async (t) => {
  const token = await provider.accessToken('acme-reports', AUDIENCE);
  t.match(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()), { alg: 'ES256', kid: 'ec-1' });
  t.equal((await call('POST', '/api/v1/api-keys', token, { name: 'reports' })).status, 201);
  const listed = await call('GET', '/api/v1/api-keys', token);
  t.same(listed.body.map((key: { name: string }) => key.name), ['reports'], 'only the keys of its own sub');
  t.equal((await call('GET', '/api/v1/billing/transactions', token)).status, 200);
});

t.test('refused with 401, nothing created: wrong issuer, wrong audience, another key, expired, alg none, HS256 with the public key', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const intruder = await signingKey('rsa-1', 'RS256');
  const publicPem = await exportSPKI(rsaKey.publicKey);
  const publicJwkText = JSON.stringify(await exportJWK(rsaKey.publicKey));
  const claims = { iss: provider.issuer, aud: AUDIENCE, sub: 'acme-backend', iat: now, exp: now + 600 };
  const hs256 = (secret: string) => {
    const head = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: 'rsa-1' })}.${b64(claims)}`;
    return `${head}.${createHmac('sha256', secret).update(head).digest('base64url')}`;
  };
  const rs384 = await generateKeyPair('RS384');
  const cases: [string, string, RegExp][] = [
    ['wrong issuer (the provider\'s key)', await signed(rsaKey, { iss: 'https://other-idp.test' }), /iss/],
    ['wrong audience (a real token for another API)', await provider.accessToken('acme-backend', 'https://other.test/api'), /aud/],
    ['signed by another key with the provider\'s kid', await signed(intruder, {}), /bad signature/],
    ['expired (the provider\'s key)', await signed(rsaKey, { iat: now - 3600, exp: now - 300 }), /expired/],
    ['alg none', `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(claims)}.`, /algorithm/],
    ['HS256 keyed with the provider\'s public key (PEM)', hs256(publicPem), /bad signature/],
    ['HS256 keyed with the provider\'s public key (JWK text)', hs256(publicJwkText), /bad signature/],
    ['RS384 (not allowed)', await new SignJWT(claims).setProtectedHeader({ alg: 'RS384', kid: 'rsa-1' }).sign(rs384.privateKey), /algorithm/],
    ['no exp', await new SignJWT({ iss: provider.issuer, aud: AUDIENCE, sub: 'acme-backend' }).setProtectedHeader({ alg: 'RS256', kid: 'rsa-1' }).sign(rsaKey.privateKey), /exp/],
    ['lives longer than JWT_MAX_LIFETIME_SECONDS', await signed(rsaKey, { exp: now + 2 * 86_400 }), /longer/],
    ['a sub that is no account id', await signed(rsaKey, { sub: 'auth0|a b' }), /sub/],
  ];
  for (const [label, token, reason] of cases) {
    const answer = await call('POST', '/api/v1/api-keys', token, { name: `forged: ${label}` });
    assertEnvelope(t, answer, 401, 'invalid_api_key', label);
    t.match(answer.body.error.message, reason, `${label}: says why`);
  }
  const [row] = await gateway.sql<{ count: bigint }[]>`select count(*)::bigint as count from api_keys where name like 'forged:%'`;
  t.equal(row?.count, 0n, 'no key was created');
  t.same((await call('GET', '/api/v1/api-keys', mintToken('acme-backend'))).body.map((key: { name: string }) => key.name), ['from the identity provider']);
});

t.test('a rotated key (unknown kid) is fetched and taken; known keys keep working while the provider is down', async (t) => {
  const before = await provider.accessToken('acme-backend', AUDIENCE);
  t.equal((await call('GET', '/api/v1/api-keys', before)).status, 200, 'the gateway holds the first key set');
  const rotated = await signingKey('rsa-2', 'RS256');
  await provider.rotate([rotated, rsaKey, ecKey]);
  await sleep(COOLDOWN_MS + 100);
  const after = await provider.accessToken('acme-backend', AUDIENCE);
  t.match(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()), { kid: 'rsa-2' }, 'the provider signs with its new key');
  const listed = await call('GET', '/api/v1/api-keys', after);
  t.equal(listed.status, 200, 'the new kid made the gateway fetch the key set again');
  t.same(listed.body.map((key: { name: string }) => key.name), ['from the identity provider']);
  t.equal((await call('GET', '/api/v1/api-keys', before)).status, 200, 'a token of the older key, still published, still works');

  await provider.close();
  t.equal((await call('GET', '/api/v1/api-keys', after)).status, 200, 'provider down: a token of a key the gateway holds works');
  await sleep(COOLDOWN_MS + 100);
  const unknownKid = await signed(rotated, {}, 'rsa-3');
  const unavailable = await call('GET', '/api/v1/api-keys', unknownKid);
  assertEnvelope(t, unavailable, 503, 'auth_unavailable', 'an unknown kid while the provider is down');
  t.equal(unavailable.headers.get('retry-after'), '1');
  t.equal((await call('GET', '/api/v1/api-keys', mintToken('acme-backend'))).status, 200, 'HS256 JWTs do not need the provider');
  await provider.rotate([rotated, rsaKey, ecKey]);
});

/** A server answering every request with `handler` (a broken or hostile key endpoint). */
async function serve(handler: (response: import('node:http').ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer((_request, response) => handler(response));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

t.test('the discovery document and key set are read within a time and a size bound', async (t) => {
  const settings = { audience: AUDIENCE, fetchTimeoutMs: 300, jwksCooldownMs: 1000 };
  const token = await signed(rsaKey, {});
  const huge = await serve((response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: [], padding: 'x'.repeat(IDP_MAX_DOCUMENT_BYTES) }));
  });
  const silent = await serve(() => {});
  const trickle = await serve((response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"keys":[');
  });
  const impostor = await serve((response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ issuer: 'https://someone-else.test', jwks_uri: `${provider.issuer}/jwks` }));
  });
  try {
    for (const [label, config] of [
      ['a key set larger than the bound', { issuer: provider.issuer, jwksUrl: huge.url }],
      ['a key set that never answers', { issuer: provider.issuer, jwksUrl: silent.url }],
      ['a key set whose body never ends', { issuer: provider.issuer, jwksUrl: trickle.url }],
      ['a discovery document that never answers', { issuer: silent.url, jwksUrl: undefined }],
      ['a discovery document naming another issuer', { issuer: impostor.url, jwksUrl: undefined }],
    ] as const) {
      const started = Date.now();
      const verifier = new IdentityProviderTokens({ ...settings, ...config }, 86_400);
      await t.rejects(verifier.verify(token), { name: 'IdentityProviderUnavailable' }, label);
      t.ok(Date.now() - started < 3000, `${label}: given up within the fetch bound (${Date.now() - started} ms)`);
    }
    const direct = new IdentityProviderTokens({ ...settings, issuer: provider.issuer, jwksUrl: `${provider.issuer}/jwks` }, 86_400);
    t.match(await direct.verify(token), { ok: true, sub: 'acme-backend' }, 'OIDC_JWKS_URL given: no discovery needed');
  } finally {
    for (const { server } of [huge, silent, trickle, impostor]) {
      server.closeAllConnections();
      server.close();
    }
  }
});

t.test('settings: OIDC_AUDIENCE goes with OIDC_ISSUER; production takes https only', async (t) => {
  t.throws(() => loadConfig({ OIDC_ISSUER: 'https://idp.test' }), /^invalid OIDC_AUDIENCE: required with OIDC_ISSUER/);
  t.throws(() => loadConfig({ OIDC_ISSUER: 'https://idp.test', OIDC_AUDIENCE: ' ' }), /^invalid OIDC_AUDIENCE/);
  t.throws(() => loadConfig({ OIDC_AUDIENCE: AUDIENCE }), /^invalid OIDC_AUDIENCE: set OIDC_ISSUER too/);
  t.throws(() => loadConfig({ OIDC_JWKS_URL: 'https://idp.test/jwks' }), /^invalid OIDC_JWKS_URL: set OIDC_ISSUER too/);
  t.throws(() => loadConfig({ OIDC_ISSUER: 'ftp://idp.test', OIDC_AUDIENCE: AUDIENCE }), /^invalid OIDC_ISSUER/);
  t.match(loadConfig({ OIDC_ISSUER: 'https://idp.test/', OIDC_AUDIENCE: AUDIENCE }).oidc, { issuer: 'https://idp.test/', audience: AUDIENCE, jwksUrl: undefined, fetchTimeoutMs: 5000, jwksCooldownMs: 30000 });
  t.equal(loadConfig({}).oidc, undefined);
  const production = { NODE_ENV: 'production', JWT_SECRET: randomBytes(48).toString('base64'), KEY_SECRET: randomBytes(48).toString('base64'), METRICS_PUBLIC: 'true', OIDC_AUDIENCE: AUDIENCE };
  t.throws(() => loadConfig({ ...production, OIDC_ISSUER: 'http://idp.test' }), /OIDC_ISSUER: must be https in production/);
  t.throws(() => loadConfig({ ...production, OIDC_ISSUER: 'https://idp.test', OIDC_JWKS_URL: 'http://idp.test/jwks' }), /OIDC_JWKS_URL: must be https in production/);
});
