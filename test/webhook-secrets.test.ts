// Per-user webhook signing secrets in a real Postgres (a throwaway database, migrated, dropped at the
// end): made on first read (once, under concurrency), sealed at rest, rotated with the old one signing
// for 24 h, and the two route handlers' answers.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { connect, ensureDatabase, type Sql } from '../src/store/db.js';
import { migrate } from '../src/store/migrate.js';
import { SealedBox } from '../src/auth/sealed-box.js';
import { Authenticator } from '../src/auth/authenticator.js';
import { signJwt } from '../src/auth/jwt.js';
import { generateApiKey, hashSecret } from '../src/auth/api-key-format.js';
import { insertApiKey } from '../src/store/api-keys.js';
import { ensureAccount } from '../src/store/accounts.js';
import { ApiError } from '../src/http/errors.js';
import type { RequestContext } from '../src/http/router.js';
import type { Services } from '../src/services.js';
import {
  PREVIOUS_SECRET_MS, previousValidUntil, rotateWebhookSecret, signingSecrets, webhookSecretsOf, type WebhookSecrets,
} from '../src/store/webhook-secrets.js';
import { webhookSecretRoutes } from '../src/http/routes/webhook-secret.js';
import { dropDatabase } from '../bench/namespaces.js';

const PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = `gw_test_webhook_secrets_${randomBytes(4).toString('hex')}`;
const box = new SealedBox('test-secret-for-webhook-secrets-0123456789');
let sql: Sql;

t.before(async () => {
  const url = new URL(PG_BASE);
  url.pathname = `/${database}`;
  await ensureDatabase(url.toString());
  sql = connect(url.toString(), 8);
  await migrate(sql);
});

t.teardown(async () => {
  await sql?.end({ timeout: 5 });
  await dropDatabase(PG_BASE, database);
});

const rowCount = async (userId: string) => (await sql<{ n: number }[]>`select count(*)::int as n from webhook_secrets where user_id = ${userId}`)[0]!.n;

t.test('the first read makes the secret (and the account); the second returns the same', async (t) => {
  t.equal(await rowCount('u-first'), 0);
  const first = await webhookSecretsOf(sql, box, 'u-first');
  t.match(first.current, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(first.previous, null);
  t.equal(first.rotatedAt, null);
  t.ok(first.createdAt instanceof Date && Math.abs(first.createdAt.getTime() - Date.now()) < 60_000, 'created now');
  t.equal(await rowCount('u-first'), 1);
  t.equal((await sql`select 1 from accounts where id = 'u-first'`).length, 1, 'the account row exists');
  t.same(await webhookSecretsOf(sql, box, 'u-first'), first, 'read again: the same');
  t.same(signingSecrets(first, new Date()), [first.current], 'never rotated: only the current one signs');
  t.equal(previousValidUntil(first), null);
});

t.test('concurrent first reads agree on one secret', async (t) => {
  for (const user of ['u-race-1', 'u-race-2', 'u-race-3']) {
    const reads = await Promise.all(Array.from({ length: 8 }, () => webhookSecretsOf(sql, box, user)));
    t.equal(new Set(reads.map((s) => s.current)).size, 1, `${user}: one secret`);
    t.equal(await rowCount(user), 1);
    t.same(await webhookSecretsOf(sql, box, user), reads[0]);
  }
});

t.test('stored sealed: the plaintext is not in the row, and another box cannot open it', async (t) => {
  const { current } = await webhookSecretsOf(sql, box, 'u-sealed');
  const [row] = await sql<{ secret_enc: Buffer }[]>`select secret_enc from webhook_secrets where user_id = 'u-sealed'`;
  const stored = row!.secret_enc;
  t.notOk(stored.includes(Buffer.from(current)), 'not the secret text');
  t.notOk(stored.includes(Buffer.from(current.slice(6), 'base64')), 'not the key bytes');
  t.equal(box.open(stored), current);
  await t.rejects(webhookSecretsOf(sql, new SealedBox('another-deployment-secret-0123456789'), 'u-sealed'), 'a wrong KEY_SECRET fails loudly');
});

t.test('rotation: the current one becomes previous and signs beside the new one for 24 h only', async (t) => {
  const before = await webhookSecretsOf(sql, box, 'u-rotate');
  const rotated = await rotateWebhookSecret(sql, box, 'u-rotate');
  t.not(rotated.current, before.current, 'a new current secret');
  t.match(rotated.current, /^whsec_/);
  t.equal(rotated.previous, before.current, 'the old one is previous');
  t.same(rotated.createdAt, before.createdAt, 'created_at is the first secret\'s');
  t.ok(rotated.rotatedAt && Math.abs(rotated.rotatedAt.getTime() - Date.now()) < 60_000, 'rotated now');
  t.same(await webhookSecretsOf(sql, box, 'u-rotate'), rotated, 'a read sees the rotation');
  const rotatedAt = rotated.rotatedAt!.getTime();
  t.same(previousValidUntil(rotated), new Date(rotatedAt + PREVIOUS_SECRET_MS));
  const at = (ms: number) => new Date(rotatedAt + ms);
  t.same(signingSecrets(rotated, at(0)), [rotated.current, before.current], 'right after: both, the new one first');
  t.same(signingSecrets(rotated, at(-5_000)), [rotated.current, before.current], 'an app clock a little behind the database: both');
  t.same(signingSecrets(rotated, at(23 * 3_600_000)), [rotated.current, before.current], '23 h later: both');
  t.same(signingSecrets(rotated, at(PREVIOUS_SECRET_MS - 1)), [rotated.current, before.current], 'a millisecond before 24 h: both');
  t.same(signingSecrets(rotated, at(PREVIOUS_SECRET_MS)), [rotated.current], 'at 24 h: the new one only');
  t.same(signingSecrets(rotated, at(7 * PREVIOUS_SECRET_MS)), [rotated.current], 'a week later: the new one only');

  const again = await rotateWebhookSecret(sql, box, 'u-rotate');
  t.equal(again.previous, rotated.current, 'a second rotation: the one before becomes previous');
  t.not(again.current, rotated.current);
  t.notOk([again.current, again.previous].includes(before.current), 'and the oldest is gone');
});

t.test('rotating before any read makes the first secret, with nothing to hand over', async (t) => {
  const made = await rotateWebhookSecret(sql, box, 'u-rotate-first');
  t.match(made.current, /^whsec_/);
  t.equal(made.previous, null);
  t.equal(made.rotatedAt, null);
  t.equal(previousValidUntil(made), null);
  t.same(await webhookSecretsOf(sql, box, 'u-rotate-first'), made);
});

t.test('concurrent rotations lose none: they chain one after another', async (t) => {
  const start = await webhookSecretsOf(sql, box, 'u-rotate-race');
  const results = await Promise.all(Array.from({ length: 6 }, () => rotateWebhookSecret(sql, box, 'u-rotate-race')));
  const currents = new Set(results.map((r) => r.current));
  t.equal(currents.size, 6, 'six different secrets');
  const previous = results.map((r) => r.previous);
  t.equal(previous.filter((p) => p === start.current).length, 1, 'exactly one replaced the starting secret');
  t.ok(previous.every((p) => p === start.current || currents.has(p!)), 'every other replaced one of the six');
  const final = await webhookSecretsOf(sql, box, 'u-rotate-race');
  t.ok(currents.has(final.current) && !previous.includes(final.current), 'the last one is current');
});

t.test('route handlers: JWT or API key; GET and rotate answer the documented shapes', async (t) => {
  const jwtSecret = 'jwt-secret-for-webhook-secret-routes';
  const services = { auth: new Authenticator(sql, 'key-secret', 'gw'), config: { jwtSecret }, sql } as unknown as Services;
  const routes = webhookSecretRoutes(services, box);
  // What the router captures from uWS: every header a string, '' when absent.
  const headersOf = (authorization = '') => ({ authorization, contentType: '', userAgent: 'test' });
  const call = async (handler: (ctx: RequestContext) => Promise<void>, authorization?: string) => {
    const answers: { status: number; body: Record<string, unknown>; headers: Readonly<Record<string, string>> | undefined }[] = [];
    const ctx = {
      headers: headersOf(authorization),
      reply: { json: (status: number, body: Record<string, unknown>, headers?: Readonly<Record<string, string>>) => answers.push({ status, body, headers }) },
    } as unknown as RequestContext;
    await handler(ctx);
    t.equal(answers.length, 1, 'one answer');
    return answers[0]!;
  };
  const bearer = `Bearer ${signJwt(jwtSecret, { sub: 'u-route', exp: Math.floor(Date.now() / 1000) + 600 })}`;
  const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

  const got = await call(routes.get, bearer);
  t.equal(got.status, 200);
  t.same(Object.keys(got.body).sort(), ['created_at', 'rotated_at', 'secret']);
  t.match(got.body, { secret: /^whsec_/, created_at: iso, rotated_at: null });
  t.equal(got.headers?.['cache-control'], 'no-store', 'a secret is not cached on the way');
  t.same((await call(routes.get, bearer)).body, got.body, 'the same on a second read');

  const rotated = await call(routes.rotate, bearer);
  t.equal(rotated.status, 200);
  t.same(Object.keys(rotated.body).sort(), ['created_at', 'previous_valid_until', 'rotated_at', 'secret']);
  t.match(rotated.body, { secret: /^whsec_/, created_at: got.body.created_at, rotated_at: iso, previous_valid_until: iso });
  t.not(rotated.body.secret, got.body.secret);
  t.equal(Date.parse(String(rotated.body.previous_valid_until)) - Date.parse(String(rotated.body.rotated_at)), 86_400_000, 'the previous one signs for 24 h');
  t.equal(rotated.headers?.['cache-control'], 'no-store');
  t.same((await call(routes.get, bearer)).body, { secret: rotated.body.secret, created_at: rotated.body.created_at, rotated_at: rotated.body.rotated_at });

  const firstRotation = await call(routes.rotate, `Bearer ${signJwt(jwtSecret, { sub: 'u-route-new', exp: Math.floor(Date.now() / 1000) + 600 })}`);
  t.match(firstRotation.body, { secret: /^whsec_/, rotated_at: null, previous_valid_until: null }, 'a first secret made by rotate: nothing to hand over');

  await ensureAccount(sql, 'u-route');
  const apiKey = generateApiKey('gw', false);
  await insertApiKey(sql, {
    id: randomUUID(), userId: 'u-route', publicId: apiKey.publicId, secretHash: hashSecret('key-secret', apiKey.secret), fullKeyEnc: box.seal(apiKey.key),
    name: 'test', isProvisioning: false, ipWhitelist: [], rateLimitRpm: null, rateLimitTph: null, rateLimitTpd: null,
    creditLimitNano: null, creditResetInterval: 'none', expiresAt: null,
  });
  t.same((await call(routes.get, `Bearer ${apiKey.key}`)).body.secret, rotated.body.secret, 'an API key of the user reads the same secret');

  for (const [name, authorization] of [['no credentials', undefined], ['a bad token', 'Bearer not-a-jwt'], ['another signer', `Bearer ${signJwt('other', { sub: 'u-route', exp: Math.floor(Date.now() / 1000) + 600 })}`]] as const) {
    const error = await routes.get({ headers: headersOf(authorization), reply: {} } as unknown as RequestContext).then(() => undefined, (e: unknown) => e);
    t.ok(error instanceof ApiError && error.status === 401, `${name}: 401`);
  }
});
