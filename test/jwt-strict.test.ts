// Dashboard JWTs are read strictly (issue 24, item 15): `exp` required and within
// JWT_MAX_LIFETIME_SECONDS (also from `iat`), `alg` exactly HS256, every part strict base64url (no
// padding, no foreign characters, no non-canonical trailing bits). Through real HTTP, plus the decoder.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, forgeJwt, mintToken } from './helpers/http-tools.js';
import { decodeBase64Url, verifyJwt } from '../src/auth/jwt.js';

const MAX_LIFETIME = 3600;
let gateway: Gateway;

t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, JWT_MAX_LIFETIME_SECONDS: String(MAX_LIFETIME) } });
});
t.teardown(() => gateway.close());

const balance = async (token: string) => {
  const response = await fetch(`${gateway.url}/api/v1/billing/balance`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() as any };
};
const now = () => Math.floor(Date.now() / 1000);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A token of any header and payload, signed properly with the test secret. */
function signed(header: unknown, payload: unknown): string {
  const head = `${b64(header)}.${b64(payload)}`;
  return `${head}.${createHmac('sha256', TEST_JWT_SECRET).update(head).digest('base64url')}`;
}
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

t.test('a token within the limits works; one living longer is 401', async (t) => {
  t.equal((await balance(mintToken('jwt-ok', MAX_LIFETIME))).status, 200, 'exactly the maximum lifetime');
  const cases: [string, string][] = [
    ['exp 1e308', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-forever', exp: 1e308 })],
    ['exp past the maximum from now', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-long', exp: now() + MAX_LIFETIME + 120 })],
    ['exp - iat past the maximum', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-long-iat', iat: now() - MAX_LIFETIME, exp: now() + 60 })],
    ['no exp', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-no-exp', iat: now() })],
    ['exp as a string', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-string-exp', exp: String(now() + 60) })],
    ['exp with a fraction', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-fraction', exp: now() + 60.5 })],
    ['iat in the future', forgeJwt(TEST_JWT_SECRET, { sub: 'jwt-future', iat: now() + 3000, exp: now() + 3100 })],
  ];
  for (const [label, token] of cases) assertEnvelope(t, await balance(token), 401, 'invalid_api_key', label);
});

t.test('alg must be exactly HS256', async (t) => {
  const payload = { sub: 'jwt-alg', exp: now() + 60 };
  t.equal((await balance(signed({ alg: 'HS256', typ: 'JWT' }, payload))).status, 200);
  for (const alg of ['hs256', 'HS256 ', 'none', 'HS512', undefined]) {
    assertEnvelope(t, await balance(signed({ alg, typ: 'JWT' }, payload)), 401, 'invalid_api_key', `alg ${JSON.stringify(alg)}`);
  }
});

t.test('strict base64url: padded, foreign-alphabet and non-canonical parts are 401', async (t) => {
  const token = mintToken('jwt-b64');
  t.equal((await balance(token)).status, 200, 'the canonical token works');
  const [header, payload, signature] = token.split('.') as [string, string, string];
  // 32 bytes are 43 characters whose last carries 2 unused bits: setting one keeps the bytes, not the text.
  const last = ALPHABET.indexOf(signature.at(-1)!);
  const nonCanonical = `${signature.slice(0, -1)}${ALPHABET[last | 1]}`;
  t.same(Buffer.from(nonCanonical, 'base64url'), Buffer.from(signature, 'base64url'), 'a lenient decoder reads the same signature');
  const variants: [string, string][] = [
    ['padded signature', `${header}.${payload}.${signature}=`],
    ['non-canonical signature', `${header}.${payload}.${nonCanonical}`],
    ['standard-alphabet signature', `${header}.${payload}.${Buffer.from(signature, 'base64url').toString('base64').replace(/=+$/, '')}`],
    ['signature with a space inside', `${header}.${payload}.${signature.slice(0, 10)} ${signature.slice(10)}`],
    ['padded payload', `${header}.${payload}==.${signature}`],
  ];
  for (const [label, variant] of variants) {
    if (variant === token) continue; // a signature with no '-' or '_' reads the same in both alphabets
    assertEnvelope(t, await balance(variant), 401, 'invalid_api_key', label);
  }
});

t.test('decodeBase64Url: the one canonical spelling only', async (t) => {
  t.same(decodeBase64Url('AQID'), Buffer.from([1, 2, 3]));
  t.same(decodeBase64Url('AQI'), Buffer.from([1, 2]));
  t.same(decodeBase64Url(''), Buffer.alloc(0));
  t.equal(decodeBase64Url('AQJ'), undefined, 'set trailing bits');
  t.equal(decodeBase64Url('AQI='), undefined, 'padding');
  t.equal(decodeBase64Url('A+/B'), undefined, 'the standard alphabet');
  t.equal(decodeBase64Url('AQIDB'), undefined, 'an impossible length');
  t.equal(decodeBase64Url('AQ ID'), undefined, 'a space');
  const secret = 'jwt-secret-0123456789-0123456789-xx';
  const base = 1_800_000_000;
  const token = forgeJwt(secret, { sub: 'alice', iat: base, exp: base + 60 });
  t.same(verifyJwt(secret, token, base, 3600), { ok: true, sub: 'alice' });
  t.same(verifyJwt(secret, forgeJwt(secret, { sub: 'alice', exp: base + 7200 }), base, 3600), { ok: false, reason: 'token lives longer than 3600 s' });
  t.same(verifyJwt(secret, forgeJwt(secret, { sub: 'alice', email: 'a@example.com', email_verified: true, exp: base + 60 }), base),
    { ok: true, sub: 'alice', email: 'a@example.com', emailVerified: true }, 'a verified email claim is marked so');
});
