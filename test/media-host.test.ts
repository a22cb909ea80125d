// The media host under hostile readers, over real HTTP: clients that never read do not make the
// gateway hold the file (its RSS is measured), reads in progress are bounded per thread (503 beyond),
// a stalled client is dropped and its file closed, and byte ranges (206, 416, ignored lists).
import t from 'tap';
import net from 'node:net';
import { mkdtemp, readdir, readlink, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { assertEnvelope, eventually, parsePrometheus, rawRequest, sleep, sumSamples } from './helpers/http-tools.js';
import { parseByteRange } from '../src/media/byte-range.js';

const MiB = 1024 * 1024;
const BIG_BYTES = 20 * MiB;
const READERS = 25;

/** An MP4-looking object of `size` random bytes, written straight into a media directory under its name. */
async function storeObject(dir: string, size: number): Promise<{ key: string; bytes: Buffer }> {
  const bytes = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12), randomBytes(size - 24)]);
  const key = `${createHash('sha256').update(bytes).digest('hex')}.mp4`;
  await writeFile(join(dir, key), bytes);
  return { key, bytes };
}

const rssBytes = async (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** File descriptors of the gateway process open on `name`. */
async function openFilesNamed(pid: number, name: string): Promise<number> {
  let count = 0;
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    if (target.endsWith(name)) count++;
  }
  return count;
}

/**
 * A client that asks for `path` and reads nothing after the first bytes arrive (it stops reading from
 * the socket, so the kernel's buffers fill and the server meets back-pressure).
 */
function stalledReader(url: string, path: string): Promise<{ socket: net.Socket; head: string; received: () => number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let received = 0;
    const socket = net.connect(Number(port), hostname, () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`));
    socket.on('error', reject);
    socket.once('data', (first: Buffer) => {
      socket.pause();
      received += first.byteLength;
      socket.on('data', (more: Buffer) => { received += more.byteLength; });
      resolve({ socket, head: first.toString('latin1', 0, Math.min(first.byteLength, 512)), received: () => received });
    });
  });
}

t.test('byte ranges: the parser', async (t) => {
  t.same(parseByteRange(undefined, 100), { kind: 'whole' });
  t.same(parseByteRange('bytes=0-9', 100), { kind: 'partial', start: 0, end: 9 });
  t.same(parseByteRange('bytes=90-', 100), { kind: 'partial', start: 90, end: 99 });
  t.same(parseByteRange('bytes=-10', 100), { kind: 'partial', start: 90, end: 99 });
  t.same(parseByteRange('bytes=-1000', 100), { kind: 'partial', start: 0, end: 99 }, 'a suffix longer than the object is all of it');
  t.same(parseByteRange('bytes=50-1000', 100), { kind: 'partial', start: 50, end: 99 }, 'an end past the object is clipped');
  t.same(parseByteRange('bytes=100-', 100), { kind: 'unsatisfiable' });
  t.same(parseByteRange('bytes=-0', 100), { kind: 'unsatisfiable' });
  t.same(parseByteRange('bytes=0-1,5-6', 100), { kind: 'whole' }, 'a list of ranges: the whole object');
  t.same(parseByteRange('bytes=9-2', 100), { kind: 'whole' }, 'an inverted range is ignored');
  t.same(parseByteRange('items=0-9', 100), { kind: 'whole' });
  t.same(parseByteRange('bytes=-', 100), { kind: 'whole' });
  t.same(parseByteRange(`bytes=${'9'.repeat(30)}-`, 100), { kind: 'whole' }, 'positions too large to be exact are garbage');
});

t.test('over HTTP', async (t) => {
  const mediaDir = await mkdtemp(join(tmpdir(), 'media-host-'));
  let gateway: Gateway | undefined;
  t.teardown(async () => {
    await gateway?.close();
    await rm(mediaDir, { recursive: true, force: true });
  });
  // Reads bounded to the readers of the memory test; stalls tolerated as long as uWS allows (10 s), to measure.
  gateway = await startGateway({ env: { MEDIA_DIR: mediaDir, MEDIA_READ_CONCURRENCY: String(READERS), MEDIA_STALL_MS: '10000' } });
  const pid = gateway.process.pid!;
  const big = await storeObject(mediaDir, BIG_BYTES);
  const bigPath = `/media/${big.key}`;

  await t.test('25 clients that never read a 20 MiB file do not make the gateway hold it; reads past the bound get 503', async (t) => {
    const whole = await fetch(`${gateway!.url}${bigPath}`);
    t.equal(whole.status, 200);
    t.equal(whole.headers.get('accept-ranges'), 'bytes');
    t.ok(Buffer.from(await whole.arrayBuffer()).equals(big.bytes), 'a reader that reads gets every byte');
    const before = await rssBytes(pid);

    const readers = await Promise.all(Array.from({ length: READERS }, () => stalledReader(gateway!.url, bigPath)));
    t.teardown(() => readers.forEach((reader) => reader.socket.destroy()));
    t.ok(readers.every((reader) => reader.head.startsWith('HTTP/1.1 200')), 'every reader is being served');
    t.equal(await openFilesNamed(pid, big.key), READERS, 'each reader holds one open file, nothing more');
    const busy = await rawRequest(`${gateway!.url}${bigPath}`);
    assertEnvelope(t, busy, 503, 'media_busy', 'a read past MEDIA_READ_CONCURRENCY');
    t.equal(busy.headers['retry-after'], '1');
    // The gateway's worst moment while they stall: the largest of a few samples.
    let peak = 0;
    for (let i = 0; i < 10; i++) {
      peak = Math.max(peak, await rssBytes(pid));
      await sleep(25);
    }
    const added = peak - before;
    t.comment(`RSS before ${(before / MiB).toFixed(1)} MiB, peak with ${READERS} stalled readers ${(peak / MiB).toFixed(1)} MiB (+${(added / MiB).toFixed(1)} MiB; holding the file per reader would be +${READERS * 20} MiB)`);
    t.ok(added < (READERS * BIG_BYTES) / 4, `${READERS} stalled readers of a 20 MiB file add well under ${READERS} x 20 MiB (added ${(added / MiB).toFixed(1)} MiB)`);


    for (const reader of readers) reader.socket.destroy();
    t.ok(await eventually(async () => (await openFilesNamed(pid, big.key)) === 0), 'clients that leave close their files');
    t.ok(await eventually(async () => (await rawRequest(`${gateway!.url}/media/${big.key}`, { headers: { range: 'bytes=0-0' } })).status === 206), 'their slots are free again');
  });

  await t.test('ranges', async (t) => {
    const small = await storeObject(mediaDir, 1000);
    const path = `${gateway!.url}/media/${small.key}`;
    const get = (range?: string) => fetch(path, { headers: range === undefined ? {} : { range } });
    const cases: [string, number, number][] = [['bytes=0-9', 0, 9], ['bytes=990-', 990, 999], ['bytes=-10', 990, 999], ['bytes=5-5000', 5, 999], ['bytes=0-0', 0, 0]];
    for (const [range, start, end] of cases) {
      const response = await get(range);
      t.equal(response.status, 206, range);
      t.equal(response.headers.get('content-range'), `bytes ${start}-${end}/1000`, `${range}: content-range`);
      t.equal(response.headers.get('content-length'), String(end - start + 1), `${range}: content-length`);
      t.ok(Buffer.from(await response.arrayBuffer()).equals(small.bytes.subarray(start, end + 1)), `${range}: the bytes`);
    }
    for (const range of ['bytes=1000-', 'bytes=5000-6000', 'bytes=-0']) {
      const response = await rawRequest(path, { headers: { range } });
      assertEnvelope(t, response, 416, 'range_not_satisfiable', range);
      t.equal(response.headers['content-range'], 'bytes */1000', `${range}: the size`);
    }
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-2']) {
      const response = await get(range);
      t.equal(response.status, 200, `${range}: ignored`);
      t.ok(Buffer.from(await response.arrayBuffer()).equals(small.bytes), `${range}: the whole object`);
    }
    const deep = await fetch(`${gateway!.url}${bigPath}`, { headers: { range: `bytes=${10 * MiB + 7}-${10 * MiB + 200_006}` } });
    t.equal(deep.status, 206);
    t.ok(Buffer.from(await deep.arrayBuffer()).equals(big.bytes.subarray(10 * MiB + 7, 10 * MiB + 200_007)), 'a range across several chunks deep in a large file');
    const head = await rawRequest(path, { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(head.headers['accept-ranges'], 'bytes');
    t.equal(head.headers['content-length'], '1000');
  });
});

t.test('a client that takes nothing for MEDIA_STALL_MS is disconnected and its file closed', async (t) => {
  const mediaDir = await mkdtemp(join(tmpdir(), 'media-stall-'));
  const gateway = await startGateway({ env: { MEDIA_DIR: mediaDir, MEDIA_STALL_MS: '300' } });
  t.teardown(async () => {
    await gateway.close();
    await rm(mediaDir, { recursive: true, force: true });
  });
  const big = await storeObject(mediaDir, BIG_BYTES);
  const dropped = async () => {
    const samples = parsePrometheus(await (await fetch(`${gateway.url}/metrics`)).text());
    return sumSamples(samples, 'gateway_http_requests_total', { route: '/media/:key', status: '499' });
  };
  const reader = await stalledReader(gateway.url, `/media/${big.key}`);
  t.teardown(() => reader.socket.destroy());
  t.ok(await eventually(async () => (await dropped()) === 1, 10_000), 'the stalled read ends as a client gone (499), not a 200');
  t.equal(await openFilesNamed(gateway.process.pid!, big.key), 0, 'its file is closed');
  // What the kernel had buffered arrives, then the connection ends: the client never gets the whole file.
  const ended = new Promise<void>((resolve) => reader.socket.on('close', () => resolve()));
  reader.socket.resume();
  await ended;
  t.ok(reader.received() < BIG_BYTES, `the connection closed after ${reader.received()} of ${BIG_BYTES} bytes`);
});
