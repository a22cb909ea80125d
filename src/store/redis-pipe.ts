import net from 'node:net';
import tls from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { SLOT_COUNT, keySlot } from './cluster-slot.js';
import { parseRedisUrl, type RedisAddress, type RedisTarget } from './redis-url.js';

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

/** What RedisPipe does in either mode: a batch of commands in, its replies out in the same order. */
interface Pipe {
  exec(commands: readonly RespCommand[]): Promise<RespValue[]>;
  close(graceMs?: number): Promise<void>;
}

/**
 * A lean Redis connection for the hot path's Lua script calls: a batch of commands goes out in one
 * write and its replies come back as one array, with no per-command objects, promises or queues
 * (ioredis's pipeline cost about as much CPU per call as the rest of the settlement). One socket,
 * opened on first use and again after it is lost; a lost connection fails the batches waiting on it
 * and their callers retry (settle.lua's batches are idempotent). With a cluster URL, commands go to
 * the node owning their key's slot (see ClusterPipe); otherwise to the one node, with its password,
 * user and database number.
 */
export class RedisPipe implements Pipe {
  /** Sends `commands` in one write (one per node in a cluster); resolves their replies in order (error replies as RespError values). */
  exec: (commands: readonly RespCommand[]) => Promise<RespValue[]>;
  /** Closes the connections once the replies already asked for have come back (or `graceMs` passed). */
  close: (graceMs?: number) => Promise<void>;
  /** Commands of one batch for different nodes of a cluster run in no set order between them. */
  readonly cluster: boolean;

  constructor(url: string, options: RedisPipeOptions = {}) {
    const target = parseRedisUrl(url);
    this.cluster = target.cluster;
    const pipe: Pipe = target.cluster ? new ClusterPipe(target, options) : new NodeConnection(target.nodes[0]!, target, options);
    // Bound once: a single node's batches go straight to its connection, with no routing step.
    this.exec = pipe.exec.bind(pipe);
    this.close = pipe.close.bind(pipe);
  }
}

/** One node's connection (the single node, or one of a cluster's). */
class NodeConnection implements Pipe {
  private socket: net.Socket | undefined;
  private readonly waiting: Exchange[] = [];
  private head = 0;
  private unread: Buffer | undefined;
  private closed = false;
  /** No new connection before this time after one failed (a Redis outage must not be hammered). */
  private retryAtMs = 0;
  private failures = 0;
  /** Commands waiting for the connection's AUTH and SELECT to succeed; undefined once they have. */
  private held: string | undefined;

  constructor(readonly address: RedisAddress, private readonly target: RedisTarget, private readonly options: RedisPipeOptions) {}

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
    const { host, port } = this.address;
    const socket = this.target.tls
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
      : net.connect({ host, port });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 30_000);
    const connectTimer = setTimeout(() => socket.destroy(new Error(`Redis did not accept a connection within ${this.connectTimeoutMs} ms`)), this.connectTimeoutMs);
    socket.once(this.target.tls ? 'secureConnect' : 'connect', () => {
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
    const { password, username, db } = this.target;
    if (password) commands.push(username ? ['AUTH', username, password] : ['AUTH', password]);
    if (db !== 0) commands.push(['SELECT', db]); // a cluster's is always 0
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

/** Commands whose keys follow their count (argument 2), so the first key is argument 3. */
const KEY_COUNTED = new Set(['EVAL', 'EVALSHA', 'EVAL_RO', 'EVALSHA_RO', 'FCALL', 'FCALL_RO']);

/** The slot of `command`'s first key, or -1 when it has none (any node runs it). */
function commandSlot(command: RespCommand): number {
  const key = KEY_COUNTED.has(String(command[0]).toUpperCase()) ? (Number(command[2]) > 0 ? command[3] : undefined) : command[1];
  return key === undefined ? -1 : keySlot(String(key));
}

/** `MOVED <slot> <host>:<port>` or `ASK ...`; an empty host means the replying node's. */
const REDIRECT = /^(MOVED|ASK) (\d+) (.*):(\d+)$/;
/** A slot mid-migration (a multi-key command whose keys are split) or a cluster briefly unhealthy. */
const TRANSIENT = /^(TRYAGAIN|CLUSTERDOWN)\b/;
/** Redirects and retries of one command before its last error reply becomes its answer. */
const MAX_TRIES = 5;
const RETRY_PAUSE_MS = 50;
/** A redirect or lost node reads the slot map again, but not more often than this. */
const REFRESH_GAP_MS = 250;
const ASKING: RespCommand = ['ASKING'];

interface Send {
  readonly index: number;
  readonly command: RespCommand;
  /** Where a redirect said to send it; undefined: the slot map's owner at the time it is sent. */
  readonly node: NodeConnection | undefined;
  /** After ASKING: an ASK redirect to the node importing the slot (the map stays as it is). */
  readonly asking: boolean;
  readonly tries: number;
  /** TRYAGAIN or CLUSTERDOWN: resent after a pause. */
  readonly paused: boolean;
}

const addressName = ({ host, port }: RedisAddress) => `${host}:${port}`;

/**
 * A Redis Cluster behind RedisPipe's `exec`: each command goes to the primary owning its key's slot
 * (per CLUSTER SLOTS, read from any node that answers, the map's own nodes before the seeds), one
 * write per node per batch, and the replies come back in the caller's order. MOVED updates the map
 * and resends; ASK resends after ASKING without touching it; TRYAGAIN and CLUSTERDOWN are resent
 * after a pause; after MAX_TRIES the last error reply is the answer. A node's lost connection fails
 * only its own commands (each gets a RespError saying so); only when all of a batch's commands
 * were lost does `exec` reject, as it does for a single node. Commands of one batch on different
 * nodes run in no particular order relative to each other; on one node, in the batch's order.
 */
class ClusterPipe implements Pipe {
  private readonly connections = new Map<string, NodeConnection>();
  /** Each slot's primary; undefined when not known (any node is asked, and redirects). */
  private owners: (NodeConnection | undefined)[] = [];
  private primaries: NodeConnection[] = [];
  private turn = 0;
  private refreshing: Promise<void> | undefined;
  private refreshedAtMs = 0;
  private closed = false;

  constructor(private readonly target: RedisTarget, private readonly options: RedisPipeOptions) {}

  async exec(commands: readonly RespCommand[]): Promise<RespValue[]> {
    if (this.closed) throw new Error('the Redis connection is closed');
    if (commands.length === 0) return [];
    if (this.primaries.length === 0) await this.refresh();
    const replies: RespValue[] = new Array(commands.length);
    let lost = 0;
    let firstLoss: Error | undefined;
    let sends: Send[] = commands.map((command, index) => ({ index, command, node: undefined, asking: false, tries: 0, paused: false }));
    while (sends.length > 0) {
      const again: Send[] = [];
      await Promise.all([...this.byNode(sends)].map(async ([node, group]) => {
        const wire: RespCommand[] = [];
        for (const send of group) {
          if (send.asking) wire.push(ASKING);
          wire.push(send.command);
        }
        let answers: RespValue[];
        try {
          answers = await node.exec(wire);
        } catch (error) {
          const loss = error as Error;
          firstLoss ??= loss;
          lost += group.length;
          const name = addressName(node.address);
          const message = loss.message.includes(name) ? loss.message : `${loss.message} (${name})`;
          for (const send of group) replies[send.index] = new RespError(message);
          this.refreshSoon(); // the node may have failed over
          return;
        }
        let at = 0;
        for (const send of group) {
          if (send.asking) at++; // ASKING's OK
          const reply = answers[at++]!;
          const retry = reply instanceof RespError && send.tries < MAX_TRIES ? this.retryOf(send, reply, node) : undefined;
          if (retry) again.push(retry);
          else replies[send.index] = reply;
        }
      }));
      if (again.some((send) => send.paused)) await sleep(RETRY_PAUSE_MS);
      sends = again;
    }
    if (lost === commands.length) throw firstLoss!;
    return replies;
  }

  async close(graceMs?: number): Promise<void> {
    this.closed = true;
    await Promise.all([...this.connections.values()].map((node) => node.close(graceMs)));
  }

  /** The sends grouped by the node each goes to now, each group in the batch's order. */
  private byNode(sends: readonly Send[]): Map<NodeConnection, Send[]> {
    const groups = new Map<NodeConnection, Send[]>();
    for (const send of sends) {
      const node = send.node ?? this.ownerOf(commandSlot(send.command));
      const group = groups.get(node);
      if (group) group.push(send);
      else groups.set(node, [send]);
    }
    return groups;
  }

  private ownerOf(slot: number): NodeConnection {
    return (slot >= 0 ? this.owners[slot] : undefined) ?? this.primaries[this.turn++ % this.primaries.length]!;
  }

  /** The send again, when `error` is a redirect or a transient error; undefined when it is the answer. */
  private retryOf(send: Send, error: RespError, from: NodeConnection): Send | undefined {
    const tries = send.tries + 1;
    const redirect = REDIRECT.exec(error.message);
    if (redirect) {
      const [, kind, slot, host, port] = redirect;
      const node = this.connectionTo({ host: host || from.address.host, port: Number(port) });
      if (kind === 'ASK') return { ...send, node, asking: true, tries, paused: false };
      this.owners[Number(slot)] = node; // now, for the batches meanwhile; the rest of the map soon
      this.refreshSoon();
      return { ...send, node, asking: false, tries, paused: false };
    }
    if (TRANSIENT.test(error.message)) return { ...send, node: undefined, asking: false, tries, paused: true };
    return undefined;
  }

  private connectionTo(address: RedisAddress): NodeConnection {
    const name = addressName(address);
    let node = this.connections.get(name);
    if (!node) {
      node = new NodeConnection(address, this.target, this.options);
      this.connections.set(name, node);
    }
    return node;
  }

  /** Reads the slot map (one reading at a time; callers meanwhile share it). */
  private refresh(): Promise<void> {
    this.refreshing ??= this.readSlots().finally(() => {
      this.refreshing = undefined;
      this.refreshedAtMs = Date.now();
    });
    return this.refreshing;
  }

  private refreshSoon(): void {
    if (this.closed || this.refreshing || Date.now() - this.refreshedAtMs < REFRESH_GAP_MS) return;
    this.refresh().catch(() => {}); // the map stays as it was; redirects still correct it
  }

  private async readSlots(): Promise<void> {
    const candidates = new Map<string, RedisAddress>();
    for (const address of [...this.primaries.map((node) => node.address), ...this.target.nodes]) candidates.set(addressName(address), address);
    let failure: Error | undefined;
    for (const address of candidates.values()) {
      if (this.closed) throw new Error('the Redis connection is closed');
      try {
        const [reply] = await this.connectionTo(address).exec([['CLUSTER', 'SLOTS']]);
        if (reply instanceof RespError) throw reply;
        this.useSlots(reply, address);
        return;
      } catch (error) {
        failure = error as Error;
      }
    }
    throw new Error(`no Redis Cluster node answered CLUSTER SLOTS (${failure?.message})`);
  }

  /** CLUSTER SLOTS: `[[start, end, [host, port, id, ...], ...replicas], ...]`. */
  private useSlots(reply: RespValue | undefined, asked: RedisAddress): void {
    if (!Array.isArray(reply)) throw new Error(`CLUSTER SLOTS answered ${JSON.stringify(reply)}`);
    const owners = new Array<NodeConnection | undefined>(SLOT_COUNT).fill(undefined);
    const primaries = new Set<NodeConnection>();
    for (const range of reply) {
      if (!Array.isArray(range)) continue;
      const [start, end, primary] = range;
      if (typeof start !== 'number' || typeof end !== 'number' || !Array.isArray(primary)) continue;
      const [host, port] = primary;
      // An empty (or null) host is the asked node's; '?' is a node whose address is not known yet.
      if (typeof port !== 'number' || host === '?') continue;
      const node = this.connectionTo({ host: typeof host === 'string' && host !== '' ? host : asked.host, port });
      primaries.add(node);
      for (let slot = start; slot <= end; slot++) owners[slot] = node;
    }
    if (primaries.size === 0) throw new Error('the Redis Cluster serves no slots');
    this.owners = owners;
    this.primaries = [...primaries];
    // Nodes that own no slot now (and seeds named otherwise than in the map) are let go.
    for (const [name, node] of this.connections) {
      if (primaries.has(node)) continue;
      this.connections.delete(name);
      void node.close();
    }
  }
}
