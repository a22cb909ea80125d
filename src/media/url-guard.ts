import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { isLoopbackAddress, isPublicAddress } from './public-address.js';

export { isPublicAddress } from './public-address.js';

export interface GuardedFetchOptions {
  /** Body limit; the fetch fails beyond it (by Content-Length up front, or while reading). */
  readonly maxBytes: number;
  /** The whole exchange: DNS, redirects and body. */
  readonly timeoutMs: number;
  /** Tests only: permits loopback addresses (127.0.0.0/8, ::1) and plain http:// to them. */
  readonly allowLoopback?: boolean;
  readonly maxRedirects?: number;
  /** Aborting it rejects with its reason, as fetch does. */
  readonly signal?: AbortSignal;
  /**
   * Request headers (a vendor's credential for its own result URL): sent only to the first URL's
   * origin, never to a host a redirect leads to.
   */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface FetchedMedia {
  readonly bytes: Buffer;
  readonly contentType: string | undefined;
  readonly finalUrl: string;
}

export type UrlGuardReason = 'scheme' | 'address' | 'dns' | 'too_large' | 'timeout' | 'status' | 'redirects' | 'network' | 'url';

export class UrlGuardError extends Error {
  constructor(readonly reason: UrlGuardReason, message: string, readonly status?: number) {
    super(message);
    this.name = 'UrlGuardError';
  }
}

const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Fetches a URL a caller chose (or an upstream returned) without letting it reach anything but the
 * public internet: every hop is vetted (scheme, credentials, every resolved address) and the
 * connection is pinned to the vetted addresses, so a DNS answer that changes between the check and
 * the connect (rebinding) cannot redirect it.
 */
export async function fetchGuarded(url: string, options: GuardedFetchOptions): Promise<FetchedMedia> {
  return fetchGuardedWith(url, options, async (response, target, signal) => ({
    bytes: await readBody(response, options.maxBytes, signal), contentType: response.headers['content-type'], finalUrl: target.href,
  }));
}

/**
 * `fetchGuarded` handing the body to `consume` as it arrives, without holding it whole: the chunks
 * stop with a `too_large` UrlGuardError past `maxBytes`, and with the timeout's error when the whole
 * exchange (consuming included) takes longer than `timeoutMs`.
 */
export async function fetchGuardedStream<T>(url: string, options: GuardedFetchOptions, consume: (chunks: AsyncIterable<Buffer>) => Promise<T>): Promise<T> {
  return fetchGuardedWith(url, options, (response, _target, signal) => consume(bodyChunks(response, options.maxBytes, signal)));
}

async function fetchGuardedWith<T>(url: string, options: GuardedFetchOptions, consume: (response: IncomingMessage, target: URL, signal: AbortSignal) => Promise<T>): Promise<T> {
  const allowLoopback = options.allowLoopback ?? false;
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new UrlGuardError('timeout', `The fetch took longer than ${options.timeoutMs} ms.`)),
    options.timeoutMs,
  );
  const forwardAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) forwardAbort();
  options.signal?.addEventListener('abort', forwardAbort, { once: true });
  const signal = controller.signal;
  try {
    let target = parseUrl(url);
    const origin = target.origin;
    for (let redirects = 0; ; redirects++) {
      const addresses = await untilAborted(vet(target, allowLoopback), signal);
      const headers = options.headers !== undefined && target.origin === origin ? options.headers : undefined;
      const response = await request(target, addresses, signal, headers === undefined ? undefined : { method: 'GET', headers });
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECTS.has(status) && location) {
        response.destroy();
        if (redirects >= maxRedirects) throw new UrlGuardError('redirects', `More than ${maxRedirects} redirects.`);
        target = parseUrl(location, target);
        continue;
      }
      if (status < 200 || status > 299) {
        response.destroy();
        throw new UrlGuardError('status', `The server answered ${status}.`, status);
      }
      return await consume(response, target, signal);
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', forwardAbort);
  }
}

/**
 * The addresses a URL may be connected to (https, credentials-free, every resolved address public),
 * for a client that pins its connection to them (the upstream client's guarded connections).
 */
export async function vetAddresses(url: string | URL, allowLoopback = false): Promise<LookupAddress[]> {
  return vet(typeof url === 'string' ? parseUrl(url) : url, allowLoopback);
}

/** Checks that a URL may be called (https, every resolved address public) without calling it. */
export async function vetPublicUrl(url: string, allowLoopback = false): Promise<void> {
  await vet(parseUrl(url), allowLoopback);
}

export interface GuardedPostOptions {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  /** DNS, connect, sending the body and the answer's status line and headers. */
  readonly timeoutMs: number;
  /** Tests only: as in GuardedFetchOptions. */
  readonly allowLoopback?: boolean;
}

/**
 * POSTs to a URL a caller chose (a task's `callback_url`), vetted and pinned like `fetchGuarded`;
 * redirects are not followed (a 3xx is the answer). Resolves with the status; the answer's body is
 * discarded. Rejects with UrlGuardError when the URL may not be called or the exchange fails.
 */
export async function postGuarded(url: string, options: GuardedPostOptions): Promise<{ status: number }> {
  return sendPinned(url, { method: 'POST', headers: options.headers, body: options.body }, options, async (response) => {
    // The status is the whole answer. Closing (not draining) the unpooled socket keeps a receiver
    // that streams an endless body from holding it open once the timeout is cleared.
    response.destroy();
    return { status: response.statusCode ?? 0 };
  });
}

export interface GuardedExchangeOptions {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The answer's body limit (a `too_large` UrlGuardError past it). */
  readonly maxBytes: number;
  /** The whole exchange: DNS, connect, sending and the answer's body. */
  readonly timeoutMs: number;
  /** Tests only: as in GuardedFetchOptions. */
  readonly allowLoopback?: boolean;
}

/**
 * One API call to an address the operator did not write (a Vertex AI endpoint derived from its
 * region), vetted and pinned like `fetchGuarded`; redirects are not followed. Any status is an
 * answer, with its body (bounded). Rejects with UrlGuardError when the URL may not be called or the
 * exchange fails.
 */
export async function exchangeGuarded(url: string, options: GuardedExchangeOptions): Promise<{ status: number; body: Buffer }> {
  return sendPinned(url, { method: options.method, headers: options.headers, body: options.body }, options, async (response, signal) => ({
    status: response.statusCode ?? 0, body: await readBody(response, options.maxBytes, signal),
  }));
}

/** Sends one request to `url`, vetted and pinned, and hands its answer to `use`, all within `timeoutMs`. */
async function sendPinned<T>(url: string, send: OutgoingRequest, options: { readonly timeoutMs: number; readonly allowLoopback?: boolean },
  use: (response: IncomingMessage, signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new UrlGuardError('timeout', `No answer within ${options.timeoutMs} ms.`)), options.timeoutMs);
  try {
    const target = parseUrl(url);
    const addresses = await untilAborted(vet(target, options.allowLoopback ?? false), controller.signal);
    return await use(await request(target, addresses, controller.signal, send), controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new UrlGuardError('url', 'Not a valid URL.');
  }
}

/**
 * The addresses a URL may be fetched from, all checked. The WHATWG parser has already turned
 * decimal, octal and hex IPv4 forms (`https://2130706433/`) into dotted quads.
 */
async function vet(target: URL, allowLoopback: boolean): Promise<LookupAddress[]> {
  const plainHttp = target.protocol === 'http:' && allowLoopback;
  if (target.protocol !== 'https:' && !plainHttp) throw new UrlGuardError('scheme', `The scheme ${target.protocol} is not allowed; use https.`);
  if (target.username || target.password) throw new UrlGuardError('url', 'Credentials in the URL are not allowed.');
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  const family = isIP(host);
  const addresses = family ? [{ address: host, family }] : await resolve(host);
  for (const { address } of addresses) {
    if (!isPublicAddress(address, allowLoopback)) throw new UrlGuardError('address', `The host ${host} is not a public address.`);
    if (plainHttp && !isLoopbackAddress(address)) {
      throw new UrlGuardError('scheme', 'Plain http is allowed only to loopback (tests).');
    }
  }
  return addresses;
}

async function resolve(host: string): Promise<LookupAddress[]> {
  try {
    const addresses = await dnsLookup(host, { all: true, verbatim: true });
    if (addresses.length > 0) return addresses;
  } catch {
    // Reported below: the name does not resolve.
  }
  throw new UrlGuardError('dns', `The host ${host} does not resolve.`);
}

/** A `lookup` for the socket that answers with the vetted addresses instead of asking DNS again. */
function pinnedLookup(addresses: readonly LookupAddress[]) {
  return (_host: string, options: LookupOptions, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    const first = addresses[0]!;
    if (options.all) callback(null, [...addresses]);
    else callback(null, first.address, first.family);
  };
}

interface OutgoingRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

function request(target: URL, addresses: readonly LookupAddress[], signal: AbortSignal, send: OutgoingRequest = { method: 'GET' }): Promise<IncomingMessage> {
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    // No agent: a pooled socket could outlive the vetting of the name it was opened for.
    const outgoing = client.request(target, {
      method: send.method,
      agent: false,
      lookup: pinnedLookup(addresses),
      headers: { 'accept-encoding': 'identity', accept: '*/*', ...send.headers },
      signal,
    });
    outgoing.on('response', resolve);
    outgoing.on('error', (error) => reject(signal.aborted ? signal.reason : networkError(error)));
    outgoing.end(send.body);
  });
}

/** The body's chunks as they arrive, refused past `maxBytes` (by Content-Length up front, or while reading). */
async function* bodyChunks(response: IncomingMessage, maxBytes: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  const tooLarge = () => new UrlGuardError('too_large', `The body exceeds ${maxBytes} bytes.`);
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  let total = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > maxBytes) throw tooLarge();
      yield chunk;
    }
  } catch (error) {
    response.destroy();
    if (error instanceof UrlGuardError) throw error;
    throw signal.aborted ? signal.reason : networkError(error);
  } finally {
    response.destroy();
  }
  // An abort that lands as the body ends must not pass a possibly cut body off as whole.
  if (signal.aborted) throw signal.reason;
}

async function readBody(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of bodyChunks(response, maxBytes, signal)) {
    chunks.push(chunk);
    total += chunk.length;
  }
  return Buffer.concat(chunks, total);
}

function networkError(error: unknown): UrlGuardError {
  return new UrlGuardError('network', `The fetch failed: ${error instanceof Error ? error.message : String(error)}`);
}

/** Stops waiting for work that cannot itself be cancelled (a DNS lookup) once the signal fires. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
