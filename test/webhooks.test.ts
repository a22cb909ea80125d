// Signed task callbacks: the Standard Webhooks signature (its published test vector), verification
// edges, one delivery through the URL guard to a real receiver, the retry policy, and the per-user
// secret in Postgres (made once, rotated with the old one signing for a day).
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { newWebhookSecret, signWebhook, verifyWebhook } from '../src/tasks/webhook-signature.js';
import { callbackGivesUp, callbackRetryDelayMs } from '../src/tasks/callback-policy.js';
import deliverCallback from '../workers/deliver-callback.js';
import { connect, ensureDatabase } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { rotateWebhookSecret, signingSecrets, webhookSecretsOf } from '../src/store/webhook-secrets.js';
import { SealedBox } from '../src/auth/sealed-box.js';
import { dropDatabase } from '../bench/namespaces.js';

const PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

t.test('the Standard Webhooks test vector', (t) => {
  const header = signWebhook(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
  t.equal(header, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  t.end();
});

t.test('verification: every secret signs, tampering and stale timestamps fail', (t) => {
  const [a, b] = [newWebhookSecret(), newWebhookSecret()];
  t.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and 32 random bytes');
  const now = 1_700_000_000;
  const body = '{"id":"x","status":"success"}';
  const signature = signWebhook([a, b], 'msg_1', now, body);
  t.equal(signature.split(' ').length, 2, 'one entry per secret');
  const headers = { id: 'msg_1', timestamp: String(now), signature };
  t.ok(verifyWebhook(a, headers, body, now), 'the current secret verifies');
  t.ok(verifyWebhook(b, headers, body, now), 'the previous secret verifies');
  t.notOk(verifyWebhook(newWebhookSecret(), headers, body, now), 'another secret does not');
  t.notOk(verifyWebhook(a, headers, `${body} `, now), 'a changed body fails');
  t.notOk(verifyWebhook(a, { ...headers, id: 'msg_2' }, body, now), 'a changed id fails');
  t.notOk(verifyWebhook(a, { ...headers, timestamp: String(now + 1) }, body, now + 1), 'a changed timestamp fails');
  t.ok(verifyWebhook(a, headers, body, now + 300), 'five minutes late is within tolerance');
  t.notOk(verifyWebhook(a, headers, body, now + 301), 'later is not');
  t.notOk(verifyWebhook(a, headers, body, now - 301), 'nor too early');
  t.end();
});

t.test('retry policy: doubling, capped, jittered; given up after the window', (t) => {
  const mid = () => 0.5;
  t.same([1, 2, 3, 4].map((n) => callbackRetryDelayMs(n, 1000, 5000, mid)), [1000, 2000, 4000, 5000]);
  t.equal(callbackRetryDelayMs(2, 1000, 60_000, () => 0), 1600, '-20 %');
  t.equal(callbackRetryDelayMs(2, 1000, 60_000, () => 1), 2400, '+20 %');
  const first = new Date('2026-01-01T00:00:00Z');
  t.notOk(callbackGivesUp(first, new Date(first.getTime() + 86_399_999)));
  t.ok(callbackGivesUp(first, new Date(first.getTime() + 86_400_000)));
  t.end();
});

t.test('a delivery: signed headers arrive; non-2xx, hangs, redirects and private addresses are failures', async (t) => {
  const seen: { headers: http.IncomingHttpHeaders; body: string; path: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      seen.push({ headers: req.headers, body, path: req.url ?? '' });
      if (req.url === '/hang') return;
      if (req.url === '/fail') res.statusCode = 500;
      if (req.url === '/redirect') { res.statusCode = 302; res.setHeader('location', '/ok'); }
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const secret = newWebhookSecret();
  const send = (path: string, extra: Partial<Parameters<typeof deliverCallback>[0]> = {}) =>
    deliverCallback({ url: `${base}${path}`, webhookId: 'msg_abc', body: '{"a":1}', secrets: [secret], timeoutMs: 500, allowLoopback: true, ...extra });

  const ok = await send('/ok');
  t.match(ok, { ok: true, status: 200 });
  const delivered = seen.at(-1)!;
  t.equal(delivered.headers['content-type'], 'application/json');
  t.equal(delivered.headers['webhook-id'], 'msg_abc');
  t.equal(delivered.body, '{"a":1}');
  t.ok(verifyWebhook(secret, {
    id: 'msg_abc', timestamp: String(delivered.headers['webhook-timestamp']), signature: String(delivered.headers['webhook-signature']),
  }, delivered.body, Math.floor(Date.now() / 1000)), 'the signature verifies');

  t.match(await send('/fail'), { ok: false, status: 500 });
  t.match(await send('/redirect'), { ok: false, status: 302 }, 'a redirect is not followed');
  t.notOk(seen.some((request) => request.path === '/ok' && seen.indexOf(request) > 0), 'nothing went to the redirect target');
  const hung = await send('/hang');
  t.equal(hung.ok, false);
  t.match(hung.error, /timeout/);
  t.ok(hung.durationMs < 2000, 'bounded by the timeout');
  t.match(await send('/ok', { allowLoopback: false }), { ok: false, error: /scheme|address/ }, 'loopback refused outside tests');
  t.match(await deliverCallback({ url: 'https://10.0.0.1/hook', webhookId: 'm', body: '{}', secrets: [secret], timeoutMs: 500, allowLoopback: false }),
    { ok: false, error: /address/ }, 'a private address is refused');
  t.match(await deliverCallback({ url: 'ftp://example.com/x', webhookId: 'm', body: '{}', secrets: [secret], timeoutMs: 500, allowLoopback: false }),
    { ok: false, error: /scheme/ });
});

t.test('secrets in Postgres: made once, read again, rotated with the previous one signing for a day', async (t) => {
  const url = new URL(PG_BASE);
  const database = `gw_test_webhooks_${randomBytes(4).toString('hex')}`;
  url.pathname = `/${database}`;
  await ensureDatabase(url.toString());
  const sql = connect(url.toString(), 4);
  t.teardown(async () => {
    await sql.end({ timeout: 5 });
    await dropDatabase(PG_BASE, database);
  });
  await migrate(sql);
  const box = new SealedBox('test-secret-for-webhook-secrets-0123456789');
  const firsts = await Promise.all(Array.from({ length: 5 }, () => webhookSecretsOf(sql, box, 'hook-user')));
  t.equal(new Set(firsts.map((s) => s.current)).size, 1, 'concurrent first reads agree on one secret');
  t.same(await webhookSecretsOf(sql, box, 'hook-user'), firsts[0], 'read again: the same');
  const [stored] = await sql<{ secret_enc: Buffer }[]>`select secret_enc from webhook_secrets where user_id = 'hook-user'`;
  t.notOk(stored!.secret_enc.toString('latin1').includes(firsts[0]!.current.slice(6, 20)), 'stored sealed, not in plaintext');
  const rotated = await rotateWebhookSecret(sql, box, 'hook-user');
  t.not(rotated.current, firsts[0]!.current);
  t.equal(rotated.previous, firsts[0]!.current);
  t.same(signingSecrets(rotated, new Date(rotated.rotatedAt!.getTime() + 1000)), [rotated.current, rotated.previous], 'both sign after a rotation');
  t.same(signingSecrets(rotated, new Date(rotated.rotatedAt!.getTime() + 86_400_000)), [rotated.current], 'only the new one a day later');
});
