// Balance alerts: the endpoints over real HTTP, and the mail through a real SMTP server: once per
// crossing of the threshold by usage, again after a top-up re-arms it, and nothing lost while the
// SMTP server is down. Alerts mail only an account's verified address (a JWT with
// `email_verified: true`, or `gateway account set-email`); test/alert-delivery.test.ts covers the rest of that rule.
import t from 'tap';
import { createHmac, randomUUID } from 'node:crypto';
import { startGateway, freePort, postJson, type Gateway } from './helpers/harness.js';
import { loadConfig } from '../src/config.js';
import { migrate } from '../src/store/migrate.js';
import { databaseBefore } from './helpers/migrations.js';
import { envelopeProblems, eventually, jwtFor } from './helpers/billing-checks.js';
import { SmtpSink } from './helpers/smtp.js';

const FAST_MAIL = { ALERT_MAIL_POLL_MS: '50', ALERT_MAIL_RETRY_MS: '100' };

let gateway: Gateway;
let sink: SmtpSink;
t.before(async () => {
  sink = await SmtpSink.start();
  gateway = await startGateway({ env: { SMTP_URL: sink.url, ALERT_MAIL_FROM: 'Gateway alerts <alerts@gateway.test>', ALERT_SWEEP_MS: '300', ...FAST_MAIL } });
});
t.teardown(async () => {
  await gateway.close();
  await sink.close();
});

interface AlertRecord {
  id: string; threshold: number; email: string | null; email_source: 'alert' | 'account'; deliverable: boolean; undeliverable_reason: string | null;
  armed: boolean; created_at: string; last_triggered_at: string | null;
}

/** A dashboard JWT with any claims (an `email` claim, `email_verified`), signed with the gateway's secret. */
function jwtWithClaims(user: string, claims: Record<string, unknown>, of: Gateway = gateway): string {
  const secret = loadConfig({ ...process.env, ...of.env }).jwtSecret;
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify({ sub: user, exp: Math.floor(Date.now() / 1000) + 3600, ...claims })).toString('base64url');
  return `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`;
}

/** A JWT whose verified `email` claim is `email` (by default the account id, which is an address here). */
const verifiedJwt = (user: string, email = user, of: Gateway = gateway) => jwtWithClaims(user, { email, email_verified: true }, of);

/** Has `of` store a verified address on the account (any JWT-authenticated request does), before its key is used. */
async function verifyAddress(user: string, email = user, of: Gateway = gateway): Promise<void> {
  const response = await fetch(`${of.url}/api/v1/billing/alerts`, { headers: { authorization: `Bearer ${verifiedJwt(user, email, of)}` } });
  if (response.status !== 200) throw new Error(`verifying ${email}: ${response.status}`);
}

/**
 * The account's stored address and its row version: xmin changes with every write of the row, xmax
 * with every statement that even locks it (an upsert that finds nothing to change still does).
 */
async function accountRow(user: string): Promise<{ email: string | null; xmin: string; xmax: string } | undefined> {
  const [row] = await gateway.sql<{ email: string | null; xmin: string; xmax: string }[]>`select email, xmin::text as xmin, xmax::text as xmax from accounts where id = ${user}`;
  return row;
}

async function call(method: string, path: string, credential: string | undefined, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const headers: Record<string, string> = {};
  if (credential !== undefined) headers.authorization = `Bearer ${credential}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });
  const text = await response.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: response.status, body: parsed, text };
}

const createAlert = (credential: string, body: unknown) => call('POST', '/api/v1/billing/alerts', credential, body);
const listAlerts = async (credential: string) => (await call('GET', '/api/v1/billing/alerts', credential)).body as { data: AlertRecord[]; total: number };
const alertOf = async (credential: string, id: string) => (await listAlerts(credential)).data.find((a) => a.id === id);

/** One gpt-4o-mini call of about 60,000 nano-USD, then waits until the ledger writer wrote it. */
async function spend(key: string, user: string): Promise<void> {
  const response = await postJson(`${gateway.v1}/chat/completions`, key, {
    model: 'openai/gpt-4o-mini', max_tokens: 120, messages: [{ role: 'user', content: 'spend [[mock chunks=100]]' }],
  });
  if (response.status !== 200) throw new Error(`chat call: ${response.status} ${JSON.stringify(response.body)}`);
  await gateway.ledgerSettled(user);
}

/** Calls until the user's credits in Postgres are below `thresholdNano`; returns the calls made. */
async function spendBelow(key: string, user: string, thresholdNano: bigint): Promise<number> {
  let calls = 0;
  while ((await gateway.ledgerSum(user)) >= thresholdNano) {
    if (++calls > 15) throw new Error(`credits of ${user} did not fall below ${thresholdNano} in 15 calls`);
    await spend(key, user);
  }
  return calls;
}

async function outbox(user: string) {
  return gateway.sql<{ alert_id: string | null; recipient: string; attempts: number; sent_at: Date | null; last_error: string | null }[]>`
    select alert_id, recipient, attempts, sent_at, last_error from mail_outbox where user_id = ${user} order by created_at`;
}

const mailsTo = (address: string) => sink.messages.filter((m) => m.to.includes(address));

t.test('create, list and delete', async (t) => {
  const user = 'alice@example.com';
  const token = verifiedJwt(user);
  await gateway.topup(user, '1');

  const first = await createAlert(token, { threshold: 0.5 });
  t.equal(first.status, 201, 'created');
  t.same(Object.keys(first.body).sort(), ['armed', 'created_at', 'deliverable', 'email', 'email_source', 'id', 'last_triggered_at', 'threshold', 'undeliverable_reason'], 'the record has exactly its documented fields');
  t.match(first.body, { threshold: 0.5, email: user, email_source: 'account', deliverable: true, undeliverable_reason: null, armed: true, last_triggered_at: null },
    "the account's verified address is the recipient; armed, as credits (1) are above 0.5");
  t.ok(!Number.isNaN(Date.parse(first.body.created_at)), 'created_at is a timestamp');

  const second = await createAlert(token, { threshold: 2.000000001, email: ' billing@example.com ' });
  t.equal(second.status, 201);
  t.match(second.body, { threshold: 2.000000001, email: 'billing@example.com', email_source: 'alert', armed: false }, 'created disarmed: credits are already below 2 USD');
  t.match(second.body, { deliverable: false, undeliverable_reason: 'address_unverified' }, 'its own address is not the verified one: it would mail no one');
  const [row] = await gateway.sql<{ threshold_nano: bigint }[]>`select threshold_nano from billing_alerts where id = ${second.body.id}`;
  t.equal(row?.threshold_nano, 2_000_000_001n, 'the threshold is kept exactly in nano-USD');

  const listed = await listAlerts(token);
  t.equal(listed.total, 2);
  t.same(listed.data.map((a) => a.id), [second.body.id, first.body.id], 'newest first');
  t.same(listed.data[1], first.body, 'a listed record equals the created one');

  const owner = await gateway.user('alice-key-owner@example.com', '0');
  const key = await gateway.createKey(owner.token, { name: 'automation', is_provisioning: true });
  t.equal((await listAlerts(key)).total, 0, 'a management key lists its own account (none there)');
  const viaKey = await createAlert(key, { threshold: 1 });
  t.equal(viaKey.status, 201, 'a management key may create');
  // Alerts mail addresses and act for the whole account: a regular key neither creates nor lists them (docs/api.md "Credentials and roles").
  t.equal((await createAlert(owner.key, { threshold: 1 })).status, 401, 'a regular key may not create');
  t.equal((await call('GET', '/api/v1/billing/alerts', owner.key)).status, 401, 'nor list');
  t.equal(viaKey.body.armed, false, 'no credits: below the threshold, so disarmed');

  const deleted = await call('DELETE', `/api/v1/billing/alerts/${first.body.id}`, token);
  t.equal(deleted.status, 204, 'deleted: 204');
  t.equal(deleted.text, '', 'with no body');
  t.same((await listAlerts(token)).data.map((a) => a.id), [second.body.id], 'gone from the list');
  const again = await call('DELETE', `/api/v1/billing/alerts/${first.body.id}`, token);
  t.equal(again.status, 404, 'deleting it again: 404');
  t.same(envelopeProblems(again.body, 404), []);
});

t.test('every rejected input', async (t) => {
  const user = 'rejects@example.com';
  const token = jwtFor(gateway, user);

  for (const [method, path] of [['POST', '/api/v1/billing/alerts'], ['GET', '/api/v1/billing/alerts'], ['DELETE', `/api/v1/billing/alerts/${randomUUID()}`]] as const) {
    const anonymous = await call(method, path, undefined, method === 'POST' ? { threshold: 1 } : undefined);
    t.equal(anonymous.status, 401, `${method} without a credential: 401`);
    t.same(envelopeProblems(anonymous.body, 401), []);
    const forged = await call(method, path, 'not-a-jwt', method === 'POST' ? { threshold: 1 } : undefined);
    t.equal(forged.status, 401, `${method} with a bad JWT: 401`);
    const unknownKey = await call(method, path, 'sk-gw-AAAAAAAAAAAA-' + 'B'.repeat(48), method === 'POST' ? { threshold: 1 } : undefined);
    t.equal(unknownKey.status, 401, `${method} with an unknown API key: 401`);
  }

  for (const [name, body] of [['not JSON', '{"threshold": '], ['empty body', ''], ['an array', '[1]'], ['a number', '5']] as const) {
    const r = await createAlert(token, body);
    t.equal(r.status, 400, `${name}: 400`);
    t.same(envelopeProblems(r.body, 400), [], `${name}: envelope`);
  }

  const invalid: [string, unknown, string][] = [
    ['missing threshold', {}, 'threshold'],
    ['threshold a string', { threshold: '5' }, 'threshold'],
    ['threshold null', { threshold: null }, 'threshold'],
    ['threshold zero', { threshold: 0 }, 'threshold'],
    ['threshold negative', { threshold: -1 }, 'threshold'],
    ['threshold below a nano-dollar', { threshold: 1e-10 }, 'threshold'],
    ['threshold too large', { threshold: 1e10 }, 'threshold'],
    ['email not a string', { threshold: 1, email: 5 }, 'email'],
    ['email not an address', { threshold: 1, email: 'nobody' }, 'email'],
    ['email empty', { threshold: 1, email: '' }, 'email'],
    ['an unknown field', { threshold: 1, currency: 'EUR' }, 'currency'],
  ];
  for (const [name, body, param] of invalid) {
    const r = await createAlert(token, body);
    t.equal(r.status, 422, `${name}: 422`);
    t.same(envelopeProblems(r.body, 422), [], `${name}: envelope`);
    t.equal(r.body?.error?.param, param, `${name}: names ${param}`);
  }

  const plain = jwtFor(gateway, 'plain-user');
  const noAddress = await createAlert(plain, { threshold: 1 });
  t.equal(noAddress.status, 201, 'an account without an address (id not one, no email claim, none set), and no email: created');
  t.match(noAddress.body, { email: null, email_source: 'account', deliverable: false, undeliverable_reason: 'no_address' }, 'saying it has nowhere to mail');
  const created = await createAlert(plain, { threshold: 1, email: 'plain@example.com' });
  t.equal(created.status, 201, 'with an email it is created');
  t.match(created.body, { email: 'plain@example.com', email_source: 'alert', deliverable: false, undeliverable_reason: 'address_unverified' });

  t.equal((await listAlerts(token)).total, 0, 'nothing was created by the rejected requests');

  for (let i = 1; i <= 20; i++) t.equal((await createAlert(token, { threshold: i })).status, 201, `alert ${i} of 20`);
  const tooMany = await createAlert(token, { threshold: 21 });
  t.equal(tooMany.status, 422, 'the 21st: 422');
  t.equal(tooMany.body?.error?.code, 'alert_limit_reached');
  t.same(envelopeProblems(tooMany.body, 422), []);
  t.equal((await listAlerts(token)).total, 20, 'still 20');

  const own = (await listAlerts(token)).data[0]!;
  for (const [name, id] of [['malformed id', 'not-a-uuid'], ['unknown id', randomUUID()]] as const) {
    const r = await call('DELETE', `/api/v1/billing/alerts/${id}`, token);
    t.equal(r.status, 404, `${name}: 404`);
    t.same(envelopeProblems(r.body, 404), []);
  }
  const other = jwtFor(gateway, 'intruder@example.com');
  const theirs = await call('DELETE', `/api/v1/billing/alerts/${own.id}`, other);
  t.equal(theirs.status, 404, "another user's alert: 404");
  t.equal(theirs.body?.error?.code, 'not_found', 'the same answer as for an unknown id');
  t.equal((await listAlerts(other)).total, 0, 'another user lists none of them');
  t.ok(await alertOf(token, own.id), 'the alert is still there for its owner');
});

t.test('usage crossing a threshold mails once per crossing; a top-up re-arms it', async (t) => {
  const user = 'carol@example.com';
  const { token, key } = await gateway.user(user, '0.001');
  await verifyAddress(user);
  // The lower alert names its own address: the account's verified one, written in other case.
  const own = 'Carol@Example.com';
  const high = await createAlert(token, { threshold: 0.0009 });
  const low = await createAlert(token, { threshold: 0.0006, email: own });
  t.equal(high.status, 201);
  t.equal(low.status, 201);
  t.ok(high.body.armed && low.body.armed, 'both armed: credits 0.001 are above both');
  t.ok(high.body.deliverable && low.body.deliverable, 'both deliverable');

  const first = await spendBelow(key, user, 900_000n);
  t.ok(first >= 1, `credits fell below 0.0009 after ${first} call(s)`);
  const [mail] = await sink.waitFor(1);
  t.same(mail!.to, [user], 'mailed to the account address');
  t.equal(mail!.from, 'alerts@gateway.test', 'from ALERT_MAIL_FROM');
  t.match(mail!.subject, /fell below 0\.0009 USD/, 'the subject names the threshold');
  const credits = await gateway.ledgerSum(user);
  const creditsText = (Number(credits) / 1e9).toFixed(9).replace(/0+$/, '');
  t.match(mail!.text, `Account:    ${user}`, 'the body names the account');
  t.match(mail!.text, 'Threshold:  0.0009 USD', 'the threshold');
  t.match(mail!.text, `Credits:    ${creditsText} USD`, 'and the credits when it fired');
  t.match(mail!.text, `Alert id:   ${high.body.id}`);
  t.match(mail!.raw, /^Content-Type: text\/plain/im, 'plain text');
  const fired = await alertOf(token, high.body.id);
  t.equal(fired?.armed, false, 'disarmed after firing');
  t.ok(fired?.last_triggered_at, 'last_triggered_at set');
  t.equal((await alertOf(token, low.body.id))?.armed, true, 'the lower alert is still armed');

  // More usage below 0.0009 down past 0.0006: the lower alert's mail proves every write before it was evaluated.
  const more = await spendBelow(key, user, 600_000n);
  t.ok(more >= 2, `${more} more calls, all below the first threshold`);
  await sink.waitFor(2);
  const rows = await outbox(user);
  t.same(rows.map((r) => r.alert_id), [high.body.id, low.body.id], 'one outbox row per alert: no second mail for the first');
  await eventually('both outbox rows to be sent', async () => ((await outbox(user)).every((r) => r.sent_at !== null) ? true : undefined));
  const byThreshold = (usd: string) => sink.messages.filter((m) => m.subject.includes(`fell below ${usd} USD`));
  t.same(byThreshold('0.0009').map((m) => m.to), [[user]], 'the account address got one mail');
  // (The mail client may normalise the case of the address; the outbox keeps the alert's own.)
  t.same(byThreshold('0.0006').map((m) => m.to.map((to) => to.toLowerCase())), [[user]], 'the lower alert mailed its own address once');
  t.equal(rows[1]?.recipient, own, "to the alert's own address");

  // A top-up above both thresholds re-arms them before the CLI returns.
  await gateway.topup(user, '0.0006');
  const rearmed = await listAlerts(token);
  t.same(rearmed.data.map((a) => a.armed), [true, true], 'both re-armed by the top-up');

  const freshKey = await gateway.createKey(token); // a new rate window for the next calls
  await spendBelow(freshKey, user, 900_000n);
  const third = (await sink.waitFor(3))[2]!;
  t.same(third.to, [user], 'the next drop below 0.0009 mails again');
  t.match(third.subject, /fell below 0\.0009 USD/);
  t.equal((await outbox(user)).length, 3, 'three mails in all');
  t.equal((await alertOf(token, low.body.id))?.armed, true, 'the lower alert stays armed (credits above 0.0006)');

  // The SMTP server has the mail a moment before the sender records it as sent and counts it.
  const sent = await eventually('the sent mails to be counted', async () => {
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    const counted = Number(/^gateway_alert_mails_sent_total (\d+)$/m.exec(metrics)?.[1]);
    return counted >= 3 ? counted : undefined;
  });
  t.ok(sent >= 3, `gateway_alert_mails_sent_total counts the mails (${sent})`);
});

t.test("a threshold-only alert mails the account's verified address: the JWT email claim, or gateway account set-email", async (t) => {
  const user = 'acct-grace'; // not an address itself
  const token = verifiedJwt(user, 'grace@example.com');
  await gateway.topup(user, '0.001');
  const key = await gateway.createKey(token);

  const alert = await createAlert(token, { threshold: 0.0009 });
  t.equal(alert.status, 201, 'threshold only: created, the address comes from the token');
  t.match(alert.body, { threshold: 0.0009, email: 'grace@example.com', email_source: 'account', deliverable: true, armed: true });
  const stored = await accountRow(user);
  t.equal(stored?.email, 'grace@example.com', 'the claim is stored on the account');

  for (let i = 0; i < 5; i++) t.equal((await call('GET', '/api/v1/billing/alerts', token)).status, 200);
  t.same(await accountRow(user), stored, 'the same claim again costs no statement: the row is neither rewritten nor locked');
  t.equal((await call('GET', '/api/v1/billing/alerts', jwtFor(gateway, user))).status, 200);
  t.equal((await accountRow(user))?.email, 'grace@example.com', 'a token without the claim leaves the address alone');
  t.equal((await call('GET', '/api/v1/billing/alerts', jwtWithClaims(user, { email: 'not-an-address' }))).status, 200, 'a claim that is not an address is ignored, the token still valid');
  t.equal((await call('GET', '/api/v1/billing/alerts', jwtWithClaims(user, { email: 'other@example.com', email_verified: false }))).status, 200);
  t.same(await accountRow(user), stored, 'nor does an invalid or disowned claim change it');
  t.equal((await call('GET', '/api/v1/billing/alerts', jwtWithClaims(user, { email: 'other@example.com' }))).status, 200);
  t.equal((await accountRow(user))?.email, 'grace@example.com', 'nor an unverified claim: the verified address keeps the mail');

  // The address changes after the alert was created: the mail goes where the account's address is when it fires.
  const moved = verifiedJwt(user, 'grace.new@example.com');
  const listed = await listAlerts(moved);
  t.equal((await accountRow(user))?.email, 'grace.new@example.com', 'a token with a new claim updates the account');
  t.match(listed.data[0], { id: alert.body.id, email: 'grace.new@example.com', email_source: 'account', deliverable: true }, 'the alert follows it');
  await spendBelow(key, user, 900_000n);
  const mail = await eventually('the alert mail', () => mailsTo('grace.new@example.com')[0]);
  t.match(mail.subject, /fell below 0\.0009 USD/);
  t.equal(mailsTo('grace@example.com').length, 0, 'nothing to the old address');
  const [row] = await outbox(user);
  t.equal(row?.recipient, 'grace.new@example.com', 'the outbox row names the address at firing');

  // An account whose tokens carry no claim gets its address from the operator; a management key then works too.
  const henry = 'acct-henry';
  const henryToken = await gateway.token(henry);
  const henryKey = await gateway.createKey(henryToken, { name: 'automation', is_provisioning: true });
  const early = await createAlert(henryKey, { threshold: 1 });
  t.equal(early.status, 201, 'no address yet: created all the same');
  t.match(early.body, { email: null, deliverable: false, undeliverable_reason: 'no_address' }, 'saying it has nowhere to mail yet');
  t.match(await gateway.cli('account', 'set-email', '--user', henry, '--email', 'henry@example.com'), /henry@example\.com/);
  t.match(await alertOf(henryKey, early.body.id), { email: 'henry@example.com', deliverable: true, undeliverable_reason: null }, 'the earlier alert mails once the operator set an address');
  const viaKey = await createAlert(henryKey, { threshold: 1 });
  t.equal(viaKey.status, 201, 'created through a management key');
  t.match(viaKey.body, { email: 'henry@example.com', email_source: 'account', deliverable: true, armed: false });
});

t.test('migration 0007: an alert that copied its account id follows the account from then on', async (t) => {
  const sql = await databaseBefore(t, '0007');
  await sql`insert into accounts (id) values ('old@example.com')`;
  const copied = randomUUID();
  const own = randomUUID();
  await sql`insert into billing_alerts (id, user_id, threshold_nano, email, armed) values (${copied}, 'old@example.com', 1, 'old@example.com', true), (${own}, 'old@example.com', 1, 'team@example.com', true)`;
  t.equal((await migrate(sql))[0], '0007_account_email_retention.sql', 'then 0007 (and the later ones)');
  const rows = await sql<{ id: string; email: string | null }[]>`select id, email from billing_alerts`;
  t.same(Object.fromEntries(rows.map((r) => [r.id, r.email])), { [copied]: null, [own]: 'team@example.com' }, 'the copied id now follows the account; an own address stays');
});

t.test('the sweep mails for a crossing no evaluation saw, and a coupon re-arms', async (t) => {
  const user = 'dave@example.com';
  const token = verifiedJwt(user);
  await gateway.topup(user, '0.001');
  const alert = await createAlert(token, { threshold: 0.0005 });
  t.equal(alert.body.armed, true);
  // As if a gateway died between the ledger commit and its evaluation.
  await gateway.sql`insert into transactions (id, user_id, credits_nano, payment_method) values (${randomUUID()}, ${user}, -600000, 'usage')`;
  const mail = await eventually('the sweep to mail dave', () => mailsTo(user)[0]);
  t.match(mail.text, 'Credits:    0.0004 USD', 'the credits after the missed charge');
  t.equal((await alertOf(token, alert.body.id))?.armed, false);

  const code = await gateway.cli('coupon', 'create', '--credits', '0.001');
  const redeemed = await call('POST', '/api/v1/billing/coupons/redeem', token, { code });
  t.equal(redeemed.status, 200);
  t.equal((await alertOf(token, alert.body.id))?.armed, true, 'armed again as the redemption answers');
  t.equal(mailsTo(user).length, 1, 'a rise never mails');
});

t.test('an SMTP outage delays the mail but loses nothing', async (t) => {
  const port = await freePort(); // nothing listens here until the sink starts
  const down = await startGateway({ mock: gateway.mock, env: { SMTP_URL: `smtp://127.0.0.1:${port}`, ...FAST_MAIL } });
  let late: SmtpSink | undefined;
  t.teardown(async () => {
    await down.close();
    await late?.close();
  });
  const user = 'erin@example.com';
  const { token, key } = await down.user(user, '0.0001');
  await verifyAddress(user, user, down);
  const alert = await postJson(`${down.url}/api/v1/billing/alerts`, token, { threshold: 0.0001 });
  t.equal(alert.status, 201);
  t.equal(alert.body.armed, true, 'armed: credits equal the threshold');

  const response = await postJson(`${down.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi [[mock chunks=5]]' }] });
  t.equal(response.status, 200);
  const failed = await eventually('a failed attempt on the outbox row', async () => {
    const [row] = await down.sql<{ attempts: number; sent_at: Date | null; last_error: string | null }[]>`select attempts, sent_at, last_error from mail_outbox where user_id = ${user}`;
    return row && row.attempts > 0 && row.last_error ? row : undefined;
  });
  t.equal(failed.sent_at, null, 'not sent');
  t.ok(failed.last_error, `the error is recorded: ${failed.last_error}`);

  late = await SmtpSink.start(port);
  const [mail] = await late.waitFor(1);
  t.same(mail!.to, [user], 'the queued mail arrives once the server is up');
  t.match(mail!.text, 'Threshold:  0.0001 USD');
  const sent = await eventually('the row to be marked sent', async () => {
    const [row] = await down.sql<{ attempts: number; sent_at: Date | null }[]>`select attempts, sent_at from mail_outbox where user_id = ${user}`;
    return row?.sent_at ? row : undefined;
  });
  t.ok(sent.attempts >= 2, `sent on attempt ${sent.attempts}`);
  t.equal(late.messages.length, 1, 'exactly one mail');
  // The row is marked sent a moment before the sender counts it.
  const metrics = await eventually('the sent mail to be counted', async () => {
    const text = await (await fetch(`${down.url}/metrics`)).text();
    return /^gateway_alert_mails_sent_total [1-9]/m.test(text) ? text : undefined;
  });
  t.ok(Number(/^gateway_alert_mail_failures_total (\d+)$/m.exec(metrics)?.[1]) >= 1, 'failures counted');
  t.match(metrics, /^gateway_alert_mails_sent_total 1$/m, 'one sent');
});

t.test('without SMTP_URL mails stay queued and one warning says so', async (t) => {
  const quiet = await startGateway({ mock: gateway.mock });
  t.teardown(() => quiet.close());
  const user = 'frank@example.com';
  const { token, key } = await quiet.user(user, '0.0001');
  await verifyAddress(user, user, quiet);
  t.equal((await postJson(`${quiet.url}/api/v1/billing/alerts`, token, { threshold: 0.0001 })).status, 201);
  t.equal((await postJson(`${quiet.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi [[mock chunks=5]]' }] })).status, 200);
  const row = await eventually('the queued mail', async () => (await quiet.sql<{ attempts: number; sent_at: Date | null }[]>`select attempts, sent_at from mail_outbox where user_id = ${user}`)[0]);
  t.same(row, { attempts: 0, sent_at: null }, 'queued, never attempted');
  t.equal(quiet.output.split('SMTP_URL is not set').length - 1, 1, 'warned once');
});
