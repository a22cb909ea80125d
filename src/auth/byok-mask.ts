/**
 * What a BYOK record may show of its secrets: a masked api_key prefix and config_json with every
 * value replaced by `***` except an allow-list of non-secret fields. Pure functions.
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
 * `secretaccesskey`, `privatekey`, `apikey`, `token`, `password`, `credential(s)`. Such a key is
 * masked even where the allow-list would show it (a `token_uri` is shown, an `auth_token` never).
 */
export function isSecretKey(key: string): boolean {
  const name = key.toLowerCase().replace(/[_-]/g, '');
  return SECRET_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

/**
 * The config_json fields shown as they are (compared lowercased without `_` and `-`): what the cloud
 * forms read and a Google key file holds besides its private key. Everything else is masked, so a
 * secret under a name nobody foresaw (`passwd`, `authorization`, `key`, a header map) stays hidden.
 */
const SHOWN_FIELDS = new Set([
  'region', 'endpointurl', 'deploymentid', 'apiversion', 'accesskeyid', 'projectid', 'location',
  'serviceaccount', 'type', 'clientemail', 'clientid', 'privatekeyid', 'tokenuri', 'authuri',
  'authproviderx509certurl', 'clientx509certurl', 'universedomain', 'organization',
]);
/** Maps of model ids (Bedrock `model_map`): each string value is shown, anything else masked. */
const MODEL_MAPS = new Set(['modelmap']);

const fieldName = (key: string) => key.toLowerCase().replace(/[_-]/g, '');

function maskField(key: string, value: unknown): unknown {
  if (value === null) return null;
  const name = fieldName(key);
  if (MODEL_MAPS.has(name) && typeof value === 'object' && !Array.isArray(value)) {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([model, target]) => [model, typeof target === 'string' ? target : MASK]));
  }
  if (!SHOWN_FIELDS.has(name) || isSecretKey(key)) return MASK;
  // A `service_account` given as a string is the key file's JSON text: masked whole.
  if (name === 'serviceaccount' && typeof value === 'string') return MASK;
  return maskConfig(value);
}

/**
 * A copy of `value` where every field is masked as `***` (whatever its type, except null) unless it
 * is a shown field, at any depth through objects and arrays: a shown field holding an object (a
 * `service_account`) is walked by the same rule.
 */
export function maskConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskConfig);
  if (value === null || typeof value !== 'object') return value;
  // fromEntries defines own properties: a `__proto__` key of the JSON stays a plain key.
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, inner]) => [key, maskField(key, inner)]));
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
