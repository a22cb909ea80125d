// Management calls that read Redis (the balance) while Redis is out of reach answer a retryable 503
// redis_unavailable with Retry-After, in bounded time: on one Redis (a cut TCP proxy) and on a Redis
// Cluster whose every node is down (where ioredis would otherwise queue the command without end).
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { startRedisCluster, type LocalCluster } from './helpers/redis-cluster.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, rawRequest } from './helpers/http-tools.js';

const REDIS = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

/** GET the balance; a hang fails the test by the client's own timeout, well past the gateway's bound. */
const balance = (gateway: Gateway, token: string) =>
  rawRequest(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${token}` }, timeoutMs: 20_000 });

t.test('one Redis, cut: 503 redis_unavailable, then served again', async (t) => {
  const proxy = await TcpProxy.start({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
  const gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
  t.teardown(async () => { proxy.restore(); await gateway.close(); await proxy.close(); });
  const { token } = await fastUser(gateway, 'redis-unreachable-one', '1');
  t.equal((await balance(gateway, token)).status, 200, 'served while Redis answers');
  proxy.cut();
  const refused = await balance(gateway, token);
  assertEnvelope(t, refused, 503, 'redis_unavailable', 'Redis cut');
  t.equal(refused.headers['retry-after'], '1', 'with Retry-After');
  proxy.restore();
  let after = await balance(gateway, token);
  for (let i = 0; i < 50 && after.status !== 200; i++) after = await balance(gateway, token);
  t.equal(after.status, 200, 'served again once Redis is back');
});

t.test('a Redis Cluster with every node down: 503 redis_unavailable instead of a call queued without end', async (t) => {
  const cluster: LocalCluster = await startRedisCluster();
  const gateway = await startGateway({ redisUrl: cluster.url, env: { JWT_SECRET: TEST_JWT_SECRET } });
  t.teardown(async () => { await gateway.closeWithoutRedis(); await cluster.stop(); });
  const { token } = await fastUser(gateway, 'redis-unreachable-cluster', '1');
  t.equal((await balance(gateway, token)).status, 200, 'served while the cluster is up');
  for (const node of cluster.nodes) node.process.kill('SIGKILL');
  const refused = await balance(gateway, token);
  assertEnvelope(t, refused, 503, 'redis_unavailable', 'every node down');
  t.equal(refused.headers['retry-after'], '1', 'with Retry-After');
});
