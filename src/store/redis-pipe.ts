import net from 'node:net';
import tls from 'node:tls';

/** A Redis reply (RESP2). An error reply is a value, so one bad command does not fail its batch. */
export type RespValue = string | number | null | RespError | RespValue[];

export class RespError extends Error {
  override name = 'RespError';
}

export type RespCommand = readonly (string | number)[];

interface Exchange {
  readonly expected: number;
  readonly sentAtMs: number;
  readonly replies: RespValue[];
  readonly resolve: (replies: RespValue[]) => void;
  readonly reject: (error: Error) => void;
}

const CR = 13;
/** Parsing needs more bytes. */
const INCOMPLETE = Symbol('incomplete');
type Parsed = { value: RespValue; end: number } | typeof INCOMPLETE;

/** One RESP2 reply starting at `at`, or INCOMPLETE when `buffer` does not hold all of it yet. */
function parseReply(buffer: Buffer, at: number): Parsed {
  const lineEnd = buffer.indexOf(CR, at);
  if (lineEnd < 0 || lineEnd + 1 >= buffer.length) return INCOMPLETE;
  const type = buffer[at];
  const next = lineEnd + 2;
  switch (type) {
    case 0x2b: // +simple
      return { value: buffer.toString('utf8', at + 1, lineEnd), end: next };
    case 0x2d: // -error
      return { value: new RespError(buffer.toString('utf8', at + 1, lineEnd)), end: next };
    case 0x3a: // :integer
      return { value: Number(buffer.toString('latin1', at + 1, lineEnd)), end: next };
    case 0x24: { // $bulk
      const length = Number(buffer.toString('latin1', at + 1, lineEnd));
      if (length < 0) return { value: null, end: next };
      if (next + length + 2 > buffer.length) return INCOMPLETE;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case 0x2a: { // *array
      const count = Number(buffer.toString('latin1', at + 1, lineEnd));
      if (count < 0) return { value: null, end: next };
      const items: RespValue[] = [];
      let end = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, end);
        if (item === INCOMPLETE) return INCOMPLETE;
        items.push(item.value);
        end = item.end;
      }
      return { value: items, end };
    }
    default:
      throw new Error(`Redis sent a reply of unknown type ${JSON.stringify(String.fromCharCode(type!))}`);
  }
}

/** The commands in RESP, as one string: one write for the whole batch. */
export function encodeCommands(commands: readonly RespCommand[]): string {
  let out = '';
  for (const command of commands) {
    out += `*${command.length}\r\n`;
    for (const arg of command) {
      const text = typeof arg === 'number' ? String(arg) : arg;
      out += `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
    }
  }
  return out;
}

export interface RedisPipeOptions {
  /** A connection attempt that has not succeeded by then fails the commands waiting on it. */
  readonly connectTimeoutMs?: number;
  /** A batch with no reply by then ends the connection (a Redis that hangs must not hang requests). */
  readonly replyTimeoutMs?: number;
}

/**
 * A lean Redis connection for the hot path's Lua script calls: a batch of commands goes out in one
 * write and its replies come back as one array, with no per-command objects, promises or queues
 * (ioredis's pipeline cost about as much CPU per call as the rest of the settlement). One socket,
 * opened on first use and again after it is lost; a lost connection fails the batches waiting on it
 * and their callers retry (settle.lua's batches are idempotent). Supports `redis://` and `rediss://`
 * URLs with a password, a user and a database number.
 */
export class RedisPipe {
  private socket: net.Socket | undefined;
  private readonly waiting: Exchange[] = [];
  private head = 0;
  private unread: Buffer | undefined;
  private readonly url: URL;
  private closed = false;
  /** No new connection before this time after one failed (a Redis outage must not be hammered). */
  private retryAtMs = 0;
  private failures = 0;
  /** Commands waiting for the connection's AUTH and SELECT to succeed; undefined once they have. */
  private held: string | undefined;

  constructor(url: string, private readonly options: RedisPipeOptions = {}) {
    this.url = new URL(url);
  }

  /** Sends `commands` in one write; resolves their replies in order (error replies as RespError values). */
  exec(commands: readonly RespCommand[]): Promise<RespValue[]> {
    if (this.closed) return Promise.reject(new Error('the Redis connection is closed'));
    if (commands.length === 0) return Promise.resolve([]);
    let socket = this.socket;
    if (!socket) {
      if (Date.now() < this.retryAtMs) return Promise.reject(new Error('Redis is unreachable'));
      socket = this.connect();
    }
    const payload = encodeCommands(commands);
    return new Promise<RespValue[]>((resolve, reject) => {
      this.waiting.push({ expected: commands.length, sentAtMs: Date.now(), replies: [], resolve, reject });
      if (this.held === undefined) socket.write(payload);
      else this.held += payload;
    });
  }

  /** Closes the connection once the replies already asked for have come back (or `graceMs` passed). */
  async close(graceMs = 2_000): Promise<void> {
    this.closed = true;
    const socket = this.socket;
    if (!socket) return;
    if (this.waiting.length > this.head) {
      const timer = setTimeout(() => socket.destroy(), graceMs);
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
      clearTimeout(timer);
    } else {
      socket.end();
    }
  }

  private connect(): net.Socket {
    const host = this.url.hostname.replace(/^\[|\]$/g, '');
    const port = Number(this.url.port || 6379);
    const socket = this.url.protocol === 'rediss:'
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
      : net.connect({ host, port });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const connectTimer = setTimeout(() => socket.destroy(new Error(`Redis did not accept a connection within ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
    socket.once(this.url.protocol === 'rediss:' ? 'secureConnect' : 'connect', () => {
      clearTimeout(connectTimer);
      this.failures = 0;
    });
    // One check per interval of the oldest waiting batch, rather than a timer per batch.
    const replyTimeoutMs = this.options.replyTimeoutMs ?? 10_000;
    const watchdog = setInterval(() => {
      const oldest = this.waiting[this.head];
      if (oldest && Date.now() - oldest.sentAtMs > replyTimeoutMs) socket.destroy(new Error(`Redis did not answer within ${replyTimeoutMs} ms`));
    }, Math.max(50, replyTimeoutMs / 4));
    watchdog.unref();
    let failure: Error | undefined;
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (error) => { failure = error; }); // 'close' follows and fails what waits
    socket.on('close', () => {
      clearTimeout(connectTimer);
      clearInterval(watchdog);
      if (this.socket === socket) this.lost(new Error(`the Redis connection was lost${failure ? ` (${failure.message})` : ''}`));
    });
    const hello = this.handshake();
    this.held = undefined;
    if (hello.length > 0) {
      // Commands wait for the answers: none may run unauthenticated or in another database.
      this.held = '';
      this.waiting.push({
        expected: hello.length, sentAtMs: Date.now(), replies: [],
        resolve: (replies) => {
          // As ioredis does, a password given to a Redis that has none is not an error.
          const refused = replies.find((reply) => reply instanceof RespError && !/without any password|no password is set/i.test(reply.message));
          if (refused) return socket.destroy(refused as RespError);
          const held = this.held;
          this.held = undefined;
          if (held) socket.write(held);
        },
        reject: () => {},
      });
      socket.write(encodeCommands(hello));
    }
    return socket;
  }

  private get connectTimeoutMs(): number {
    return this.options.connectTimeoutMs ?? 5_000;
  }

  private handshake(): RespCommand[] {
    const commands: RespCommand[] = [];
    const password = decodeURIComponent(this.url.password);
    const user = decodeURIComponent(this.url.username);
    if (password) commands.push(user ? ['AUTH', user, password] : ['AUTH', password]);
    const db = this.url.pathname.replace(/^\//, '');
    if (db && db !== '0') commands.push(['SELECT', db]);
    return commands;
  }

  /** The connection is gone: every batch still waiting fails, and the next `exec` reconnects (after a pause if this keeps happening). */
  private lost(error: Error): void {
    this.socket = undefined;
    this.unread = undefined;
    this.held = undefined;
    this.failures++;
    this.retryAtMs = this.failures > 1 ? Date.now() + Math.min(1000, 25 * 2 ** Math.min(this.failures, 6)) : 0;
    const waiting = this.waiting.splice(this.head);
    this.waiting.length = 0;
    this.head = 0;
    for (const exchange of waiting) exchange.reject(error);
  }

  private receive(chunk: Buffer): void {
    const buffer = this.unread ? Buffer.concat([this.unread, chunk]) : chunk;
    let at = 0;
    while (at < buffer.length) {
      let parsed: Parsed;
      try {
        parsed = parseReply(buffer, at);
      } catch (error) {
        this.socket?.destroy(error as Error); // the stream cannot be trusted past a reply we cannot read
        return;
      }
      if (parsed === INCOMPLETE) break;
      at = parsed.end;
      const exchange = this.waiting[this.head];
      if (!exchange) {
        this.socket?.destroy(new Error('Redis sent a reply nobody asked for'));
        return;
      }
      exchange.replies.push(parsed.value);
      if (exchange.replies.length === exchange.expected) {
        this.waiting[this.head++] = undefined as unknown as Exchange;
        if (this.head === this.waiting.length) {
          this.waiting.length = 0;
          this.head = 0;
        }
        exchange.resolve(exchange.replies);
      }
    }
    // A socket's 'data' chunks are never reused by Node, so the rest can wait as a view.
    this.unread = at < buffer.length ? buffer.subarray(at) : undefined;
    if (this.closed && this.waiting.length === this.head) this.socket?.end();
  }
}
