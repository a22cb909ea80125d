/**
 * The gateway's ioredis clients, on one Redis or on a Redis Cluster (REDIS_URL, see redis-url.ts).
 * Every caller works on both: commands of one user (`{u:<id>}`) or one task shard (`{ts:<n>}`) share a
 * slot, so scripts and MULTIs stay on one node. What a cluster changes is handled here: commands
 * scoped to a node (SCAN), pipelines over many users' keys, pub/sub and connections that block.
 */
import { Cluster, Redis, type ChainableCommander, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseRedisUrl } from './redis-url.js';
import { keySlot } from './cluster-slot.js';

export type RedisClient = Redis | Cluster;

/** Options of the cluster itself; every other option applies to each of its node connections. */
const CLUSTER_LEVEL = ['lazyConnect', 'enableOfflineQueue', 'enableReadyCheck', 'enableAutoPipelining'] as const;

/** A `Redis` for a one-node URL (as `new Redis(url, options)`), a `Cluster` for a cluster URL. */
export function connectRedis(url: string, options: RedisOptions = {}): RedisClient {
  const target = parseRedisUrl(url);
  if (!target.cluster) return new Redis(url, options);
  const clusterOptions: ClusterOptions = {
    // Reads go to primaries, never replicas: a replica may lag, and money is read and written in the same breath.
    scaleReads: 'master',
    slotsRefreshTimeout: 2000,
    // FailFastCluster refreshes the slot map itself (see SLOTS_REFRESH_MS).
    slotsRefreshInterval: 0,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
  };
  const perNode: RedisOptions = {};
  for (const [name, value] of Object.entries(options)) {
    // An undefined option would override ioredis's default rather than keep it.
    if (value === undefined) continue;
    if ((CLUSTER_LEVEL as readonly string[]).includes(name)) (clusterOptions as Record<string, unknown>)[name] = value;
    else (perNode as Record<string, unknown>)[name] = value;
  }
  if (target.username) perNode.username = target.username;
  if (target.password) perNode.password = target.password;
  if (target.tls) {
    perNode.tls = {};
    // Keep host names as given: a TLS certificate names hosts, not the addresses they resolve to.
    clusterOptions.dnsLookup = (address, callback) => callback(null, address);
  }
  clusterOptions.redisOptions = perNode;
  return new FailFastCluster(target.nodes.map(({ host, port }) => ({ host, port })), clusterOptions);
}

/** Reconnection rounds with every node out of reach before the commands waiting for the cluster fail. */
const ROUNDS_BEFORE_FAILING = 3;
/** Pause between the rounds of a cluster that gave up, while every node is still out of reach. */
const RECONNECT_AFTER_FAILING_MS = 1000;
/**
 * Period of the slot map's refresh. Slot moves are also learnt from MOVED replies; this catches
 * failovers nobody asked about yet.
 */
const SLOTS_REFRESH_MS = 5000;

/**
 * A Cluster that fails fast when every node is lost. ioredis would queue commands for as long as it
 * has no node to send them to, reconnecting without end, so a management call would hang. Here the
 * cluster gives up after a few reconnection rounds (about a second): ioredis then rejects every queued
 * command without ever sending it (a 503 for the caller, and nothing runs late), and it is connected
 * again a second later, and so on until a node answers. A single lost node (a failover) does not end
 * the cluster: it is left to ioredis's MOVED and CLUSTERDOWN retries.
 */
class FailFastCluster extends Cluster {
  private closing = false;
  /**
   * ioredis's own periodic refresh (`slotsRefreshInterval`) arms its next round when a refresh ends,
   * even one that was under way when the client was closed, and then for ever: a process that closed
   * its client at that moment never exited (a `gateway ledger check` that hung). This timer is
   * stopped by closing and never keeps a process alive.
   */
  private readonly slotsRefresh: NodeJS.Timeout;

  constructor(nodes: { host: string; port: number }[], options: ClusterOptions) {
    super(nodes, { ...options, clusterRetryStrategy: (times) => (times > ROUNDS_BEFORE_FAILING ? null : Math.min(100 * times, 300)) });
    this.on('end', () => {
      if (this.closing) return;
      setTimeout(() => { if (!this.closing) this.connect().catch(() => {}); }, RECONNECT_AFTER_FAILING_MS).unref();
    });
    this.slotsRefresh = setInterval(() => { if (this.status === 'ready') this.refreshSlotsCache(); }, SLOTS_REFRESH_MS).unref();
  }

  override quit(...args: Parameters<Cluster['quit']>): ReturnType<Cluster['quit']> {
    this.stopForGood();
    return super.quit(...args);
  }

  override disconnect(reconnect?: boolean): void {
    if (!reconnect) this.stopForGood();
    super.disconnect(reconnect);
  }

  private stopForGood(): void {
    this.closing = true;
    clearInterval(this.slotsRefresh);
  }
}

/** ioredis's ways of saying Redis cannot be reached now (as opposed to a command Redis refused). */
const UNREACHABLE = /^(Command timed out|Connection is closed|Reached the max retries per request limit|Cluster isn't ready|None of startup nodes is available|Stream isn't writeable|connect ECONNREFUSED|Failed to refresh slots cache)/;

/** Whether `error` says Redis is out of reach: a request that met it may succeed on a retry (503). */
export function isRedisUnreachable(error: unknown): boolean {
  return error instanceof Error && UNREACHABLE.test(error.message);
}

export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/** The nodes that hold the data, for commands that see one node only (SCAN): the cluster's primaries, or the one Redis. */
export async function primaries(client: RedisClient): Promise<Redis[]> {
  if (!isCluster(client)) return [client];
  if (client.status !== 'ready') await client.ping(); // the node list is known once the cluster is ready
  return client.nodes('master');
}

/** SCAN of every primary: batches of keys matching `pattern` (a key may come twice while its slot moves). */
export async function* scanKeys(client: RedisClient, pattern: string, count = 1000): AsyncGenerator<string[]> {
  for (const node of await primaries(client)) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      if (found.length > 0) yield found;
    } while (cursor !== '0');
  }
}

export type PipelineReplies = [Error | null, unknown][];

/**
 * Commands over keys of many slots (many users) as pipelines: one on one Redis; on a cluster one per
 * node, since ioredis refuses a pipeline whose keys live on different nodes. `add` queues one item's
 * commands, every key of them in the slot of `keyOf(item)`. Replies come back in the order queued.
 */
export async function pipelineAcrossSlots<T>(client: RedisClient, items: readonly T[], keyOf: (item: T) => string, add: (pipeline: ChainableCommander, item: T) => void): Promise<PipelineReplies> {
  if (!isCluster(client)) {
    const pipeline = client.pipeline();
    for (const item of items) add(pipeline, item);
    return (await pipeline.exec()) ?? [];
  }
  if (items.length === 0) return [];
  if (client.slots.length === 0) await client.ping(); // the slot map is known once the cluster is ready
  const groups = new Map<string, { pipeline: ChainableCommander; spans: { index: number; from: number; count: number }[] }>();
  items.forEach((item, index) => {
    const slot = keySlot(keyOf(item));
    const node = client.slots[slot]?.join(';') ?? `slot ${slot}`;
    let group = groups.get(node);
    if (!group) groups.set(node, group = { pipeline: client.pipeline(), spans: [] });
    const from = group.pipeline.length;
    add(group.pipeline, item);
    group.spans.push({ index, from, count: group.pipeline.length - from });
  });
  const perItem: PipelineReplies[] = new Array(items.length);
  await Promise.all([...groups.values()].map(async ({ pipeline, spans }) => {
    const replies = (await pipeline.exec()) ?? [];
    for (const { index, from, count } of spans) perItem[index] = replies.slice(from, from + count);
  }));
  return perItem.flat();
}

/** The primary serving `key`'s slot, as the cluster's slot map says now (undefined when it does not know). */
function primaryServing(client: Cluster, key: string): Redis | undefined {
  const owner = client.slots[keySlot(key)]?.[0];
  return owner === undefined ? undefined : client.nodes('master').find(({ options }) => `${options.host}:${options.port}` === owner);
}

function refreshSlots(client: Cluster): Promise<void> {
  return new Promise((resolve, reject) => client.refreshSlotsCache((error) => (error ? reject(error) : resolve())));
}

/**
 * A connection of its own to the primary serving `key`, for a command that blocks it (XREADGROUP
 * BLOCK). On one Redis: `new Redis(url, options)`, which reconnects by itself. On a cluster: a
 * connection to the node serving the key's slot now, which does not reconnect: when it drops (a
 * failover) or answers MOVED (a resharding), the caller opens another, and the slot map is read
 * afresh each time. One connection per key, rather than a Cluster instance (a connection to every
 * node, a slot map and a refresh timer each).
 */
export async function connectToKeyOwner(url: string, client: RedisClient, key: string, options: RedisOptions = {}): Promise<Redis> {
  if (!isCluster(client)) return new Redis(url, options);
  await refreshSlots(client);
  const node = primaryServing(client, key);
  if (!node) throw new Error(`no Redis Cluster node serves the slot of ${key} now`);
  const { host, port, username, password, tls } = node.options;
  return new Redis({ ...options, host, port, username, password, tls, retryStrategy: () => null });
}

/**
 * PUBLISH for `subscribeChannels`' subscribers. On a cluster it goes to the primary serving the
 * channel's slot, where they subscribe: Redis hands a message to a node's own subscribers before it
 * answers, and to other nodes' later over the cluster bus. So a revoked key is dropped from every
 * cache before the revocation answers, as on one Redis.
 */
export async function publish(client: RedisClient, channel: string, message: string): Promise<number> {
  const node = isCluster(client) ? primaryServing(client, channel) : undefined;
  if (node) {
    try {
      return await node.publish(channel, message);
    } catch {
      // A stale slot map (a failover): any node will do, the bus brings it.
    }
  }
  return client.publish(channel, message);
}

/** Longest a change waits for the caches that received its event to apply it. */
export const ACK_WAIT_MS = 1000;
const ACK_TTL_MS = 60_000;
const ACK_PREFIX = 'ack ';

/**
 * `publish`, answering once every subscriber that received the message has applied it (or after
 * ACK_WAIT_MS): each pushes to `ackKey` when done (`acknowledge`). A change to a key or a BYOK row
 * then holds for every request that starts after the change answered, on every thread and process
 * that subscribes where the message was published, instead of after a pub/sub race.
 */
export async function publishAcknowledged(client: RedisClient, channel: string, message: string, ackKey: string, nonce: string): Promise<void> {
  const receivers = await publish(client, channel, `${ACK_PREFIX}${nonce} ${message}`);
  const until = Date.now() + ACK_WAIT_MS;
  try {
    while (receivers > 0 && (await client.llen(ackKey)) < receivers && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
  } finally {
    await client.del(ackKey).catch(() => {});
  }
}

/** A message as published: its acknowledgement nonce (when the publisher waits for one) and its text. */
export function unwrapAcknowledged(message: string): { nonce: string | undefined; text: string } {
  if (!message.startsWith(ACK_PREFIX)) return { nonce: undefined, text: message };
  const space = message.indexOf(' ', ACK_PREFIX.length);
  return space < 0 ? { nonce: undefined, text: message } : { nonce: message.slice(ACK_PREFIX.length, space), text: message.slice(space + 1) };
}

/** Tells the publisher of an acknowledged message that this subscriber applied it. */
export async function acknowledge(client: RedisClient, ackKey: string): Promise<void> {
  await client.rpush(ackKey, '1');
  await client.pexpire(ackKey, ACK_TTL_MS);
}

export interface ChannelSubscription {
  close(): Promise<void>;
}

/**
 * Subscribes to `channels`. `onResubscribed` runs after each subscription but the first: messages
 * published while it was not subscribed are lost. On one Redis: one connection that reconnects and
 * subscribes again by itself. On a cluster a classic SUBSCRIBE on any node receives PUBLISH from
 * every node, so: one connection at a time, to the primary serving the first channel's slot (where
 * `publish` sends), or to any node after that failed, and a new one when it drops. (ioredis's own
 * Cluster subscriber moves between nodes too, but silently, so the loss could not be told.)
 */
export async function subscribeChannels(
  url: string, client: RedisClient, channels: readonly string[],
  onMessage: (channel: string, message: string) => void, onResubscribed: () => void,
): Promise<ChannelSubscription> {
  if (!isCluster(client)) {
    const subscriber = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true });
    // Connect before subscribing: ioredis's ready check would otherwise run on a subscribed connection.
    await subscriber.connect();
    await subscriber.subscribe(...channels);
    subscriber.on('message', onMessage);
    subscriber.on('ready', onResubscribed);
    return { close: async () => { await subscriber.quit(); } };
  }
  const seeds = parseRedisUrl(url).nodes;
  let closed = false;
  let current: Redis | undefined;
  let retry: NodeJS.Timeout | undefined;
  let ownerFailed = false;
  const subscribeOnce = async (): Promise<void> => {
    if (client.status !== 'ready') await client.ping().catch(() => {});
    else await refreshSlots(client).catch(() => {});
    const nodes = client.nodes('all');
    const owner = ownerFailed ? undefined : primaryServing(client, channels[0]!);
    const node = owner ?? nodes[Math.floor(Math.random() * nodes.length)];
    const seed = seeds[Math.floor(Math.random() * seeds.length)]!;
    const { host, port, username, password, tls } = node?.options ?? { ...seed, ...client.options.redisOptions };
    const connection = new Redis({ host, port, username, password, tls, lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => null });
    let subscribed = false;
    current = connection;
    connection.on('error', () => {}); // its end says it all
    connection.on('message', onMessage);
    connection.once('end', () => {
      if (closed || current !== connection) return;
      ownerFailed = owner !== undefined && !subscribed;
      retry = setTimeout(() => {
        if (!closed) subscribeOnce().then(onResubscribed, () => {}); // a failure ends that connection too, which tries again
      }, 200);
    });
    try {
      await connection.connect();
      await connection.subscribe(...channels);
      subscribed = true;
    } catch (error) {
      connection.disconnect();
      throw error;
    }
  };
  try {
    await subscribeOnce();
  } catch (error) {
    closed = true;
    current?.disconnect();
    throw error;
  }
  return {
    close: async () => {
      closed = true;
      clearTimeout(retry);
      await current?.quit().catch(() => {});
    },
  };
}
