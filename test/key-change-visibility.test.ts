// A change to a key or a BYOK row answers only once every cache that received its event has applied
// it (acknowledged pub/sub), so the change holds for every request that starts after it answered, on
// every thread and process, instead of after a race between the next request and the event.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { acknowledge, publishAcknowledged, unwrapAcknowledged } from '../src/store/redis-connect.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const channel = `test:acks:${randomUUID()}`;

t.test('the publisher answers after every receiver applied the event, however slow', async (t) => {
  const redis = new Redis(REDIS_URL);
  const subscribers = [new Redis(REDIS_URL), new Redis(REDIS_URL)];
  t.teardown(() => { redis.disconnect(); for (const subscriber of subscribers) subscriber.disconnect(); });
  const applied: string[] = [];
  for (const [index, subscriber] of subscribers.entries()) {
    await subscriber.subscribe(channel);
    subscriber.on('message', (_channel: string, message: string) => {
      const { nonce, text } = unwrapAcknowledged(message);
      // The second receiver is slow (a busy event loop): the answer must still wait for it.
      setTimeout(() => {
        applied.push(`${index}:${text}`);
        void acknowledge(redis, `${channel}:acks:${nonce}`);
      }, index === 0 ? 0 : 150);
    });
  }
  const nonce = randomUUID();
  await publishAcknowledged(redis, channel, 'change:abc', `${channel}:acks:${nonce}`, nonce);
  t.same(applied.sort(), ['0:change:abc', '1:change:abc'], 'both receivers had applied the event when the change answered');
  t.equal(await redis.exists(`${channel}:acks:${nonce}`), 0, 'the acknowledgements are cleaned up');
});

t.test('nobody listening: the change answers at once; a receiver that never acknowledges holds it at most ACK_WAIT_MS', async (t) => {
  const redis = new Redis(REDIS_URL);
  const silent = new Redis(REDIS_URL);
  t.teardown(() => { redis.disconnect(); silent.disconnect(); });
  const lonely = randomUUID();
  await publishAcknowledged(redis, `${channel}:nobody`, 'change:x', `${channel}:acks:${lonely}`, lonely);
  await silent.subscribe(`${channel}:silent`);
  const nonce = randomUUID();
  const answered = await Promise.race([
    publishAcknowledged(redis, `${channel}:silent`, 'change:y', `${channel}:acks:${nonce}`, nonce).then(() => 'answered'),
    new Promise((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
  ]);
  t.equal(answered, 'answered', 'a lost receiver does not hold the change for ever');
});

t.test('a message without a nonce reads as before', async (t) => {
  t.same(unwrapAcknowledged('byok:user:with:colons'), { nonce: undefined, text: 'byok:user:with:colons' });
  t.same(unwrapAcknowledged('ack n1 revoke:abc'), { nonce: 'n1', text: 'revoke:abc' });
});
