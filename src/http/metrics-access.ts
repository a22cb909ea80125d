/** Who may read /metrics: the METRICS_TOKEN check, shared by the public listener and the metrics listener. */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * A check of `Authorization: Bearer <token>` against `token` (undefined: every request passes). Both
 * sides are hashed first, so the comparison takes the same time whatever the length or the first
 * differing character of what was sent.
 */
export function metricsGuard(token: string | undefined): (authorization: string | undefined) => void {
  if (token === undefined) return () => {};
  const expected = digest(token);
  return (authorization) => {
    const sent = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
    if (!timingSafeEqual(digest(sent), expected)) {
      throw new ApiError(401, 'invalid_metrics_token', 'Access is not permitted: /metrics requires the METRICS_TOKEN in the Authorization header (Bearer).', null, { 'www-authenticate': 'Bearer' });
    }
  };
}

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
