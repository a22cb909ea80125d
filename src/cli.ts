#!/usr/bin/env node
/** `gateway`: the operator's command line (migrate, token, account set-email, coupon create, topup, catalog sync, ledger check). */
import { parseArgs } from 'node:util';
import { connectRedis, isRedisUnreachable } from './store/redis-connect.js';
import { ConfigError, loadConfig } from './config.js';
import { prepareDatabase } from './bootstrap.js';
import { parseTtl, signJwt, USER_ID_PATTERN } from './auth/jwt.js';
import { randomBase62 } from './auth/api-key-format.js';
import { usdToNanoFloor } from './billing/usd.js';
import { createCoupon } from './store/ledger.js';
import { defineScripts } from './admission/scripts.js';
import { RedisKeys } from './admission/keys.js';
import { Balances } from './billing/balances.js';
import { nanoToUsd } from './billing/pricing.js';
import { checkLedger, describeDifference, differenceJson } from './ledger/check.js';
import { emailAddress, setAccountEmail } from './store/accounts.js';

const USAGE = `usage:
  gateway migrate
  gateway token --user <id> [--ttl 1h] [--email <address>]
  gateway account set-email --user <id> --email <address>
  gateway coupon create --credits <usd> [--code <code>]
  gateway topup --user <id> --amount <usd> --method <processor>
  gateway catalog sync
  gateway ledger check [--user <id>] [--json]`;

class UsageError extends Error {}

/** Longest `ledger check` waits for one Redis command (a user's read is one). */
const LEDGER_CHECK_COMMAND_TIMEOUT_MS = 10_000;

/** A positive USD amount, rounded down to nano-USD as every amount is (src/billing/usd.ts). */
function usdArgument(name: string, value: string | undefined): bigint {
  const result = usdToNanoFloor(value ?? '', { least: 'positive' });
  if (!result.ok) throw new UsageError(`--${name} ${result.problem}`);
  return result.nano;
}

function emailArgument(value: string | undefined): string {
  const email = emailAddress(value);
  if (email === undefined) throw new UsageError('--email must be an email address (at most 254 characters)');
  return email;
}

function userArgument(value: string | undefined): string {
  if (!value || !USER_ID_PATTERN.test(value)) throw new UsageError('--user must be 1 to 128 letters, digits or . _ @ : -');
  return value;
}

async function run(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      user: { type: 'string' }, ttl: { type: 'string' }, email: { type: 'string' }, credits: { type: 'string' }, code: { type: 'string' },
      amount: { type: 'string' }, method: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals.join(' ');
  if (values.help || !command) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const config = loadConfig(process.env);

  if (command === 'token') {
    const user = userArgument(values.user);
    const ttl = parseTtl(values.ttl ?? '1h');
    if (!ttl) throw new UsageError('--ttl must look like 90s, 15m, 1h or 1d');
    // A token the gateway would refuse is no token: the gateway caps a JWT's lifetime.
    if (ttl > config.auth.jwtMaxLifetimeSeconds) throw new UsageError(`--ttl may be at most JWT_MAX_LIFETIME_SECONDS (${config.auth.jwtMaxLifetimeSeconds} s)`);
    const email = values.email === undefined ? {} : { email: emailArgument(values.email) };
    process.stdout.write(`${signJwt(config.jwtSecret, { sub: user, exp: Math.floor(Date.now() / 1000) + ttl, ...email })}\n`);
    return;
  }
  if (!['migrate', 'account set-email', 'coupon create', 'topup', 'catalog sync', 'ledger check'].includes(command)) throw new UsageError(`unknown command: ${command}`);
  // Arguments are checked before the database is touched.
  const accountEmail = command === 'account set-email' ? { user: userArgument(values.user), email: emailArgument(values.email) } : undefined;

  const { sql, applied } = await prepareDatabase(config);
  try {
    switch (command) {
      case 'migrate':
        process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
        break;
      case 'catalog sync':
        process.stdout.write('catalog synced\n');
        break;
      case 'account set-email': {
        const { user, email } = accountEmail!;
        await setAccountEmail(sql, user, { email, verified: true }); // the operator vouches for it
        process.stdout.write(`email of ${user} set to ${email}\n`);
        break;
      }
      case 'coupon create': {
        const credits = usdArgument('credits', values.credits);
        const code = values.code ?? `GW-${randomBase62(16).toUpperCase()}`;
        if (!/^[A-Za-z0-9_-]{4,128}$/.test(code)) throw new UsageError('--code must be 4 to 128 letters, digits, _ or -');
        await createCoupon(sql, code, credits);
        process.stdout.write(`${code}\n`);
        break;
      }
      case 'topup': {
        const user = userArgument(values.user);
        const amount = usdArgument('amount', values.amount);
        const method = values.method;
        if (!method || !/^[a-z0-9_-]{1,64}$/.test(method) || method === 'usage' || method === 'coupon') {
          throw new UsageError('--method must name the payment processor (lowercase letters, digits, _ or -; not usage or coupon)');
        }
        const redis = defineScripts(connectRedis(config.redisUrl, { maxRetriesPerRequest: 2 }));
        try {
          const credits = await new Balances(sql, redis, new RedisKeys(config.redisPrefix)).topUp(user, amount, method);
          process.stdout.write(`credited ${nanoToUsd(amount)} USD to ${user}; credits now ${nanoToUsd(credits)} USD\n`);
        } finally {
          redis.disconnect();
        }
        break;
      }
      case 'ledger check': {
        const user = values.user === undefined ? undefined : userArgument(values.user);
        // Every command bounded: a Redis that stops answering (a paused node) ends the check with an error, not a hang.
        const redis = connectRedis(config.redisUrl, { maxRetriesPerRequest: 2, commandTimeout: LEDGER_CHECK_COMMAND_TIMEOUT_MS });
        try {
          const result = await (async () => {
            await redis.ping();
            return await checkLedger(sql, redis, new RedisKeys(config.redisPrefix), user === undefined ? {} : { userId: user });
          })().catch((error: unknown) => {
            if (!isRedisUnreachable(error)) throw error;
            throw new Error(`Redis did not answer (${(error as Error).message}; each command waits at most ${LEDGER_CHECK_COMMAND_TIMEOUT_MS / 1000} s): nothing was checked`);
          });
          const lines = result.differences.map((d) => (values.json ? JSON.stringify(differenceJson(d)) : `ledger check: ${describeDifference(d)}`));
          if (lines.length === 0) {
            lines.push(values.json
              ? JSON.stringify({ kind: 'ok', users: result.users, limited_keys: result.limitedKeys })
              : `ledger check: ok (${result.users} user${result.users === 1 ? '' : 's'}, ${result.limitedKeys} key${result.limitedKeys === 1 ? '' : 's'} with a credit limit)`);
          } else {
            process.exitCode = 1;
          }
          process.stdout.write(`${lines.join('\n')}\n`);
        } finally {
          redis.disconnect();
        }
        break;
      }
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

run(process.argv.slice(2)).catch((error) => {
  if (error instanceof UsageError || error instanceof ConfigError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`gateway: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`gateway: ${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
