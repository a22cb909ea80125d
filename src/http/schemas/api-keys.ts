import * as v from 'valibot';
import { isIpv4OrCidr } from '../../auth/ip-ranges.js';
import { usdAmount } from '../../billing/usd.js';
import { isoTimestamp, parseIsoTimestamp, singleLine } from './text.js';

export const MAX_IP_WHITELIST = 10;

const limitUpTo = (max: number) =>
  v.optional(v.nullable(v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(0, 'must not be negative'), v.maxValue(max, `must be at most ${max}`))));
// Requests per minute fit the integer column; token budgets stay exact in Lua's doubles.
const requestLimit = limitUpTo(1_000_000_000);
const tokenLimit = limitUpTo(1_000_000_000_000_000);
const name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(200, 'must be at most 200 characters'), singleLine());
const ipWhitelist = v.optional(v.nullable(v.pipe(
  v.array(v.pipe(v.string(), v.trim(), v.check(isIpv4OrCidr, 'each entry must be an IPv4 address or CIDR'))),
  v.maxLength(MAX_IP_WHITELIST, `at most ${MAX_IP_WHITELIST} entries`),
)));
// Any finite amount from 0 to MAX_USD, rounded down to nano-USD: rounding never lets a key spend more than the number sent.
const creditLimit = v.optional(v.nullable(usdAmount({ least: 'zero' })));
const creditResetInterval = v.picklist(['none', 'daily', 'weekly', 'monthly'], "must be one of 'none', 'daily', 'weekly', 'monthly'");
/** On update: any real moment (one in the past expires the key at once). */
const expiresAt = v.optional(v.nullable(isoTimestamp()));
/** On create: a key born expired could never be used, so the moment must be in the future. */
const futureExpiresAt = v.optional(v.nullable(v.pipe(
  isoTimestamp(),
  // (Not a real timestamp: the issue above already says so.)
  v.check((text) => (parseIsoTimestamp(text)?.getTime() ?? Infinity) > Date.now(), 'must be in the future (a key created expired could never be used)'),
)));

/** Create body of POST /api/v1/api-keys; violations are 422 as the spec lists them. */
export const CreateApiKeySchema = v.strictObject({
  name,
  rate_limit_rpm: requestLimit,
  rate_limit_tph: tokenLimit,
  rate_limit_tpd: tokenLimit,
  ip_whitelist: ipWhitelist,
  credit_limit: creditLimit,
  credit_reset_interval: v.optional(creditResetInterval, 'none'),
  expires_at: futureExpiresAt,
  is_provisioning: v.optional(v.boolean('must be a boolean'), false),
});

/**
 * Update body of PUT /api/v1/api-keys/{id}: any subset of the fields; an omitted field stays as it
 * is, null clears a limit (or the expiry). `is_provisioning` is fixed at creation.
 */
export const UpdateApiKeySchema = v.strictObject({
  name: v.optional(name),
  rate_limit_rpm: requestLimit,
  rate_limit_tph: tokenLimit,
  rate_limit_tpd: tokenLimit,
  ip_whitelist: ipWhitelist,
  disabled: v.optional(v.boolean('must be a boolean')),
  credit_limit: creditLimit,
  credit_reset_interval: v.optional(creditResetInterval),
  expires_at: expiresAt,
});
