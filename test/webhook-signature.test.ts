// Standard Webhooks signatures: the spec's published test vector, an independent HMAC computed here
// with node:crypto, one entry per secret, tampering, the timestamp tolerance at its edges, and how a
// `whsec_` secret becomes the HMAC key.
import t from 'tap';
import { createHmac } from 'node:crypto';
import { newWebhookSecret, signWebhook, verifyWebhook } from '../src/tasks/webhook-signature.js';

// From standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts ("sign function
// works"); the Svix and other reference libraries pin the same values.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const NOW = 1_700_000_000;
const BODY = '{"id":"3f1c","object":"video.generation","status":"success"}';

/** The header for `headers` fields as verifyWebhook takes them. */
const headersOf = (signature: string, id = 'msg_1', timestamp = NOW) => ({ id, timestamp: String(timestamp), signature });

t.test('the published test vector', (t) => {
  t.equal(signWebhook([VECTOR.secret], VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature, 'signs to the published signature');
  t.ok(verifyWebhook(VECTOR.secret, headersOf(VECTOR.signature, VECTOR.id, VECTOR.timestamp), VECTOR.body, VECTOR.timestamp), 'and verifies');
  t.equal(signWebhook([VECTOR.secret.slice('whsec_'.length)], VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature,
    'the whsec_ prefix is optional, as in the reference libraries');
  t.end();
});

t.test('a whsec_ secret: the key is the base64 after the prefix', (t) => {
  const key = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 1));
  const secret = `whsec_${key.toString('base64')}`;
  const independent = createHmac('sha256', key).update(`msg_k.${NOW}.${BODY}`).digest('base64');
  t.equal(signWebhook([secret], 'msg_k', NOW, BODY), `v1,${independent}`, 'HMAC-SHA256 keyed by the decoded bytes, over id.timestamp.body');
  const asText = createHmac('sha256', secret).update(`msg_k.${NOW}.${BODY}`).digest('base64');
  t.not(signWebhook([secret], 'msg_k', NOW, BODY), `v1,${asText}`, 'not keyed by the secret text itself');
  t.throws(() => signWebhook(['whsec_'], 'msg_k', NOW, BODY), RangeError, 'an empty key is refused');
  t.throws(() => verifyWebhook('whsec_', headersOf('v1,x'), BODY, NOW), RangeError, 'also when verifying');
  t.end();
});

t.test('new secrets: whsec_ and 32 random bytes', (t) => {
  const secrets = Array.from({ length: 20 }, () => newWebhookSecret());
  for (const secret of secrets) {
    t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    t.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
  }
  t.equal(new Set(secrets).size, secrets.length, 'all different');
  t.end();
});

t.test('several secrets: one entry each, in order, each verifies', (t) => {
  const secrets = [newWebhookSecret(), newWebhookSecret(), newWebhookSecret()];
  const header = signWebhook(secrets, 'msg_1', NOW, BODY);
  const entries = header.split(' ');
  t.equal(entries.length, 3);
  secrets.forEach((secret, i) => {
    t.equal(entries[i], signWebhook([secret], 'msg_1', NOW, BODY), `entry ${i} is secret ${i}'s`);
    t.ok(verifyWebhook(secret, headersOf(header), BODY, NOW), `secret ${i} verifies the whole header`);
  });
  t.notOk(verifyWebhook(newWebhookSecret(), headersOf(header), BODY, NOW), 'a stranger\'s secret does not');
  t.throws(() => signWebhook([], 'msg_1', NOW, BODY), RangeError, 'no secret is a caller bug, not an empty header');
  t.end();
});

t.test('tampering fails', (t) => {
  const secret = newWebhookSecret();
  const header = signWebhook([secret], 'msg_1', NOW, BODY);
  t.ok(verifyWebhook(secret, headersOf(header), BODY, NOW), 'untouched: verifies');
  t.notOk(verifyWebhook(secret, headersOf(header), BODY.replace('success', 'failed'), NOW), 'a changed body');
  t.notOk(verifyWebhook(secret, headersOf(header), `${BODY}\n`, NOW), 'one byte more');
  t.notOk(verifyWebhook(secret, headersOf(header), JSON.stringify(JSON.parse(BODY), null, 1), NOW), 're-serialised JSON');
  t.notOk(verifyWebhook(secret, headersOf(header, 'msg_2'), BODY, NOW), 'a changed id');
  t.notOk(verifyWebhook(secret, headersOf(header, 'msg_1', NOW + 1), BODY, NOW + 1), 'a changed timestamp');
  const value = header.slice(3);
  t.notOk(verifyWebhook(secret, headersOf(`v2,${value}`), BODY, NOW), 'another version tag');
  t.notOk(verifyWebhook(secret, headersOf(value), BODY, NOW), 'no version tag');
  t.notOk(verifyWebhook(secret, headersOf(`${header},extra`), BODY, NOW), 'anything after the signature');
  t.notOk(verifyWebhook(secret, headersOf(header.slice(0, -2)), BODY, NOW), 'a cut signature');
  t.notOk(verifyWebhook(secret, headersOf(''), BODY, NOW), 'an empty header');
  t.notOk(verifyWebhook(secret, headersOf('v1,'), BODY, NOW), 'an empty entry');
  t.ok(verifyWebhook(secret, headersOf(`v1,bm9wZQ== v2,${value} ${header} v1,bm9wZQ==`), BODY, NOW), 'found among other entries');
  t.end();
});

t.test('the timestamp tolerance at its edges', (t) => {
  const secret = newWebhookSecret();
  const headers = headersOf(signWebhook([secret], 'msg_1', NOW, BODY));
  t.ok(verifyWebhook(secret, headers, BODY, NOW + 300), '300 s late: inside');
  t.notOk(verifyWebhook(secret, headers, BODY, NOW + 301), '301 s late: outside');
  t.ok(verifyWebhook(secret, headers, BODY, NOW - 300), '300 s early (clock skew): inside');
  t.notOk(verifyWebhook(secret, headers, BODY, NOW - 301), '301 s early: outside');
  t.ok(verifyWebhook(secret, headers, BODY, NOW + 10, 10), 'a tolerance of the caller\'s: inside');
  t.notOk(verifyWebhook(secret, headers, BODY, NOW + 11, 10), 'and outside');
  for (const timestamp of ['', 'abc', '-1700000000', '1.7e9', ` ${NOW}`, `${NOW}.0`, '0x6553F100']) {
    t.notOk(verifyWebhook(secret, { ...headers, timestamp }, BODY, NOW), `timestamp ${JSON.stringify(timestamp)} is not whole seconds`);
  }
  t.throws(() => signWebhook([secret], 'msg_1', 1.5, BODY), RangeError, 'signing takes whole seconds');
  t.end();
});
