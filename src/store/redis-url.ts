/**
 * REDIS_URL in its two forms: one node, `redis://[user:password@]host:port[/db]` (`rediss://` for
 * TLS), or a Redis Cluster, `redis-cluster://[user:password@]host:port,host:port,...` (`rediss-cluster://`
 * for TLS), whose nodes are seeds: any one that answers tells where the others are. A cluster has
 * only database 0.
 */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

export interface RedisTarget {
  readonly cluster: boolean;
  readonly tls: boolean;
  /** One node, or the cluster's seeds. */
  readonly nodes: readonly RedisAddress[];
  readonly username: string;
  readonly password: string;
  readonly db: number;
}

const CLUSTER_URL = /^(rediss?)-cluster:\/\/(?:([^@/]*)@)?([^/?#]+)\/?$/;

export function parseRedisUrl(text: string): RedisTarget {
  const cluster = CLUSTER_URL.exec(text);
  if (cluster) {
    const [, scheme, auth = '', hosts] = cluster;
    const colon = auth.indexOf(':');
    const nodes = hosts!.split(',').map((entry) => {
      const url = new URL(`redis://${entry}`);
      if (url.pathname !== '' && url.pathname !== '/') throw new Error(`a Redis Cluster node is host:port, not ${entry}`);
      return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) };
    });
    return {
      cluster: true, tls: scheme === 'rediss', nodes,
      username: decodeURIComponent(colon < 0 ? '' : auth.slice(0, colon)),
      password: decodeURIComponent(colon < 0 ? auth : auth.slice(colon + 1)),
      db: 0,
    };
  }
  if (/^rediss?-cluster:/.test(text)) throw new Error('a Redis Cluster URL is redis-cluster://[user:password@]host:port,host:port,... (a cluster has no database number)');
  const url = new URL(text);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error(`REDIS_URL must begin with redis://, rediss://, redis-cluster:// or rediss-cluster://, not ${url.protocol}`);
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw new Error(`the database of a Redis URL is a number, not ${db}`);
  return {
    cluster: false, tls: url.protocol === 'rediss:',
    nodes: [{ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) }],
    username: decodeURIComponent(url.username), password: decodeURIComponent(url.password), db: Number(db || 0),
  };
}
