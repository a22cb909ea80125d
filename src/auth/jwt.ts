import { createHmac, timingSafeEqual } from 'node:crypto';
import { emailAddress } from '../store/accounts.js';

/** Account ids are used inside Redis hash tags and URLs, so they are kept to a safe alphabet. */
export const USER_ID_PATTERN = /^[A-Za-z0-9._@:-]{1,128}$/;

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');

export function signJwt(secret: string, claims: { sub: string; exp: number; iat?: number; email?: string }): string {
  const payload = Buffer.from(JSON.stringify({ iat: Math.floor(Date.now() / 1000), ...claims })).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${HEADER}.${payload}`).digest('base64url');
  return `${HEADER}.${payload}.${signature}`;
}

/** `email`: the token's `email` claim when it is an address (and `email_verified` is not false). */
export type JwtResult = { ok: true; sub: string; email?: string } | { ok: false; reason: string };

/**
 * HS256 only; `exp` is required and enforced; `sub` must be a valid account id. An `email` claim that
 * is not an address, or that `email_verified: false` disowns, is ignored (the token is still valid).
 */
export function verifyJwt(secret: string, token: string, nowSeconds = Math.floor(Date.now() / 1000)): JwtResult {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed token' };
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  let header: { alg?: unknown };
  let payload: { sub?: unknown; exp?: unknown; nbf?: unknown; email?: unknown; email_verified?: unknown };
  try {
    header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8'));
    payload = JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed token' };
  }
  if (header?.alg !== 'HS256') return { ok: false, reason: 'unsupported algorithm' };
  const expected = createHmac('sha256', secret).update(`${headerPart}.${payloadPart}`).digest();
  const given = Buffer.from(signaturePart, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad signature' };
  if (typeof payload.exp !== 'number') return { ok: false, reason: 'token has no exp' };
  if (payload.exp <= nowSeconds) return { ok: false, reason: 'token expired' };
  if (typeof payload.nbf === 'number' && payload.nbf > nowSeconds) return { ok: false, reason: 'token not yet valid' };
  if (typeof payload.sub !== 'string' || !USER_ID_PATTERN.test(payload.sub)) return { ok: false, reason: 'token has no valid sub' };
  const email = payload.email_verified === false ? undefined : emailAddress(payload.email);
  return email === undefined ? { ok: true, sub: payload.sub } : { ok: true, sub: payload.sub, email };
}

/** "90s", "15m", "1h", "7d" -> seconds. */
export function parseTtl(text: string): number | undefined {
  const match = /^(\d+)([smhd])$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[match[2] as 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}
