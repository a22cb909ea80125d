import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway.close());

t.test('an unreadable ledger event keeps its charge and does not stop the writer', async (t) => {
  const { key } = await gateway.user('poisoned', '1');
  const user = 'poisoned';
  const poisonId = randomUUID();
  // As settle.lua would have appended it, but with an event that is not JSON.
  await gateway.redis.xadd(`${gateway.prefix}{u:${user}}:ledger`, '*', 'r', poisonId, 'c', '123', 'e', '{not json');
  await gateway.redis.sadd(`${gateway.prefix}ledger:dirty`, user);
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
