import { randomUUID } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';
import { ApiError, anthropicErrorBody, badRequest, internalError, notFound, redisUnavailable } from './errors.js';
import { isRedisUnreachable } from '../store/redis-connect.js';
import type { AuthenticatedKey } from '../auth/authenticator.js';
import { decodeQueryComponent, hasControlCharacter, wellFormedPath } from './schemas/text.js';
import { Reply } from './reply.js';
import { ClientGone, readBody } from './body.js';
import { IpRanges, clientAddress } from '../auth/ip-ranges.js';
import { MANAGEMENT_PREFIX, ROUTE_CREDENTIALS, admitCredential, routeName, type CredentialKind } from '../auth/credential-roles.js';
import { bearerToken } from '../auth/authenticator.js';
import type { RouteWindow } from '../admission/request-windows.js';
import { tracer, withSpan, type Span } from '../tracing/tracing.js';
import { endServerSpan, errorTypeOf, startServerSpan } from '../tracing/call-spans.js';

export interface RequestHeaders {
  readonly authorization: string;
  readonly contentType: string;
  readonly userAgent: string;
  /** `Range` (the media host answers one byte range). */
  readonly range?: string;
  /** `Idempotency-Key` ('' when absent; src/routing/idempotency.ts). */
  readonly idempotencyKey?: string;
  /** On routes of Anthropic's API (RouteOptions.anthropic): `anthropic-version` and `anthropic-beta` ('' when absent). */
  readonly anthropic?: { readonly version: string; readonly beta: string };
  /** On a route with RouteOptions.signatureHeader: that header ('' when absent). */
  readonly signature?: string;
  /** On a route with RouteOptions.browser: what a browser sends ('' when absent). */
  readonly browser?: { readonly cookie: string; readonly origin: string; readonly secFetchSite: string };
  /** On a route with RouteOptions.files: what a static file's answer depends on ('' when absent). */
  readonly files?: { readonly acceptEncoding: string; readonly ifNoneMatch: string };
}

/** Plain data about one request, captured synchronously from uWS (its request object dies after the handler returns). */
export interface RequestContext {
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly params: readonly string[];
  readonly headers: RequestHeaders;
  /** The client's address: the socket's peer, or what a trusted proxy says in `X-Forwarded-For`. */
  readonly clientAddress: string;
  /**
   * The request's id (UUID), its answer's `x-request-id`, errors included: the id of its request log,
   * its usage transaction or its task when it is a logged call.
   */
  readonly requestId: string;
  readonly reply: Reply;
  readonly startedAt: bigint;
  /** The body, read with the size limit; rejects with 413 or ClientGone. */
  body(): Promise<Buffer>;
  /** How the route counts a request made with an API key in the key's windows (see RouteWindow). */
  readonly window: RouteWindow;
  /** On a route whose admission counts the request: the key it authenticated with, until admission has counted it. */
  windowKey?: AuthenticatedKey;
  /** The request's SERVER span, while tracing is on (src/tracing): a handler adds what it learns to it. */
  readonly span?: Span;
}

export type Handler = (ctx: RequestContext) => Promise<void> | void;

export interface RouteOptions {
  /** This route's body limit instead of the router's. */
  readonly maxBodyBytes?: number;
  /**
   * The handler admits the request (Admission), which counts it in its key's default window, and
   * clears `windowKey` once it has. Other routes count requests made with an API key as they arrive.
   */
  readonly admitted?: boolean;
  /**
   * A route of Anthropic's API: its key may come in `x-api-key` (taken when there is no
   * `Authorization`), and `anthropic-version` and `anthropic-beta` are read (RequestHeaders.anthropic).
   */
  readonly anthropic?: boolean;
  /** A webhook's signature header (e.g. `stripe-signature`), read into RequestHeaders.signature. */
  readonly signatureHeader?: string;
  /** A route browsers call with cookies (sign-in): `Cookie`, `Origin` and `Sec-Fetch-Site` are read (RequestHeaders.browser). */
  readonly browser?: boolean;
  /** A route of static files (the console): `Accept-Encoding` and `If-None-Match` are read (RequestHeaders.files). */
  readonly files?: boolean;
}

export interface RouterOptions {
  readonly maxBodyBytes: number;
  readonly trustedProxies: IpRanges;
  /** Requests in progress; shutdown waits for them. */
  readonly inflight: { count: number };
  readonly onFinished: (ctx: RequestContext, status: number) => void;
  readonly onUnexpectedError: (ctx: RequestContext, error: unknown) => void;
  /**
   * A request of an admission route, authenticated with an API key, answered without admission
   * counting it (refused before it: a malformed body, an unknown model, a 409 for its Idempotency-Key;
   * or a replayed answer): it counts in the key's default window now.
   */
  readonly onAnsweredWithoutAdmission?: (key: AuthenticatedKey) => void;
}

/**
 * Whether an answer given while `windowKey` is set is counted afterwards. Every answer is (a success
 * too: a replayed Idempotency-Key), except those admission gave and counted itself (402; 400
 * `request_too_large`) or that are not a request's to count: a window's own refusal (429), Redis
 * out of reach (503 `admission_unavailable`), and the answers of the caller's own upstream
 * credentials, tried after admission counted the request (`upstream_*`, `byok_*`, 401 `key_revoked`).
 * A request that ended without an answer (the client left, an unexpected error) is not counted.
 */
function countedAfterwards(failure: unknown): boolean {
  if (failure === undefined) return true;
  if (!(failure instanceof ApiError)) return false;
  const { status, code } = failure;
  return status !== 429 && status !== 402 && code !== 'request_too_large' && code !== 'admission_unavailable' && code !== 'key_revoked'
    && !code.startsWith('upstream_') && !code.startsWith('byok_');
}

const EMPTY_BODY = Promise.resolve(Buffer.alloc(0));
const decoder = new TextDecoder();

/** A path parameter, percent-decoded; malformed escapes stay as sent (a handler then finds nothing by them). */
function decodeParameter(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Registers handlers on a uWS app with abort handling, body limits and one error envelope for all. */
export class Router {
  constructor(private readonly app: TemplatedApp, private readonly options: RouterOptions) {}

  get(pattern: string, handler: Handler, options?: RouteOptions): this { return this.add('get', pattern, handler, options); }
  head(pattern: string, handler: Handler, options?: RouteOptions): this { return this.add('head', pattern, handler, options); }
  post(pattern: string, handler: Handler, options?: RouteOptions): this { return this.add('post', pattern, handler, options); }
  put(pattern: string, handler: Handler): this { return this.add('put', pattern, handler); }
  del(pattern: string, handler: Handler): this { return this.add('del', pattern, handler); }
  /** Fallback for every method and path not registered. */
  any(pattern: string, handler: Handler): this { return this.add('any', pattern, handler); }

  private add(method: 'get' | 'head' | 'post' | 'put' | 'del' | 'any', pattern: string, handler: Handler, options: RouteOptions = {}): this {
    const credentials = credentialsOf(method, pattern);
    const window: RouteWindow | undefined = options.admitted ? 'admission' : method === 'any' ? undefined : method === 'get' || method === 'head' ? 'reads' : 'default';
    const maxBodyBytes = options.maxBodyBytes ?? this.options.maxBodyBytes;
    const paramCount = (pattern.match(/:/g) ?? []).length;
    const withBody = method === 'post' || method === 'put' || method === 'any';
    const anthropic = options.anthropic === true;
    this.app[method](pattern, (res: HttpResponse, req: HttpRequest) => {
      const reply = new Reply(res);
      if (anthropic) reply.errorBody = anthropicErrorBody;
      const params: string[] = [];
      for (let i = 0; i < paramCount; i++) params.push(decodeParameter(req.getParameter(i)));
      const declared = req.getHeader('content-length');
      const methodName = req.getMethod();
      const body = withBody && methodName !== 'get' && methodName !== 'head' && methodName !== 'delete'
        ? readBody(res, reply, maxBodyBytes, declared ? Number(declared) : undefined)
        : EMPTY_BODY;
      // A catch-all route takes every method: a read or a write by the request's own.
      const counted = window ?? (methodName === 'get' || methodName === 'head' ? 'reads' : 'default');
      const ctx = new Context(pattern, methodName, req, res, reply, params, body, this.options.trustedProxies, counted, anthropic, options.signatureHeader, options.browser === true, options.files === true);
      // Requests of the API (those with a request id) get a span while tracing is on; its parent is
      // the caller's `traceparent`, read now (uWS's request object dies when this function returns).
      if (tracer === undefined || reply.requestId === undefined) this.run(handler, ctx, credentials);
      else {
        const span = ctx.span = startServerSpan(methodName, pattern, reply.requestId, req.getHeader('traceparent'));
        withSpan(span, () => this.run(handler, ctx, credentials));
      }
    });
    return this;
  }

  private async run(handler: Handler, ctx: RequestContext, credentials: readonly CredentialKind[] | undefined): Promise<void> {
    this.options.inflight.count++;
    let failure: unknown;
    try {
      // A path whose percent-encoding is not UTF-8, or that decodes to a control character (U+0000),
      // names nothing: no id, media name or model id holds one (and Postgres refuses U+0000 in a lookup).
      if (!wellFormedPath(ctx.path)) throw notFound(`Nothing exists at this path: its percent-encoding is not UTF-8 or it holds a control character.`);
      // Before the handler and before any lookup: a credential of a kind the route refuses goes no further.
      if (credentials) admitCredential(`${ctx.method.toUpperCase()} ${ctx.route}`, credentials, bearerToken(ctx.headers.authorization));
      await handler(ctx);
    } catch (error) {
      failure = error;
      if (error instanceof ApiError) ctx.reply.error(error);
      else if (isRedisUnreachable(error)) ctx.reply.error(redisUnavailable());
      else if (!(error instanceof ClientGone)) {
        this.options.onUnexpectedError(ctx, error);
        ctx.reply.error(internalError());
      }
    }
    if (ctx.reply.open) {
      // A handler that forgot to answer must not leave the client hanging.
      this.options.onUnexpectedError(ctx, new Error('handler finished without answering'));
      ctx.reply.error(internalError());
    }
    // Unset on an admitted call: nothing more to do on its path.
    if (ctx.windowKey !== undefined && countedAfterwards(failure)) this.options.onAnsweredWithoutAdmission?.(ctx.windowKey);
    this.options.inflight.count--;
    const status = ctx.reply.aborted && !ctx.reply.finished ? 499 : ctx.reply.status;
    this.options.onFinished(ctx, status);
    if (ctx.span) endServerSpan(ctx.span, status, failure === undefined ? undefined : failure instanceof ClientGone ? 'client_closed' : errorTypeOf(failure));
  }
}

/**
 * The credential kinds a route accepts: its ROUTE_CREDENTIALS entry for a management route (one
 * missing there cannot be registered), undefined for the rest (inference routes take regular keys
 * only, checked by the authenticator; health and media need none).
 */
export function credentialsOf(method: string, pattern: string): readonly CredentialKind[] | undefined {
  if (!pattern.startsWith(MANAGEMENT_PREFIX)) return undefined;
  const allowed = ROUTE_CREDENTIALS.get(routeName(method, pattern));
  if (!allowed) throw new Error(`${routeName(method, pattern)} has no entry in ROUTE_CREDENTIALS (src/auth/credential-roles.ts): say which credentials it takes`);
  return allowed;
}

/** A request's context: a class, not a literal with a getter, since one is made per request on the hot path. */
class Context implements RequestContext {
  readonly path: string;
  readonly query: string;
  readonly headers: RequestHeaders;
  readonly startedAt = process.hrtime.bigint();
  windowKey: AuthenticatedKey | undefined = undefined;
  span: Span | undefined = undefined;
  private readonly forwardedFor: string;
  private address: string | undefined;

  constructor(
    readonly route: string, readonly method: string, req: HttpRequest, private readonly res: HttpResponse, readonly reply: Reply,
    readonly params: readonly string[], private readonly bodyPromise: Promise<Buffer>, private readonly trustedProxies: IpRanges,
    readonly window: RouteWindow, anthropic: boolean, signatureHeader: string | undefined, browser: boolean, files: boolean,
  ) {
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
    this.headers = anthropic ? anthropicHeaders(req) : { authorization: req.getHeader('authorization'), contentType: req.getHeader('content-type'), userAgent: req.getHeader('user-agent'), range: req.getHeader('range'), idempotencyKey: req.getHeader('idempotency-key') };
    if (signatureHeader !== undefined) this.headers = { ...this.headers, signature: req.getHeader(signatureHeader) };
    if (browser) this.headers = { ...this.headers, browser: { cookie: req.getHeader('cookie'), origin: req.getHeader('origin'), secFetchSite: req.getHeader('sec-fetch-site') } };
    if (files) this.headers = { ...this.headers, files: { acceptEncoding: req.getHeader('accept-encoding'), ifNoneMatch: req.getHeader('if-none-match') } };
    this.forwardedFor = req.getHeader('x-forwarded-for');
    if (this.path.startsWith('/v1/') || this.path.startsWith('/api/v1/')) reply.requestId = randomUUID();
  }

  get requestId(): string {
    return (this.reply.requestId ??= randomUUID());
  }

  // Read when first asked (most requests never are): the peer address is a system call. uWS
  // discards the response once it is aborted or ended; by then nobody needs the address.
  get clientAddress(): string {
    this.address ??= this.reply.open ? clientAddress(decoder.decode(this.res.getRemoteAddressAsText()), this.forwardedFor, this.trustedProxies) : '';
    return this.address;
  }

  body(): Promise<Buffer> {
    return this.bodyPromise;
  }
}

/** A request's headers on a route of Anthropic's API: `x-api-key` stands for a Bearer token when there is no `Authorization`. */
function anthropicHeaders(req: HttpRequest): RequestHeaders {
  const authorization = req.getHeader('authorization');
  const apiKey = authorization === '' ? req.getHeader('x-api-key') : '';
  return {
    authorization: apiKey === '' ? authorization : `Bearer ${apiKey}`, contentType: req.getHeader('content-type'), userAgent: req.getHeader('user-agent'),
    idempotencyKey: req.getHeader('idempotency-key'), anthropic: { version: req.getHeader('anthropic-version'), beta: req.getHeader('anthropic-beta') },
  };
}

/**
 * Parses a query string into repeated values per name, decoded as `URLSearchParams` does, except that
 * a name or value whose percent-encoding is not UTF-8, or that holds a control character (U+0000, a
 * line break), is a 400 naming it: no query parameter of this API takes one.
 */
export function parseQuery(query: string): Map<string, string[]> {
  const result = new Map<string, string[]>();
  if (query === '') return result;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const rawName = equals === -1 ? pair : pair.slice(0, equals);
    const name = decodeQueryComponent(rawName);
    if (name === undefined || hasControlCharacter(name)) {
      throw badRequest(`Invalid query string: the parameter name '${rawName}' is not UTF-8 text without control characters.`, rawName);
    }
    const value = equals === -1 ? '' : decodeQueryComponent(pair.slice(equals + 1));
    if (value === undefined || hasControlCharacter(value)) {
      throw badRequest(`Invalid value for '${name}': the query value must be UTF-8 text (percent-encoded) without control characters.`, name);
    }
    const list = result.get(name);
    if (list) list.push(value);
    else result.set(name, [value]);
  }
  return result;
}
