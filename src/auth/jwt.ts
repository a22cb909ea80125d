import { createHmac, timingSafeEqual } from 'node:crypto';
import { emailAddress } from '../store/accounts.js';

/** Account ids are used inside Redis hash tags and URLs, so they are kept to a safe alphabet. */
export const USER_ID_PATTERN = /^[A-Za-z0-9._@:-]{1,128}$/;

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export function signJwt(secret: string, claims: { sub: string; exp: number; iat?: number; email?: string; email_verified?: boolean; sid?: string }): string {
  return signHs256(secret, { iat: Math.floor(Date.now() / 1000), ...claims });
}

/** An HS256 JWT of exactly `claims` (the gateway's own tokens, and Kling's access tokens). */
export function signHs256(secret: string, claims: Readonly<Record<string, unknown>>): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
  return `${HEADER}.${payload}.${signature}`;
}

/**
 * `email`: the token's `email` claim when it is an address; `emailVerified`: the token says so
 * (`email_verified: true`), which is what lets balance alerts mail it (docs/api.md "Balance alerts").
 */
export type JwtResult = { ok: true; sub: string; email?: string; emailVerified?: true; sid?: string } | { ok: false; reason: string };

/** The lifetime `gateway token` and verification agree on when no setting says otherwise (JWT_MAX_LIFETIME_SECONDS). */
export const DEFAULT_JWT_MAX_LIFETIME_SECONDS = 86_400;
/** Clock difference tolerated between the signer and this server for `iat` (and an identity provider's `exp`, `nbf`). */
export const CLOCK_SKEW_SECONDS = 60;
/** verifyJwt's reason for a token that is not HS256: the authenticator then tries the identity provider's keys. */
export const UNSUPPORTED_ALGORITHM = 'unsupported algorithm';

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * Strict base64url (RFC 7515): the URL alphabet only, no padding, and the one canonical text of the
 * bytes (no set trailing bits, no impossible length); undefined for anything else, so one signature
 * has one accepted spelling.
 */
export function decodeBase64Url(text: string): Buffer | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : undefined;
}

function jsonPart(text: string): Record<string, unknown> | undefined {
  const bytes = decodeBase64Url(text);
  if (!bytes) return undefined;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * HS256 only (`alg` exactly that); every part strict base64url; `exp` required, in the future and at
 * most `maxLifetimeSeconds` away, and `exp - iat` no longer either (an `iat` must be a time not in
 * the future); `sub` a valid account id. An `email` claim that is not an address, or that
 * `email_verified: false` disowns, is ignored (the token is still valid).
 */
export function verifyJwt(secret: string, token: string, nowSeconds = Math.floor(Date.now() / 1000), maxLifetimeSeconds = DEFAULT_JWT_MAX_LIFETIME_SECONDS): JwtResult {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed token' };
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = jsonPart(headerPart);
  const payload = jsonPart(payloadPart);
  if (!header || !payload) return { ok: false, reason: 'malformed token' };
  if (header.alg !== 'HS256') return { ok: false, reason: UNSUPPORTED_ALGORITHM };
  const expected = createHmac('sha256', secret).update(`${headerPart}.${payloadPart}`).digest();
  const given = decodeBase64Url(signaturePart);
  if (!given || given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad signature' };
  if (!isTime(payload.exp)) return { ok: false, reason: 'token has no valid exp' };
  if (payload.exp <= nowSeconds) return { ok: false, reason: 'token expired' };
  if (payload.exp - nowSeconds > maxLifetimeSeconds) return { ok: false, reason: `token lives longer than ${maxLifetimeSeconds} s` };
  if (payload.iat !== undefined) {
    if (!isTime(payload.iat) || payload.iat > nowSeconds + CLOCK_SKEW_SECONDS) return { ok: false, reason: 'token has an invalid iat' };
    if (payload.exp - payload.iat > maxLifetimeSeconds) return { ok: false, reason: `token lives longer than ${maxLifetimeSeconds} s` };
  }
  if (typeof payload.nbf === 'number' && payload.nbf > nowSeconds) return { ok: false, reason: 'token not yet valid' };
  const account = accountClaims(payload);
  // A dashboard session's JWT (src/auth/dashboard-sessions.ts): valid only while its session is; the authenticator checks.
  if (!account.ok || payload.sid === undefined) return account;
  if (typeof payload.sid !== 'string') return { ok: false, reason: 'token has an invalid sid' };
  return { ...account, sid: payload.sid };
}

/**
 * The account a verified token names: `sub` must be a valid account id; an `email` claim that is not
 * an address, or that `email_verified: false` disowns, is ignored (the token is still valid).
 */
export function accountClaims(payload: Record<string, unknown>): JwtResult {
  if (typeof payload.sub !== 'string' || !USER_ID_PATTERN.test(payload.sub)) return { ok: false, reason: 'token has no valid sub' };
  const email = payload.email_verified === false ? undefined : emailAddress(payload.email);
  if (email === undefined) return { ok: true, sub: payload.sub };
  return payload.email_verified === true ? { ok: true, sub: payload.sub, email, emailVerified: true } : { ok: true, sub: payload.sub, email };
}

/** "90s", "15m", "1h", "7d" -> seconds. */
export function parseTtl(text: string): number | undefined {
  const match = /^(\d+)([smhd])$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[match[2] as 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}
