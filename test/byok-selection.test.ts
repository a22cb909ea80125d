// BYOK at call time, as the spec states it: candidates by priority then newest, disabled rows
// skipped, each tried once with last_used_at/last_error kept, the platform credential as fallback
// unless a row says always_use, calls on a user's own credential never reserved nor charged (rate
// limits still apply), a deleted row skipped by the next call, and the spec's rotation pattern.
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, mintToken, rawRequest } from './helpers/http-tools.js';
import { leasesClosed, moneyView, sseData } from './helpers/billing-checks.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET } }); });
t.teardown(() => gateway?.close());

const PLATFORM = 'Bearer test-openai-key';

async function addCredential(token: string, body: Record<string, unknown>): Promise<any> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ provider: 'openai', ...body }),
  });
  if (response.status !== 201) throw new Error(`create byok: ${response.status} ${response.text}`);
  return response.body;
}

async function credentials(token: string): Promise<Map<string, any>> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok?provider=openai`, { headers: { authorization: `Bearer ${token}` } });
  return new Map((response.body as any[]).map((row) => [row.label, row]));
}

async function changeCredential(token: string, id: string, method: 'PUT' | 'DELETE', body?: Record<string, unknown>): Promise<void> {
  const response = await rawRequest(`${gateway.url}/api/v1/byok/${id}`, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (response.status !== (method === 'DELETE' ? 204 : 200)) throw new Error(`${method} byok: ${response.status} ${response.text}`);
}

/** A chat call; returns its answer and the Authorization headers the upstream saw for it, in order. */
async function chat(key: string, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any; text: string; headers: any; tried: string[] }> {
  const before = gateway.mock.requests().length;
  const response = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello [[mock chunks=3]]' }], max_tokens: 10, ...extra }),
  });
  const tried = gateway.mock.requests().slice(before).map((record) => record.authorization ?? '');
  return { status: response.status, body: response.body, text: response.text, headers: response.headers, tried };
}

t.test('candidates in order (priority, then newest), each tried once; failures recorded; the first that works serves, uncharged', async (t) => {
  const user = 'byok-order';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  await addCredential(token, { label: 'old-good', api_key: 'sk-old-good-0001', priority: 0 });
  await addCredential(token, { label: 'new-revoked', api_key: 'sk-new-revoked-0002', priority: 0 });
  await addCredential(token, { label: 'high-revoked', api_key: 'sk-high-revoked-0003', priority: 5 });
  await addCredential(token, { label: 'disabled-top', api_key: 'sk-disabled-top-0004', priority: 100, disabled: true });
  const before = await moneyView(gateway, user);

  const answer = await chat(key);
  t.equal(answer.status, 200, 'served');
  // The three records are written without the answer waiting, each on its own connection: wait for all of them.
  await eventually(async () => {
    const recorded = await credentials(token);
    return Boolean(recorded.get('old-good').last_used_at && recorded.get('high-revoked').last_error && recorded.get('new-revoked').last_error);
  });
  t.same(answer.tried, ['Bearer sk-high-revoked-0003', 'Bearer sk-new-revoked-0002', 'Bearer sk-old-good-0001'],
    'priority first, then the newer of equal priority; the disabled row never tried; the platform key not used');
  const rows = await credentials(token);
  t.match(rows.get('high-revoked').last_error, /401/, 'a failure records last_error');
  t.match(rows.get('new-revoked').last_error, /401/);
  t.equal(rows.get('old-good').last_error, null);
  t.ok(rows.get('old-good').last_used_at, 'the success advances last_used_at');
  t.equal(rows.get('high-revoked').last_used_at, null);

  await gateway.ledgerSettled(user);
  const after = await leasesClosed(gateway, user);
  t.equal(after.credits, before.credits, 'a call on the user\'s own credential is not charged');
  t.equal(after.usageTransactions, 0, 'no transaction');
  t.equal(after.held, 0n, 'nothing held');
  const [log] = await gateway.sql<{ cost_nano: bigint; reserved_nano: bigint; status: number }[]>`
    select cost_nano, reserved_nano, status from request_logs where id = ${answer.headers['x-request-id']}`;
  t.same(log, { cost_nano: 0n, reserved_nano: 0n, status: 200 }, 'its request log: served, nothing reserved or charged');
});

t.test('all own credentials fail: the platform credential serves and the call is charged; with always_use the upstream error comes back', async (t) => {
  const user = 'byok-fallback';
  const { key } = await fastUser(gateway, user, '1');
  const token = mintToken(user);
  const revoked = await addCredential(token, { label: 'revoked', api_key: 'sk-revoked-0001' });
  const before = await moneyView(gateway, user);

  const fallback = await chat(key);
  t.equal(fallback.status, 200, 'served by the platform');
  t.same(fallback.tried, ['Bearer sk-revoked-0001', PLATFORM], 'after the one candidate, the platform credential');
  await gateway.ledgerSettled(user);
  const charged = await moneyView(gateway, user);
  t.equal(charged.usageTransactions, before.usageTransactions + 1, 'charged once');
  const [row] = await gateway.sql<{ id: string }[]>`select id::text from transactions where user_id = ${user} and payment_method = 'usage'`;
  t.equal(row!.id, fallback.headers['x-request-id'], 'x-request-id names the charge');

  await changeCredential(token, revoked.id, 'PUT', { always_use: true });
  const refused = await chat(key);
  t.same(refused.tried, ['Bearer sk-revoked-0001'], 'always_use: no fallback');
  assertEnvelope(t, { status: refused.status, body: refused.body }, 401, undefined, 'the upstream\'s own status');
  t.match(refused.body.msg, /Incorrect API key provided/, 'and its message');
  await gateway.ledgerSettled(user);
  t.equal((await moneyView(gateway, user)).usageTransactions, charged.usageTransactions, 'nothing charged');

  await changeCredential(token, revoked.id, 'PUT', { disabled: true });
  const disabledOnly = await chat(key);
  t.equal(disabledOnly.status, 502, 'a disabled always_use row still forbids the fallback, with no candidate left');
  t.same(disabledOnly.tried, [], 'nothing was tried');
});

t.test('a deleted row is skipped by the next call; the rotation pattern works as the spec writes it', async (t) => {
  const user = 'byok-rotate';
  const { key } = await fastUser(gateway, user, '0');
  const token = mintToken(user);
  const old = await addCredential(token, { label: 'old', api_key: 'sk-rotate-old-0001' });
  t.same((await chat(key)).tried, ['Bearer sk-rotate-old-0001'], 'the only credential serves (a user with no credit: nothing is reserved)');
  const fresh = await addCredential(token, { label: 'new', api_key: 'sk-rotate-new-0002' });
  const rotated = await chat(key);
  t.same(rotated.tried, ['Bearer sk-rotate-new-0002'], 'the new one sorts first at equal priority (newer)');
  // last_used_at is written just after the answer, not before it.
  t.ok(await eventually(async () => Boolean((await credentials(token)).get('new').last_used_at)), "the new row's last_used_at advanced: the rotation is verified");
  await changeCredential(token, old.id, 'DELETE');
  await changeCredential(token, fresh.id, 'DELETE');
  const none = await chat(key);
  assertEnvelope(t, { status: none.status, body: none.body }, 402, 'insufficient_credits', 'with both deleted the next call is a platform call, which needs credit');
  t.same(none.tried, [], 'refused before any upstream call');
});

t.test('streams through an own credential; rate limits still apply', async (t) => {
  const user = 'byok-stream';
  const { key } = await fastUser(gateway, user, '0');
  await addCredential(mintToken(user), { label: 'mine', api_key: 'sk-stream-0001' });
  const streamed = await chat(key, { stream: true });
  t.equal(streamed.status, 200);
  t.equal(sseData(streamed.text).at(-1), '[DONE]', 'a whole stream');
  t.same(streamed.tried, ['Bearer sk-stream-0001']);
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) statuses.push((await chat(key)).status);
  t.equal(statuses.filter((s) => s === 200).length, 19, 'the default window of 20 per 10 s counts own-credential calls too');
  t.equal(statuses.at(-1), 429);
  const money = await leasesClosed(gateway, user);
  t.equal(money.credits, 0n, 'never charged');
});
