// Results streamed to storage: the URL guard hands a body over as it arrives (refusing it past the
// size limit), and local storage writes it as it comes, sniffs its type from the first bytes, and
// keeps nothing of a refused, failed or oversized download.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalMediaStorage } from '../src/media/storage.js';
import { fetchGuardedStream } from '../src/media/url-guard.js';
import { mockMp4 } from '../src/mock-vendor/mp4.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
/** An MP4 of a few megabytes: the mock's clip, then padding inside its media data. */
const BIG = Buffer.concat([mockMp4(5, 'big'), Buffer.alloc(3 * 1024 * 1024, 7)]);
const video = (type: string | undefined) => type?.startsWith('video/') === true;

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

t.test('local storage: streamed bytes are stored under their hash and sniffed type; refusals keep nothing', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'media-stream-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const storage = new LocalMediaStorage(dir, { baseUrl: 'https://media.example', retentionMs: 86_400_000 });
  const stored = await storage.putStream(pieces(BIG, 64 * 1024), video);
  const sha = createHash('sha256').update(BIG).digest('hex');
  t.match(stored, { key: `${sha}.mp4`, sha256: sha, contentType: 'video/mp4', bytes: BIG.length, url: `https://media.example/${sha}.mp4` });
  t.ok((await readFile(join(dir, `${sha}.mp4`))).equals(BIG), 'the file is the bytes');
  t.same(await storage.putStream(pieces(PNG, 10), video), { refused: 'image/png' }, 'a PNG is refused where a video is expected');
  t.same(await storage.putStream(pieces(Buffer.alloc(0), 1), video), { refused: undefined }, 'nothing is not media');
  async function* broken(): AsyncGenerator<Buffer> {
    yield BIG.subarray(0, 1000);
    throw new Error('connection reset');
  }
  await t.rejects(storage.putStream(broken(), video), /connection reset/);
  t.same(await readdir(dir), [`${sha}.mp4`], 'no temporary file left behind');
});

t.test('fetchGuardedStream: chunks as they arrive, a too_large error past the limit', async (t) => {
  const server = http.createServer((req, res) => {
    if (req.url === '/declared') res.writeHead(200, { 'content-length': String(BIG.length) }).end(BIG);
    else {
      res.writeHead(200); // chunked: no length up front
      res.end(BIG);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const options = { maxBytes: BIG.length, timeoutMs: 5000, allowLoopback: true };
  let chunks = 0;
  const total = await fetchGuardedStream(`${base}/chunked`, options, async (body) => {
    let bytes = 0;
    for await (const chunk of body) {
      chunks++;
      bytes += chunk.length;
    }
    return bytes;
  });
  t.equal(total, BIG.length);
  t.ok(chunks > 1, `handed over in ${chunks} pieces, not whole`);
  const drain = async (body: AsyncIterable<Buffer>) => { for await (const _ of body); };
  for (const path of ['/declared', '/chunked']) {
    await t.rejects(fetchGuardedStream(`${base}${path}`, { ...options, maxBytes: BIG.length - 1 }, drain),
      { name: 'UrlGuardError', reason: 'too_large' }, `${path}: one byte over is refused`);
  }
});
