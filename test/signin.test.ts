// Dashboard sign-in (issue 28 item 1): a real OpenID provider (oidc-provider) runs in this process and
// signs a person in with Authorization Code and PKCE (required); a browser is played with plain HTTP
// requests that follow redirects and carry cookies. Login -> provider -> callback -> session cookie ->
// session JWT -> an API key created with it -> sign-out -> the JWT and the cookie are refused; a state
// mismatch, a replayed code, a code bound to another PKCE verifier and a callback without the login
// cookie start no session; refresh and sign-out refuse a request that is not from the gateway's origin.
import t from 'tap';
import { startGateway, freePort, keysMatching, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, jwtPayload, mintToken } from './helpers/http-tools.js';
import { IdentityProvider, signingKey } from './helpers/identity-provider.js';
import { loadConfig } from '../src/config.js';
import { HttpBrowser } from './helpers/http-browser.js';

const CLIENT_ID = 'gateway-dashboard';
const CLIENT_SECRET = 'dashboard-client-secret-for-tests';

let provider: IdentityProvider;
let gateway: Gateway;

t.before(async () => {
  const port = await freePort();
  provider = await IdentityProvider.start([], [await signingKey('rsa-1', 'RS256')], {
    clientId: CLIENT_ID, secret: CLIENT_SECRET, redirectUri: `http://127.0.0.1:${port}/auth/callback`,
  });
  gateway = await startGateway({
    port, vendors: ['openai'],
    env: {
      JWT_SECRET: TEST_JWT_SECRET, OIDC_SIGNIN_ISSUER: provider.issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET,
      OIDC_REDIRECT_URL: `http://127.0.0.1:${port}/auth/callback`,
    },
  });
});
t.teardown(async () => {
  await gateway?.close();
  await provider?.close();
});

/** Starts a sign-in and runs the provider's pages: the callback URL the provider sends the browser to (not yet visited). */
async function toCallback(browser: HttpBrowser): Promise<string> {
  const { stoppedAt, response, trail } = await browser.follow(`${gateway.url}/auth/login`, (next) => next.pathname === '/auth/callback');
  if (stoppedAt === undefined) throw new Error(`the provider did not redirect back: ${response.status} ${await response.text()} after ${trail.join(' -> ')}`);
  return stoppedAt;
}

const json = async (response: Response) => ({ status: response.status, headers: response.headers, body: await response.json().catch(() => undefined) as any });
const sessionsInRedis = async () => (await keysMatching(gateway.redis, `${gateway.prefix}signin:session:*`)).length;
const refresh = (browser: HttpBrowser, headers: Record<string, string> = { origin: gateway.url }) =>
  browser.request(`${gateway.url}/auth/session`, { method: 'POST', headers }).then(json);
const logout = (browser: HttpBrowser, headers: Record<string, string> = { origin: gateway.url }) =>
  browser.request(`${gateway.url}/auth/logout`, { method: 'POST', headers });
const api = async (method: string, path: string, token: string, body?: unknown) => json(await fetch(`${gateway.url}${path}`, {
  method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body),
}));

/** Signs `browser` in as the provider's current user: the callback's answer. */
async function signIn(browser: HttpBrowser): Promise<Response> {
  return browser.request(await toCallback(browser));
}

t.test('sign in, get a session JWT, create an API key with it, sign out: the JWT and the cookie are refused', async (t) => {
  provider.user = { sub: 'ada-lovelace', email: 'ada@example.test', email_verified: true };
  const browser = new HttpBrowser();

  const login = await browser.request(`${gateway.url}/auth/login`);
  t.equal(login.status, 302);
  const authorize = new URL(login.headers.get('location')!);
  t.equal(authorize.origin, provider.issuer, 'the browser is sent to the provider');
  t.match(Object.fromEntries(authorize.searchParams), {
    client_id: CLIENT_ID, response_type: 'code', redirect_uri: `${gateway.url}/auth/callback`, scope: 'openid email profile',
    code_challenge_method: 'S256', code_challenge: /^[A-Za-z0-9_-]{43}$/, state: /^[A-Za-z0-9_-]{20,}$/, nonce: /^[A-Za-z0-9_-]{20,}$/,
  });
  const loginCookie = browser.cookie(gateway.url, 'gw_signin');
  t.ok(loginCookie, 'the login state is kept in a cookie');
  t.match(loginCookie!.attributes, /Path=\/auth\/callback/);
  t.match(loginCookie!.attributes, /HttpOnly/);
  t.match(loginCookie!.attributes, /Secure/);
  t.match(loginCookie!.attributes, /SameSite=Lax/);
  t.notOk(loginCookie!.value.includes(authorize.searchParams.get('state')!), 'the cookie is sealed: the state is not readable in it');
  t.equal(await sessionsInRedis(), 0, 'no session before the callback');

  // The provider's login and consent pages, then back to the gateway.
  const { stoppedAt } = await browser.follow(authorize.href, (next) => next.pathname === '/auth/callback');
  t.ok(stoppedAt, 'the provider redirects back to the callback');
  t.equal(new URL(stoppedAt!).searchParams.get('state'), authorize.searchParams.get('state'));
  const callback = await browser.request(stoppedAt!);
  t.equal(callback.status, 302, await callback.clone().text());
  t.equal(callback.headers.get('location'), '/console', 'a signed-in browser goes to the console');
  t.equal(callback.headers.get('cache-control'), 'no-store');
  t.notOk(browser.cookie(gateway.url, 'gw_signin'), 'the login cookie is cleared');
  const session = browser.cookie(gateway.url, 'gw_session');
  t.ok(session, 'a session cookie is set');
  t.match(session!.attributes, /Path=\/auth(;|$)/);
  t.match(session!.attributes, /HttpOnly/);
  t.match(session!.attributes, /Secure/);
  t.match(session!.attributes, /SameSite=Strict/);
  t.match(session!.value, /^[A-Za-z0-9_-]{43}$/, 'an opaque random id');
  t.equal(await sessionsInRedis(), 1);
  const [account] = await gateway.sql<{ id: string; email: string; email_verified: boolean }[]>`select id, email, email_verified from accounts where id = 'ada-lovelace'`;
  t.same(account, { id: 'ada-lovelace', email: 'ada@example.test', email_verified: true }, 'the account is the provider\'s sub, with its verified email');

  const refreshed = await refresh(browser);
  t.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
  t.equal(refreshed.headers.get('cache-control'), 'no-store');
  t.match(refreshed.body, { token_type: 'Bearer', expires_in: 900, user: { id: 'ada-lovelace', email: 'ada@example.test' } });
  const token: string = refreshed.body.token;
  const claims = jwtPayload(token);
  t.match(claims, { sub: 'ada-lovelace', email: 'ada@example.test', email_verified: true, sid: /^[A-Za-z0-9_-]{43}$/ });
  t.equal((claims.exp as number) - (claims.iat as number), 900, 'a session JWT lives 15 minutes');
  t.not(claims.sid, session!.value, 'the JWT does not carry the cookie\'s secret');

  const created = await api('POST', '/api/v1/api-keys', token, { name: 'made after sign-in' });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const [owner] = await gateway.sql<{ user_id: string }[]>`select user_id from api_keys where id = ${created.body.id}`;
  t.equal(owner?.user_id, 'ada-lovelace');
  t.equal((await api('GET', '/api/v1/api-keys', mintToken('ada-lovelace'))).body.length, 1, 'an operator\'s `gateway token` JWT of the same sub sees the same account');

  const out = await logout(browser);
  t.equal(out.status, 204);
  t.match(out.headers.getSetCookie().join('\n'), /gw_session=; Path=\/auth; Max-Age=0/, 'the cookie is cleared');
  t.notOk(browser.cookie(gateway.url, 'gw_session'));
  t.equal(await sessionsInRedis(), 0, 'the session is deleted');

  const after = await api('GET', '/api/v1/api-keys', token);
  assertEnvelope(t, after, 401, 'session_ended', 'the JWT minted before sign-out');
  t.match(after.body.msg, /session .* has ended/);
  assertEnvelope(t, await api('POST', '/api/v1/api-keys', token, { name: 'after sign-out' }), 401, 'session_ended', 'creating a key after sign-out');

  // The old cookie, replayed (a copy kept from before sign-out), no longer names a session.
  browser.jar.get(gateway.url)!.set('gw_session', session!);
  const stale = await refresh(browser);
  assertEnvelope(t, stale, 401, 'session_required', 'the signed-out cookie');
  t.match(stale.headers.getSetCookie().join('\n'), /gw_session=; Path=\/auth; Max-Age=0/);
  t.equal((await api('GET', '/api/v1/api-keys', mintToken('ada-lovelace'))).status, 200, 'an operator JWT (no session) still works');
});

t.test('the callback refuses, and starts no session: state mismatch, replayed code, another login\'s PKCE verifier, no login cookie', async (t) => {
  provider.user = { sub: 'grace-hopper', email: 'grace@example.test', email_verified: true };
  const before = await sessionsInRedis();

  await t.test('state mismatch', async (t) => {
    const browser = new HttpBrowser();
    const callback = new URL(await toCallback(browser));
    callback.searchParams.set('state', 'forged-state-value-0123456789');
    const response = await json(await browser.request(callback.href));
    assertEnvelope(t, response, 400, 'signin_refused');
    t.match(response.body.msg, /state/);
    t.notOk(browser.cookie(gateway.url, 'gw_session'));
    t.notOk(browser.cookie(gateway.url, 'gw_signin'), 'the login cookie is cleared: a retry starts again');
  });

  await t.test('a code used once is refused the second time', async (t) => {
    const browser = new HttpBrowser();
    const callback = await toCallback(browser);
    const copy = browser.clone();
    t.equal((await browser.request(callback)).status, 302, 'the first use signs in');
    const replay = await json(await copy.request(callback));
    assertEnvelope(t, replay, 400, 'signin_refused');
    t.match(replay.body.msg, /invalid_grant/);
    t.notOk(copy.cookie(gateway.url, 'gw_session'));
    await logout(browser);
  });

  await t.test('a code bound to another login\'s PKCE challenge (code injection) is refused', async (t) => {
    const victim = new HttpBrowser();
    const attacker = new HttpBrowser();
    const victimCallback = new URL(await toCallback(victim));
    const attackerCallback = new URL(await toCallback(attacker));
    // The attacker's own state (it passes the state check) with the victim's code: only PKCE tells them apart.
    victimCallback.searchParams.set('state', attackerCallback.searchParams.get('state')!);
    const response = await json(await attacker.request(victimCallback.href));
    assertEnvelope(t, response, 400, 'signin_refused');
    t.match(response.body.msg, /invalid_grant/);
    t.notOk(attacker.cookie(gateway.url, 'gw_session'));
  });

  await t.test('no login cookie (a callback the browser did not start): no verifier, no sign-in', async (t) => {
    const browser = new HttpBrowser();
    const callback = await toCallback(browser);
    const response = await json(await new HttpBrowser().request(callback));
    assertEnvelope(t, response, 400, 'signin_expired');
    t.equal(response.body.error.param, 'gw_signin');
    const forged = new HttpBrowser();
    forged.jar.set(gateway.url, new Map([['gw_signin', { value: 'A'.repeat(200), path: '/auth/callback', attributes: '' }]]));
    assertEnvelope(t, await json(await forged.request(callback)), 400, 'signin_expired', 'a forged login cookie');
  });

  await t.test('the provider answers with an error (the person declined)', async (t) => {
    const browser = new HttpBrowser();
    const callback = new URL(await toCallback(browser));
    const declined = new URL(`${gateway.url}/auth/callback`);
    declined.search = new URLSearchParams({ error: 'access_denied', state: callback.searchParams.get('state')!, iss: provider.issuer }).toString();
    const response = await json(await browser.request(declined.href));
    assertEnvelope(t, response, 400, 'signin_refused');
    t.match(response.body.msg, /access_denied/);
  });

  t.equal(await sessionsInRedis(), before, 'no refused callback left a session behind');
});

t.test('refresh and sign-out made with the cookie need the gateway\'s own origin', async (t) => {
  provider.user = { sub: 'alan-turing' };
  const browser = new HttpBrowser();
  t.equal((await signIn(browser)).status, 302);

  assertEnvelope(t, await refresh(browser, {}), 403, 'csrf_refused', 'no Origin and no Sec-Fetch-Site');
  assertEnvelope(t, await refresh(browser, { origin: 'https://evil.example' }), 403, 'csrf_refused', 'another origin');
  assertEnvelope(t, await refresh(browser, { origin: 'null' }), 403, 'csrf_refused', 'an opaque origin');
  assertEnvelope(t, await refresh(browser, { 'sec-fetch-site': 'cross-site' }), 403, 'csrf_refused', 'Sec-Fetch-Site: cross-site');
  const sameOrigin = await refresh(browser, { 'sec-fetch-site': 'same-origin' });
  t.equal(sameOrigin.status, 200, 'Sec-Fetch-Site: same-origin without Origin is taken');
  t.same(sameOrigin.body.user, { id: 'alan-turing', email: null });

  const forged = await json(await logout(browser, { origin: 'https://evil.example' }));
  assertEnvelope(t, forged, 403, 'csrf_refused', 'a cross-site sign-out');
  t.ok(browser.cookie(gateway.url, 'gw_session'), 'the cookie is kept');
  t.equal((await refresh(browser)).status, 200, 'the session survived the forged sign-out');
  t.equal((await logout(browser)).status, 204);
  assertEnvelope(t, await refresh(new HttpBrowser()), 401, 'session_required', 'no cookie at all');
});

t.test('a sub outside the account-id alphabet gets a stable hashed account id', async (t) => {
  provider.user = { sub: 'tenant/42 émile', email: 'emile@example.test', email_verified: false };
  const first = new HttpBrowser();
  t.equal((await signIn(first)).status, 302);
  const one = await refresh(first);
  t.match(one.body.user.id, /^sub-sha256-[0-9a-f]{64}$/);
  const second = new HttpBrowser();
  await signIn(second);
  t.equal((await refresh(second)).body.user.id, one.body.user.id, 'the same sub, the same account');
  t.equal((await api('POST', '/api/v1/api-keys', one.body.token, { name: 'hashed' })).status, 201);
  const [account] = await gateway.sql<{ email: string; email_verified: boolean }[]>`select email, email_verified from accounts where id = ${one.body.user.id}`;
  t.same(account, { email: 'emile@example.test', email_verified: false }, 'an unverified email is stored as unverified');
  t.equal((await logout(first)).status, 204);
  t.equal((await refresh(second)).status, 200, 'signing out one browser leaves the other\'s session');
  await logout(second);
});

t.test('settings: all or nothing, Secure cookies off only on http://localhost outside production', async (t) => {
  const base = { OIDC_SIGNIN_ISSUER: 'https://idp.example', OIDC_CLIENT_ID: 'gw', OIDC_CLIENT_SECRET: 's', OIDC_REDIRECT_URL: 'https://gw.example/auth/callback' };
  t.match(loadConfig(base).signIn, { issuer: 'https://idp.example', origin: 'https://gw.example', secureCookies: true, successPath: '/console', scopes: 'openid email profile' });
  t.equal(loadConfig({}).signIn, undefined, 'off by default');
  t.equal(loadConfig({ OIDC_ISSUER: 'https://idp.example', OIDC_AUDIENCE: 'gw', OIDC_CLIENT_ID: 'gw', OIDC_CLIENT_SECRET: 's', OIDC_REDIRECT_URL: 'https://gw.example/auth/callback' }).signIn?.issuer,
    'https://idp.example', 'OIDC_ISSUER serves when OIDC_SIGNIN_ISSUER is unset');
  t.throws(() => loadConfig({ ...base, OIDC_CLIENT_SECRET: '' }), /OIDC_CLIENT_SECRET/);
  t.throws(() => loadConfig({ ...base, OIDC_REDIRECT_URL: 'https://gw.example/elsewhere' }), /OIDC_REDIRECT_URL/);
  t.throws(() => loadConfig({ OIDC_CLIENT_SECRET: 's' }), /OIDC_CLIENT_SECRET: set OIDC_CLIENT_ID/);
  t.throws(() => loadConfig({ ...base, SIGNIN_COOKIE_SECURE: 'false' }), /SIGNIN_COOKIE_SECURE/);
  t.equal(loadConfig({ ...base, OIDC_REDIRECT_URL: 'http://localhost:8080/auth/callback', SIGNIN_COOKIE_SECURE: 'false' }).signIn?.secureCookies, false);
  t.throws(() => loadConfig({ ...base, SIGNIN_SUCCESS_URL: '//evil.example/' }), /SIGNIN_SUCCESS_URL/, 'no open redirect after sign-in');
});

t.test('a provider that cannot be reached at the callback: 502 identity_provider_unavailable, no session', async (t) => {
  provider.user = { sub: 'offline-user' };
  const browser = new HttpBrowser();
  const callback = await toCallback(browser);
  const before = await sessionsInRedis();
  await provider.close();
  try {
    const response = await json(await browser.request(callback));
    assertEnvelope(t, response, 502, 'identity_provider_unavailable');
    t.equal(response.headers.get('retry-after'), '5');
    t.notOk(browser.cookie(gateway.url, 'gw_session'));
    t.equal(await sessionsInRedis(), before);
  } finally {
    await provider.rotate(provider.keys);
  }
  t.equal((await signIn(new HttpBrowser())).status, 302, 'sign-in works again once the provider is back');
});

t.test('/auth/login and /auth/callback are limited together per client address (RATE_LIMIT_SIGNIN): 429 with Retry-After', async (t) => {
  const port = await freePort();
  const limited = await startGateway({
    port, vendors: ['openai'],
    env: {
      JWT_SECRET: TEST_JWT_SECRET, OIDC_SIGNIN_ISSUER: provider.issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET,
      OIDC_REDIRECT_URL: `http://127.0.0.1:${port}/auth/callback`, RATE_LIMIT_SIGNIN: '3/60',
      // The test plays a balancer: X-Forwarded-For names the client.
      TRUSTED_PROXIES: '127.0.0.1',
    },
  });
  t.teardown(() => limited.close());
  const from = (address: string, path: string) => fetch(`${limited.url}${path}`, { redirect: 'manual', headers: { 'x-forwarded-for': address } });
  const logins = [];
  for (let i = 0; i < 3; i++) logins.push((await from('203.0.113.7', '/auth/login')).status);
  t.same(logins, [302, 302, 302], 'three sign-in requests pass');
  const refused = await json(await from('203.0.113.7', '/auth/login'));
  assertEnvelope(t, refused, 429, 'rate_limit_exceeded', 'the fourth /auth/login');
  t.match(refused.body.error.message, /3 sign-in requests .* per 60 seconds from one address/);
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} s, within the window`);
  assertEnvelope(t, await json(await from('203.0.113.7', '/auth/callback?code=x&state=y')), 429, 'rate_limit_exceeded', '/auth/callback shares the window');
  t.equal((await from('198.51.100.20', '/auth/login')).status, 302, 'another address has its own window');
  t.equal((await fetch(`${limited.url}/v1/models`)).status, 401, 'other routes are not counted in it');
  t.same(loadConfig({}).signInRateLimit, { requests: 30, windowMs: 60_000 }, 'the default: 30 per minute');
  t.throws(() => loadConfig({ RATE_LIMIT_SIGNIN: '0/60' }), /invalid RATE_LIMIT_SIGNIN/);
});
