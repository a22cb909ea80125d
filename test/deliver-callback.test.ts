// One callback delivery (the piscina task module, called directly) against a local receiver on
// 127.0.0.1 with the loopback allowance tests have: the signed headers arrive and verify; non-2xx,
// hangs and redirects are failures; the URL guard refuses what is not public https. Then the retry policy.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import deliverCallback, { type DeliverCallbackInput } from '../workers/deliver-callback.js';
import { newWebhookSecret, verifyWebhook } from '../src/tasks/webhook-signature.js';
import { callbackGivesUp, callbackRetryDelayMs } from '../src/tasks/callback-policy.js';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

t.test('deliveries', async (t) => {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      switch (req.url) {
        case '/hang': return;
        case '/fail': res.statusCode = 500; break;
        case '/accepted': res.statusCode = 202; break;
        case '/redirect': res.statusCode = 307; res.setHeader('location', '/target'); break;
        case '/endless': {
          // Answers 200 at once, then never ends its body: the delivery must not wait for it.
          res.writeHead(200, { 'content-type': 'text/plain' });
          const timer = setInterval(() => res.write('x'.repeat(1024)), 5);
          res.on('close', () => clearInterval(timer));
          return;
        }
      }
      res.end('thanks');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => { server.closeAllConnections(); server.close(); });
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const secret = newWebhookSecret();
  const body = JSON.stringify({ id: 'c0ffee', object: 'video.generation', status: 'success', note: 'ünïcødé ✓' });
  const send = (path: string, extra: Partial<DeliverCallbackInput> = {}) =>
    deliverCallback({ url: `${base}${path}`, webhookId: 'msg_c0ffee', body, secrets: [secret], timeoutMs: 400, allowLoopback: true, ...extra });
  const hits = (path: string) => seen.filter((request) => request.path === path).length;

  t.test('a 2xx: the signed headers and the exact body arrive', async (t) => {
    const before = Math.floor(Date.now() / 1000);
    const result = await send('/ok');
    t.match(result, { ok: true, status: 200 });
    t.type(result.durationMs, 'number');
    t.notOk('error' in result && result.error !== undefined, 'no error');
    const got = seen.at(-1)!;
    t.equal(got.method, 'POST');
    t.equal(got.body, body, 'the body byte for byte');
    t.equal(got.headers['content-type'], 'application/json');
    t.equal(got.headers['user-agent'], 'model-gateway-webhooks/1');
    t.equal(got.headers['webhook-id'], 'msg_c0ffee');
    t.equal(got.headers['content-length'], String(Buffer.byteLength(body)), 'a sized body (not chunked)');
    const timestamp = Number(got.headers['webhook-timestamp']);
    t.ok(timestamp >= before && timestamp <= Math.floor(Date.now() / 1000), 'webhook-timestamp is now, in seconds');
    const headers = { id: String(got.headers['webhook-id']), timestamp: String(got.headers['webhook-timestamp']), signature: String(got.headers['webhook-signature']) };
    t.ok(verifyWebhook(secret, headers, got.body, Math.floor(Date.now() / 1000)), 'the signature verifies');
    t.notOk(verifyWebhook(newWebhookSecret(), headers, got.body, Math.floor(Date.now() / 1000)), 'not with another secret');
    t.match(await send('/accepted'), { ok: true, status: 202 }, 'any 2xx is a delivery');
  });

  t.test('two secrets during a rotation: two entries, each verifies', async (t) => {
    const previous = newWebhookSecret();
    t.match(await send('/ok', { secrets: [secret, previous] }), { ok: true });
    const got = seen.at(-1)!;
    const signature = String(got.headers['webhook-signature']);
    t.equal(signature.split(' ').length, 2);
    for (const key of [secret, previous]) {
      t.ok(verifyWebhook(key, { id: 'msg_c0ffee', timestamp: String(got.headers['webhook-timestamp']), signature }, got.body, Math.floor(Date.now() / 1000)));
    }
  });

  t.test('a retry keeps the webhook-id and signs a fresh timestamp', async (t) => {
    await send('/fail');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await send('/ok');
    const [first, second] = seen.slice(-2);
    t.equal(first!.headers['webhook-id'], second!.headers['webhook-id']);
    t.not(first!.headers['webhook-timestamp'], second!.headers['webhook-timestamp']);
    t.not(first!.headers['webhook-signature'], second!.headers['webhook-signature']);
  });

  t.test('non-2xx, hangs and redirects are failures', async (t) => {
    t.match(await send('/fail'), { ok: false, status: 500 }, 'a 500 answer');
    const targetHits = hits('/target');
    const redirected = await send('/redirect');
    t.match(redirected, { ok: false, status: 307 }, 'a redirect is the answer');
    t.equal(hits('/target'), targetHits, 'and is not followed');
    const hung = await send('/hang', { timeoutMs: 300 });
    t.equal(hung.ok, false);
    t.equal(hung.status, undefined);
    t.match(hung.error, /^timeout:/);
    t.ok(hung.durationMs >= 250 && hung.durationMs < 1000, `bounded by the timeout (${hung.durationMs} ms)`);
    const started = Date.now();
    t.match(await send('/endless', { timeoutMs: 2000 }), { ok: true, status: 200 }, 'an endless body after a 200 is still a delivery');
    t.ok(Date.now() - started < 1000, 'and is not waited for');
  });

  t.test('the URL guard refuses what is not public https, before sending anything', async (t) => {
    const before = seen.length;
    const refused = (url: string, allowLoopback = false) => deliverCallback({ url, webhookId: 'msg_x', body, secrets: [secret], timeoutMs: 400, allowLoopback });
    t.match(await send('/ok', { allowLoopback: false }), { ok: false, error: /^scheme:/ }, 'plain http to loopback, without the allowance');
    t.match(await refused(`https://127.0.0.1:${port}/ok`), { ok: false, error: /^address:/ }, 'https to loopback, without the allowance');
    t.match(await refused(`https://[::1]:${port}/ok`), { ok: false, error: /^address:/ }, 'IPv6 loopback');
    t.match(await refused('https://localhost/ok'), { ok: false, error: /^address:/ }, 'a name that resolves to loopback');
    t.match(await refused('https://10.0.0.1/hook'), { ok: false, error: /^address:/ }, 'a private address');
    t.match(await refused('https://169.254.169.254/latest/meta-data'), { ok: false, error: /^address:/ }, 'link-local (cloud metadata)');
    t.match(await refused('https://2130706433/hook'), { ok: false, error: /^address:/ }, 'loopback spelled as a number');
    t.match(await refused('http://8.8.8.8/hook'), { ok: false, error: /^scheme:/ }, 'plain http to a public address');
    t.match(await refused('http://8.8.8.8/hook', true), { ok: false, error: /^scheme:/ }, 'even with the allowance (it covers loopback only)');
    t.match(await refused('ftp://example.com/hook'), { ok: false, error: /^scheme:/ });
    t.match(await refused('https://user:pw@example.com/hook'), { ok: false, error: /^url:/ }, 'credentials in the URL');
    t.match(await refused('not a url'), { ok: false, error: /^url:/ });
    t.equal(seen.length, before, 'the receiver saw none of them');
  });
});

t.test('retry policy: delays double, jitter stays within ±20 % and under the cap', (t) => {
  const mid = () => 0.5;
  t.same([1, 2, 3, 4, 5, 6, 7].map((n) => callbackRetryDelayMs(n, 5_000, 3_600_000, mid)), [5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000], 'doubling');
  t.same([10, 11, 50, 10_000].map((n) => callbackRetryDelayMs(n, 5_000, 3_600_000, mid)), [2_560_000, 3_600_000, 3_600_000, 3_600_000], 'then the cap');
  t.equal(callbackRetryDelayMs(3, 1_000, 60_000, () => 0), 3_200, '-20 %');
  t.equal(callbackRetryDelayMs(3, 1_000, 60_000, () => 0.999_999_9), 4_800, 'just under +20 %');
  t.equal(callbackRetryDelayMs(20, 1_000, 60_000, () => 0.999_999_9), 60_000, 'the cap is a ceiling, jitter included');
  t.equal(callbackRetryDelayMs(20, 1_000, 60_000, () => 0), 48_000, 'jitter still spreads attempts at the cap');
  t.equal(callbackRetryDelayMs(1, 5_000, 200, mid), 200, 'a cap below the base: every pause is the cap');
  for (let attempt = 1; attempt <= 30; attempt++) {
    const nominal = Math.min(600_000, 2_000 * 2 ** (attempt - 1));
    for (let i = 0; i < 50; i++) {
      const delay = callbackRetryDelayMs(attempt, 2_000, 600_000);
      if (delay < nominal * 0.8 || delay > Math.min(600_000, nominal * 1.2)) t.fail(`attempt ${attempt}: ${delay} outside ±20 % of ${nominal}`);
    }
  }
  for (const attempt of [0, -1, 1.5, Number.NaN]) t.throws(() => callbackRetryDelayMs(attempt, 1_000, 60_000), RangeError, `attempt ${attempt}`);
  t.throws(() => callbackRetryDelayMs(1, 0, 60_000), RangeError, 'a zero base');
  t.end();
});

t.test('retry policy: given up 24 h after the first attempt', (t) => {
  const first = new Date('2026-01-01T00:00:00Z');
  const at = (ms: number) => new Date(first.getTime() + ms);
  t.notOk(callbackGivesUp(first, first), 'at the first attempt');
  t.notOk(callbackGivesUp(first, at(23 * 3_600_000)), 'after 23 h');
  t.notOk(callbackGivesUp(first, at(86_400_000 - 1)), 'a millisecond before 24 h');
  t.ok(callbackGivesUp(first, at(86_400_000)), 'at 24 h');
  t.ok(callbackGivesUp(first, at(3 * 86_400_000)), 'long after');
  t.notOk(callbackGivesUp(first, at(59_999), 60_000), 'a window of the caller\'s: inside');
  t.ok(callbackGivesUp(first, at(60_000), 60_000), 'and past it');
  t.ok(callbackGivesUp(new Date(Number.NaN), first), 'an invalid first-attempt date gives up rather than retrying forever');
  // The schedule a 5 s base and 1 h cap give: attempts keep coming through the day, then stop.
  let elapsed = 0;
  let attempts = 1;
  while (!callbackGivesUp(first, at(elapsed))) elapsed += callbackRetryDelayMs(attempts++, 5_000, 3_600_000, () => 0.5);
  t.ok(attempts > 20 && attempts < 40, `${attempts} attempts in the window`);
  t.end();
});
