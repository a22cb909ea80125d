// Balance alerts over real HTTP and a real SMTP server: an alert needs only a threshold (it says when it
// has nowhere to mail yet), and mails only an address proven to be the account's: a JWT's email claim
// marked `email_verified: true`, or `gateway account set-email`. An unverified claim, an account id that
// looks like an address, or an alert's own address that is not the verified one get no mail, and the
// alert record says why.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, forgeJwt } from './helpers/http-tools.js';
import { eventually } from './helpers/billing-checks.js';
import { SmtpSink } from './helpers/smtp.js';
import { migrate } from '../src/store/migrate.js';
import { databaseBefore } from './helpers/migrations.js';

let gateway: Gateway;
let sink: SmtpSink;
t.before(async () => {
  sink = await SmtpSink.start();
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, SMTP_URL: sink.url, ALERT_MAIL_POLL_MS: '50', ALERT_MAIL_RETRY_MS: '100' } });
});
t.teardown(async () => {
  await gateway?.close();
  await sink?.close();
});

interface AlertRecord {
  id: string; threshold: number; email: string | null; email_source: string; deliverable: boolean; undeliverable_reason: string | null;
  armed: boolean; last_triggered_at: string | null;
}

/** A dashboard JWT for `user` with any extra claims (`email`, `email_verified`). */
function jwt(user: string, claims: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  return forgeJwt(TEST_JWT_SECRET, { sub: user, iat: now, exp: now + 3600, ...claims });
}

async function createAlert(token: string, body: unknown): Promise<{ status: number; body: any }> {
  return postJson(`${gateway.url}/api/v1/billing/alerts`, token, body);
}

async function alertOf(token: string, id: string): Promise<AlertRecord | undefined> {
  const response = await fetch(`${gateway.url}/api/v1/billing/alerts`, { headers: { authorization: `Bearer ${token}` } });
  return ((await response.json()) as { data: AlertRecord[] }).data.find((alert) => alert.id === id);
}

/** One chat call (about 60,000 nano-USD) through `key`, written to the ledger before it returns. */
async function spend(key: string, user: string): Promise<void> {
  const response = await postJson(`${gateway.v1}/chat/completions`, key, {
    model: 'openai/gpt-4o-mini', max_tokens: 120, messages: [{ role: 'user', content: 'spend [[mock chunks=100]]' }],
  });
  if (response.status !== 200) throw new Error(`chat call: ${response.status} ${JSON.stringify(response.body)}`);
  await gateway.ledgerSettled(user);
}

/**
 * Spends below the alert's threshold and waits until it fired (disarmed with last_triggered_at). A
 * firing and its mail are queued in one transaction, so the outbox is complete for it from then on.
 */
async function crossBelow(token: string, key: string, user: string, alertId: string): Promise<AlertRecord> {
  for (let calls = 0; (await gateway.ledgerSum(user)) >= THRESHOLD_NANO; calls++) {
    if (calls === 10) throw new Error(`the credits of ${user} did not fall below the threshold in 10 calls`);
    await spend(key, user);
  }
  return eventually(`alert ${alertId} to fire`, async () => {
    const alert = await alertOf(token, alertId);
    return alert && !alert.armed && alert.last_triggered_at ? alert : undefined;
  });
}

async function outboxOf(user: string): Promise<{ alert_id: string | null; recipient: string }[]> {
  return gateway.sql<{ alert_id: string | null; recipient: string }[]>`select alert_id, recipient from mail_outbox where user_id = ${user} order by created_at`;
}

const THRESHOLD_NANO = 1_000_000n;

/** A user with 0.001 USD, a regular key and an alert at 0.001 USD (armed: one call crosses it). */
async function userWithAlert(user: string, token: string, alertBody: Record<string, unknown> = {}): Promise<{ key: string; alert: any }> {
  await gateway.topup(user, '0.001');
  const key = await gateway.createKey(token);
  const alert = await createAlert(token, { threshold: 0.001, ...alertBody });
  if (alert.status !== 201) throw new Error(`alert: ${alert.status} ${JSON.stringify(alert.body)}`);
  return { key, alert: alert.body };
}

t.test('a threshold alone creates an alert on an account without an address; it mails once the operator sets one', async (t) => {
  const user = 'acct-nomail';
  const token = jwt(user);
  const { key, alert } = await userWithAlert(user, token);
  t.match(alert, { threshold: 0.001, email: null, email_source: 'account', deliverable: false, undeliverable_reason: 'no_address', armed: true },
    'created (201), saying it has nowhere to mail yet');

  t.match(await gateway.cli('account', 'set-email', '--user', user, '--email', 'nomail@example.com'), /nomail@example\.com/);
  t.match(await alertOf(token, alert.id), { email: 'nomail@example.com', deliverable: true, undeliverable_reason: null }, 'the address an operator set is verified');
  await crossBelow(token, key, user, alert.id);
  const mail = await eventually('the mail', () => sink.messages.find((m) => m.to.includes('nomail@example.com')));
  t.match(mail.subject, /fell below 0\.001 USD/, 'the alert mailed the address set after it was created');
});

t.test('an unverified email claim is stored but not mailed; the same address verified by a later token is', async (t) => {
  const user = 'acct-unverified';
  const address = 'unverified@example.com';
  const token = jwt(user, { email: address });
  const { key, alert } = await userWithAlert(user, token);
  t.match(alert, { email: address, email_source: 'account', deliverable: false, undeliverable_reason: 'address_unverified' }, 'the record says the address is not verified');

  const fired = await crossBelow(token, key, user, alert.id);
  t.equal(fired.deliverable, false);
  t.same(await outboxOf(user), [], 'the alert fired and queued no mail');
  t.notOk(sink.messages.some((m) => m.to.includes(address)), 'nothing reached the address');

  const verified = jwt(user, { email: address, email_verified: true });
  t.match(await alertOf(verified, alert.id), { email: address, deliverable: true, undeliverable_reason: null }, 'a token marking the claim verified makes it deliverable');
  await gateway.topup(user, '0.0001'); // back above the threshold: re-arms the alert
  t.equal((await alertOf(verified, alert.id))?.armed, true, 're-armed');
  await crossBelow(verified, key, user, alert.id);
  t.same((await outboxOf(user)).map((row) => row.recipient), [address], 'the next crossing mails the verified address');
  await eventually('the mail', () => sink.messages.find((m) => m.to.includes(address)));

  // A later token with an unverified claim for another address does not take the mail away.
  t.equal((await alertOf(jwt(user, { email: 'someone-else@example.com' }), alert.id))?.email, address, 'an unverified claim never replaces a verified address');
});

t.test('an account id that looks like an address is never mailed', async (t) => {
  const user = 'victim@example.com'; // the id of an account, chosen by whoever signs tokens: not proof of anything
  const token = jwt(user);
  const { key, alert } = await userWithAlert(user, token);
  t.match(alert, { email: null, deliverable: false, undeliverable_reason: 'no_address' }, 'the id is not taken for an address');
  await crossBelow(token, key, user, alert.id);
  t.same(await outboxOf(user), [], 'no mail queued');
  t.notOk(sink.messages.some((m) => m.to.includes(user)), 'nothing reached it');
});

t.test("an alert's own address is mailed only when it is the account's verified address", async (t) => {
  const user = 'acct-owner';
  const token = jwt(user, { email: 'owner@example.com', email_verified: true });
  const { key, alert: stranger } = await userWithAlert(user, token, { email: 'stranger@example.com' });
  t.match(stranger, { email: 'stranger@example.com', email_source: 'alert', deliverable: false, undeliverable_reason: 'address_unverified' },
    'an address the account never proved: not deliverable');
  const own = await createAlert(token, { threshold: 0.001, email: 'OWNER@example.com' });
  t.match(own.body, { email: 'OWNER@example.com', email_source: 'alert', deliverable: true }, 'its verified address (in any case) is');

  await crossBelow(token, key, user, stranger.id);
  await eventually('the second alert to fire too', async () => ((await alertOf(token, own.body.id))?.armed === false ? true : undefined));
  t.same(await outboxOf(user), [{ alert_id: own.body.id, recipient: 'OWNER@example.com' }], 'one mail, for the alert with the verified address');
  await eventually('the mail', () => sink.messages.find((m) => m.to.some((to) => to.toLowerCase() === 'owner@example.com')));
  t.notOk(sink.messages.some((m) => m.to.includes('stranger@example.com')), 'nothing to the stranger');
});

t.test('migration 0009: addresses stored before it are unverified until a verified token or the operator sets them again', async (t) => {
  const sql = await databaseBefore(t, '0009');
  await sql`insert into accounts (id, email) values ('old-account', 'old@example.com')`;
  t.equal((await migrate(sql))[0], '0009_account_email_verified.sql', 'then 0009');
  const [row] = await sql<{ email: string; email_verified: boolean }[]>`select email, email_verified from accounts where id = 'old-account'`;
  t.same(row, { email: 'old@example.com', email_verified: false }, 'the address is kept, unverified');
});
