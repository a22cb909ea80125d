/**
 * The two cookies of dashboard sign-in (docs/security.md "Sign-in cookies"). Both HttpOnly (page
 * scripts never read them) and Secure (unless SIGNIN_COOKIE_SECURE=false on http://localhost):
 * - the login cookie carries the state, nonce and PKCE verifier from /auth/login to /auth/callback,
 *   sealed (AES-256-GCM under a key derived from KEY_SECRET) so no server state is needed and the
 *   browser can neither read nor forge it; SameSite=Lax, since the provider's redirect back is a
 *   cross-site top-level navigation; Path=/auth/callback; ten minutes.
 * - the session cookie holds the opaque session id; SameSite=Strict and Path=/auth: it only ever
 *   reaches /auth/session and /auth/logout, never /api/v1 or inference routes.
 */
import { SealedBox } from './sealed-box.js';
import type { PendingSignIn } from './signin-flow.js';

export const LOGIN_COOKIE = 'gw_signin';
export const SESSION_COOKIE = 'gw_session';
/** A sign-in must come back from the provider within this time. */
export const LOGIN_COOKIE_SECONDS = 600;
/** Largest sealed login cookie taken (a real one is about 250 characters). */
const MAX_LOGIN_COOKIE_CHARS = 1024;

export interface CookieSettings {
  readonly secure: boolean;
}

function cookie(name: string, value: string, attributes: string, settings: CookieSettings): string {
  return `${name}=${value}; ${attributes}; HttpOnly${settings.secure ? '; Secure' : ''}`;
}

export const loginCookie = (value: string, settings: CookieSettings) =>
  cookie(LOGIN_COOKIE, value, `Path=/auth/callback; Max-Age=${LOGIN_COOKIE_SECONDS}; SameSite=Lax`, settings);
export const clearedLoginCookie = (settings: CookieSettings) => cookie(LOGIN_COOKIE, '', 'Path=/auth/callback; Max-Age=0; SameSite=Lax', settings);
export const sessionCookie = (value: string, maxAgeSeconds: number, settings: CookieSettings) =>
  cookie(SESSION_COOKIE, value, `Path=/auth; Max-Age=${maxAgeSeconds}; SameSite=Strict`, settings);
export const clearedSessionCookie = (settings: CookieSettings) => cookie(SESSION_COOKIE, '', 'Path=/auth; Max-Age=0; SameSite=Strict', settings);

/** The value of cookie `name` in a Cookie header ('' when absent; the first one when the browser sends several). */
export function cookieValue(header: string, name: string): string {
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals !== -1 && part.slice(0, equals).trim() === name) return part.slice(equals + 1).trim();
  }
  return '';
}

/** Seals and opens the login cookie; a value that does not open, or that is past its time, is undefined. */
export class LoginCookieSeal {
  private readonly box: SealedBox;
  constructor(keySecret: string) {
    // A key of its own: a sealed API key text (same KEY_SECRET) can never pass for a login cookie.
    this.box = new SealedBox(`signin-login-cookie:${keySecret}`);
  }

  seal(pending: PendingSignIn, nowMs = Date.now()): string {
    return this.box.seal(JSON.stringify({ ...pending, exp: nowMs + LOGIN_COOKIE_SECONDS * 1000 })).toString('base64url');
  }

  open(value: string, nowMs = Date.now()): PendingSignIn | undefined {
    if (value === '' || value.length > MAX_LOGIN_COOKIE_CHARS || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
    let fields: Record<string, unknown>;
    try {
      fields = JSON.parse(this.box.open(Buffer.from(value, 'base64url'))) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    const { state, nonce, verifier, exp } = fields;
    if (typeof state !== 'string' || typeof nonce !== 'string' || typeof verifier !== 'string' || typeof exp !== 'number' || exp <= nowMs) return undefined;
    return { state, nonce, verifier };
  }
}
