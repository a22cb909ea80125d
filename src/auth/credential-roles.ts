/**
 * Which credential kinds each management route (`/api/v1/...`) accepts: the one table of who may do
 * what (docs/api.md "Credentials and roles" shows it). The router refuses to register a management
 * route that is missing here, and checks the table before the handler runs, so no route can forget it.
 */
import { ApiError } from '../http/errors.js';
import { parseApiKey } from './api-key-format.js';

/** A dashboard JWT, a management key (`sk-<prefix>-prov-…`) or a regular (inference) key. */
export type CredentialKind = 'jwt' | 'management' | 'regular';

const ANY: readonly CredentialKind[] = ['jwt', 'management', 'regular'];
const ACCOUNT: readonly CredentialKind[] = ['jwt', 'management'];
/** A signed-in person only: the spec has no API endpoint for a top-up by payment. */
const DASHBOARD: readonly CredentialKind[] = ['jwt'];

/**
 * `METHOD pattern` (as registered with the router) to the kinds allowed. A regular key reads the
 * catalog and its account's balance, manages BYOK (the spec: JWT or API key; a row it creates
 * serves only its own calls) and reads its own calls' request log and usage; everything that acts
 * for the whole account (keys, webhook signing secret, alerts, transactions, coupons) takes a JWT or
 * a management key; a card top-up takes a dashboard JWT alone.
 */
export const ROUTE_CREDENTIALS: ReadonlyMap<string, readonly CredentialKind[]> = new Map([
  ['POST /api/v1/api-keys', ACCOUNT],
  ['GET /api/v1/api-keys', ACCOUNT],
  ['PUT /api/v1/api-keys/:id', ACCOUNT],
  ['DEL /api/v1/api-keys/:id', ACCOUNT],
  ['GET /api/v1/byok', ANY],
  ['POST /api/v1/byok', ANY],
  ['PUT /api/v1/byok/:id', ANY],
  ['DEL /api/v1/byok/:id', ANY],
  ['GET /api/v1/billing/balance', ANY],
  ['GET /api/v1/billing/transactions', ACCOUNT],
  ['POST /api/v1/billing/coupons/redeem', ACCOUNT],
  ['POST /api/v1/billing/checkout', DASHBOARD],
  ['POST /api/v1/billing/alerts', ACCOUNT],
  ['GET /api/v1/billing/alerts', ACCOUNT],
  ['DEL /api/v1/billing/alerts/:id', ACCOUNT],
  // A regular key reads only its own calls (the handlers confine it); the others the whole account's.
  ['GET /api/v1/requests', ANY],
  ['GET /api/v1/requests/:id', ANY],
  ['GET /api/v1/usage', ANY],
  // Tasks as requests: a regular key sees and cancels only the tasks it created.
  ['GET /api/v1/tasks', ANY],
  ['GET /api/v1/tasks/:id', ANY],
  ['DEL /api/v1/tasks/:id', ANY],
  ['GET /api/v1/webhook-secret', ACCOUNT],
  ['POST /api/v1/webhook-secret/rotate', ACCOUNT],
  ['GET /api/v1/models', ANY],
  ['GET /api/v1/models/popular', ANY],
  ['GET /api/v1/models/*', ANY],
  ['GET /api/v1/pricing', ANY],
]);

/** Routes under this prefix must be in ROUTE_CREDENTIALS. */
export const MANAGEMENT_PREFIX = '/api/v1/';

export const routeName = (method: string, pattern: string) => `${method.toUpperCase()} ${pattern}`;

/**
 * The kind a bearer token claims by its form; undefined for a string that is no API key and no
 * token at all (authentication then answers 401). The form decides the kind for good: the
 * authenticator refuses a key whose stored role differs from its `prov` segment, and refuses API
 * keys where it verifies a JWT.
 */
export function credentialKindOf(token: string): CredentialKind | undefined {
  if (token === '') return undefined;
  if (!token.startsWith('sk-')) return 'jwt';
  const parsed = parseApiKey(token);
  return parsed === undefined ? undefined : parsed.provisioning ? 'management' : 'regular';
}

const KIND_NAMES: Readonly<Record<CredentialKind, string>> = { jwt: 'a dashboard JWT', management: 'a management key', regular: 'a regular API key' };

/**
 * Throws 401 `credential_not_allowed` when `token`'s kind may not use the route (the spec answers an
 * API key where a JWT is required with 401). Tokens of no known form pass: the handler answers them.
 */
export function admitCredential(route: string, allowed: readonly CredentialKind[], token: string): void {
  const kind = credentialKindOf(token);
  if (kind === undefined || allowed.includes(kind)) return;
  const accepted = allowed.map((name) => KIND_NAMES[name]).join(' or ');
  throw new ApiError(401, 'credential_not_allowed', `Access is not permitted: ${route} takes ${accepted}, not ${KIND_NAMES[kind]}.`);
}
