import net from 'node:net';
import tls from 'node:tls';
import { vetAddresses } from '../media/url-guard.js';
import type { Config } from '../config.js';
import { withinTime } from '../within-time.js';

/** An upstream URL split once, so the hot path parses no URLs. */
export interface UpstreamEndpoint {
  readonly origin: string;
  readonly path: string;
  /** An address a user chose (BYOK): each connection is vetted by the URL guard and pinned to the vetted address. */
  readonly guarded: boolean;
}

export function endpointOf(baseUrl: string, path: string, guarded = false): UpstreamEndpoint {
  const url = new URL(baseUrl.replace(/\/+$/, '') + path);
  return Object.freeze({ origin: url.origin, path: url.pathname + url.search, guarded });
}

/** Parsed upstream URLs: a vendor's few endpoints are parsed once, not per call. */
const endpoints = new Map<string, UpstreamEndpoint>();
export function endpointFor(url: string, guarded = false): UpstreamEndpoint {
  const cacheKey = guarded ? `guarded ${url}` : url;
  let endpoint = endpoints.get(cacheKey);
  if (!endpoint) {
    if (endpoints.size >= 1000) endpoints.clear();
    endpoint = endpointOf(url, '', guarded);
    endpoints.set(cacheKey, endpoint);
  }
  return endpoint;
}

/** Receives a response body as it arrives (chunked framing already removed). */
export interface BodyConsumer {
  data(chunk: Buffer): void;
  end(): void;
  error(error: Error): void;
}

export interface UpstreamResponse {
  readonly status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  /** The whole body as UTF-8 text. */
  text(): Promise<string>;
  /** The whole body, when it has all arrived already and nothing consumed it (no promise turn); else undefined. */
  receivedText(): string | undefined;
  /** Delivers the body to `consumer` from now on (what arrived before is delivered first). */
  consume(consumer: BodyConsumer): void;
  /** Back-pressure: stop reading from the upstream socket until `resume`. */
  pause(): void;
  resume(): void;
  /** It came from a guarded endpoint (an address a user chose): only a sanitised summary of it may reach the caller. */
  readonly guarded?: boolean;
}

/** What the client needs of an abort signal: an AbortSignal, or the lighter UpstreamAbort. */
export interface AbortLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * An abort for one request's upstream calls, made one after another: one listener at a time and no
 * EventTarget (an AbortController costs microseconds, on every call of the hot path).
 */
export class UpstreamAbort implements AbortLike {
  aborted = false;
  private listener: (() => void) | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    this.listener = listener;
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    if (this.listener === listener) this.listener = undefined;
  }
}

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(message: string, readonly reason: 'connect' | 'timeout' | 'aborted' | 'protocol' | 'closed' | 'too_large' | 'refused') {
    super(message);
  }
}

export interface UpstreamClientOptions {
  /** Headers timeout and body idle timeout. */
  readonly timeoutMs: number;
  readonly maxConnectionsPerOrigin?: number;
  /** Idle keep-alive connections are closed after this; below the usual 5 s of servers, so we close first. */
  readonly idleMs?: number;
  /** Extra trusted certificates for HTTPS upstreams (tests use a self-signed one). */
  readonly ca?: string | Buffer;
  /** A new connection (for a guarded endpoint: resolving and vetting its host too) must be up within this. */
  readonly connectTimeoutMs?: number;
  /** The longest one exchange may last, from sending the request to the body's last byte (a stream's too). */
  readonly deadlineMs?: number;
  /** An error answer's body is read up to this many bytes, then the connection is closed. */
  readonly maxErrorBodyBytes?: number;
  /** A successful answer read whole (`text`) may be at most this large; beyond, it fails with reason `too_large`. */
  readonly maxBodyBytes?: number;
  /** Guarded endpoints may resolve to loopback (tests only: FETCH_ALLOW_LOOPBACK). */
  readonly allowLoopback?: boolean;
  /** Origins whose pools are kept; beyond, the pools with no exchange in progress are closed, oldest first. */
  readonly maxOrigins?: number;
}

/** The client's limits with their defaults filled in (one object per client, read by its pools). */
interface Limits {
  readonly timeoutMs: number;
  readonly maxConnectionsPerOrigin: number;
  readonly idleMs: number;
  readonly connectTimeoutMs: number;
  readonly deadlineMs: number;
  readonly maxErrorBodyBytes: number;
  readonly maxBodyBytes: number;
  readonly allowLoopback: boolean;
  readonly maxOrigins: number;
  readonly ca: string | Buffer | undefined;
}

export const UPSTREAM_DEFAULTS = Object.freeze({
  connectTimeoutMs: 10_000,
  deadlineMs: 30 * 60_000,
  maxErrorBodyBytes: 64 * 1024,
  maxBodyBytes: 16 * 1024 * 1024,
  maxOrigins: 1000,
});

/** The client's options from the settings (UPSTREAM_*, and FETCH_ALLOW_LOOPBACK for guarded endpoints). */
export function upstreamOptionsOf(config: Config): UpstreamClientOptions {
  return {
    timeoutMs: config.upstreamTimeoutMs,
    maxConnectionsPerOrigin: config.upstreamMaxConnections,
    connectTimeoutMs: config.upstreamConnectTimeoutMs,
    deadlineMs: config.upstreamDeadlineMs,
    maxErrorBodyBytes: config.upstreamMaxErrorBodyBytes,
    maxBodyBytes: config.upstreamMaxBodyBytes,
    allowLoopback: config.fetch.allowLoopback,
  };
}

function limitsOf(options: UpstreamClientOptions): Limits {
  return Object.freeze({
    timeoutMs: options.timeoutMs,
    maxConnectionsPerOrigin: options.maxConnectionsPerOrigin ?? 256,
    idleMs: options.idleMs ?? 4000,
    connectTimeoutMs: options.connectTimeoutMs ?? UPSTREAM_DEFAULTS.connectTimeoutMs,
    deadlineMs: options.deadlineMs ?? UPSTREAM_DEFAULTS.deadlineMs,
    maxErrorBodyBytes: options.maxErrorBodyBytes ?? UPSTREAM_DEFAULTS.maxErrorBodyBytes,
    maxBodyBytes: options.maxBodyBytes ?? UPSTREAM_DEFAULTS.maxBodyBytes,
    allowLoopback: options.allowLoopback ?? false,
    maxOrigins: options.maxOrigins ?? UPSTREAM_DEFAULTS.maxOrigins,
    ca: options.ca,
  });
}

const HEAD_END = Buffer.from('\r\n\r\n');
const HEADER_VALUE_OK = /^[^\r\n]*$/;

type Framing = 'length' | 'chunked' | 'close';
type ChunkState = 'size' | 'data' | 'data-crlf' | 'trailers';

/**
 * A lean HTTP/1.1 client for the upstream leg: keep-alive pools per origin, one request per
 * connection at a time, the request written in one syscall, the response head parsed once and the
 * body handed on as it arrives (no streams, no per-request objects beyond the exchange). It costs
 * about a third of undici's CPU per call on this path (see README, Benchmarks).
 */
export class UpstreamClient {
  /** Pools by origin (a guarded endpoint's under a key of its own); a pool leaves once it has no connection. */
  private readonly origins = new Map<string, OriginPool>();
  /** A request head as serialised for a headers object a caller passes again and again (a platform target's). */
  private readonly heads = new WeakMap<Readonly<Record<string, string>>, { method: string; endpoint: UpstreamEndpoint; text: string }>();
  private closed = false;
  private readonly limits: Limits;

  constructor(options: UpstreamClientOptions) {
    this.limits = limitsOf(options);
  }

  /** Pools kept now (tests: pools of origins no longer called are freed). */
  get poolCount(): number {
    return this.origins.size;
  }

  /** `traceparent`: the W3C trace context the request carries (only while tracing is on: src/tracing). */
  post(endpoint: UpstreamEndpoint, headers: Readonly<Record<string, string>>, body: string, signal?: AbortLike, traceparent?: string): Promise<UpstreamResponse> {
    return this.request('POST', endpoint, headers, body, signal, traceparent);
  }

  /** A GET (a submit-and-poll vendor's status call). */
  get(endpoint: UpstreamEndpoint, headers: Readonly<Record<string, string>>, signal?: AbortLike, traceparent?: string): Promise<UpstreamResponse> {
    return this.request('GET', endpoint, headers, undefined, signal, traceparent);
  }

  private request(method: 'GET' | 'POST', endpoint: UpstreamEndpoint, headers: Readonly<Record<string, string>>, body: string | undefined, signal?: AbortLike, traceparent?: string): Promise<UpstreamResponse> {
    if (this.closed) return Promise.reject(new UpstreamError('the upstream client is closed', 'closed'));
    const pool = this.origins.get(endpoint.guarded ? `guarded ${endpoint.origin}` : endpoint.origin) ?? this.addPool(endpoint);
    const cached = this.heads.get(headers);
    let head: string;
    if (cached && cached.method === method && cached.endpoint === endpoint) {
      head = cached.text;
    } else {
      head = `${method} ${endpoint.path} HTTP/1.1\r\nhost: ${pool.hostHeader}\r\n`;
      for (const name in headers) {
        const value = headers[name]!;
        if (!HEADER_VALUE_OK.test(value)) return Promise.reject(new UpstreamError(`header ${name} holds a line break`, 'protocol'));
        head += `${name}: ${value}\r\n`;
      }
      this.heads.set(headers, { method, endpoint, text: head });
    }
    // Made by src/tracing (hex digits and dashes): it needs no check. Never part of the cached head.
    if (traceparent !== undefined) head += `traceparent: ${traceparent}\r\n`;
    if (body === undefined) return pool.exchange(`${head}\r\n`, signal, true);
    return pool.exchange(`${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, signal, false);
  }

  /**
   * A pool for a new origin. Origins come from user input (BYOK base URLs), so their number is
   * bounded: past `maxOrigins`, pools with no exchange in progress are closed (and so leave), oldest first.
   */
  private addPool(endpoint: UpstreamEndpoint): OriginPool {
    if (this.origins.size >= this.limits.maxOrigins) {
      for (const pool of [...this.origins.values()]) {
        if (this.origins.size < this.limits.maxOrigins) break;
        if (!pool.busy) pool.close();
      }
    }
    const key = endpoint.guarded ? `guarded ${endpoint.origin}` : endpoint.origin;
    const pool = new OriginPool(new URL(endpoint.origin), endpoint.guarded, this.limits, () => {
      if (this.origins.get(key) === pool) this.origins.delete(key);
    });
    this.origins.set(key, pool);
    return pool;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pool of [...this.origins.values()]) pool.close();
    this.origins.clear();
  }
}

class OriginPool {
  readonly hostHeader: string;
  private readonly host: string;
  private readonly port: number;
  private readonly secure: boolean;
  private readonly idle: Connection[] = [];
  private readonly waiting: (() => void)[] = [];
  /** Connections carrying an exchange now (the sweeper holds each to the deadline). */
  private readonly active = new Set<Connection>();
  private open = 0;
  /**
   * Closes connections idle for `idleMs` and ends exchanges past the deadline: one timer per origin,
   * running only while the pool has connections, instead of timers per socket or per call.
   */
  private sweeper: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;

  constructor(private readonly url: URL, readonly guarded: boolean, readonly limits: Limits, private readonly emptied: () => void) {
    this.secure = url.protocol === 'https:';
    this.host = url.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(url.port || (this.secure ? 443 : 80));
    this.hostHeader = url.host;
    this.sweepMs = Math.min(1000, Math.max(50, Math.min(limits.idleMs, limits.deadlineMs) / 4));
  }

  /** Some connection is opening or carrying an exchange. */
  get busy(): boolean {
    return this.open > this.idle.length;
  }

  /**
   * The response to `request`, settled by the exchange itself (no promise layered on the connection's).
   * `idempotent` (a GET) may be sent again on a fresh connection when a kept-alive one turns out dead.
   */
  exchange(request: string, signal: AbortLike | undefined, idempotent: boolean): Promise<UpstreamResponse> {
    return new Promise<UpstreamResponse>((resolve, reject) => {
      if (signal?.aborted) return reject(new UpstreamError('aborted', 'aborted'));
      const sendOn = (connection: Connection) => connection.send(request, signal, idempotent, resolve, (error) => {
        // A kept-alive connection found dead before the request was written (or, for a GET, before
        // any answer): the upstream never got it, try once more.
        if (error instanceof StaleConnection) this.acquire().then((next) => next.send(request, signal, idempotent, resolve, reject)).catch(reject);
        else reject(error);
      });
      const idle = this.takeIdle();
      if (idle) sendOn(idle);
      else this.acquire().then(sendOn).catch(reject);
    });
  }

  /** A kept-alive connection still fit for use, if there is one (the newest first); stale ones are closed. */
  private takeIdle(): Connection | undefined {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (connection.usable && Date.now() - connection.idleSinceMs < this.limits.idleMs) return connection.take();
      connection.destroy();
    }
    return undefined;
  }

  private async acquire(): Promise<Connection> {
    for (;;) {
      const connection = this.takeIdle();
      if (connection) return connection;
      if (this.open < this.limits.maxConnectionsPerOrigin) {
        if (this.open++ === 0) this.startSweeper();
        return this.guarded ? this.connectGuarded() : this.connect(this.host);
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /**
   * A connection to an address a user chose: the host is resolved and every address vetted by the
   * URL guard at each connect, and the socket goes to the vetted address (no second lookup a DNS
   * rebinding could answer differently); TLS still checks the certificate against the host name.
   */
  private async connectGuarded(): Promise<Connection> {
    const startedMs = Date.now();
    let address: string;
    try {
      const addresses = await withinTime(vetAddresses(this.url, this.limits.allowLoopback), this.limits.connectTimeoutMs, () => new Error(`no answer within ${this.limits.connectTimeoutMs} ms`));
      address = addresses[0]!.address;
    } catch (error) {
      this.released();
      throw new UpstreamError(`the upstream address may not be called: ${(error as Error).message}`, 'refused');
    }
    // One budget for vetting and connecting: the socket gets what the vetting left (at least 1 ms:
    // a socket timeout of 0 would mean none at all).
    return this.connect(address, Math.max(1, this.limits.connectTimeoutMs - (Date.now() - startedMs)));
  }

  /** A new connection to `address`, which must be up (TLS included) within `connectTimeoutMs`. */
  private connect(address: string, connectTimeoutMs = this.limits.connectTimeoutMs): Connection {
    if (this.secure) {
      const socket = tls.connect({
        host: address, port: this.port, servername: net.isIP(this.host) ? undefined : this.host, ALPNProtocols: ['http/1.1'],
        ...(this.limits.ca ? { ca: this.limits.ca } : {}),
      });
      const connection = new Connection(socket, this, connectTimeoutMs);
      socket.on('data', (chunk: Buffer) => connection.receive(chunk));
      return connection;
    }
    // Plain sockets read into one buffer (`onread`): no readable-stream machinery per read. What is
    // read is copied out at once, in the callback, so every socket of the thread shares the buffer
    // (a buffer of its own would hold 16 KiB per open connection: 160 MiB for 10,000 open streams).
    let connection: Connection | undefined;
    const socket = net.connect({
      host: address,
      port: this.port,
      onread: {
        buffer: sharedReadBuffer(),
        callback: (bytes, buffer) => {
          connection?.receive(Buffer.from(buffer.subarray(0, bytes)));
          return true;
        },
      },
    });
    connection = new Connection(socket, this, connectTimeoutMs);
    return connection;
  }

  /** A connection began an exchange. */
  started(connection: Connection): void {
    this.active.add(connection);
  }

  /** A connection finished its exchange and may carry another. */
  release(connection: Connection): void {
    this.active.delete(connection);
    const next = this.waiting.shift();
    connection.idleSinceMs = Date.now();
    this.idle.push(connection);
    next?.();
  }

  /** A connection is gone (closed, broken, or not reusable). */
  forget(connection: Connection): void {
    this.active.delete(connection);
    const index = this.idle.indexOf(connection);
    if (index >= 0) this.idle.splice(index, 1);
    this.released();
  }

  /** A connection (or an attempt at one) is gone: its place goes to a waiting call, and an empty pool leaves. */
  private released(): void {
    this.open--;
    this.waiting.shift()?.();
    if (this.open === 0 && this.waiting.length === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      this.emptied();
    }
  }

  private startSweeper(): void {
    this.sweeper ??= setInterval(() => this.sweep(Date.now()), this.sweepMs);
    this.sweeper.unref();
  }

  private sweep(nowMs: number): void {
    // Idle connections sit oldest first (the newest is taken first).
    while (this.idle.length > 0 && nowMs - this.idle[0]!.idleSinceMs >= this.limits.idleMs) this.idle.shift()!.destroy();
    for (const connection of this.active) {
      if (nowMs - connection.sentAtMs >= this.limits.deadlineMs) connection.expire(this.limits.deadlineMs);
    }
  }

  /** Closes the idle connections; those carrying an exchange close when it ends. */
  close(): void {
    for (const connection of this.idle.splice(0)) connection.destroy();
  }
}

let readBuffer: Buffer | undefined;
/** The read buffer of this thread's plain sockets; a read is copied out before the next one can start. */
function sharedReadBuffer(): Buffer {
  return (readBuffer ??= Buffer.allocUnsafe(16 * 1024));
}

class StaleConnection extends Error {}

const ONCE = Object.freeze({ once: true });

/** One socket; carries one exchange at a time. */
class Connection {
  private exchange: Exchange | undefined;
  private reused = false;
  private gone = false;
  /** Fails the connection if it is not up in time; cleared once it is (or once it is gone). */
  private connectTimer: NodeJS.Timeout | undefined;

  /** When it last finished an exchange (the pool closes it after its idle time). */
  idleSinceMs = 0;
  /** When its current exchange was sent (the pool ends it past the deadline). */
  sentAtMs = 0;

  /** The abort signal of the current exchange, and its listener (one per connection, not one per call). */
  private signal: AbortLike | undefined;
  private readonly aborted = () => this.fail(new UpstreamError('aborted', 'aborted'));

  /** The write callback, one per connection: the request reached the socket, so the upstream may have it. */
  private readonly written = (error?: Error | null) => {
    if (!error && this.exchange) this.exchange.written = true;
  };

  /** `connectTimeoutMs`: what is left of the pool's connect budget once the host was resolved and vetted. */
  constructor(private readonly socket: net.Socket, private readonly pool: OriginPool, connectTimeoutMs: number) {
    const { timeoutMs } = pool.limits;
    socket.setNoDelay(true);
    // Until connected, a timer of its own: the socket's idle timeout lets a turn pass while a write is
    // in progress (the TLS handshake, the request queued behind it), which doubles a silent port's wait.
    const connecting = setTimeout(() => this.fail(new UpstreamError(`the upstream did not accept a connection within ${pool.limits.connectTimeoutMs} ms`, 'timeout')), connectTimeoutMs);
    this.connectTimer = connecting;
    // Then the idle timeout, set once: socket activity re-arms it, so it bounds the wait for the head
    // and each body gap; idle sockets it just closes.
    socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => {
      clearTimeout(connecting);
      this.connectTimer = undefined;
      socket.setTimeout(timeoutMs);
    });
    socket.on('timeout', () => this.fail(new UpstreamError(`the upstream sent nothing for ${timeoutMs} ms`, 'timeout')));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new UpstreamError('the upstream closed the connection', 'closed')));
  }

  receive(chunk: Buffer): void {
    this.exchange?.receive(chunk);
  }

  get usable(): boolean {
    return !this.gone && !this.socket.destroyed;
  }

  take(): Connection {
    this.reused = true;
    return this;
  }

  /** Writes `request`; its exchange calls `resolve` with the response head or `reject`. */
  send(request: string, signal: AbortLike | undefined, idempotent: boolean, resolve: (response: UpstreamResponse) => void, reject: (error: Error) => void): void {
    const exchange = new Exchange(this, resolve, reject, this.reused, idempotent, this.pool);
    this.exchange = exchange;
    this.sentAtMs = Date.now();
    this.pool.started(this);
    if (signal) {
      this.signal = signal;
      signal.addEventListener('abort', this.aborted, ONCE);
    }
    this.socket.write(request, this.written);
  }

  /** The exchange is over: its abort signal no longer concerns this connection. */
  detach(): void {
    if (!this.signal) return;
    this.signal.removeEventListener('abort', this.aborted);
    this.signal = undefined;
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** The exchange ended cleanly: keep the socket for the next one, or close it. */
  finished(keepAlive: boolean): void {
    this.exchange = undefined;
    if (keepAlive && this.usable) {
      this.socket.resume();
      this.pool.release(this);
    } else {
      this.destroy();
    }
  }

  /** The exchange outlived the deadline. */
  expire(deadlineMs: number): void {
    this.fail(new UpstreamError(`the upstream exchange took longer than ${deadlineMs} ms`, 'timeout'));
  }

  private fail(error: Error): void {
    const exchange = this.exchange;
    this.exchange = undefined;
    if (exchange) exchange.abort(error);
    this.destroy();
  }

  destroy(): void {
    if (this.gone) return;
    this.gone = true;
    clearTimeout(this.connectTimer);
    this.socket.destroy();
    this.pool.forget(this);
  }
}

/** One request's response: head parsing, body framing, delivery. */
class Exchange implements UpstreamResponse {
  status = 0;
  headers: Record<string, string> = {};
  private head: Buffer | undefined;
  private receivedAny = false;
  private framing: Framing = 'close';
  private remaining = 0;
  private chunkState: ChunkState = 'size';
  /** The body bytes of the read being de-chunked, as offsets (see dechunkInto). */
  private readonly pieces: number[] = [];
  private line = '';
  private early: Buffer[] = [];
  private earlyBytes = 0;
  private consumer: BodyConsumer | undefined;
  private done = false;
  private failure: Error | undefined;
  private responded = false;
  /** The request reached the socket: the upstream may have it (a POST is then never sent again). */
  written = false;

  constructor(
    private readonly connection: Connection,
    private readonly resolve: (response: UpstreamResponse) => void,
    private readonly reject: (error: Error) => void,
    private readonly reused: boolean,
    private readonly idempotent: boolean,
    private readonly pool: OriginPool,
  ) {}

  get guarded(): boolean {
    return this.pool.guarded;
  }

  /** The most of this answer's body read whole: a success's answer cap, an error's body cap. */
  private get bodyLimit(): number {
    return this.status >= 200 && this.status < 300 ? this.pool.limits.maxBodyBytes : this.pool.limits.maxErrorBodyBytes;
  }

  receive(chunk: Buffer): void {
    this.receivedAny = true;
    if (!this.responded) {
      const buffer = this.head ? Buffer.concat([this.head, chunk]) : chunk;
      const end = buffer.indexOf(HEAD_END);
      if (end < 0) {
        if (buffer.length > 64 * 1024) this.abortAndClose(new UpstreamError('the upstream response head is too large', 'protocol'));
        else this.head = buffer;
        return;
      }
      this.head = undefined;
      if (!this.parseHead(buffer.toString('latin1', 0, end))) return;
      const rest = buffer.subarray(end + 4);
      if (this.status >= 100 && this.status < 200) {
        // An interim response (100 Continue): the real head follows.
        this.status = 0;
        this.headers = {};
        if (rest.length > 0) this.receive(rest);
        return;
      }
      this.responded = true;
      this.resolve(this);
      if (rest.length > 0) this.body(rest);
      else if (this.framing === 'length' && this.remaining === 0) this.complete();
      return;
    }
    this.body(chunk);
  }

  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const statusLine = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!);
    if (!statusLine) {
      this.abortAndClose(new UpstreamError(`the upstream answered something that is not HTTP/1.1: ${JSON.stringify(lines[0]!.slice(0, 40))}`, 'protocol'));
      return false;
    }
    this.status = Number(statusLine[1]);
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      // Strict: a bare CR or LF (or a folded or nameless line) could smuggle headers into our own answer.
      if (colon <= 0 || line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9 || line.indexOf('\n') >= 0 || line.indexOf('\r') >= 0) return this.malformedHead();
      this.headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const transferEncoding = this.headers['transfer-encoding'];
    const contentLength = this.headers['content-length'];
    if (transferEncoding && /(^|,)\s*chunked\s*$/i.test(transferEncoding)) {
      this.framing = 'chunked';
    } else if (contentLength !== undefined) {
      if (!/^\d+$/.test(contentLength)) {
        this.abortAndClose(new UpstreamError(`the upstream sent a bad content-length: ${contentLength}`, 'protocol'));
        return false;
      }
      this.framing = 'length';
      this.remaining = Number(contentLength);
    } else {
      this.framing = this.status === 204 || this.status === 304 ? 'length' : 'close';
      this.remaining = 0;
    }
    return true;
  }

  private malformedHead(): false {
    this.abortAndClose(new UpstreamError('the upstream sent a malformed response head', 'protocol'));
    return false;
  }

  private body(chunk: Buffer): void {
    if (this.done) return;
    if (this.framing === 'close') return this.deliver(chunk);
    if (this.framing === 'length') {
      if (chunk.length >= this.remaining) {
        if (this.remaining > 0) this.deliver(chunk.subarray(0, this.remaining));
        this.remaining = 0;
        this.complete();
      } else {
        this.remaining -= chunk.length;
        this.deliver(chunk);
      }
      return;
    }
    this.dechunk(chunk);
  }

  /**
   * Chunked transfer coding, across arbitrary splits of the byte stream. What one read carries is
   * delivered as one piece, however many chunks framed it: a relay then writes once per read, not
   * once per upstream chunk (a vendor that flushes each token as its own chunk sends dozens per read).
   */
  private dechunk(chunk: Buffer): void {
    const pieces = this.pieces;
    pieces.length = 0;
    const ended = this.dechunkInto(chunk, pieces);
    if (pieces.length > 0) this.deliver(joinPieces(chunk, pieces));
    if (ended) this.complete();
  }

  /**
   * Appends the offsets of `chunk`'s body bytes to `pieces` (start and end of each, flat: numbers, not
   * views, as a stream of small chunks makes hundreds a second); true once the last chunk and the
   * trailers have arrived.
   */
  private dechunkInto(chunk: Buffer, pieces: number[]): boolean {
    let at = 0;
    while (at < chunk.length && !this.done) {
      switch (this.chunkState) {
        case 'size':
        case 'trailers': {
          const newline = chunk.indexOf(10, at);
          if (newline < 0) {
            this.line += chunk.toString('latin1', at);
            if (this.line.length > 4096) this.abortAndClose(new UpstreamError('the upstream sent an endless chunk header', 'protocol'));
            return false;
          }
          if (this.chunkState === 'size' && this.line === '') {
            const size = plainChunkSize(chunk, at, newline);
            if (size !== -1) {
              at = newline + 1;
              this.startChunk(size);
              continue;
            }
          }
          const line = (this.line + chunk.toString('latin1', at, newline)).replace(/\r$/, '');
          this.line = '';
          at = newline + 1;
          if (this.chunkState === 'trailers') {
            if (line === '') return true;
            continue;
          }
          const size = parseInt(line.split(';', 1)[0]!.trim(), 16);
          if (!Number.isFinite(size) || size < 0) {
            this.abortAndClose(new UpstreamError(`the upstream sent a bad chunk size: ${JSON.stringify(line.slice(0, 20))}`, 'protocol'));
            return false;
          }
          this.startChunk(size);
          continue;
        }
        case 'data': {
          const take = Math.min(this.remaining, chunk.length - at);
          if (take > 0) pieces.push(at, at + take);
          at += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            this.chunkState = 'data-crlf';
            this.remaining = 2;
          }
          continue;
        }
        case 'data-crlf': {
          const take = Math.min(this.remaining, chunk.length - at);
          at += take;
          this.remaining -= take;
          if (this.remaining === 0) this.chunkState = 'size';
          continue;
        }
      }
    }
    return false;
  }

  /** After a chunk's size line: its `size` bytes of data follow, or, for the last chunk (0), the trailers. */
  private startChunk(size: number): void {
    if (size === 0) this.chunkState = 'trailers';
    else {
      this.remaining = size;
      this.chunkState = 'data';
    }
  }

  private deliver(chunk: Buffer): void {
    if (this.done) return;
    if (this.consumer) {
      this.feed(this.consumer, chunk);
      return;
    }
    this.early.push(chunk);
    // Nobody reads yet: stop reading past what may be read whole, so a huge body is never held.
    if ((this.earlyBytes += chunk.length) > this.bodyLimit) this.connection.pause();
  }

  /** Hands a chunk to the consumer; false when the consumer could not read it (the exchange then failed). */
  private feed(consumer: BodyConsumer, chunk: Buffer): boolean {
    try {
      consumer.data(chunk);
      return true;
    } catch (error) {
      // A consumer that cannot read the body (a translator meeting an upstream error event) fails the
      // exchange; thrown inside a socket callback it would take the thread down.
      const failure = new UpstreamError(`the response body could not be read: ${(error as Error).message}`, 'protocol');
      if (this.done) {
        // The body had already ended (delivered late, from what arrived before `consume`).
        this.failure = failure;
        consumer.error(failure);
      } else {
        this.abortAndClose(failure);
      }
      return false;
    }
  }

  private complete(): void {
    if (this.done) return;
    this.done = true;
    this.connection.detach();
    const keepAlive = this.framing !== 'close' && !/\bclose\b/i.test(this.headers.connection ?? '');
    this.connection.finished(keepAlive);
    this.consumer?.end();
  }

  /** The connection failed or was aborted during this exchange. */
  abort(error: Error): void {
    if (this.done) return;
    if (this.responded && this.framing === 'close' && error instanceof UpstreamError && error.reason === 'closed') {
      // Without framing, the end of the connection is the end of the body.
      this.complete();
      return;
    }
    this.done = true;
    this.connection.detach();
    if (!this.responded) {
      this.reject(this.stale(error) ? new StaleConnection(error.message) : error instanceof UpstreamError ? error : new UpstreamError(error.message, 'connect'));
      return;
    }
    this.failure = error;
    this.consumer?.error(error);
  }

  /**
   * A kept-alive connection that died under this exchange, which may be sent again: only when the
   * upstream cannot have it (the request never reached the socket) or, for a GET, nothing was answered.
   * A written POST is never sent twice: the vendor may be running (and billing) it.
   */
  private stale(error: Error): boolean {
    if (!this.reused || this.receivedAny) return false;
    if (error instanceof UpstreamError && (error.reason === 'aborted' || error.reason === 'timeout')) return false;
    return !this.written || this.idempotent;
  }

  private abortAndClose(error: UpstreamError): void {
    this.abort(error);
    this.connection.destroy();
  }

  consume(consumer: BodyConsumer): void {
    this.consumer = consumer;
    if (this.earlyBytes > this.bodyLimit && !this.done) this.connection.resume();
    // What arrived before is handed on as one piece; a piece the consumer could not read has already been reported to it as the failure.
    const early = this.early;
    this.early = [];
    if (early.length > 0 && !this.feed(consumer, early.length === 1 ? early[0]! : Buffer.concat(early))) return;
    if (this.failure) consumer.error(this.failure);
    else if (this.done) consumer.end();
  }

  receivedText(): string | undefined {
    if (!this.done || this.failure || this.consumer || this.earlyBytes > this.bodyLimit) return undefined;
    const chunks = this.early;
    this.early = [];
    this.consumer = { data: () => {}, end: () => {}, error: () => {} }; // consumed: nothing more is delivered
    return chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
  }

  /**
   * The whole body, bounded: a success's past `maxBodyBytes` fails (`too_large`); an error's is cut
   * at `maxErrorBodyBytes` and the connection closed (the rest is never read).
   */
  text(): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const limit = this.bodyLimit;
      const chunks: Buffer[] = [];
      let total = 0;
      const whole = () => (chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
      let over = false;
      this.consume({
        data: (chunk) => {
          if (over) return;
          if (total + chunk.length <= limit) {
            chunks.push(chunk);
            total += chunk.length;
            return;
          }
          over = true;
          const tooLarge = new UpstreamError(`the upstream answer is larger than ${limit} bytes`, 'too_large');
          if (this.status >= 200 && this.status < 300) reject(tooLarge);
          else {
            chunks.push(chunk.subarray(0, limit - total));
            resolve(whole());
          }
          // The rest is never read (it may have all arrived already: then there is nothing left to stop).
          if (!this.done) this.abortAndClose(tooLarge);
        },
        end: () => resolve(whole()),
        error: reject,
      });
    });
  }

  pause(): void {
    this.connection.pause();
  }

  resume(): void {
    this.connection.resume();
  }
}

/**
 * The body bytes of `chunk` at `pieces` (flat start and end offsets), as a view of `chunk`: the runs
 * after the first are moved left over the framing between them, within the read's own buffer (this
 * client is its only reader), so a read of many chunks costs one memmove each and no new buffer.
 */
function joinPieces(chunk: Buffer, pieces: readonly number[]): Buffer {
  if (pieces.length === 2) return chunk.subarray(pieces[0], pieces[1]);
  const start = pieces[0]!;
  let end = pieces[1]!;
  for (let i = 2; i < pieces.length; i += 2) {
    chunk.copyWithin(end, pieces[i]!, pieces[i + 1]!);
    end += pieces[i + 1]! - pieces[i]!;
  }
  return chunk.subarray(start, end);
}

/**
 * The size of a chunk whose size line spans `chunk[at, newline)` in its plain form (hex digits, then
 * optionally `;` and extensions, and the line's CR), read from the bytes; -1 for anything else, which
 * the line's text is then parsed for (and refused when it is no size).
 */
function plainChunkSize(chunk: Buffer, at: number, newline: number): number {
  let end = newline;
  if (end > at && chunk[end - 1] === 0x0d) end--;
  let size = 0;
  let i = at;
  for (; i < end && i - at < 12; i++) {
    const c = chunk[i]!;
    const digit = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (digit === -1) break;
    size = size * 16 + digit;
  }
  if (i === at || (i < end && chunk[i] !== 0x3b)) return -1;
  return size;
}
