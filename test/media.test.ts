// Media storage and uploads: sniffing and multipart units, then POST /v1/uploads and the media host
// over real HTTP against a gateway with its own temporary MEDIA_DIR, and the retention janitor.
import t from 'tap';
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, rawRequest } from './helpers/http-tools.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { MultipartError, multipartBoundary, readFilePart } from '../src/media/multipart.js';
import { LocalMediaStorage, MEDIA_KEY } from '../src/media/storage.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const JPEG = Buffer.from('/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=', 'base64');
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const MAX = 64 * 1024;
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const riff = (kind: string) => Buffer.concat([Buffer.from('RIFF'), Buffer.from([36, 0, 0, 0]), Buffer.from(kind), Buffer.alloc(16)]);
const ftyp = (brand: string) => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from(`ftyp${brand}`), Buffer.alloc(12)]);

t.test('sniffing: the type comes from the magic bytes only', async (t) => {
  const cases: [string, Buffer, string | undefined][] = [
    ['PNG', PNG, 'image/png'],
    ['JPEG', JPEG, 'image/jpeg'],
    ['GIF', GIF, 'image/gif'],
    ['WEBP', riff('WEBP'), 'image/webp'],
    ['WAV', riff('WAVE'), 'audio/wav'],
    ['AVI is not stored', riff('AVI '), undefined],
    ['MP4 isom', ftyp('isom'), 'video/mp4'],
    ['MOV', ftyp('qt  '), 'video/quicktime'],
    ['M4A', ftyp('M4A '), 'audio/mp4'],
    ['AVIF', ftyp('avif'), 'image/avif'],
    ['HEIC is not stored', ftyp('heic'), undefined],
    ['WEBM', Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x84]), Buffer.from('webm')]), 'video/webm'],
    ['MKV', Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x82, 0x88]), Buffer.from('matroska')]), 'video/x-matroska'],
    ['MP3 with ID3', Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), 'audio/mpeg'],
    ['MP3 frame', Buffer.from([0xff, 0xfb, 0x90, 0x64, 0, 0]), 'audio/mpeg'],
    ['AAC ADTS is not MP3', Buffer.from([0xff, 0xf1, 0x50, 0x80, 0, 0]), undefined],
    ['OGG', Buffer.from('OggS\x00\x02', 'latin1'), 'audio/ogg'],
    ['FLAC', Buffer.from('fLaC\x00\x00', 'latin1'), 'audio/flac'],
    ['PDF is refused', Buffer.from('%PDF-1.7\n'), undefined],
    ['HTML is refused', Buffer.from('<!doctype html><script>alert(1)</script>'), undefined],
    ['SVG is refused', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), undefined],
    ['empty', Buffer.alloc(0), undefined],
    ['a truncated PNG signature', PNG.subarray(0, 5), undefined],
    ['ftyp too short', Buffer.from('\x00\x00\x00\x08ftyp', 'latin1'), undefined],
  ];
  for (const [name, bytes, expected] of cases) t.equal(sniffMediaType(bytes)?.contentType, expected, name);
});

t.test('multipart: one file field, strict framing', async (t) => {
  t.equal(multipartBoundary('application/json'), undefined);
  t.equal(multipartBoundary('multipart/form-data; boundary=abc'), 'abc');
  t.equal(multipartBoundary('Multipart/Form-Data; charset=x; boundary="a b:c"'), 'a b:c');
  t.throws(() => multipartBoundary('multipart/form-data'), MultipartError);
  t.throws(() => multipartBoundary(`multipart/form-data; boundary=${'x'.repeat(71)}`), MultipartError);
  const form = (parts: string[], boundary = 'XyZ') => Buffer.from(`${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`, 'latin1');
  const ok = readFilePart(form(['Content-Disposition: form-data; name="purpose"\r\n\r\nimage', 'Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n--notit']), 'XyZ');
  t.equal(ok.bytes.toString('latin1'), '\x89PNG\r\n--notit', 'the content ends before CRLF + delimiter only');
  t.equal(ok.filename, 'a.png');
  t.equal(ok.contentType, 'image/png');
  const preamble = Buffer.concat([Buffer.from('ignored preamble\r\n'), form(['Content-Disposition: form-data; name="file"\r\n\r\nabc'])]);
  t.equal(readFilePart(preamble, 'XyZ').bytes.toString(), 'abc', 'a preamble is skipped');
  const bad: [string, Buffer][] = [
    ['no delimiter', Buffer.from('hello')],
    ['no closing delimiter', Buffer.from('--XyZ\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc')],
    ['no end of headers', Buffer.from('--XyZ\r\nContent-Disposition: form-data; name="file"')],
    ['no file field', form(['Content-Disposition: form-data; name="other"\r\n\r\nabc'])],
    ['two file fields', form(['Content-Disposition: form-data; name="file"\r\n\r\na', 'Content-Disposition: form-data; name="file"\r\n\r\nb'])],
    ['not form-data', form(['Content-Disposition: attachment; name="file"\r\n\r\nabc'])],
    ['a header without a colon', form(['Content-Disposition: form-data; name="file"\r\nbroken\r\n\r\nabc'])],
    ['garbage after a delimiter', Buffer.from('--XyZjunk\r\n\r\n--XyZ--')],
  ];
  for (const [name, body] of bad) t.throws(() => readFilePart(body, 'XyZ'), MultipartError, name);
});

t.test('local storage: content-addressed, idempotent, atomic, swept by age', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'media-unit-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const storage = new LocalMediaStorage(dir, { baseUrl: 'https://m.example/media', retentionMs: 14 * 86_400_000 });
  const first = await storage.put(PNG, 'image/png');
  t.equal(first.key, `${sha(PNG)}.png`);
  t.match(first.key, MEDIA_KEY);
  t.equal(first.url, `https://m.example/media/${first.key}`);
  const again = await storage.put(PNG, 'image/png');
  t.equal(again.key, first.key, 'same bytes, same key');
  t.same(await readdir(dir), [first.key], 'one file, no temporary left');
  const got = await storage.get(first.key);
  t.ok(got?.body?.equals(PNG), 'exact bytes back');
  t.equal(got?.contentType, 'image/png');
  t.equal(await storage.get('../etc/passwd'), undefined, 'a malformed key is not looked up');
  await writeFile(join(dir, 'not-ours.txt'), 'keep me');
  const old = new Date(Date.now() - 15 * 86_400_000);
  await utimes(join(dir, first.key), old, old);
  await utimes(join(dir, 'not-ours.txt'), old, old);
  t.equal(await storage.get(first.key), undefined, 'expired: no longer served even before the sweep');
  t.equal(await storage.sweep(new Date(Date.now() - 14 * 86_400_000)), 1);
  t.same(await readdir(dir), ['not-ours.txt'], 'only our expired file is deleted');
});

let gateway: Gateway;
let mediaDir: string;
let key: string;

t.test('over HTTP', async (t) => {
  mediaDir = await mkdtemp(join(tmpdir(), 'media-gw-'));
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, MEDIA_MAX_BYTES: String(MAX), MEDIA_SWEEP_MS: '200', RATE_LIMIT_DEFAULT: '1000/10' } });
  t.teardown(async () => {
    await gateway?.close();
    await rm(mediaDir, { recursive: true, force: true });
  });
  key = (await fastUser(gateway, 'uploader', '0')).key;
  const auth = { authorization: `Bearer ${key}` };
  const upload = (body: Buffer, headers: Record<string, string> = {}) =>
    rawRequest(`${gateway.url}/v1/uploads`, { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream', ...headers }, body });
  const multipart = (file: Buffer, boundary = 'b0undary-123') => Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\nContent-Type: text/plain\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);

  await t.test('a raw PNG upload is 201 with the documented fields, and the media host serves it', async (t) => {
    const response = await upload(PNG, { 'content-type': 'image/jpeg' });
    t.equal(response.status, 201, response.text);
    const body = response.body;
    t.equal(body.content_type, 'image/png', 'the sniffed type wins over the declared one');
    t.equal(body.bytes, PNG.length);
    t.equal(body.sha256, sha(PNG));
    t.equal(body.id, `${sha(PNG)}.png`);
    t.equal(body.object, 'upload');
    t.equal(body.url, `${gateway.url}/media/${sha(PNG)}.png`, 'MEDIA_URL defaults to the gateway itself');
    const expires = Date.parse(body.expires_at);
    t.ok(Math.abs(expires - (Date.now() + 14 * 86_400_000)) < 60_000, 'expires 14 days from now');

    const served = await fetch(body.url);
    t.equal(served.status, 200);
    t.equal(served.headers.get('content-type'), 'image/png');
    t.equal(served.headers.get('content-length'), String(PNG.length));
    t.equal(served.headers.get('etag'), `"${sha(PNG)}"`);
    t.match(served.headers.get('cache-control'), /^public, max-age=\d+, immutable$/);
    t.equal(served.headers.get('x-content-type-options'), 'nosniff');
    t.ok(Buffer.from(await served.arrayBuffer()).equals(PNG), 'exact bytes');

    const head = await fetch(body.url, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.headers.get('content-length'), String(PNG.length), 'HEAD reports the length');
    t.equal(head.headers.get('content-type'), 'image/png');
    t.equal((await head.arrayBuffer()).byteLength, 0, 'HEAD has no body');
  });

  await t.test('a raw JPEG upload; the same bytes twice give the same URL', async (t) => {
    const first = await upload(JPEG);
    const second = await upload(JPEG, { 'content-type': 'image/jpeg' });
    t.equal(first.status, 201);
    t.equal(second.status, 201);
    t.equal(first.body.content_type, 'image/jpeg');
    t.equal(second.body.url, first.body.url);
    const served = await fetch(first.body.url);
    t.equal(served.headers.get('content-type'), 'image/jpeg');
    t.ok(Buffer.from(await served.arrayBuffer()).equals(JPEG));
    t.equal((await readdir(mediaDir)).filter((n) => n.startsWith(sha(JPEG))).length, 1, 'stored once');
  });

  await t.test('a multipart upload with one file field', async (t) => {
    const response = await upload(multipart(GIF), { 'content-type': 'multipart/form-data; boundary=b0undary-123' });
    t.equal(response.status, 201, response.text);
    t.equal(response.body.content_type, 'image/gif');
    t.equal(response.body.bytes, GIF.length);
    const served = await fetch(response.body.url);
    t.ok(Buffer.from(await served.arrayBuffer()).equals(GIF), 'the part content only, without framing');
  });

  await t.test('malformed multipart is 400', async (t) => {
    assertEnvelope(t, await upload(multipart(GIF).subarray(0, -10), { 'content-type': 'multipart/form-data; boundary=b0undary-123' }), 400, 'invalid_multipart', 'unclosed');
    assertEnvelope(t, await upload(multipart(GIF), { 'content-type': 'multipart/form-data; boundary=other' }), 400, 'invalid_multipart', 'wrong boundary');
    assertEnvelope(t, await upload(multipart(GIF), { 'content-type': 'multipart/form-data' }), 400, 'invalid_multipart', 'no boundary');
  });

  await t.test('unknown bytes are 415; empty is 400', async (t) => {
    assertEnvelope(t, await upload(Buffer.from('<html><script>alert(1)</script></html>'), { 'content-type': 'image/png' }), 415, 'unsupported_media_type', 'HTML declared as PNG');
    assertEnvelope(t, await upload(Buffer.from('%PDF-1.4\n')), 415, 'unsupported_media_type', 'PDF');
    assertEnvelope(t, await upload(Buffer.alloc(0)), 400, 'invalid_request', 'empty');
  });

  await t.test('beyond MEDIA_MAX_BYTES is 413: declared, streamed, within the multipart allowance, in a part', async (t) => {
    const huge = Buffer.concat([PNG, Buffer.alloc(MAX * 4)]);
    assertEnvelope(t, await upload(huge), 413, 'payload_too_large', 'declared Content-Length');
    const pieces: Buffer[] = [];
    for (let i = 0; i < huge.length; i += 16384) pieces.push(huge.subarray(i, i + 16384));
    assertEnvelope(t, await rawRequest(`${gateway.url}/v1/uploads`, { method: 'POST', headers: { ...auth, 'content-type': 'image/png' }, chunks: pieces }), 413, 'payload_too_large', 'chunked');
    const justOver = Buffer.concat([PNG, Buffer.alloc(MAX + 1 - PNG.length)]);
    assertEnvelope(t, await upload(justOver), 413, 'payload_too_large', 'one byte over');
    assertEnvelope(t, await upload(multipart(justOver), { 'content-type': 'multipart/form-data; boundary=b0undary-123' }), 413, 'payload_too_large', 'a part one byte over');
    const atLimit = Buffer.concat([PNG, Buffer.alloc(MAX - PNG.length)]);
    const ok = await upload(atLimit);
    t.equal(ok.status, 201, 'exactly MEDIA_MAX_BYTES is accepted');
    t.equal(ok.body.bytes, MAX);
    t.equal((await rawRequest(`${gateway.url}/healthz`)).status, 200, 'still healthy');
  });

  await t.test('no or a bad API key is 401', async (t) => {
    assertEnvelope(t, await rawRequest(`${gateway.url}/v1/uploads`, { method: 'POST', body: PNG }), 401, 'invalid_api_key', 'no key');
    assertEnvelope(t, await rawRequest(`${gateway.url}/v1/uploads`, { method: 'POST', headers: { authorization: 'Bearer sk-gw-nope' }, body: PNG }), 401, 'invalid_api_key', 'bad key');
  });

  await t.test('unknown, malformed and traversal keys are 404', async (t) => {
    const paths = [
      `/media/${'0'.repeat(64)}.png`,
      `/media/${sha(PNG).toUpperCase()}.png`,
      `/media/${sha(PNG)}.txt`,
      `/media/${sha(PNG)}`,
      '/media/../package.json',
      '/media/..%2f..%2fpackage.json',
      '/media/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
      `/media/${sha(PNG)}.png%00.txt`,
      '/media/',
      `/media/x/${sha(PNG)}.png`,
    ];
    for (const path of paths) {
      const response = await rawRequest(`${gateway.url}${path}`);
      t.equal(response.status, 404, path);
    }
  });

  await t.test('the janitor deletes media past retention; expired media is not served meanwhile', async (t) => {
    const response = await upload(GIF);
    t.equal(response.status, 201);
    const file = join(mediaDir, response.body.id);
    await stat(file);
    const old = new Date(Date.now() - 15 * 86_400_000);
    await utimes(file, old, old);
    t.equal((await fetch(response.body.url)).status, 404, 'expired: 404 at once');
    t.ok(await eventually(async () => !(await readdir(mediaDir)).includes(response.body.id), 5000), 'file deleted by the janitor');
    t.ok((await readdir(mediaDir)).includes(`${sha(PNG)}.png`), 'fresh media is kept');
    const again = await upload(GIF);
    t.equal(again.status, 201, 'the same bytes can be stored again');
    t.equal((await fetch(again.body.url)).status, 200);
  });
});
