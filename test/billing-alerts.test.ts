// Balance alerts: the endpoints over real HTTP, and the mail through a real SMTP server: once per
// crossing of the threshold by usage, again after a top-up re-arms it, and nothing lost while the
// SMTP server is down.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, freePort, postJson, type Gateway } from './helpers/harness.js';
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

interface AlertRecord { id: string; threshold: number; email: string; armed: boolean; created_at: string; last_triggered_at: string | null }

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
  const token = jwtFor(gateway, user);
  await gateway.topup(user, '1');

  const first = await createAlert(token, { threshold: 0.5 });
  t.equal(first.status, 201, 'created');
  t.same(Object.keys(first.body).sort(), ['armed', 'created_at', 'email', 'id', 'last_triggered_at', 'threshold'], 'the record has exactly its documented fields');
  t.match(first.body, { threshold: 0.5, email: user, armed: true, last_triggered_at: null }, 'the account id is the recipient; armed, as credits (1) are above 0.5');
  t.ok(!Number.isNaN(Date.parse(first.body.created_at)), 'created_at is a timestamp');

  const second = await createAlert(token, { threshold: 2.000000001, email: ' billing@example.com ' });
  t.equal(second.status, 201);
  t.match(second.body, { threshold: 2.000000001, email: 'billing@example.com', armed: false }, 'created disarmed: credits are already below 2 USD');
  const [row] = await gateway.sql<{ threshold_nano: bigint }[]>`select threshold_nano from billing_alerts where id = ${second.body.id}`;
  t.equal(row?.threshold_nano, 2_000_000_001n, 'the threshold is kept exactly in nano-USD');

  const listed = await listAlerts(token);
  t.equal(listed.total, 2);
  t.same(listed.data.map((a) => a.id), [second.body.id, first.body.id], 'newest first');
  t.same(listed.data[1], first.body, 'a listed record equals the created one');

  const { key } = await gateway.user('alice-key-owner@example.com', '0');
  t.equal((await listAlerts(key)).total, 0, 'an API key lists its own account (none there)');
  const viaKey = await createAlert(key, { threshold: 1 });
  t.equal(viaKey.status, 201, 'an API key may create');
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
    ['threshold with 10 decimals', { threshold: 1.0000000001 }, 'threshold'],
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
  t.equal(noAddress.status, 422, 'an account id that is not an address, and no email: 422');
  t.equal(noAddress.body?.error?.param, 'email', 'naming email');
  t.equal((await createAlert(plain, { threshold: 1, email: 'plain@example.com' })).status, 201, 'with an email it is created');

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
  const high = await createAlert(token, { threshold: 0.0009 });
  const low = await createAlert(token, { threshold: 0.0006, email: 'finance@example.com' });
  t.equal(high.status, 201);
  t.equal(low.status, 201);
  t.ok(high.body.armed && low.body.armed, 'both armed: credits 0.001 are above both');

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
  t.equal(mailsTo(user).length, 1, 'the account address got one mail');
  t.equal(mailsTo('finance@example.com').length, 1, 'the lower alert mailed its own address once');
  t.match(mailsTo('finance@example.com')[0]!.subject, /fell below 0\.0006 USD/);

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

t.test('the sweep mails for a crossing no evaluation saw, and a coupon re-arms', async (t) => {
  const user = 'dave@example.com';
  const token = jwtFor(gateway, user);
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
  t.equal((await postJson(`${quiet.url}/api/v1/billing/alerts`, token, { threshold: 0.0001 })).status, 201);
  t.equal((await postJson(`${quiet.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi [[mock chunks=5]]' }] })).status, 200);
  const row = await eventually('the queued mail', async () => (await quiet.sql<{ attempts: number; sent_at: Date | null }[]>`select attempts, sent_at from mail_outbox where user_id = ${user}`)[0]);
  t.same(row, { attempts: 0, sent_at: null }, 'queued, never attempted');
  t.equal(quiet.output.split('SMTP_URL is not set').length - 1, 1, 'warned once');
});
