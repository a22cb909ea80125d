import t from 'tap';
import { generateApiKey, hashSecret, maskKey, parseApiKey, secretMatches } from '../src/auth/api-key-format.js';
import { signJwt, verifyJwt, parseTtl } from '../src/auth/jwt.js';
import { SealedBox } from '../src/auth/sealed-box.js';

t.test('API key format sk-<prefix>-<public_id:12>-<secret:48>', async (t) => {
  const { key, publicId, secret } = generateApiKey('gw', false);
  t.match(key, /^sk-gw-[A-Za-z0-9]{12}-[A-Za-z0-9]{48}$/);
  t.same(parseApiKey(key), { prefix: 'gw', provisioning: false, publicId, secret });
  const management = generateApiKey('gw', true);
  t.match(management.key, /^sk-gw-prov-[A-Za-z0-9]{12}-[A-Za-z0-9]{48}$/);
  t.equal(parseApiKey(management.key)?.provisioning, true);
  for (const bad of ['', 'sk-gw', `${key}x`, key.slice(0, -1), key.replace('sk-', 'pk-'), `sk-gw-${publicId}-${secret.slice(0, 47)}!`]) {
    t.equal(parseApiKey(bad), undefined, `refused: ${bad.slice(0, 20)}`);
  }
  t.equal(maskKey(key), `${key.slice(0, 12)}...${key.slice(-4)}`);
  const keys = new Set(Array.from({ length: 200 }, () => generateApiKey('gw', false).publicId));
  t.equal(keys.size, 200, 'public ids do not repeat');
});

t.test('secrets are checked against a keyed hash', async (t) => {
  const hash = hashSecret('server-secret-0123456789-0123456789', 'abc');
  t.ok(secretMatches('server-secret-0123456789-0123456789', 'abc', hash));
  t.notOk(secretMatches('server-secret-0123456789-0123456789', 'abd', hash));
  t.notOk(secretMatches('other-secret-0123456789-01234567890', 'abc', hash), 'another server secret gives another hash');
  t.notOk(secretMatches('server-secret-0123456789-0123456789', 'abc', hash.subarray(1)));
});

t.test('HS256 JWT: signature, exp, sub', async (t) => {
  const secret = 'jwt-secret-0123456789-0123456789-xx';
  const now = 1_800_000_000;
  const token = signJwt(secret, { sub: 'alice', exp: now + 60, iat: now });
  t.same(verifyJwt(secret, token, now), { ok: true, sub: 'alice' });
  t.same(verifyJwt(secret, token, now + 60), { ok: false, reason: 'token expired' });
  t.equal(verifyJwt('another-secret-0123456789-0123456789', token, now).ok, false);
  const [h, , s] = token.split('.');
  const forged = `${h}.${Buffer.from(JSON.stringify({ sub: 'mallory', exp: now + 60 })).toString('base64url')}.${s}`;
  t.same(verifyJwt(secret, forged, now), { ok: false, reason: 'bad signature' });
  const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${token.split('.')[1]}.`;
  t.same(verifyJwt(secret, none, now), { ok: false, reason: 'unsupported algorithm' });
  t.equal(verifyJwt(secret, signJwt(secret, { sub: 'a}b', exp: now + 60 }), now).ok, false, 'sub outside the safe alphabet');
  t.equal(verifyJwt(secret, 'a.b', now).ok, false);
  t.equal(parseTtl('1h'), 3600);
  t.equal(parseTtl('90s'), 90);
  t.equal(parseTtl('7d'), 604800);
  t.equal(parseTtl('1y'), undefined);
});

t.test('sealed box round-trips and detects tampering', async (t) => {
  const box = new SealedBox('sealed-secret-0123456789-0123456789');
  const sealed = box.seal('sk-gw-secret');
  t.equal(box.open(sealed), 'sk-gw-secret');
  t.not(sealed.toString('hex'), box.seal('sk-gw-secret').toString('hex'), 'fresh IV each time');
  sealed[sealed.length - 1]! ^= 1;
  t.throws(() => box.open(sealed));
});
