/**
 * GET and HEAD /console and /console/*: the web console's built files, from memory (src/console/files.ts).
 * Hashed assets are cached for good; every other path is the single-page app's index.html, revalidated
 * each time. Every answer carries a content security policy that allows nothing inline.
 */
import type { RequestContext } from '../router.js';
import type { Config } from '../../config.js';
import { ApiError } from '../errors.js';
import { encodingFor, loadConsoleFiles, type ConsoleFile } from '../../console/files.js';
import { log } from '../../log.js';

export const CONSOLE_PATH = '/console';
const ASSETS = 'assets/';
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built</title></head>
<body><h1>The console is not built</h1>
<p>This gateway serves its web console from built files, and found none. Run <code>npm run build</code>
(or set <code>CONSOLE_DIR</code> to the built console), then restart the gateway.</p></body></html>
`;

/**
 * The policy of every console answer: the app's own scripts, styles and API only, nothing inline, no
 * framing; media players may also load from the media host when it is elsewhere (MEDIA_URL).
 */
export function consoleSecurityHeaders(config: Pick<Config, 'media'>): Readonly<Record<string, string>> {
  const mediaOrigin = config.media.storage === 'off' ? undefined : new URL(config.media.url).origin;
  const policy = [
    "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
    `media-src 'self'${mediaOrigin ? ` ${mediaOrigin}` : ''}`, "connect-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
  ].join('; ');
  return Object.freeze({ 'content-security-policy': policy, 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin' });
}

/** The console's routes; `files` and `security` are built once per HTTP thread. */
export function consoleRoutes(config: Pick<Config, 'media' | 'console'>) {
  const files = loadConsoleFiles(config.console.dir);
  if (!files) log.warn('the console is not built: /console answers 503 until it is (npm run build)', { dir: config.console.dir });
  const security = consoleSecurityHeaders(config);
  const index = files?.get('index.html');

  const answer = (ctx: RequestContext, head: boolean): void => {
    if (!files || !index) {
      const headers = { ...security, 'cache-control': 'no-store' };
      if (head) ctx.reply.head(503, 'text/html; charset=utf-8', Buffer.byteLength(NOT_BUILT_PAGE), headers);
      else ctx.reply.send(503, NOT_BUILT_PAGE, 'text/html; charset=utf-8', headers);
      return;
    }
    // Only names of the in-memory map are served: a path with `..` or an encoded byte matches none.
    const name = ctx.path.length > CONSOLE_PATH.length + 1 ? ctx.path.slice(CONSOLE_PATH.length + 1) : '';
    const asset = name.startsWith(ASSETS);
    const file = files.get(name);
    // A hashed asset that is not there is a 404, not the app's HTML where a script or style was asked for.
    if (asset && !file) throw new ApiError(404, 'not_found', `The console has no file '${name.slice(0, 200)}'.`, null, security);
    send(ctx, head, file ?? index, asset ? IMMUTABLE : REVALIDATE, security);
  };

  return { get: (ctx: RequestContext) => answer(ctx, false), head: (ctx: RequestContext) => answer(ctx, true) };
}

function send(ctx: RequestContext, head: boolean, file: ConsoleFile, cacheControl: string, security: Readonly<Record<string, string>>): void {
  const { acceptEncoding = '', ifNoneMatch = '' } = ctx.headers.files ?? {};
  const { body, encoding } = encodingFor(file, acceptEncoding);
  const headers: Record<string, string> = { ...security, 'cache-control': cacheControl, etag: file.etag };
  if (file.gzip || file.br) headers.vary = 'accept-encoding';
  if (encoding) headers['content-encoding'] = encoding;
  if (ifNoneMatch !== '' && ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === file.etag)) {
    ctx.reply.head(304, file.contentType, body.length, headers);
  } else if (head) ctx.reply.head(200, file.contentType, body.length, headers);
  else ctx.reply.send(200, body, file.contentType, headers);
}
