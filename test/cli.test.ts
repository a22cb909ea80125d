// The operator's command line (`gateway` = dist/src/cli.js) and start-up config errors of the server
// (dist/src/main.js): idempotent migrations, JWT minting, usage errors (exit 2), one-line env errors.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createHmac, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import postgres from 'postgres';
import { connectRedis } from '../src/store/redis-connect.js';
import { jwtPayload } from './helpers/http-tools.js';
import { deleteKeysWithPrefix, dropDatabase } from '../bench/namespaces.js';

const CLI = fileURLToPath(new URL('../src/cli.js', import.meta.url));
const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const JWT_SECRET = 'cli-test-jwt-secret-0123456789-abcdefghij';

const suffix = randomBytes(4).toString('hex');
const database = `gw_test_cli_${process.pid}_${suffix}`;
const prefix = `test:cli${suffix}:`;
const dbUrl = new URL(PG_BASE);
dbUrl.pathname = `/${database}`;
const ENV: Record<string, string> = {
  DATABASE_URL: dbUrl.toString(),
  REDIS_URL,
  REDIS_PREFIX: prefix,
  JWT_SECRET,
  KEY_SECRET: 'cli-test-key-secret-0123456789-abcdefghij',
  LOG_LEVEL: 'warn',
  MOCK_VENDOR: 'off',
  HOST: '127.0.0.1',
  HTTP_THREADS: '1',
};

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** Runs a script with the test env (plus `env`); never throws on a non-zero exit. */
function runNode(script: string, args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (part: Buffer) => { stdout += part.toString(); });
    child.stderr.on('data', (part: Buffer) => { stderr += part.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr }); });
  });
}
const cli = (...args: string[]) => runNode(CLI, args);

/** Maps with at most `limit` calls in flight (each call here is a process start). */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  }));
  return results;
}

const sql = postgres(dbUrl.toString(), { max: 2, onnotice: () => {} });
t.teardown(async () => {
  await sql.end({ timeout: 5 });
  await dropDatabase(PG_BASE, database);
  const redis = connectRedis(REDIS_URL);
  await deleteKeysWithPrefix(redis, prefix);
  redis.disconnect();
});

t.test('gateway migrate applies the migrations once; the second run says up to date', async (t) => {
  const first = await cli('migrate');
  t.equal(first.code, 0, `first migrate exits 0 (${first.stderr.trim()})`);
  t.match(first.stdout, /applied: .*0001_initial\.sql/, 'lists what it applied');
  const second = await cli('migrate');
  t.equal(second.code, 0, 'second migrate exits 0');
  t.match(second.stdout, /up to date/i, 'second run says up to date');
  t.notMatch(second.stdout, /applied/, 'and applies nothing');
  const rows = await sql`select name from schema_migrations`;
  const files = readdirSync(new URL('../../migrations/', import.meta.url)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  t.same(rows.map((r) => r.name).sort(), files, 'each migration file recorded once');
});

t.test('gateway token prints an HS256 JWT with sub and exp = now + ttl', async (t) => {
  for (const [ttl, seconds] of [['15m', 900], [undefined, 3600], ['90s', 90], ['1d', 86_400]] as const) {
    const args = ['token', '--user', 'alice@example.com', ...(ttl ? ['--ttl', ttl] : [])];
    const before = Math.floor(Date.now() / 1000);
    const result = await cli(...args);
    const after = Math.ceil(Date.now() / 1000);
    t.equal(result.code, 0, `token ${ttl ?? '(default ttl)'} exits 0`);
    const token = result.stdout.trim();
    t.equal(result.stdout.trim().split('\n').length, 1, 'one line');
    t.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, 'three base64url segments');
    const [header, payload, signature] = token.split('.') as [string, string, string];
    t.same(JSON.parse(Buffer.from(header, 'base64url').toString()).alg, 'HS256');
    t.equal(createHmac('sha256', JWT_SECRET).update(`${header}.${payload}`).digest('base64url'), signature, 'signed with JWT_SECRET');
    const claims = jwtPayload(token);
    t.equal(claims.sub, 'alice@example.com', 'sub is the user');
    t.type(claims.exp, 'number');
    const exp = claims.exp as number;
    t.ok(exp >= before + seconds && exp <= after + seconds, `exp is now + ${seconds}s (got ${exp - before} after start, ${exp - after} after exit)`);
  }
});

t.test('gateway token --email puts the email claim in the token; account set-email stores the address', async (t) => {
  const withEmail = await cli('token', '--user', 'acct-ivy', '--email', ' ivy@example.com ');
  t.equal(withEmail.code, 0, `token --email exits 0 (${withEmail.stderr.trim()})`);
  t.match(jwtPayload(withEmail.stdout.trim()), { sub: 'acct-ivy', email: 'ivy@example.com' }, 'the claim, trimmed');
  const without = await cli('token', '--user', 'acct-ivy');
  t.notOk('email' in jwtPayload(without.stdout.trim()), 'no --email: no claim');

  const set = await cli('account', 'set-email', '--user', 'acct-ivy', '--email', 'ivy@example.com');
  t.equal(set.code, 0, `set-email exits 0 (${set.stderr.trim()})`);
  t.equal(set.stdout, 'email of acct-ivy set to ivy@example.com\n');
  const [created] = await sql<{ email: string; xmin: string }[]>`select email, xmin::text as xmin from accounts where id = 'acct-ivy'`;
  t.equal(created?.email, 'ivy@example.com', 'the account is created with the address');
  t.equal((await cli('account', 'set-email', '--user', 'acct-ivy', '--email', 'ivy@example.com')).code, 0);
  const [same] = await sql<{ email: string; xmin: string }[]>`select email, xmin::text as xmin from accounts where id = 'acct-ivy'`;
  t.equal(same?.xmin, created?.xmin, 'setting the same address again writes nothing');
  t.equal((await cli('account', 'set-email', '--user', 'acct-ivy', '--email', 'ivy@work.example')).code, 0);
  const [changed] = await sql<{ email: string }[]>`select email from accounts where id = 'acct-ivy'`;
  t.equal(changed?.email, 'ivy@work.example', 'a new address replaces it');
});

t.test('bad arguments exit with code 2 and a usage message, and change nothing', async (t) => {
  const cases: [string, string[]][] = [
    ['topup without --method', ['topup', '--user', 'bob', '--amount', '1']],
    ['topup --amount -1', ['topup', '--user', 'bob', '--amount', '-1', '--method', 'card']],
    ['topup --amount=-1', ['topup', '--user', 'bob', '--amount=-1', '--method', 'card']],
    ['topup --amount abc', ['topup', '--user', 'bob', '--amount', 'abc', '--method', 'card']],
    ['topup --amount 0', ['topup', '--user', 'bob', '--amount', '0', '--method', 'card']],
    ['topup without --user', ['topup', '--amount', '1', '--method', 'card']],
    ['topup --method usage', ['topup', '--user', 'bob', '--amount', '1', '--method', 'usage']],
    ['coupon create without --credits', ['coupon', 'create']],
    ['coupon create --credits abc', ['coupon', 'create', '--credits', 'abc']],
    ['unknown command', ['frobnicate']],
    ['unknown subcommand', ['coupon', 'delete']],
    ['unknown option', ['migrate', '--force-everything']],
    ['token without --user', ['token']],
    ['token with a bad --ttl', ['token', '--user', 'alice', '--ttl', 'forever']],
    ['token living longer than JWT_MAX_LIFETIME_SECONDS', ['token', '--user', 'alice', '--ttl', '2d']],
    ['token with a bad --email', ['token', '--user', 'alice', '--email', 'alice']],
    ['account set-email without --email', ['account', 'set-email', '--user', 'nobody-set']],
    ['account set-email with a bad --email', ['account', 'set-email', '--user', 'nobody-set', '--email', 'not an address']],
    ['account set-email without --user', ['account', 'set-email', '--email', 'x@example.com']],
    ['account set-email with a bad --user', ['account', 'set-email', '--user', 'no spaces', '--email', 'x@example.com']],
    ['account without a subcommand', ['account']],
  ];
  const results = await mapLimited(cases, 4, ([, args]) => cli(...args));
  for (const [i, [label]] of cases.entries()) {
    const result = results[i]!;
    t.equal(result.code, 2, `${label}: exit code 2`);
    t.match(result.stderr, /usage:/i, `${label}: usage message on stderr`);
    t.match(result.stderr, /gateway (migrate|token|topup)/, `${label}: the usage lists the commands`);
    t.equal(result.stdout, '', `${label}: nothing on stdout`);
  }
  const [count] = await sql`select count(*)::int as n from transactions`;
  t.equal(count!.n, 0, 'no transaction was written');
  const [coupons] = await sql`select count(*)::int as n from coupons`;
  t.equal(coupons!.n, 0, 'no coupon was created');
  const [accounts] = await sql`select count(*)::int as n from accounts where id in ('nobody-set', 'no spaces')`;
  t.equal(accounts!.n, 0, 'no account was created or given an address');

  // The same commands with good arguments work, so the failures above are about the arguments.
  const topup = await cli('topup', '--user', 'bob', '--amount', '1.5', '--method', 'card');
  t.equal(topup.code, 0, `a valid topup works (${topup.stderr.trim()})`);
  t.match(topup.stdout, /1\.5/);
  const coupon = await cli('coupon', 'create', '--credits', '2');
  t.equal(coupon.code, 0, 'a valid coupon create works');
  t.match(coupon.stdout.trim(), /^[A-Za-z0-9_-]{4,128}$/, 'prints the code');
});

t.test('a bad environment value stops the server with one clear line naming the variable', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /\bPORT\b/],
    [{ PORT: '70000' }, /\bPORT\b/],
    [{ HTTP_THREADS: '0' }, /\bHTTP_THREADS\b/],
    [{ MAX_BODY_BYTES: 'lots' }, /\bMAX_BODY_BYTES\b/],
    [{ REDIS_URL: 'http://127.0.0.1:6379' }, /\bREDIS_URL\b/],
    [{ LOG_LEVEL: 'loud' }, /\bLOG_LEVEL\b/],
    [{ RATE_LIMIT_DEFAULT: 'many' }, /\bRATE_LIMIT_DEFAULT\b/],
    [{ OPENAI_BASE_URL: 'ftp://example.com' }, /\bOPENAI_BASE_URL\b/],
    [{ JWT_SECRET: 'short' }, /\bJWT_SECRET\b/],
  ];
  const results = await mapLimited(cases, 4, ([env]) => runNode(MAIN, [], { PORT: '0', ...env }, 15_000));
  for (const [i, [env, name]] of cases.entries()) {
    const label = Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ');
    const result = results[i]!;
    t.equal(result.signal, null, `${label}: exits by itself`);
    t.not(result.code, 0, `${label}: exit code is not 0 (got ${result.code})`);
    const lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line.trim() !== '');
    t.equal(lines.length, 1, `${label}: exactly one line of output (got ${JSON.stringify(lines)})`);
    t.match(lines[0] ?? '', name, `${label}: the line names the variable`);
    t.notMatch(lines[0] ?? '', /\bat .*\.js:\d+/, `${label}: no stack trace`);
  }
  const viaCli = await runNode(CLI, ['migrate'], { PORT: 'abc' });
  t.not(viaCli.code, 0, 'the CLI refuses a bad env too');
  t.match(viaCli.stderr.split('\n')[0] ?? '', /\bPORT\b/, 'and names the variable first');
});
