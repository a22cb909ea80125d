// The media host on S3 storage, over real HTTP: a fake S3 of this test's own (path-style, on loopback)
// stands in for the bucket. It checks that every request is SigV4-signed (not that the signature is
// right), and counts what it sends. An upload goes in with one PutObject; the media host reads with
// HeadObject and a ranged GetObject streamed to the client: whole objects and ranges (206,
// Content-Range) come back byte for byte, a client that never reads does not make the gateway pull a
// 64 MiB object (the fake is left holding it), reads in progress are bounded per thread (503 beyond),
// clients that leave close their GetObjects, and the storage holds more reads at once than the SDK's
// default pool of 50 sockets.
import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { S3MediaStorage } from '../src/media/s3.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, rawRequest, sleep } from './helpers/http-tools.js';

const MiB = 1024 * 1024;
const BUCKET = 'gateway-media';
const PREFIX = 'media/';
const ACCESS_KEY = 'AKIDFAKES3EXAMPLE';
/** Stalled readers of the media host at once over HTTP (MEDIA_READ_CONCURRENCY of the test's gateway). */
const READERS = 20;
/** Reads open at once on the storage itself: above the SDK's default pool of 50 sockets per client. */
const STORAGE_READS = 60;

interface StoredObject {
  body: Buffer;
  contentType: string;
  lastModified: Date;
  /** Sent slowly (64 KiB every 50 ms), as a distant store would: many reads at once then hold little in the kernel's buffers. */
  slow?: boolean;
  /** A store gone silent: a GetObject sends its head and one piece, then nothing. */
  silent?: boolean;
}

/** One GetObject as the fake answered it. */
interface Read {
  readonly key: string;
  readonly range: string | undefined;
  sent: number;
  closed: boolean;
}

/** A request without a SigV4 Authorization header, x-amz-date and x-amz-content-sha256. */
interface Unsigned {
  readonly method: string;
  readonly url: string;
}

/** Decodes an `aws-chunked` body (the SDK's streaming checksum framing): the chunks' data, trailers dropped. */
function awsUnchunk(framed: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = framed.indexOf('\r\n', at);
    const size = parseInt(framed.toString('latin1', at, lineEnd).split(';')[0]!, 16);
    if (!(size > 0)) return Buffer.concat(parts);
    parts.push(framed.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

const xml = (text: string) => text.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);

/** The fake: HEAD, GET (ranged or whole) and PUT of objects, ListObjectsV2 and DeleteObjects for the janitor. */
class FakeS3 {
  readonly objects = new Map<string, StoredObject>();
  readonly reads: Read[] = [];
  readonly puts: string[] = [];
  readonly heads: string[] = [];
  readonly unsigned: Unsigned[] = [];
  private readonly sockets = new Set<net.Socket>();
  private readonly server = http.createServer((request, response) => this.handle(request, response));
  url = '';

  async start(): Promise<void> {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(request: http.IncomingMessage, response: http.ServerResponse): void {
    response.on('error', () => {});
    const url = new URL(request.url!, 'http://s3.local');
    const authorization = request.headers.authorization ?? '';
    const signed = new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/\\d{8}/[a-z0-9-]+/s3/aws4_request, ?SignedHeaders=[a-z0-9;-]+, ?Signature=[0-9a-f]{64}$`).test(authorization)
      && /^\d{8}T\d{6}Z$/.test(String(request.headers['x-amz-date'] ?? ''))
      && typeof request.headers['x-amz-content-sha256'] === 'string';
    if (!signed) {
      this.unsigned.push({ method: request.method!, url: request.url! });
      return this.error(response, 403, 'AccessDenied', 'Missing or malformed SigV4 signature.');
    }
    const path = decodeURIComponent(url.pathname);
    if (!path.startsWith(`/${BUCKET}`)) return this.error(response, 404, 'NoSuchBucket', 'The bucket does not exist.');
    const key = path.slice(BUCKET.length + 2);
    if (request.method === 'GET' && key === '' && url.searchParams.get('list-type') === '2') return this.list(response, url.searchParams.get('prefix') ?? '');
    if (request.method === 'POST' && key === '' && url.searchParams.has('delete')) return this.deleteObjects(request, response);
    if (request.method === 'PUT') return this.put(request, response, key);
    const object = this.objects.get(key);
    if (request.method === 'HEAD') {
      this.heads.push(key);
      if (!object) return void response.writeHead(404).end();
      response.writeHead(200, this.headersOf(object, object.body.length));
      return void response.end();
    }
    if (request.method !== 'GET') return this.error(response, 405, 'MethodNotAllowed', 'Not here.');
    if (!object) return this.error(response, 404, 'NoSuchKey', 'The specified key does not exist.');
    const range = request.headers.range;
    const read: Read = { key, range, sent: 0, closed: false };
    this.reads.push(read);
    response.on('close', () => { read.closed = true; });
    const size = object.body.length;
    const match = /^bytes=(\d+)-(\d+)$/.exec(range ?? '');
    const [start, end] = match ? [Number(match[1]), Math.min(Number(match[2]), size - 1)] : [0, size - 1];
    if (match && start >= size) return this.error(response, 416, 'InvalidRange', 'The requested range is not satisfiable.');
    response.writeHead(match ? 206 : 200, {
      ...this.headersOf(object, end - start + 1),
      ...(match ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
    });
    // As fast as the gateway reads, never more: `sent` is what it took, give or take the kernel's buffers.
    // One piece a turn, so that many reads at once do not starve this process's own clients.
    let at = start;
    const more = (): void => {
      if (at > end || response.destroyed) return;
      const piece = object.body.subarray(at, Math.min(at + (object.slow ? 64 : 256) * 1024, end + 1));
      at += piece.length;
      read.sent += piece.length;
      if (at > end) return void response.end(piece);
      if (object.silent) return void response.write(piece);
      if (!response.write(piece)) response.once('drain', more);
      else if (object.slow) setTimeout(more, 50);
      else setImmediate(more);
    };
    more();
  }

  private headersOf(object: StoredObject, length: number): http.OutgoingHttpHeaders {
    return {
      'content-type': object.contentType, 'content-length': String(length), 'last-modified': object.lastModified.toUTCString(),
      etag: `"${createHash('md5').update(object.body).digest('hex')}"`, 'accept-ranges': 'bytes',
    };
  }

  private put(request: http.IncomingMessage, response: http.ServerResponse, key: string): void {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const framed = Buffer.concat(parts);
      const body = /aws-chunked/.test(String(request.headers['content-encoding'] ?? '')) ? awsUnchunk(framed) : framed;
      this.puts.push(key);
      this.objects.set(key, { body, contentType: String(request.headers['content-type'] ?? 'application/octet-stream'), lastModified: new Date() });
      response.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end();
    });
  }

  private list(response: http.ServerResponse, prefix: string): void {
    const contents = [...this.objects].filter(([key]) => key.startsWith(prefix)).map(([key, object]) =>
      `<Contents><Key>${xml(key)}</Key><LastModified>${object.lastModified.toISOString()}</LastModified><Size>${object.body.length}</Size></Contents>`).join('');
    response.writeHead(200, { 'content-type': 'application/xml' });
    response.end(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${BUCKET}</Name><Prefix>${xml(prefix)}</Prefix><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`);
  }

  private deleteObjects(request: http.IncomingMessage, response: http.ServerResponse): void {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      for (const [, key] of Buffer.concat(parts).toString().matchAll(/<Key>([^<]*)<\/Key>/g)) this.objects.delete(key!);
      response.writeHead(200, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><DeleteResult></DeleteResult>');
    });
  }

  private error(response: http.ServerResponse, status: number, code: string, message: string): void {
    response.writeHead(status, { 'content-type': 'application/xml' });
    response.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  }
}

/** An MP4-looking object of `size` random bytes. */
function mp4Bytes(size: number): Buffer {
  return Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12), randomBytes(size - 24)]);
}

/** Puts an object straight into the fake bucket, as the gateway would have stored it; returns its media name. */
function seed(s3: FakeS3, bytes: Buffer, mode: { slow?: boolean; silent?: boolean } = {}): string {
  const name = `${createHash('sha256').update(bytes).digest('hex')}.mp4`;
  s3.objects.set(PREFIX + name, { body: bytes, contentType: 'video/mp4', lastModified: new Date(), ...mode });
  return name;
}

const rssBytes = async (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/**
 * A client that asks for `path` and reads nothing after the first bytes arrive (it stops reading from
 * the socket, so the kernel's buffers fill and the gateway meets back-pressure). Rejects after `timeoutMs`
 * without an answer.
 */
function stalledReader(url: string, path: string, timeoutMs = 15_000): Promise<{ socket: net.Socket; head: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to GET ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('error', reject);
    socket.once('data', (first: Buffer) => {
      clearTimeout(timer);
      socket.pause();
      resolve({ socket, head: first.toString('latin1', 0, Math.min(first.byteLength, 512)) });
    });
  });
}

const s3 = new FakeS3();
let gateway: Gateway;
let key: string;

t.before(async () => {
  await s3.start();
  gateway = await startGateway({
    env: {
      MEDIA_STORAGE: 's3', MEDIA_S3_BUCKET: BUCKET, MEDIA_S3_ENDPOINT: s3.url, MEDIA_S3_FORCE_PATH_STYLE: 'true', MEDIA_S3_PREFIX: PREFIX,
      MEDIA_S3_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: 'fake-s3-secret', AWS_EC2_METADATA_DISABLED: 'true',
      MEDIA_READ_CONCURRENCY: String(READERS), MEDIA_STALL_MS: '10000', JWT_SECRET: TEST_JWT_SECRET,
    },
  });
  ({ key } = await fastUser(gateway, 'media-s3-user', '1'));
});
t.teardown(async () => {
  await gateway?.close();
  await s3.close();
});

t.test('an upload is one signed PutObject; the media host streams it back whole and by ranges', async (t) => {
  const bytes = mp4Bytes(3 * MiB + 12345);
  const sha = createHash('sha256').update(bytes).digest('hex');
  const uploaded = await rawRequest(`${gateway.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'video/mp4' }, body: bytes });
  t.equal(uploaded.status, 201, uploaded.text.slice(0, 300));
  t.match(uploaded.body, { id: `${sha}.mp4`, content_type: 'video/mp4', bytes: bytes.length, sha256: sha });
  t.same(s3.puts, [`${PREFIX}${sha}.mp4`], 'one PutObject, under the prefix');
  t.ok(s3.objects.get(`${PREFIX}${sha}.mp4`)!.body.equals(bytes), 'the bucket holds the bytes');
  t.equal(s3.objects.get(`${PREFIX}${sha}.mp4`)!.contentType, 'video/mp4');
  const path = new URL(uploaded.body.url).pathname;
  t.equal(path, `/media/${sha}.mp4`);

  const whole = await fetch(`${gateway.url}${path}`);
  t.equal(whole.status, 200);
  t.equal(whole.headers.get('content-type'), 'video/mp4');
  t.equal(whole.headers.get('content-length'), String(bytes.length));
  t.equal(whole.headers.get('accept-ranges'), 'bytes');
  t.ok(Buffer.from(await whole.arrayBuffer()).equals(bytes), 'every byte, in order');
  t.equal(s3.reads.at(-1)!.range, `bytes=0-${bytes.length - 1}`, 'read with one ranged GetObject');

  const size = bytes.length;
  const cases: [string, number, number][] = [
    ['bytes=0-9', 0, 9], ['bytes=-10', size - 10, size - 1], ['bytes=1048570-2097160', 1048570, 2097160], ['bytes=3000000-', 3000000, size - 1], ['bytes=5-99999999', 5, size - 1],
  ];
  for (const [range, start, end] of cases) {
    const response = await fetch(`${gateway.url}${path}`, { headers: { range } });
    t.equal(response.status, 206, range);
    t.equal(response.headers.get('content-range'), `bytes ${start}-${end}/${size}`, `${range}: content-range`);
    t.equal(response.headers.get('content-length'), String(end - start + 1), `${range}: content-length`);
    t.ok(Buffer.from(await response.arrayBuffer()).equals(bytes.subarray(start, end + 1)), `${range}: the bytes`);
    t.equal(s3.reads.at(-1)!.range, `bytes=${start}-${end}`, `${range}: only those bytes asked of the store`);
  }
  const reads = s3.reads.length;
  const beyond = await rawRequest(`${gateway.url}${path}`, { headers: { range: `bytes=${size}-` } });
  assertEnvelope(t, beyond, 416, 'range_not_satisfiable', 'a range past the end');
  t.equal(beyond.headers['content-range'], `bytes */${size}`);
  t.equal(s3.reads.length, reads, 'nothing read from the store for it');

  const head = await rawRequest(`${gateway.url}${path}`, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.headers['content-length'], String(size));
  const unknown = await rawRequest(`${gateway.url}/media/${'0'.repeat(64)}.mp4`);
  assertEnvelope(t, unknown, 404, undefined, 'a name the bucket does not hold');
  t.same(s3.unsigned, [], 'every request to the store was signed');
});

t.test('a client that never reads a 64 MiB object: the gateway takes a bounded part of it from the store, and lets go when the client leaves', async (t) => {
  const bytes = mp4Bytes(64 * MiB);
  const name = seed(s3, bytes);
  const pid = gateway.process.pid!;
  const before = await rssBytes(pid);
  const reader = await stalledReader(gateway.url, `/media/${name}`);
  t.teardown(() => reader.socket.destroy());
  t.match(reader.head, /^HTTP\/1\.1 200/, 'being served');
  const read = s3.reads.at(-1)!;
  t.equal(read.key, PREFIX + name);
  // Let the pipeline fill: the kernel's buffers, the SDK's stream, the one chunk the gateway holds.
  let sent = -1;
  for (let i = 0; i < 40 && read.sent !== sent; i++) {
    sent = read.sent;
    await sleep(100);
  }
  const added = (await rssBytes(pid)) - before;
  t.comment(`the store sent ${(read.sent / MiB).toFixed(1)} MiB of 64 MiB; gateway RSS +${(added / MiB).toFixed(1)} MiB`);
  t.ok(read.sent < 24 * MiB, `the gateway stopped pulling from the store (${(read.sent / MiB).toFixed(1)} of 64 MiB sent)`);
  t.notOk(read.closed, 'the GetObject is held open, paused, while the client may still read');
  t.ok(added < 32 * MiB, `the gateway does not hold the object (RSS +${(added / MiB).toFixed(1)} MiB)`);
  reader.socket.destroy();
  t.ok(await eventually(() => read.closed), 'the client left: the GetObject is closed');
});

t.test(`${READERS} stalled readers are each served; one more gets 503 media_busy; leaving frees the slots`, async (t) => {
  const name = seed(s3, mp4Bytes(16 * MiB), { slow: true });
  const path = `/media/${name}`;
  const readsBefore = s3.reads.length;
  const settled = await Promise.allSettled(Array.from({ length: READERS }, () => stalledReader(gateway.url, path)));
  const readers = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  t.teardown(() => readers.forEach((reader) => reader.socket.destroy()));
  t.equal(readers.length, READERS, `every read within MEDIA_READ_CONCURRENCY is answered (${readers.length} of ${READERS})`);
  t.ok(readers.every((reader) => reader.head.startsWith('HTTP/1.1 200')), 'each with its object');
  const busy = await rawRequest(`${gateway.url}${path}`, { headers: { range: 'bytes=0-0' } });
  assertEnvelope(t, busy, 503, 'media_busy', 'a read past MEDIA_READ_CONCURRENCY');
  t.equal(busy.headers['retry-after'], '1');
  const gets = s3.reads.slice(readsBefore);
  t.equal(gets.length, READERS, 'one GetObject per reader, none for the refused one');
  for (const reader of readers) reader.socket.destroy();
  t.ok(await eventually(() => gets.every((read) => read.closed), 10_000), 'clients that leave close their GetObjects');
  t.ok(await eventually(async () => (await rawRequest(`${gateway.url}${path}`, { headers: { range: 'bytes=0-0' } })).status === 206), 'their slots are free again');
  t.same(s3.unsigned, [], 'every request to the store was signed');
});

t.test(`${STORAGE_READS} reads open at once on the storage (above the SDK's default pool of 50 sockets) each get their GetObject`, async (t) => {
  // Each read holds its connection for as long as its client takes the bytes: a pool smaller than
  // MEDIA_READ_CONCURRENCY would leave the reads past it waiting, and every HEAD and upload behind them.
  const name = seed(s3, mp4Bytes(4 * MiB), { slow: true });
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
  process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = 'fake-s3-secret';
  t.teardown(() => {
    for (const [variable, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const) {
      if (value === undefined) delete process.env[variable];
      else process.env[variable] = value;
    }
  });
  const storage = await S3MediaStorage.create({
    baseUrl: 'https://media.example', retentionMs: 86_400_000, bucket: BUCKET, region: 'eu-west-1', endpoint: s3.url, forcePathStyle: true, prefix: PREFIX,
    readConcurrency: STORAGE_READS, timeoutMs: 10_000,
  });
  const readsBefore = s3.reads.length;
  const handles = await Promise.all(Array.from({ length: STORAGE_READS }, () => storage.openRead(name)));
  t.teardown(() => Promise.all(handles.map((handle) => handle?.close())));
  const firsts = await Promise.race([
    Promise.all(handles.map((handle) => handle!.chunks(0, handle!.object.bytes - 1).next())),
    sleep(15_000).then(() => undefined),
  ]);
  t.ok(firsts, `every read got its first bytes (${s3.reads.length - readsBefore} of ${STORAGE_READS} GetObjects reached the store)`);
  t.ok(firsts?.every((first) => !first.done && first.value.byteLength > 0), 'each a piece of the object');
  for (const handle of handles) await handle!.close();
  t.ok(await eventually(() => s3.reads.slice(readsBefore).every((read) => read.closed), 10_000), 'closing the handles closes their GetObjects');
});

t.test('a store that falls silent mid-object: the media host ends the read within MEDIA_S3_TIMEOUT_MS and frees its slot', async (t) => {
  const size = 8 * MiB;
  const name = seed(s3, mp4Bytes(size), { silent: true });
  const silent = await startGateway({
    env: {
      MEDIA_STORAGE: 's3', MEDIA_S3_BUCKET: BUCKET, MEDIA_S3_ENDPOINT: s3.url, MEDIA_S3_FORCE_PATH_STYLE: 'true', MEDIA_S3_PREFIX: PREFIX,
      AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: 'fake-s3-secret', AWS_EC2_METADATA_DISABLED: 'true',
      MEDIA_S3_TIMEOUT_MS: '500', MEDIA_READ_CONCURRENCY: '1',
    },
  });
  t.teardown(() => silent.close());
  const startedMs = Date.now();
  const received = await new Promise<number>((resolve, reject) => {
    const request = http.get(`${silent.url}/media/${name}`, (response) => {
      let bytes = 0;
      response.on('data', (piece: Buffer) => { bytes += piece.length; });
      response.on('end', () => resolve(bytes));
      response.on('error', () => resolve(bytes));
      response.on('aborted', () => resolve(bytes));
    });
    request.on('error', reject);
    request.setTimeout(20_000, () => request.destroy(new Error('the media host held the read')));
  });
  const elapsedMs = Date.now() - startedMs;
  t.ok(received < size, `the client sees a short body (${received} of ${size} bytes), never a wrong one`);
  t.ok(elapsedMs < 5000, `the read ended soon after the store fell silent (${elapsedMs} ms), not never`);
  t.ok(await eventually(() => s3.reads.filter((read) => read.key === PREFIX + name).every((read) => read.closed)), 'its GetObject is closed');
  const next = await rawRequest(`${silent.url}/media/${name}`, { method: 'HEAD' });
  t.equal(next.status, 200, 'the store answers HEADs still');
  const slot = await rawRequest(`${silent.url}/media/${'1'.repeat(64)}.mp4`);
  assertEnvelope(t, slot, 404, undefined, 'the one read slot is free again (a read gets as far as the store)');
});

t.test('a store that cannot be reached: uploads and reads get 503 media_store_unavailable with Retry-After, never a 500', async (t) => {
  // A port that was just free: nothing listens, so every store request is refused.
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const down = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_STORAGE: 's3', MEDIA_S3_BUCKET: BUCKET, MEDIA_S3_ENDPOINT: `http://127.0.0.1:${port}`, MEDIA_S3_FORCE_PATH_STYLE: 'true',
      MEDIA_S3_PREFIX: PREFIX, AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: 'fake-s3-secret', AWS_EC2_METADATA_DISABLED: 'true', MEDIA_S3_TIMEOUT_MS: '500',
    },
  });
  t.teardown(() => down.close());
  const { key: downKey } = await fastUser(down, `media-s3-down-${Date.now()}`, '1');
  const uploaded = await rawRequest(`${down.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${downKey}`, 'content-type': 'video/mp4' }, body: mp4Bytes(4096) });
  assertEnvelope(t, uploaded, 503, 'media_store_unavailable', 'an upload');
  t.equal(uploaded.headers['retry-after'], '1', 'an upload: Retry-After');
  const read = await rawRequest(`${down.url}/media/${'2'.repeat(64)}.mp4`);
  assertEnvelope(t, read, 503, 'media_store_unavailable', 'a read');
  t.equal(read.headers['retry-after'], '1', 'a read: Retry-After');
  const head = await rawRequest(`${down.url}/media/${'2'.repeat(64)}.mp4`, { method: 'HEAD' });
  t.equal(head.status, 503, 'a HEAD');
  t.match(down.output, /media store failed/, 'logged for the operator');
});
