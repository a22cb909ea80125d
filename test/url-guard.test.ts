// The guard on URLs fetched for callers: the address classifier over every refused range (both sides
// of each boundary), refusals that need no network (schemes, IP literals, credentials, localhost),
// then fetches against a local http server with the loopback allowance tests have.
import t from 'tap';
import http from 'node:http';
import dns from 'node:dns';
import dnsPromises from 'node:dns/promises';
import { syncBuiltinESMExports } from 'node:module';
import type { AddressInfo, Socket } from 'node:net';
import { exchangeGuarded, fetchGuarded, isPublicAddress, UrlGuardError, type GuardedExchangeOptions, type GuardedFetchOptions } from '../src/media/url-guard.js';

t.test('address classifier', async (t) => {
  const cases: [address: string, isPublic: boolean][] = [
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['0.0.0.0', false],
    ['0.255.255.255', false],
    ['1.0.0.0', true],
    ['9.255.255.255', true],
    ['10.0.0.0', false],
    ['10.255.255.255', false],
    ['11.0.0.0', true],
    ['100.63.255.255', true],
    ['100.64.0.0', false],
    ['100.127.255.255', false],
    ['100.128.0.0', true],
    ['126.255.255.255', true],
    ['127.0.0.1', false],
    ['127.255.255.255', false],
    ['128.0.0.0', true],
    ['169.253.255.255', true],
    ['169.254.0.0', false],
    ['169.254.169.254', false],
    ['169.255.0.0', true],
    ['172.15.255.255', true],
    ['172.16.0.0', false],
    ['172.31.255.255', false],
    ['172.32.0.0', true],
    ['191.255.255.255', true],
    ['192.0.0.0', false],
    ['192.0.0.255', false],
    ['192.0.1.0', true],
    ['192.0.2.0', false],
    ['192.0.2.255', false],
    ['192.0.3.0', true],
    ['192.88.98.255', true],
    ['192.88.99.0', false],
    ['192.88.99.255', false],
    ['192.88.100.0', true],
    ['192.167.255.255', true],
    ['192.168.0.0', false],
    ['192.168.255.255', false],
    ['192.169.0.0', true],
    ['198.17.255.255', true],
    ['198.18.0.0', false],
    ['198.19.255.255', false],
    ['198.20.0.0', true],
    ['198.51.99.255', true],
    ['198.51.100.0', false],
    ['198.51.100.255', false],
    ['198.51.101.0', true],
    ['203.0.112.255', true],
    ['203.0.113.0', false],
    ['203.0.113.255', false],
    ['203.0.114.0', true],
    ['223.255.255.255', true],
    ['224.0.0.0', false],
    ['239.255.255.255', false],
    ['240.0.0.0', false],
    ['255.255.255.254', false],
    ['255.255.255.255', false],
    ['2606:4700:4700::1111', true],
    ['2001:4860:4860::8888', true],
    ['::', false],
    ['::1', false],
    ['::2', false], // compatible form of 0.0.0.2
    ['fbff:ffff::1', true],
    ['fc00::', false],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['fe00::1', true],
    ['fe7f:ffff::1', true],
    ['fe80::', false],
    ['fe80::1%eth0', false],
    ['febf:ffff::1', false],
    ['fec0::1', false],
    ['feff:ffff::1', false],
    ['ff00::', false],
    ['ff02::1', false],
    ['2001:db7:ffff::1', true],
    ['2001:db8::', false],
    ['2001:db8:ffff:ffff::1', false],
    ['2001:db9::', true],
    ['64:ff9a:ffff::1', true],
    ['64:ff9b::', false],
    ['64:ff9b::a9fe:a9fe', false],
    ['64:ff9b::808:808', false],
    ['64:ff9b:0:0:0:1::', true], // just past /96
    ['64:ff9b:1::1', false],
    ['100::', false],
    ['100::ffff:ffff:ffff:ffff', false],
    ['100:0:0:1::', true],
    ['::ffff:8.8.8.8', true],
    ['::ffff:808:808', true],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:10.0.0.1', false],
    ['::ffff:169.254.169.254', false],
    ['::ffff:a9fe:a9fe', false],
    ['::ffff:192.168.1.1', false],
    ['::8.8.8.8', true],
    ['::10.0.0.1', false],
    ['::127.0.0.1', false],
    ['0:0:0:0:0:ffff:0a00:0001', false],
    ['2002:7f00:1::', false], // 6to4 of 127.0.0.1
    ['2002:a9fe:a9fe::1', false], // 6to4 of 169.254.169.254
    ['2002:c0a8:101::', false], // 6to4 of 192.168.1.1
    ['2002:808:808::1', false], // 6to4 of a public address: the tunnel is refused whole
    ['2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false], // Teredo
    ['2001::1', false],
    ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:200::1', true], // past Teredo's /32 (a public allocation)
    ['2003::1', true], // just past 6to4's /16
    ['not an address', false],
    ['', false],
    ['1.2.3', false],
    ['localhost', false],
  ];
  for (const [address, expected] of cases) t.equal(isPublicAddress(address, false), expected, address);

  const loopback: [address: string, isPublic: boolean][] = [
    ['127.0.0.1', true],
    ['127.255.255.255', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::', false],
    ['10.0.0.1', false],
    ['169.254.169.254', false],
    ['fe80::1', false],
  ];
  for (const [address, expected] of loopback) t.equal(isPublicAddress(address, true), expected, `${address} with loopback allowed`);
});

const LIMITS: GuardedFetchOptions = { maxBytes: 1024, timeoutMs: 2000 };

async function refusal(url: string, options: GuardedFetchOptions = LIMITS): Promise<UrlGuardError> {
  try {
    await fetchGuarded(url, options);
  } catch (error) {
    if (error instanceof UrlGuardError) return error;
    throw error;
  }
  throw new Error(`${url} was fetched`);
}

t.test('refused without touching the network', async (t) => {
  const cases: [url: string, reason: string][] = [
    ['http://example.com/image.png', 'scheme'],
    ['ftp://example.com/image.png', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['https://127.0.0.1/', 'address'],
    ['https://127.0.0.1:8443/image.png', 'address'],
    ['https://localhost/', 'address'],
    ['https://[::1]/', 'address'],
    ['https://[::ffff:127.0.0.1]/', 'address'],
    ['https://[::ffff:a9fe:a9fe]/', 'address'],
    ['https://[fd00::1]/', 'address'],
    ['https://169.254.169.254/latest/meta-data', 'address'],
    ['https://10.1.2.3/', 'address'],
    ['https://192.168.0.1/', 'address'],
    ['https://0.0.0.0/', 'address'],
    ['https://2130706433/', 'address'],
    ['https://0x7f.1/', 'address'],
    ['https://0177.0.0.1/', 'address'],
    ['https://017700000001/', 'address'],
    ['https://user:pass@8.8.8.8/image.png', 'url'],
    ['https://user@8.8.8.8/image.png', 'url'],
    ['not a url', 'url'],
    ['https://[::1/', 'url'],
  ];
  for (const [url, reason] of cases) t.equal((await refusal(url)).reason, reason, url);
  const allowed = { ...LIMITS, allowLoopback: true };
  t.equal((await refusal('http://8.8.8.8/', allowed)).reason, 'scheme', 'plain http only to loopback even in tests');
  t.equal((await refusal('http://169.254.169.254/', allowed)).reason, 'address', 'the loopback allowance lets nothing else in');
});

t.test('fetching from a local server (loopback allowed)', async (t) => {
  const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
  const sockets = new Set<Socket>();
  let askedEncoding: string | undefined;
  const server = http.createServer((request, response) => {
    const path = request.url ?? '/';
    const redirect = (status: number, location: string) => response.writeHead(status, { location }).end();
    if (path === '/image.png') {
      askedEncoding = request.headers['accept-encoding'];
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(PNG);
    } else if (path === '/seen-key') response.end(String(request.headers['x-goog-api-key'] ?? 'none'));
    else if (path === '/keyed-same') redirect(302, '/seen-key');
    else if (path === '/keyed-cross') redirect(302, `http://localhost:${port}/seen-key`);
    else if (path === '/hop1') redirect(301, '/hop2');
    else if (path === '/hop2') redirect(302, `http://127.0.0.1:${port}/hop3`);
    else if (path === '/hop3') redirect(307, 'image.png');
    else if (path === '/loop') redirect(302, '/loop');
    else if (path === '/to-metadata') redirect(302, 'http://169.254.169.254/latest/meta-data');
    else if (path === '/to-ftp') redirect(308, 'ftp://127.0.0.1/x');
    else if (path === '/to-credentials') redirect(303, `http://user:pass@127.0.0.1:${port}/image.png`);
    else if (path === '/declared-large') {
      response.writeHead(200, { 'content-length': 2048 });
      response.write(Buffer.alloc(512));
      // The rest never comes: the guard must refuse on the header alone.
    } else if (path === '/chunked-large') {
      response.writeHead(200, { 'content-type': 'image/png' });
      for (let i = 0; i < 8; i++) response.write(Buffer.alloc(256));
      response.end();
    } else if (path === '/exact') response.end(Buffer.alloc(1024, 1));
    else if (path === '/stalled-body') {
      response.writeHead(200, { 'content-length': 100 });
      response.write(Buffer.alloc(10));
    } else if (path === '/never') {
      // No answer at all.
    } else response.writeHead(404).end('not here');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const allowed: GuardedFetchOptions = { ...LIMITS, allowLoopback: true };

  await t.test('success: bytes, content type, final URL, identity encoding asked', async (t) => {
    const fetched = await fetchGuarded(`${base}/image.png`, allowed);
    t.same(fetched.bytes, PNG);
    t.equal(fetched.contentType, 'image/png');
    t.equal(fetched.finalUrl, `${base}/image.png`);
    t.equal(askedEncoding, 'identity');
  });

  await t.test('a name resolves to the pinned loopback addresses', async (t) => {
    const fetched = await fetchGuarded(`http://localhost:${port}/image.png`, allowed);
    t.same(fetched.bytes, PNG);
  });

  await t.test('the socket connects to the vetted address and never asks DNS again (no rebinding)', async (t) => {
    const originalResolve = dnsPromises.lookup;
    const originalSocketLookup = dns.lookup;
    let socketLookups = 0;
    // The vetting lookup knows the made-up name; a second lookup by the socket would get an error.
    (dnsPromises as { lookup: unknown }).lookup = async (host: string, options: unknown) =>
      host === 'pinned.test' ? [{ address: '127.0.0.1', family: 4 }] : originalResolve(host, options as dns.LookupAllOptions);
    (dns as { lookup: unknown }).lookup = (...args: unknown[]) => {
      socketLookups++;
      (args.at(-1) as (error: Error) => void)(new Error('rebound'));
    };
    syncBuiltinESMExports();
    t.teardown(() => {
      (dnsPromises as { lookup: unknown }).lookup = originalResolve;
      (dns as { lookup: unknown }).lookup = originalSocketLookup;
      syncBuiltinESMExports();
    });
    const fetched = await fetchGuarded(`http://pinned.test:${port}/image.png`, allowed);
    t.same(fetched.bytes, PNG);
    t.equal(socketLookups, 0);
  });

  await t.test('without the allowance the local server is refused', async (t) => {
    t.equal((await refusal(`${base}/image.png`)).reason, 'scheme');
    t.equal((await refusal(`http://localhost:${port}/image.png`)).reason, 'scheme');
  });

  await t.test('a chain of three redirects (absolute and relative) is followed', async (t) => {
    const fetched = await fetchGuarded(`${base}/hop1`, allowed);
    t.same(fetched.bytes, PNG);
    t.equal(fetched.finalUrl, `${base}/image.png`);
  });

  await t.test('one redirect too many', async (t) => {
    t.equal((await refusal(`${base}/hop1`, { ...allowed, maxRedirects: 2 })).reason, 'redirects');
    t.equal((await refusal(`${base}/hop1`, { ...allowed, maxRedirects: 0 })).reason, 'redirects');
    t.equal((await refusal(`${base}/loop`, allowed)).reason, 'redirects');
  });

  await t.test("headers (a vendor's key) go to the first URL's origin only, never across a redirect to another", async (t) => {
    const keyed: GuardedFetchOptions = { ...allowed, headers: { 'x-goog-api-key': 'test-key' } };
    t.equal(String((await fetchGuarded(`${base}/seen-key`, keyed)).bytes), 'test-key', 'sent to the URL');
    t.equal(String((await fetchGuarded(`${base}/keyed-same`, keyed)).bytes), 'test-key', 'kept on a redirect within the origin');
    t.equal(String((await fetchGuarded(`${base}/keyed-cross`, keyed)).bytes), 'none', 'dropped on a redirect to another origin');
    t.equal(String((await fetchGuarded(`${base}/seen-key`, allowed)).bytes), 'none', 'none unless given');
  });

  await t.test('each redirect target is vetted again', async (t) => {
    t.equal((await refusal(`${base}/to-metadata`, allowed)).reason, 'address');
    t.equal((await refusal(`${base}/to-ftp`, allowed)).reason, 'scheme');
    t.equal((await refusal(`${base}/to-credentials`, allowed)).reason, 'url');
  });

  await t.test('a non-2xx answer is a status failure carrying the status', async (t) => {
    const error = await refusal(`${base}/missing`, allowed);
    t.equal(error.reason, 'status');
    t.equal(error.status, 404);
  });

  await t.test('exchangeGuarded (a guarded cloud endpoint\'s API call): any status is an answer with its body, within maxBytes, vetted', async (t) => {
    const call = (path: string, options: Partial<GuardedExchangeOptions> = {}) =>
      exchangeGuarded(`${base}${path}`, { method: 'POST', headers: { authorization: 'Bearer x' }, body: '{}', maxBytes: 1024, timeoutMs: 2000, allowLoopback: true, ...options });
    t.same(await call('/missing'), { status: 404, body: Buffer.from('not here') }, 'a 404 with its body, not a failure');
    t.equal((await call('/exact')).body.length, 1024, 'exactly maxBytes');
    t.equal((await call('/chunked-large').catch((error: UrlGuardError) => error) as UrlGuardError).reason, 'too_large');
    t.equal((await call('/hop1')).status, 301, 'redirects are answers, never followed');
    t.equal((await call('/image.png', { allowLoopback: false }).catch((error: UrlGuardError) => error) as UrlGuardError).reason, 'scheme', 'vetted like a fetch');
    t.equal((await call('/never', { timeoutMs: 200 }).catch((error: UrlGuardError) => error) as UrlGuardError).reason, 'timeout');
  });

  await t.test('bodies above maxBytes: by Content-Length up front, and while chunks arrive', async (t) => {
    const started = Date.now();
    t.equal((await refusal(`${base}/declared-large`, allowed)).reason, 'too_large');
    t.ok(Date.now() - started < 1000, 'refused on the header, without waiting for the body');
    t.equal((await refusal(`${base}/chunked-large`, allowed)).reason, 'too_large');
    const exact = await fetchGuarded(`${base}/exact`, allowed);
    t.equal(exact.bytes.length, 1024, 'exactly maxBytes is fine');
  });

  await t.test('a server that never answers, or stalls mid-body, times out within the bound', async (t) => {
    for (const path of ['/never', '/stalled-body']) {
      const started = Date.now();
      const error = await refusal(`${base}${path}`, { ...allowed, timeoutMs: 300 });
      const elapsed = Date.now() - started;
      t.equal(error.reason, 'timeout', path);
      t.ok(elapsed >= 250 && elapsed < 1500, `${path} gave up after ${elapsed} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(sockets.size, 0, 'the sockets were destroyed');
  });

  await t.test("the caller's abort signal ends the fetch with its reason", async (t) => {
    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 100);
    await t.rejects(fetchGuarded(`${base}/never`, { ...allowed, signal: controller.signal }), reason);
  });

  await t.test('a refused connection is a network failure', async (t) => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    t.equal((await refusal(`http://127.0.0.1:${closedPort}/`, allowed)).reason, 'network');
  });
});
