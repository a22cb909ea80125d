// Re-sending a key's unchanged credit_limit or credit_reset_interval (a dashboard saving its form
// again) keeps the key's period and what it spent in it (issue 24, item 13); a changed value starts a
// new period, as before.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser, newestKeyId, updateKey } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } });
});
t.teardown(() => gateway.close());

const CHAT = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 };

t.test('an unchanged credit_limit or interval sent again keeps credit_used; a changed one resets it', async (t) => {
  const user = 'resave';
  const { token, key } = await fastUser(gateway, user, '1');
  const id = await newestKeyId(gateway.url, token);
  const set = await updateKey(gateway.url, token, id, { credit_limit: 0.5, credit_reset_interval: 'monthly' });
  t.equal(set.credit_used, 0);
  for (let i = 0; i < 2; i++) t.equal((await postJson(`${gateway.v1}/chat/completions`, key, CHAT)).status, 200);
  await gateway.ledgerSettled(user);
  const used = (await updateKey(gateway.url, token, id, { name: 'renamed' })).credit_used as number;
  t.ok(used > 0, `the calls count against the limit (${used} USD)`);

  for (const resent of [{ credit_limit: 0.5 }, { credit_reset_interval: 'monthly' }, { credit_limit: 0.5, credit_reset_interval: 'monthly', name: 'form' }]) {
    const after = await updateKey(gateway.url, token, id, resent);
    t.equal(after.credit_used, used, `${JSON.stringify(resent)} sent again keeps credit_used`);
    t.equal(after.credit_limit, 0.5);
  }

  const raised = await updateKey(gateway.url, token, id, { credit_limit: 0.6 });
  t.equal(raised.credit_used, 0, 'a new limit starts a new period');
  t.equal((await postJson(`${gateway.v1}/chat/completions`, key, CHAT)).status, 200);
  await gateway.ledgerSettled(user);
  const usedAgain = (await updateKey(gateway.url, token, id, { name: 'x' })).credit_used as number;
  t.ok(usedAgain > 0);
  t.equal((await updateKey(gateway.url, token, id, { credit_reset_interval: 'daily' })).credit_used, 0, 'a new interval starts a new period');
  t.equal((await updateKey(gateway.url, token, id, { credit_limit: null })).credit_limit, null, 'the limit can still be removed');
});
