/**
 * Dashboard sign-in (docs/api.md "Sign-in"): `GET /auth/login` sends the browser to the OpenID
 * provider, `GET /auth/callback` completes the sign-in and starts a session (the refresh cookie),
 * `POST /auth/session` turns that cookie into a short-lived session JWT for /api/v1, and
 * `POST /auth/logout` ends the session (and with it every JWT minted from it). The two POSTs are
 * made with the cookie, so they require the gateway's own Origin (src/auth/same-origin.ts).
 */
import { createHash } from 'node:crypto';
import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError } from '../errors.js';
import { OidcSignIn, ProviderUnavailable, SignInRefused, type SignedInUser } from '../../auth/signin-flow.js';
import {
  LOGIN_COOKIE, LoginCookieSeal, SESSION_COOKIE, clearedLoginCookie, clearedSessionCookie, cookieValue, loginCookie, sessionCookie,
} from '../../auth/signin-cookies.js';
import { requireSameOrigin } from '../../auth/same-origin.js';
import { USER_ID_PATTERN, signJwt } from '../../auth/jwt.js';
import { emailAddress, ensureAccount, setAccountEmail } from '../../store/accounts.js';
import { log } from '../../log.js';

const NO_STORE = { 'cache-control': 'no-store' };

/**
 * The account of a provider's `sub`: the `sub` itself, as identity-provider tokens map it (so both
 * reach one account); a `sub` outside the account-id alphabet (or longer than 128) becomes
 * `sub-sha256-<hex of its SHA-256>`, stable for that `sub` (docs/api.md "Sign-in").
 */
export function accountIdOf(sub: string): string {
  return USER_ID_PATTERN.test(sub) ? sub : `sub-sha256-${createHash('sha256').update(sub).digest('hex')}`;
}

const signInUnavailable = () => new ApiError(404, 'signin_unavailable', 'Sign-in is not configured on this gateway (OIDC_CLIENT_ID); use a token from `gateway token` or the identity provider.');

export function signInRoutes(services: Services) {
  const { config, sql, sessions, signInWindow } = services;
  const settings = config.signIn;
  const flow = settings && new OidcSignIn(settings);
  const seal = new LoginCookieSeal(config.keySecret);
  const cookies = { secure: settings?.secureCookies ?? true };
  const browserOf = (ctx: RequestContext) => ctx.headers.browser ?? { cookie: '', origin: '', secFetchSite: '' };

  const login = async (ctx: RequestContext): Promise<void> => {
    if (!flow) throw signInUnavailable();
    await signInWindow.enter(ctx.clientAddress);
    const { url, pending } = await provider(() => flow.begin());
    ctx.reply.redirect(url, [loginCookie(seal.seal(pending), cookies)]);
  };

  const callback = async (ctx: RequestContext): Promise<void> => {
    if (!flow || !settings) throw signInUnavailable();
    await signInWindow.enter(ctx.clientAddress);
    // Whatever happens next, the login cookie has done its work: a retry starts again at /auth/login.
    const clear = { 'set-cookie': clearedLoginCookie(cookies), ...NO_STORE };
    const pending = seal.open(cookieValue(browserOf(ctx).cookie, LOGIN_COOKIE));
    if (!pending) throw new ApiError(400, 'signin_expired', 'This sign-in has no valid login cookie (it expired after 10 minutes, or was started in another browser); start again at /auth/login.', LOGIN_COOKIE, clear);
    let user: SignedInUser;
    try {
      user = await provider(() => flow.finish(ctx.query, pending));
    } catch (error) {
      if (error instanceof SignInRefused) throw new ApiError(400, 'signin_refused', `Sign-in refused: ${error.message}. Start again at /auth/login.`, null, clear);
      if (error instanceof ApiError) throw new ApiError(error.status, error.code, error.message, error.param, { ...error.headers, ...clear });
      throw error;
    }
    const userId = accountIdOf(user.sub);
    const email = emailAddress(user.email);
    if (email === undefined) await ensureAccount(sql, userId);
    else await setAccountEmail(sql, userId, { email, verified: user.emailVerified });
    const token = await sessions.start({ userId, email, emailVerified: user.emailVerified }, settings.sessionTtlSeconds);
    log.info('dashboard sign-in', { user_id: userId });
    ctx.reply.redirect(settings.successPath, [sessionCookie(token, settings.sessionTtlSeconds, cookies), clearedLoginCookie(cookies)]);
  };

  const session = async (ctx: RequestContext): Promise<void> => {
    if (!settings) throw signInUnavailable();
    const browser = browserOf(ctx);
    requireSameOrigin(browser, settings.origin);
    const found = await sessions.find(cookieValue(browser.cookie, SESSION_COOKIE));
    if (!found) {
      throw new ApiError(401, 'session_required', 'No dashboard session: sign in at /auth/login.', SESSION_COOKIE, { 'set-cookie': clearedSessionCookie(cookies), ...NO_STORE });
    }
    const now = Math.floor(Date.now() / 1000);
    // Never outlives its session (nor JWT_MAX_LIFETIME_SECONDS, which verification enforces).
    const expiresIn = Math.min(config.sessionJwtTtlSeconds, found.secondsLeft, config.auth.jwtMaxLifetimeSeconds);
    const { userId, email, emailVerified } = found.account;
    const token = signJwt(config.jwtSecret, {
      sub: userId, iat: now, exp: now + expiresIn, sid: found.sid,
      ...(email === undefined ? {} : { email, email_verified: emailVerified === true }),
    });
    ctx.reply.json(200, {
      token, token_type: 'Bearer', expires_in: expiresIn, expires_at: new Date((now + expiresIn) * 1000).toISOString(),
      user: { id: userId, email: email ?? null },
    }, NO_STORE);
  };

  const logout = async (ctx: RequestContext): Promise<void> => {
    if (!settings) throw signInUnavailable();
    const browser = browserOf(ctx);
    requireSameOrigin(browser, settings.origin);
    await sessions.end(cookieValue(browser.cookie, SESSION_COOKIE));
    ctx.reply.send(204, '', 'application/json', { 'set-cookie': clearedSessionCookie(cookies), ...NO_STORE });
  };

  return { login, callback, session, logout };
}

/** Runs a step that talks to the provider: one it cannot complete is a 502 naming the provider, not a 500. */
async function provider<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (!(error instanceof ProviderUnavailable)) throw error;
    throw new ApiError(502, 'identity_provider_unavailable', `The identity provider could not complete the sign-in right now (${error.message}); try again shortly.`, null, { 'retry-after': '5' });
  }
}
