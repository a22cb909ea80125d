import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { sleep } from './helpers/http-tools.js';
import { RedisKeys } from '../src/admission/keys.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

t.test('an unreadable ledger event keeps its charge and does not stop the writer', async (t) => {
  const { key } = await gateway.user('poisoned', '1');
  const user = 'poisoned';
  const poisonId = randomUUID();
  // As settle.lua would have appended it, but with an event that is not JSON.
  await gateway.redis.xadd(`${gateway.prefix}{u:${user}}:ledger`, '*', 'r', poisonId, 'c', '123', 'e', '{not json');
  await gateway.redis.sadd(new RedisKeys(gateway.prefix).ledgerDirtyOf(user), user);
  const response = await postJson(`${gateway.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[mock chunks=2]]' }] });
  t.equal(response.status, 200);
  await gateway.ledgerSettled(user);
  const rows = await gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by created_at`;
  t.equal(rows.length, 2, 'the poisoned entry and the normal call are both written');
  t.ok(rows.some((row) => row.id === poisonId && row.credits_nano === -123n), 'the charge carried by the entry itself is kept');
  const logs = await gateway.sql<{ n: bigint }[]>`select count(*)::bigint as n from request_logs where user_id = ${user}`;
  t.equal(logs[0]!.n, 1n, 'only the readable event has a request log');
  t.match(gateway.output, /ledger event unreadable: its charge is kept/, 'the operator is told');
  const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
  t.match(metrics, /^gateway_ledger_unreadable_events_total 1$/m);
});

t.test('an idle ledger writer slows down, and the first settlement after a quiet spell wakes it', async (t) => {
  const quiet = await startGateway({ env: { LEDGER_IDLE_POLL_MS: '60000' } });
  t.teardown(() => quiet.close());
  const user = 'quiet';
  const { key } = await quiet.user(user, '1');
  const stream = `${quiet.prefix}{u:${user}}:ledger`;
  // As another gateway process's settle.lua would append an entry: its threads cannot wake this writer.
  const appendElsewhere = async () => {
    const id = randomUUID();
    await quiet.redis.xadd(stream, '*', 'r', id, 'c', '123', 'e', '{not json');
    await quiet.redis.sadd(new RedisKeys(quiet.prefix).ledgerDirtyOf(user), user);
    return id;
  };
  const first = await appendElsewhere();
  const until = Date.now() + 30_000;
  while ((await quiet.redis.xlen(stream)) > 0 && Date.now() < until) await sleep(10);
  t.equal(await quiet.redis.xlen(stream), 0, 'an entry from elsewhere is written');
  // From that pass on the pauses double (0.1, 0.2, 0.4 ... 6.4 s): between 6.3 and 12.7 s after it the writer sleeps.
  await sleep(8000);
  const second = await appendElsewhere();
  await sleep(800);
  t.equal(await quiet.redis.xlen(stream), 1, 'an idle writer does not look every 100 ms');
  const response = await postJson(`${quiet.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi [[mock chunks=2]]' }] });
  t.equal(response.status, 200);
  await quiet.ledgerSettled(user, 3000);
  const rows = await quiet.sql<{ id: string }[]>`select id from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(rows.length, 3, "the call's settlement woke the writer, which wrote its entry and the waiting one long before the pause would end");
  t.ok(rows.some((row) => row.id === first) && rows.some((row) => row.id === second));
});
