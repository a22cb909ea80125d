// /metrics is not open to whoever reaches the public listener: METRICS_TOKEN requires a Bearer token
// (401 otherwise), METRICS_PORT moves it to a listener of its own (the public one answers 404), and
// production refuses to start with it open on the public listener unless METRICS_PUBLIC=true.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startGateway, freePort, type Gateway } from './helpers/harness.js';
import { assertEnvelope } from './helpers/http-tools.js';
import { runUntilExit } from './helpers/startup-refusal.js';

const secret = () => randomBytes(48).toString('base64');
const TOKEN = secret();

async function scrape(url: string, authorization?: string): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const response = await fetch(url, { headers: authorization ? { authorization } : {} });
  const text = await response.text();
  let body: unknown = text;
  try { body = JSON.parse(text); } catch { /* Prometheus text */ }
  return { status: response.status, headers: response.headers, body, text };
}

t.test('METRICS_TOKEN: /metrics on the public listener takes the token and nothing else', async (t) => {
  const gateway = await startGateway({ env: { METRICS_TOKEN: TOKEN } });
  t.teardown(() => gateway.close());
  const url = `${gateway.url}/metrics`;
  const none = await scrape(url);
  assertEnvelope(t, none, 401, 'invalid_metrics_token', 'no token');
  t.equal(none.headers.get('www-authenticate'), 'Bearer', 'WWW-Authenticate: Bearer');
  assertEnvelope(t, await scrape(url, `Bearer ${secret()}`), 401, 'invalid_metrics_token', 'another token');
  assertEnvelope(t, await scrape(url, `Bearer ${TOKEN.slice(0, -1)}`), 401, 'invalid_metrics_token', 'the token less its last character');
  assertEnvelope(t, await scrape(url, `Bearer ${TOKEN}x`), 401, 'invalid_metrics_token', 'the token and one more character');
  assertEnvelope(t, await scrape(url, TOKEN), 401, 'invalid_metrics_token', 'the token without Bearer');
  const good = await scrape(url, `Bearer ${TOKEN}`);
  t.equal(good.status, 200, 'the token: 200');
  t.match(good.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.match(good.text, /^gateway_http_requests_total\{/m, 'Prometheus text of the gateway');
  t.equal((await scrape(`${gateway.url}/healthz`)).status, 200, 'the probes need no token');
});

t.test('METRICS_PORT: /metrics only on its own listener; the public one answers 404', async (t) => {
  const port = await freePort();
  const gateway: Gateway = await startGateway({ env: { METRICS_PORT: String(port), METRICS_TOKEN: TOKEN, LOG_LEVEL: 'info' } });
  t.teardown(() => gateway.close());
  assertEnvelope(t, await scrape(`${gateway.url}/metrics`, `Bearer ${TOKEN}`), 404, 'not_found', 'public listener');
  const own = `http://127.0.0.1:${port}/metrics`;
  assertEnvelope(t, await scrape(own), 401, 'invalid_metrics_token', 'metrics listener without the token');
  const good = await scrape(own, `Bearer ${TOKEN}`);
  t.equal(good.status, 200, 'metrics listener with the token: 200');
  t.match(good.text, /^gateway_http_requests_total\{route="\/\*",method="get",status="404"\} 1$/m, 'it has the HTTP threads\' metrics (the 404 above)');
  t.match(good.text, /^gateway_process_process_resident_memory_bytes /m, 'and the main thread\'s');
  assertEnvelope(t, await scrape(`http://127.0.0.1:${port}/healthz`, `Bearer ${TOKEN}`), 404, 'not_found', 'nothing else on the metrics listener');
  t.match(gateway.output, new RegExp(`"msg":"metrics listening","thread":"main","url":"http://127\\.0\\.0\\.1:${port}/metrics"`), 'start-up logs where');
});

t.test('METRICS_PORT without a token: open on its own listener only', async (t) => {
  const port = await freePort();
  const gateway = await startGateway({ env: { METRICS_PORT: String(port) } });
  t.teardown(() => gateway.close());
  t.equal((await scrape(`http://127.0.0.1:${port}/metrics`)).status, 200, 'the metrics listener');
  t.equal((await scrape(`${gateway.url}/metrics`)).status, 404, 'not the public one');
});

t.test('production refuses /metrics open on the public listener', async (t) => {
  const env = { NODE_ENV: 'production', JWT_SECRET: secret(), KEY_SECRET: secret(), MOCK_VENDOR: 'off' };
  const { code, output } = await runUntilExit(env);
  t.equal(code, 1, 'exit status 1');
  t.match(output, /^gateway: invalid METRICS_TOKEN: production does not serve \/metrics open on the public listener/m, 'one line saying what to set');
});
