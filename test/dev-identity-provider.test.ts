// The development identity provider (issue 29): outside production, with no OIDC_CLIENT_ID, the
// gateway starts a local OpenID provider on 127.0.0.1 and signs people in against it, so a fresh
// machine can sign in to the console. Its real login form takes any login (the account) and
// password; the start-up banner says where to sign in. `auto` never starts it in production or beside
// a configured provider, and goes on without sign-in when its port is taken; production refuses
// DEV_IDENTITY_PROVIDER=on, and so does `on` beside OIDC_CLIENT_ID.
import t from 'tap';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { startGateway, freePort } from './helpers/harness.js';
import { assertEnvelope, eventually } from './helpers/http-tools.js';
import { HttpBrowser } from './helpers/http-browser.js';
import { runUntilExit } from './helpers/startup-refusal.js';
import { loadConfig } from '../src/config.js';

const productionSecrets = () => ({
  NODE_ENV: 'production', JWT_SECRET: randomBytes(48).toString('base64'), KEY_SECRET: randomBytes(48).toString('base64'), METRICS_PUBLIC: 'true',
});

/** The one form of a page of the provider's: where it posts. */
function formAction(html: string, base: string): string {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`no form on the page: ${html.slice(0, 500)}`);
  return new URL(action.replaceAll('&amp;', '&'), base).href;
}

t.test('DEV_IDENTITY_PROVIDER=on: sign in through its login form with any login, then use the API', async (t) => {
  const providerPort = await freePort();
  const gateway = await startGateway({ vendors: ['openai'], env: { DEV_IDENTITY_PROVIDER: 'on', DEV_IDENTITY_PROVIDER_PORT: String(providerPort) } });
  t.teardown(() => gateway.close());
  const issuer = `http://127.0.0.1:${providerPort}`;
  // The banner comes after the gateway answers its health check: wait for it rather than race it.
  const banner = `Sign in at ${gateway.url}/console with any login and password (development identity provider at ${issuer})`;
  t.ok(await eventually(() => gateway.output.includes(banner)), 'the banner says where to sign in');

  const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as { issuer: string };
  t.equal(discovery.issuer, issuer, 'an OpenID provider on 127.0.0.1 at the port asked for');

  const browser = new HttpBrowser();
  const toLogin = await browser.follow(`${gateway.url}/auth/login`, (next) => next.pathname === '/auth/callback');
  t.equal(toLogin.stoppedAt, undefined, 'not signed in yet: the provider shows a page');
  t.equal(new URL(toLogin.trail.at(-1)!).origin, issuer, 'the gateway sent the browser to the development provider');
  const loginPage = await toLogin.response.text();
  t.match(loginPage, /name="login"[\s\S]*name="password"/, 'its login form');
  const login = await browser.request(formAction(loginPage, issuer), {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ prompt: 'login', login: 'dev-person@example.test', password: 'any password at all' }),
  });
  t.equal(login.status, 303, 'the login is taken');
  const toConsent = await browser.follow(new URL(login.headers.get('location')!, issuer).href, (next) => next.pathname === '/auth/callback');
  const consentPage = await toConsent.response.text();
  t.match(consentPage, /name="prompt" value="consent"/, 'then its consent form');
  const consent = await browser.request(formAction(consentPage, issuer), {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ prompt: 'consent' }),
  });
  const back = await browser.follow(new URL(consent.headers.get('location')!, issuer).href, (next) => next.pathname === '/auth/callback');
  t.ok(back.stoppedAt?.startsWith(`${gateway.url}/auth/callback?`), 'the provider sends the browser back to the gateway');
  const callback = await browser.request(back.stoppedAt!);
  t.equal(callback.status, 302, 'the callback signs in');
  t.equal(callback.headers.get('location'), '/console', 'and goes to the console');
  t.match(browser.cookie(gateway.url, 'gw_session')?.attributes, /Secure/, 'a Secure cookie: browsers take those from http://127.0.0.1');

  const session = await browser.request(`${gateway.url}/auth/session`, { method: 'POST', headers: { origin: gateway.url } });
  t.equal(session.status, 200, 'a session JWT');
  const { token, user } = await session.json() as { token: string; user: { id: string; email: string | null } };
  t.same(user, { id: user.id, email: 'dev-person@example.test' }, 'the login is the account, and an address its email');
  const tasks = await fetch(`${gateway.url}/api/v1/tasks`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(tasks.status, 200, 'the JWT works on the management API');
});

t.test('auto: a taken port leaves the gateway without sign-in, saying why; on: it does not start', async (t) => {
  const taken = createServer().listen(0, '127.0.0.1');
  await once(taken, 'listening');
  t.teardown(() => taken.close());
  const port = String((taken.address() as { port: number }).port);
  const gateway = await startGateway({ vendors: ['openai'], env: { DEV_IDENTITY_PROVIDER: 'auto', DEV_IDENTITY_PROVIDER_PORT: port } });
  t.teardown(() => gateway.close());
  t.match(gateway.output, /development identity provider not started: console sign-in is off/, 'a warning');
  const login = await fetch(`${gateway.url}/auth/login`, { redirect: 'manual' });
  assertEnvelope(t, { status: login.status, body: await login.json() }, 404, 'signin_unavailable', 'no sign-in');

  const required = await runUntilExit({ DEV_IDENTITY_PROVIDER: 'on', DEV_IDENTITY_PROVIDER_PORT: port, PORT: '0', MOCK_VENDOR: 'off', LOG_LEVEL: 'warn' });
  t.not(required.code, 0, 'DEV_IDENTITY_PROVIDER=on with its port taken: the gateway stops');
  t.match(required.output, /EADDRINUSE/, 'naming the cause');
});

t.test('production refuses DEV_IDENTITY_PROVIDER=on; `on` beside OIDC_CLIENT_ID is refused too', async (t) => {
  const production = await runUntilExit({ ...productionSecrets(), DEV_IDENTITY_PROVIDER: 'on' });
  t.equal(production.code, 1, 'exit 1');
  t.match(production.output, /invalid DEV_IDENTITY_PROVIDER: .*never in production/, 'one line naming the setting');
  const beside = await runUntilExit({
    DEV_IDENTITY_PROVIDER: 'on', OIDC_SIGNIN_ISSUER: 'https://idp.example.com', OIDC_CLIENT_ID: 'gateway', OIDC_CLIENT_SECRET: 'test-client-secret', OIDC_REDIRECT_URL: 'http://127.0.0.1:8080/auth/callback',
  });
  t.equal(beside.code, 1, 'exit 1');
  t.match(beside.output, /invalid DEV_IDENTITY_PROVIDER: .*unset OIDC_CLIENT_ID/);
});

t.test('when auto starts it, and where it sends a signed-in browser back', async (t) => {
  t.same(loadConfig({}).devIdentityProvider, { port: 8091, required: false, redirectUrl: 'http://127.0.0.1:8080/auth/callback' }, 'auto outside production: on 8091, back to the listen address');
  t.equal(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).devIdentityProvider?.redirectUrl, 'http://127.0.0.1:9000/auth/callback', 'a wildcard HOST: 127.0.0.1');
  t.equal(loadConfig({ PUBLIC_URL: 'http://gateway.test:8080/base' }).devIdentityProvider?.redirectUrl, 'http://gateway.test:8080/auth/callback', 'PUBLIC_URL\'s origin');
  t.equal(loadConfig({ DEV_IDENTITY_PROVIDER: 'off' }).devIdentityProvider, undefined, 'off');
  t.equal(loadConfig({
    OIDC_SIGNIN_ISSUER: 'https://idp.example.com', OIDC_CLIENT_ID: 'gateway', OIDC_CLIENT_SECRET: 'test-client-secret', OIDC_REDIRECT_URL: 'http://127.0.0.1:8080/auth/callback',
  }).devIdentityProvider, undefined, 'auto beside a configured provider: none');
  t.equal(loadConfig(productionSecrets()).devIdentityProvider, undefined, 'auto in production: none');
  t.equal(loadConfig({ DEV_IDENTITY_PROVIDER: 'on' }).devIdentityProvider?.required, true, 'on: required');
});
