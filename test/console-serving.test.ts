// The gateway serves the web console at /console (issue 29): built files from CONSOLE_DIR held in
// memory, hashed assets cached for good and precompressed, every other /console path the app's
// index.html (revalidated), a content security policy that allows nothing inline on every answer,
// HEAD and If-None-Match, no path outside the built files, CONSOLE_ENABLED=false a 404, and a console
// that was not built a clear 503 page rather than a crash.
import t, { type Test } from 'tap';
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { startGateway, type Gateway } from './helpers/harness.js';
import { assertEnvelope } from './helpers/http-tools.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/console/assets/app-3f9a1c.js"></script></head><body></body></html>\n';
const SCRIPT = `export const pages = [${Array.from({ length: 200 }, (_, i) => `'page-${i}'`).join(', ')}];\n`;
const STYLE = 'body { margin: 0 }\n';
const OUTSIDE = 'a file beside the console, never served\n';
const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' http://127.0.0.1:PORT; "
  + "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request with the path sent exactly as given (no URL normalisation of `..`) and the body as bytes, not decoded. */
function request(gateway: Gateway, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  const { hostname, port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method, headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const json = (answer: Answer) => ({ status: answer.status, body: JSON.parse(answer.body.toString('utf8')) });

function checkSecurityHeaders(t: Test, answer: Answer, gateway: Gateway, label: string): void {
  t.equal(answer.headers['content-security-policy'], POLICY.replace('PORT', new URL(gateway.url).port), `${label}: the content security policy`);
  t.equal(answer.headers['x-content-type-options'], 'nosniff', `${label}: nosniff`);
  t.equal(answer.headers['referrer-policy'], 'same-origin', `${label}: referrer policy`);
}

const root = mkdtempSync(join(tmpdir(), 'console-serving-'));
const built = join(root, 'console');
mkdirSync(join(built, 'assets'), { recursive: true });
writeFileSync(join(built, 'index.html'), INDEX);
writeFileSync(join(built, 'assets', 'app-3f9a1c.js'), SCRIPT);
// The compressed forms the console's build writes beside a file.
writeFileSync(join(built, 'assets', 'app-3f9a1c.js.gz'), gzipSync(SCRIPT));
writeFileSync(join(built, 'assets', 'app-3f9a1c.js.br'), brotliCompressSync(SCRIPT));
writeFileSync(join(built, 'assets', 'app-77b0e2.css'), STYLE);
writeFileSync(join(root, 'outside.txt'), OUTSIDE);
t.teardown(() => rmSync(root, { recursive: true, force: true }));

t.test('the console from memory: assets cached for good, every other path the app', async (t) => {
  const gateway = await startGateway({ vendors: ['openai'], env: { CONSOLE_DIR: built } });
  t.teardown(() => gateway.close());

  for (const path of ['/console', '/console/', '/console/keys', '/console/requests/2b1f0f4e-1c1a-4f43-9f0e-111111111111?from=x', '/console/index.html']) {
    const page = await request(gateway, path);
    t.equal(page.status, 200, `${path}: 200`);
    t.equal(page.body.toString(), INDEX, `${path}: index.html`);
    t.equal(page.headers['content-type'], 'text/html; charset=utf-8', `${path}: HTML`);
    t.equal(page.headers['cache-control'], 'no-cache', `${path}: revalidated each time`);
    checkSecurityHeaders(t, page, gateway, path);
  }

  const script = await request(gateway, '/console/assets/app-3f9a1c.js');
  t.equal(script.status, 200, 'a hashed asset: 200');
  t.equal(script.body.toString(), SCRIPT, 'as built (no Accept-Encoding: not compressed)');
  t.equal(script.headers['content-encoding'], undefined, 'no content coding');
  t.equal(script.headers['content-type'], 'text/javascript; charset=utf-8', 'JavaScript');
  t.equal(script.headers['cache-control'], 'public, max-age=31536000, immutable', 'cached for good');
  t.equal(script.headers.vary, 'accept-encoding', 'varies by Accept-Encoding');
  checkSecurityHeaders(t, script, gateway, 'asset');
  const style = await request(gateway, '/console/assets/app-77b0e2.css', { 'accept-encoding': 'gzip, br' });
  t.equal(style.headers['content-type'], 'text/css; charset=utf-8', 'CSS');
  t.equal(style.body.toString(), STYLE, 'a file the build wrote no compressed form of is sent as it is');

  const brotli = await request(gateway, '/console/assets/app-3f9a1c.js', { 'accept-encoding': 'gzip, deflate, br' });
  t.equal(brotli.headers['content-encoding'], 'br', 'Brotli when accepted');
  t.ok(brotli.body.length < SCRIPT.length, 'smaller');
  t.equal(brotliDecompressSync(brotli.body).toString(), SCRIPT, 'the same script');
  const gzip = await request(gateway, '/console/assets/app-3f9a1c.js', { 'accept-encoding': 'gzip, br;q=0' });
  t.equal(gzip.headers['content-encoding'], 'gzip', 'gzip when Brotli is refused (q=0)');
  t.equal(gunzipSync(gzip.body).toString(), SCRIPT, 'the same script');
  assertEnvelope(t, json(await request(gateway, '/console/assets/app-3f9a1c.js.gz')), 404, 'not_found', 'a compressed form is no file of its own');

  const head = await request(gateway, '/console/assets/app-3f9a1c.js', {}, 'HEAD');
  t.equal(head.status, 200, 'HEAD of an asset: 200');
  t.equal(head.headers['content-length'], String(Buffer.byteLength(SCRIPT)), 'its length');
  t.equal(head.body.length, 0, 'no body');
  t.equal(head.headers['cache-control'], 'public, max-age=31536000, immutable', 'the GET\'s headers');
  const headPage = await request(gateway, '/console/usage', {}, 'HEAD');
  t.equal(headPage.status, 200, 'HEAD of a page: 200');
  t.equal(headPage.headers['content-length'], String(Buffer.byteLength(INDEX)), 'index.html\'s length');
  checkSecurityHeaders(t, headPage, gateway, 'HEAD');

  const etag = page(await request(gateway, '/console'));
  const unchanged = await request(gateway, '/console/billing', { 'if-none-match': etag });
  t.equal(unchanged.status, 304, 'If-None-Match with its ETag: 304');
  t.equal(unchanged.body.length, 0, 'no body');
  t.equal((await request(gateway, '/console', { 'if-none-match': '"another"' })).status, 200, 'another ETag: 200');

  const missing = await request(gateway, '/console/assets/app-000000.js');
  assertEnvelope(t, json(missing), 404, 'not_found', 'an asset that is not there');
  checkSecurityHeaders(t, missing, gateway, '404');

  // Nothing but the built files: `..` (plain or encoded) names no file of the map, so a page is the app at most.
  for (const path of ['/console/../outside.txt', '/console/assets/../../outside.txt', '/console/%2e%2e/outside.txt', '/console/..%2foutside.txt', '/console//etc/passwd', '/console/assets/%2e%2e%2findex.html']) {
    const answer = await request(gateway, path);
    t.not(answer.body.toString(), OUTSIDE, `${path}: not the file outside`);
    t.ok([200, 404].includes(answer.status) && (answer.status === 404 || answer.body.toString() === INDEX), `${path}: the app or 404 (${answer.status})`);
  }
  assertEnvelope(t, json(await request(gateway, '/consolex')), 404, 'not_found', 'a path that only begins like /console');
  t.equal((await request(gateway, '/healthz')).status, 200, 'the gateway is still fine');
});

/** The ETag of an answer, asserted present. */
function page(answer: Answer): string {
  const etag = answer.headers.etag;
  if (typeof etag !== 'string') throw new Error('no ETag');
  return etag;
}

t.test('CONSOLE_ENABLED=false: /console is an unknown path', async (t) => {
  const gateway = await startGateway({ vendors: ['openai'], env: { CONSOLE_DIR: built, CONSOLE_ENABLED: 'false' } });
  t.teardown(() => gateway.close());
  assertEnvelope(t, json(await request(gateway, '/console')), 404, 'not_found', '/console');
  assertEnvelope(t, json(await request(gateway, '/console/assets/app-3f9a1c.js')), 404, 'not_found', 'an asset');
});

t.test('a console that was not built: a 503 page saying so; media elsewhere is in media-src', async (t) => {
  const gateway = await startGateway({ vendors: ['openai'], env: { CONSOLE_DIR: join(root, 'not-built'), MEDIA_URL: 'https://media.example.com/files' } });
  t.teardown(() => gateway.close());
  for (const path of ['/console', '/console/assets/app-3f9a1c.js']) {
    const answer = await request(gateway, path);
    t.equal(answer.status, 503, `${path}: 503`);
    t.equal(answer.headers['content-type'], 'text/html; charset=utf-8', 'a page');
    t.match(answer.body.toString(), /The console is not built[\s\S]*npm run build/, 'saying what to do');
    t.equal(answer.headers['content-security-policy'], POLICY.replace('http://127.0.0.1:PORT', 'https://media.example.com'), 'media-src names the media host');
  }
  t.equal((await request(gateway, '/console', {}, 'HEAD')).status, 503, 'HEAD: 503');
  t.match(gateway.output, /the console is not built/, 'start-up warns');
});
