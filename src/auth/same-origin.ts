/**
 * CSRF protection of the cookie-authenticated POSTs (/auth/session, /auth/logout): the request must
 * say it comes from the gateway's own origin. Browsers set `Origin` on every cross-origin POST and
 * on same-origin fetch POSTs, and page scripts cannot forge it; `Sec-Fetch-Site: same-origin` is
 * taken when `Origin` is absent. A request with neither is refused (docs/security.md "CSRF").
 * The session cookie's SameSite=Strict is a second, independent line.
 */
import { ApiError } from '../http/errors.js';

export function requireSameOrigin(headers: { readonly origin: string; readonly secFetchSite: string }, allowedOrigin: string): void {
  if (headers.origin !== '') {
    if (headers.origin === allowedOrigin) return;
    throw new ApiError(403, 'csrf_refused', `This request comes from ${headers.origin}, not from ${allowedOrigin}: refused (cross-site request forgery protection).`, 'Origin');
  }
  if (headers.secFetchSite === 'same-origin') return;
  throw new ApiError(403, 'csrf_refused', `This request carries no Origin header naming ${allowedOrigin} (or Sec-Fetch-Site: same-origin): refused (cross-site request forgery protection).`, 'Origin');
}
