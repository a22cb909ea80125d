/**
 * What a BYOK record may show of its secrets: a masked api_key prefix and config_json with every
 * secret-looking value replaced by `***`. Pure functions.
 */

export const MASK = '***';

/**
 * The first 7 characters, `...`, the last 4. A shorter key shows fewer characters, never more than
 * a third of it (rounded down), split about 2:1 between head and tail; a key of under 3 shows nothing.
 */
export function maskApiKey(key: string): string {
  const chars = Array.from(key);
  const shown = Math.min(11, Math.floor(chars.length / 3));
  const tail = shown === 11 ? 4 : Math.floor(shown / 3);
  const head = shown - tail;
  return `${chars.slice(0, head).join('')}...${tail === 0 ? '' : chars.slice(chars.length - tail).join('')}`;
}

// Compared lowercased with '_' and '-' removed: `client_secret`, `Client-Secret` and `clientSecret` are one name.
const SECRET_SUFFIXES = ['secret', 'secretaccesskey', 'privatekey', 'apikey', 'token', 'password', 'credential', 'credentials'];

/**
 * A key names a secret when, lowercased without `_` and `-`, it ends with one of `secret`,
 * `secretaccesskey`, `privatekey`, `apikey`, `token`, `password`, `credential(s)` (so `client_secret`,
 * `access_token`, `x-api-key`, `sessionToken` too; `accessKeyId`, `region`, `max_tokens` are not).
 */
export function isSecretKey(key: string): boolean {
  const name = key.toLowerCase().replace(/[_-]/g, '');
  return SECRET_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

/**
 * A copy of `value` with the value of every secret-named key replaced by `***` (whatever its type,
 * except null), at any depth through objects and arrays; a `service_account` given as a string (the
 * JSON key file's text) is masked whole, one given as an object is walked like the rest.
 */
export function maskConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskConfig);
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines own properties: a `__proto__` key of the JSON stays a plain key.
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, inner]) => {
    const secret = inner !== null && (isSecretKey(key) || (key.toLowerCase() === 'service_account' && typeof inner === 'string'));
    return [key, secret ? MASK : maskConfig(inner)];
  }));
}

const nonEmptyString = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

/**
 * Whether config_json carries an upstream credential, so no api_key is needed: a top-level
 * `service_account` (an object, or a non-empty string holding its JSON), a non-empty `private_key`,
 * or both of `accessKeyId` and `secretAccessKey` non-empty.
 */
export function configCarriesCredential(config: Record<string, unknown> | null | undefined): boolean {
  if (!config) return false;
  const account = config.service_account;
  if ((typeof account === 'object' && account !== null && !Array.isArray(account)) || nonEmptyString(account)) return true;
  if (nonEmptyString(config.private_key)) return true;
  return nonEmptyString(config.accessKeyId) && nonEmptyString(config.secretAccessKey);
}
