// Work a caller can make the gateway do outside its limits, over real HTTP: uploads count in the key's
// request window (429 past it) and in the user's storage quota (413 past it); a video submit refused
// for credit (402) stores none of its inline images; the vendor-hint hook answers a wrong token
// without waiting for the body, and a body sent after the answer (a 401) is not kept.
import t from 'tap';
import net from 'node:net';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, rawRequest } from './helpers/http-tools.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const WINDOW = 4;
const QUOTA = 4096;

/** A PNG-looking file of `size` bytes, different each time. */
const png = (size: number) => Buffer.concat([PNG_SIGNATURE, randomBytes(size - PNG_SIGNATURE.byteLength)]);

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'upload-limits-'));
  gateway = await startGateway({
    env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: `${WINDOW}/60`, MEDIA_USER_QUOTA_BYTES: String(QUOTA) },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

const newUser = (usd = '10') => fastUser(gateway, `upload-user-${++users}`, usd);
const upload = (key: string, bytes: Buffer) => rawRequest(`${gateway.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: bytes });
const storedFiles = async () => (await readdir(mediaDir)).filter((name) => !name.startsWith('.'));

t.test("uploads count in the key's request window: past it, 429 with Retry-After and nothing stored", async (t) => {
  const { key } = await newUser();
  for (let i = 0; i < WINDOW; i++) {
    const stored = await upload(key, png(100));
    t.equal(stored.status, 201, `upload ${i + 1} of the window`);
    t.equal(stored.headers['x-ratelimit-remaining-requests'], String(WINDOW - i - 1), 'the window as the key sees it');
  }
  const before = await storedFiles();
  const refused = await upload(key, png(100));
  assertEnvelope(t, refused, 429, 'rate_limit_exceeded', 'one upload past the window');
  t.ok(Number(refused.headers['retry-after']) >= 1, 'Retry-After says when');
  t.same(await storedFiles(), before, 'the refused upload stored nothing');
});

t.test("an upload past the user's storage quota is 413 upload_quota_exceeded; the same bytes again count once", async (t) => {
  const { key } = await newUser();
  const first = png(1500);
  t.equal((await upload(key, first)).status, 201);
  t.equal((await upload(key, png(1500))).status, 201, '3000 of 4096 bytes');
  const before = await storedFiles();
  const over = await upload(key, png(1500));
  assertEnvelope(t, over, 413, 'upload_quota_exceeded', '4500 bytes would pass the quota');
  t.equal(over.body.error.param, 'file');
  t.match(over.body.error.message, /hold 3000 bytes/);
  t.same(await storedFiles(), before, 'nothing stored past the quota');
  t.equal((await upload(key, first)).status, 201, 'uploading held bytes again adds nothing to the count');
  // The quota is the user's, not the key's: another user has their own.
  const other = await newUser();
  t.equal((await upload(other.key, png(1500))).status, 201, 'another account has its own quota');
});

t.test('a video submit refused for credit (402) stores none of its inline images', async (t) => {
  const { key } = await newUser('0');
  const before = await storedFiles();
  const inline = `data:image/png;base64,${png(2000).toString('base64')}`;
  const refused = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'shengshu/viduq2-r2v', prompt: '@1 and @2 dance', image_urls: [inline, PNG_URI] });
  t.equal(refused.status, 402);
  t.equal(refused.body.error.code, 'insufficient_credits');
  t.same(await storedFiles(), before, 'no file was added to storage');
});

t.test('the vendor-hint hook answers a wrong token at once, without waiting for the body', async (t) => {
  const { hostname, port } = new URL(gateway.url);
  const socket = net.connect(Number(port), hostname);
  t.teardown(() => socket.destroy());
  // Headers promising a large body, and not one byte of it: an answer can only come from not reading it.
  socket.write(`POST /hooks/vendor-task/${randomUUID()}?token=forged HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n`);
  const head = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no answer while the body was withheld (got ${JSON.stringify(text)})`)), 5000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('\r\n\r\n')) {
        clearTimeout(timer);
        resolve(text);
      }
    });
    socket.on('error', reject);
  });
  t.match(head, /^HTTP\/1\.1 404/, 'a wrong token is 404 before any body arrives');
});

const rssBytes = async (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

t.test('a body that keeps coming after the answer (401) is not kept', async (t) => {
  const MiB = 1024 * 1024;
  const size = 20 * MiB;
  const clients = 10;
  const { hostname, port } = new URL(gateway.url);
  const pid = gateway.process.pid!;
  const before = await rssBytes(pid);
  // Each client announces a 20 MiB upload with a bad key, reads the 401, then sends the 20 MiB anyway.
  const sockets = await Promise.all(Array.from({ length: clients }, () => new Promise<{ socket: net.Socket; head: string }>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`POST /v1/uploads HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer sk-forged\r\nContent-Length: ${size}\r\n\r\n`));
    socket.once('data', (chunk: Buffer) => resolve({ socket, head: chunk.toString('latin1') }));
    socket.on('error', reject);
  })));
  t.teardown(() => sockets.forEach(({ socket }) => socket.destroy()));
  t.ok(sockets.every(({ head }) => head.startsWith('HTTP/1.1 401')), 'answered before the body');
  let peak = before;
  let sending = true;
  const sampling = (async () => {
    while (sending) {
      peak = Math.max(peak, await rssBytes(pid));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  // All of it sent, then closed: the gateway has read every byte once it closes its side too.
  await Promise.all(sockets.map(({ socket }) => new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.end(Buffer.alloc(size, 1));
  })));
  sending = false;
  await sampling;
  const added = peak - before;
  t.comment(`RSS peak +${(added / MiB).toFixed(1)} MiB while ${clients} clients sent ${size / MiB} MiB each after their 401`);
  t.ok(added < (clients * size) / 2, `the bodies are not kept (peak +${(added / MiB).toFixed(1)} MiB, kept would be ${(clients * size) / MiB} MiB)`);
});
