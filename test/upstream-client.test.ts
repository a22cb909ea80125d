// The upstream HTTP/1.1 client against real local servers: body framings (length, chunked split at
// every byte, close-delimited), keep-alive reuse, a kept-alive connection the server closed,
// timeouts, aborts, interim responses, malformed answers, back-pressure, and one connect budget for
// vetting and connecting a guarded host.
import t, { type Test } from 'tap';
import http from 'node:http';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import dnsPromises from 'node:dns/promises';
import { syncBuiltinESMExports } from 'node:module';
import type { AddressInfo } from 'node:net';
import { eachRequest } from './helpers/raw-requests.js';
import { UpstreamClient, UpstreamError, endpointOf, type UpstreamResponse } from '../src/providers/upstream-client.js';
import { upstreamErrorAsIs, upstreamFailure, upstreamUnreachable } from '../src/providers/upstream-errors.js';

async function listen(server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A raw TCP server answering each request with `answer(requestText)`; returns its URL and the sockets it saw. */
async function rawServer(t: Test, answer: (socket: net.Socket, request: string) => void): Promise<{ url: string; sockets: net.Socket[] }> {
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    eachRequest(socket, (request) => answer(socket, request));
    socket.on('error', () => {});
  });
  const url = await listen(server);
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { url, sockets };
}

const body = JSON.stringify({ hello: 'world' });
const headers = { authorization: 'Bearer k', 'content-type': 'application/json' };

/** The reason of the UpstreamError `promise` rejects with ('resolved' or 'other error' otherwise). */
async function failure(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof UpstreamError ? error.reason : `other error: ${String(error)}`;
  }
}

function collect(response: UpstreamResponse): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    response.consume({ data: (chunk) => chunks.push(Buffer.from(chunk)), end: () => resolve(chunks), error: reject });
  });
}

/** The body the client reads from an upstream that writes the answer `wire` in pieces of `piece` bytes, a turn apart. */
async function bodyWrittenInPieces(t: Test, wire: Buffer, piece: number): Promise<string> {
  const { url } = await rawServer(t, async (socket) => {
    for (let at = 0; at < wire.length; at += piece) {
      socket.write(wire.subarray(at, at + piece));
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  try {
    const response = await client.post(endpointOf(url, '/x'), headers, body);
    return Buffer.concat(await collect(response)).toString('utf8');
  } finally {
    await client.close();
  }
}

t.test('content-length body, the request as sent, and keep-alive reuse of one connection', async (t) => {
  const seen: string[] = [];
  const { url, sockets } = await rawServer(t, (socket, request) => {
    seen.push(request);
    socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Thing: a\r\nContent-Length: 11\r\n\r\n{"ok":true}');
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const endpoint = endpointOf(`${url}/v1`, '/chat/completions');
  for (let i = 0; i < 3; i++) {
    const response = await client.post(endpoint, headers, body);
    t.equal(response.status, 200);
    t.equal(response.headers['x-thing'], 'a', 'header names in lower case');
    t.equal(await response.text(), '{"ok":true}');
  }
  t.equal(sockets.length, 1, 'one connection carried all three');
  t.match(seen[0], /^POST \/v1\/chat\/completions HTTP\/1\.1\r\n/);
  t.match(seen[0], new RegExp(`host: ${url.slice('http://'.length)}\r\n`));
  t.match(seen[0], /authorization: Bearer k\r\n/);
  t.match(seen[0], new RegExp(`content-length: ${Buffer.byteLength(body)}\r\n\r\n${body.replace(/[{}]/g, '\\$&')}$`));
});

t.test('chunked bodies are decoded whatever the split of the byte stream', async (t) => {
  const payload = 'data: {"a":1}\n\ndata: {"b":"ü"}\n\ndata: [DONE]\n\n';
  const wire = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(payload.slice(0, 15)).toString(16)};ext=1\r\n${payload.slice(0, 15)}\r\n`
    + `${Buffer.byteLength(payload.slice(15)).toString(16)}\r\n${payload.slice(15)}\r\n0\r\nX-Trailer: 1\r\n\r\n`;
  const bytes = Buffer.from(wire);
  for (const piece of [1, 2, 3, 7, 64, bytes.length]) t.equal(await bodyWrittenInPieces(t, bytes, piece), payload, `pieces of ${piece} bytes`);
});

t.test('many chunks in one read: sizes in either case, with leading zeros and extensions, joined in order', async (t) => {
  const events = Array.from({ length: 40 }, (_, i) => `data: {"i":${i},"t":"${'é'.repeat(i % 7)}"}\n\n`);
  const sizeLine = (text: string, i: number) => {
    const hex = Buffer.byteLength(text).toString(16);
    return [hex.toUpperCase(), `00${hex}`, `${hex};name=value`, `${hex} ;x`, hex][i % 5];
  };
  const wire = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${events.map((e, i) => `${sizeLine(e, i)}\r\n${e}\r\n`).join('')}0\r\n\r\n`;
  const bytes = Buffer.from(wire);
  for (const piece of [5, 333, bytes.length]) t.equal(await bodyWrittenInPieces(t, bytes, piece), events.join(''), `pieces of ${piece} bytes`);
});

t.test('a body delimited by the end of the connection', async (t) => {
  const { url } = await rawServer(t, (socket) => {
    socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it');
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const response = await client.post(endpointOf(url, '/x'), headers, body);
  t.equal(await response.text(), 'all of it');
});

t.test('a 100 Continue before the real answer is skipped; 204 has no body', async (t) => {
  let n = 0;
  const { url } = await rawServer(t, (socket) => {
    if (n++ === 0) socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok');
    else socket.write('HTTP/1.1 204 No Content\r\n\r\n');
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const first = await client.post(endpointOf(url, '/x'), headers, body);
  t.equal(first.status, 201);
  t.equal(await first.text(), 'ok');
  const second = await client.post(endpointOf(url, '/x'), headers, body);
  t.equal(second.status, 204);
  t.equal(await second.text(), '');
});

t.test('a kept-alive connection the server closed: a GET is sent again once, a written POST never', async (t) => {
  const seen: string[] = [];
  const { url, sockets } = await rawServer(t, (socket, request) => {
    seen.push(request.slice(0, request.indexOf(' ')));
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const endpoint = endpointOf(url, '/x');
  t.equal(await (await client.get(endpoint, headers)).text(), 'ok');
  // The server drops the idle connection without the client having seen it yet.
  sockets[0]!.destroy();
  t.equal(await (await client.get(endpoint, headers)).text(), 'ok', 'the GET succeeds on a new connection');
  t.equal(sockets.length, 2);
  sockets[1]!.destroy();
  t.equal(await failure(client.post(endpoint, headers, body)), 'closed', 'the POST written to the dead connection fails: the vendor may have it');
  t.equal(sockets.length, 2, 'and is not sent again on a new connection');
  t.same(seen, ['GET', 'GET']);
});

t.test('errors: refused connection, no answer in time, abort, garbage, bad framing, header injection', async (t) => {
  const client = new UpstreamClient({ timeoutMs: 300 });
  t.teardown(() => client.close());

  const closed = net.createServer();
  const closedUrl = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
  t.equal(await failure(client.post(endpointOf(closedUrl, '/x'), headers, body)), 'connect', 'connection refused');

  const silent = await rawServer(t, () => {});
  const started = Date.now();
  t.equal(await failure(client.post(endpointOf(silent.url, '/x'), headers, body)), 'timeout', 'no answer: timeout');
  t.ok(Date.now() - started >= 250, 'after the timeout, not before');

  const controller = new AbortController();
  const pending = client.post(endpointOf(silent.url, '/x'), headers, body, controller.signal);
  setTimeout(() => controller.abort(), 20);
  t.equal(await failure(pending), 'aborted', 'aborted while waiting');

  const garbage = await rawServer(t, (socket) => socket.write('SSH-2.0-OpenSSH\r\n\r\n'));
  t.equal(await failure(client.post(endpointOf(garbage.url, '/x'), headers, body)), 'protocol', 'not HTTP');

  const badLength = await rawServer(t, (socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n'));
  t.equal(await failure(client.post(endpointOf(badLength.url, '/x'), headers, body)), 'protocol', 'bad content-length');

  const badChunk = await rawServer(t, (socket) => socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'));
  const response = await client.post(endpointOf(badChunk.url, '/x'), headers, body);
  t.equal(await failure(response.text()), 'protocol', 'bad chunk size fails the body');

  t.equal(await failure(client.post(endpointOf(silent.url, '/x'), { 'x-evil': 'a\r\nx-injected: 1' }, body)), 'protocol', 'no line breaks in header values');
});

t.test('a body cut short by the server fails the consumer instead of ending it', async (t) => {
  const { url } = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
    setTimeout(() => socket.destroy(), 20);
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const response = await client.post(endpointOf(url, '/x'), headers, body);
  t.equal(await failure(collect(response)), 'closed');
});

t.test('a consumer that cannot read the body fails the exchange (once) instead of throwing in the socket callback', async (t) => {
  const { url, sockets } = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
    setTimeout(() => socket.write('6\r\nsecond\r\n'), 20);
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const reading = async (early: boolean) => {
    const response = await client.post(endpointOf(url, '/x'), headers, body);
    if (early) await new Promise((resolve) => setTimeout(resolve, 50)); // both chunks arrive before anyone reads
    const seen: string[] = [];
    const errors: string[] = [];
    await new Promise<void>((resolve) => {
      response.consume({
        data: (chunk) => {
          seen.push(chunk.toString());
          throw new Error('not an event I know');
        },
        end: () => resolve(),
        error: (error) => {
          errors.push(error instanceof UpstreamError ? `${error.reason}: ${error.message}` : String(error));
          resolve();
        },
      });
    });
    return { seen, errors };
  };
  const live = await reading(false);
  t.same(live.seen, ['first'], 'nothing more is delivered after the consumer failed');
  t.same(live.errors, ['protocol: the response body could not be read: not an event I know'], 'the consumer gets one error');
  t.ok(sockets[0]!.destroyed || (await new Promise((resolve) => { sockets[0]!.once('close', () => resolve(true)); setTimeout(() => resolve(sockets[0]!.destroyed), 500); })),
    'the connection is closed, not kept for reuse');
  const buffered = await reading(true);
  t.same(buffered.seen, ['firstsecond'], 'what arrived before consume is handed over as one piece, and nothing after the failure');
  t.equal(buffered.errors.length, 1);
});

t.test('the chunks one read carries are delivered as one piece; a chunk split across reads still arrives whole', async (t) => {
  const { url } = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    setTimeout(() => socket.write('3\r\none\r\n3\r\ntwo\r\n5\r\nthree\r\n4\r\nfo'), 20);
    setTimeout(() => socket.write('ur\r\n0\r\n\r\n'), 60);
  });
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const response = await client.post(endpointOf(url, '/x'), headers, body);
  const seen: string[] = [];
  await new Promise<void>((resolve, reject) => response.consume({ data: (chunk) => seen.push(chunk.toString()), end: resolve, error: reject }));
  t.same(seen, ['onetwothreefo', 'ur']);
});

t.test('pause stops reading the upstream; resume gets the rest (back-pressure)', async (t) => {
  const big = 'x'.repeat(64 * 1024);
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    let sent = 0;
    const more = () => {
      while (sent < 64) {
        sent++;
        if (!res.write(big)) return res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  const url = await listen(server);
  t.teardown(() => server.close());
  const client = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => client.close());
  const response = await client.post(endpointOf(url, '/x'), headers, body);
  let received = 0;
  let pausedAt = -1;
  let receivedWhilePaused = 0;
  await new Promise<void>((resolve, reject) => {
    response.consume({
      data: (chunk) => {
        received += chunk.length;
        if (pausedAt >= 0) receivedWhilePaused += chunk.length;
        if (pausedAt < 0 && received > 256 * 1024) {
          pausedAt = received;
          response.pause();
          setTimeout(() => {
            t.ok(receivedWhilePaused < 128 * 1024, `little arrives while paused (${receivedWhilePaused} bytes)`);
            pausedAt = Number.MAX_SAFE_INTEGER;
            response.resume();
          }, 200);
        }
      },
      end: resolve,
      error: reject,
    });
  });
  t.equal(received, 64 * big.length, 'every byte arrived after resume');
});

t.test('HTTPS: certificate checked against the host name, keep-alive, chunked', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'upstream-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  let connections = 0;
  const server = https.createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    let received = '';
    req.on('data', (chunk) => { received += chunk; });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"echo":');
      res.end(`${received}}`);
    });
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;

  const trusting = new UpstreamClient({ timeoutMs: 5000, ca: cert });
  t.teardown(() => trusting.close());
  for (let i = 0; i < 2; i++) {
    const response = await trusting.post(endpointOf(`https://localhost:${port}`, '/x'), headers, body);
    t.equal(response.status, 200);
    t.same(JSON.parse(await response.text()), { echo: JSON.parse(body) });
  }
  t.equal(connections, 1, 'one TLS connection carried both calls');

  const strict = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => strict.close());
  t.equal(await failure(strict.post(endpointOf(`https://localhost:${port}`, '/x'), headers, body)), 'connect', 'an untrusted certificate is refused');
  t.equal(await failure(trusting.post(endpointOf(`https://127.0.0.1:${port}`, '/x'), headers, body)), 'connect', 'a certificate for another name is refused');
});

t.test('limits: connect timeout, exchange deadline, bounded bodies, strict heads', async (t) => {
  // A TLS endpoint whose server accepts TCP and says nothing: only the connect timeout ends the wait.
  const silent = await rawServer(t, () => {});
  const tlsUrl = silent.url.replace('http:', 'https:');
  const patient = new UpstreamClient({ timeoutMs: 60_000, connectTimeoutMs: 200 });
  t.teardown(() => patient.close());
  t.equal(await failure(patient.post(endpointOf(tlsUrl, '/x'), headers, body)), 'timeout', 'no TLS handshake: the connect timeout fires, not the 60 s idle timeout');

  // An answer that trickles forever is never idle: the deadline ends it.
  let timer: NodeJS.Timeout | undefined;
  const trickle = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n');
    timer = setInterval(() => socket.write('1\r\n.\r\n'), 20);
  });
  t.teardown(() => clearInterval(timer));
  const bounded = new UpstreamClient({ timeoutMs: 60_000, deadlineMs: 300, maxErrorBodyBytes: 1024, maxBodyBytes: 4096 });
  t.teardown(() => bounded.close());
  const trickling = await bounded.post(endpointOf(trickle.url, '/x'), headers, body);
  t.equal(await failure(trickling.text()), 'timeout', 'a trickling body is cut at the deadline');
  clearInterval(timer);

  // An endless error body: read up to its cap, then the connection is closed.
  const endless = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n');
    const piece = `4000\r\n${'e'.repeat(0x4000)}\r\n`;
    const more = () => { while (!socket.destroyed && socket.write(piece)); if (!socket.destroyed) socket.once('drain', more); };
    more();
  });
  const failed = await bounded.post(endpointOf(endless.url, '/x'), headers, body);
  t.equal(failed.status, 500);
  t.equal((await failed.text()).length, 1024, 'the error body is cut at maxErrorBodyBytes');
  await new Promise<void>((resolve) => { const wait = () => (endless.sockets[0]!.destroyed ? resolve() : setTimeout(wait, 10)); wait(); });
  t.pass('and its connection closed');

  const large = await rawServer(t, (socket) => socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n${'x'.repeat(5000)}`));
  const tooLarge = await bounded.post(endpointOf(large.url, '/x'), headers, body);
  t.equal(tooLarge.receivedText(), undefined, 'an answer past the cap is not handed over whole');
  t.equal(await failure(tooLarge.text()), 'too_large', 'a successful answer past maxBodyBytes fails');

  const injecting = await rawServer(t, (socket) => socket.write('HTTP/1.1 429 Slow down\r\nRetry-After: 5\nSet-Cookie: a=b\r\nContent-Length: 0\r\n\r\n'));
  t.equal(await failure(bounded.post(endpointOf(injecting.url, '/x'), headers, body)), 'protocol', 'a bare LF in the head is refused');
  const folded = await rawServer(t, (socket) => socket.write('HTTP/1.1 200 OK\r\nX-A: 1\r\n X-B: 2\r\nContent-Length: 0\r\n\r\n'));
  t.equal(await failure(bounded.post(endpointOf(folded.url, '/x'), headers, body)), 'protocol', 'a folded header line is refused');
});

t.test('pools of origins no longer used are freed, and their number is bounded', async (t) => {
  const servers = await Promise.all(Array.from({ length: 12 }, () => rawServer(t, (socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'))));
  const client = new UpstreamClient({ timeoutMs: 5000, idleMs: 100, maxOrigins: 5 });
  t.teardown(() => client.close());
  for (const { url } of servers) t.equal(await (await client.post(endpointOf(url, '/x'), headers, body)).text(), 'ok');
  t.ok(client.poolCount <= 5, `at most maxOrigins pools are kept (${client.poolCount})`);
  await new Promise<void>((resolve) => { const wait = () => (client.poolCount === 0 ? resolve() : setTimeout(wait, 20)); wait(); });
  t.equal(client.poolCount, 0, 'once their connections closed (idle), the pools and their timers are gone');
});

t.test('guarded endpoints: vetted at each connect, pinned, and answered only in sanitised form', async (t) => {
  let connections = 0;
  const server = http.createServer((request, response) => {
    if (request.url === '/raw') {
      response.writeHead(500, { 'content-type': 'text/html' });
      response.end(`<html>internal admin: secret-token-123 ${'x'.repeat(10_000)}</html>`);
    } else if (request.url === '/json') {
      response.writeHead(401, { 'content-type': 'application/json', 'retry-after': 'soon' });
      response.end(JSON.stringify({ error: { message: `bad key\u0000\u001b[31m\n${'m'.repeat(1000)}` } }));
    } else {
      response.end('ok');
    }
  });
  server.on('connection', () => { connections++; });
  const url = await listen(server);
  t.teardown(() => server.close());

  const strict = new UpstreamClient({ timeoutMs: 5000 });
  t.teardown(() => strict.close());
  t.equal(await failure(strict.post(endpointOf(url, '/ok', true), headers, body)), 'refused', 'loopback refused when not allowed');
  t.equal(connections, 0, 'no connection was made');
  t.equal(await (await strict.post(endpointOf(url, '/ok'), headers, body)).text(), 'ok', 'the same origin unguarded is a pool of its own');
  t.equal(connections, 1);

  const loose = new UpstreamClient({ timeoutMs: 5000, allowLoopback: true });
  t.teardown(() => loose.close());
  const allowed = await loose.post(endpointOf(url, '/ok', true), headers, body);
  t.equal(allowed.guarded, true, 'the answer is marked as guarded');
  t.equal(await allowed.text(), 'ok', 'connects when loopback is allowed');

  const raw = await upstreamErrorAsIs(await loose.post(endpointOf(url, '/raw', true), headers, body), 'openai');
  t.notMatch(raw.message, /secret|html|xxx/, 'no raw body text from a guarded host');
  t.equal(raw.message, 'The upstream vendor openai answered 500');
  const json = await upstreamFailure(await loose.post(endpointOf(url, '/json', true), headers, body), 'openai');
  const detail = json.message.slice(json.message.indexOf(': ') + 2);
  t.ok(detail.startsWith('bad key [31m m'), `a JSON message, printable only (${detail.slice(0, 20)})`);
  t.ok(detail.length <= 200, `at most 200 characters (${detail.length})`);
  t.notMatch(detail, /[\u0000-\u001f]/);
  const asIs = await upstreamErrorAsIs(await loose.post(endpointOf(url, '/json', true), headers, body), 'openai');
  t.same(asIs.headers, {}, 'a Retry-After that is neither seconds nor a date is dropped');
  const platform = await upstreamErrorAsIs(await loose.post(endpointOf(url, '/raw'), headers, body), 'openai');
  t.match(platform.message, /internal admin/, 'an operator-configured upstream keeps its detail');

  // Closed, silent and TLS-less ports of a guarded host: one and the same answer.
  const closed = net.createServer();
  const closedUrl = await listen(closed);
  await new Promise((resolve) => closed.close(resolve));
  const silent = await rawServer(t, () => {});
  const quick = new UpstreamClient({ timeoutMs: 5000, connectTimeoutMs: 200, allowLoopback: true });
  t.teardown(() => quick.close());
  const answers: string[] = [];
  for (const target of [closedUrl, silent.url, url]) {
    const httpsTarget = target.replace('http:', 'https:');
    const error = await quick.post(endpointOf(httpsTarget, '/x', true), headers, body).then(() => undefined, (e: unknown) => e);
    t.ok(error instanceof UpstreamError, `${target} fails`);
    const answer = upstreamUnreachable(error, 'openai', true);
    answers.push(`${answer.status} ${answer.code} ${answer.message}`);
  }
  t.equal(new Set(answers).size, 1, `closed, silent and TLS-less ports answer alike: ${answers[0]}`);
});

t.test('a guarded connect: vetting the host and connecting share one UPSTREAM_CONNECT_TIMEOUT_MS', async (t) => {
  // A resolver slow to answer for one name (the URL guard resolves through node:dns/promises), then a
  // TLS port that accepts TCP and never answers: each alone stays within the budget, both together not.
  const VET_MS = 700;
  const BUDGET_MS = 1000;
  const resolve = dnsPromises.lookup;
  (dnsPromises as { lookup: unknown }).lookup = async (host: string, options: object) => {
    if (host !== 'slow-to-vet.test') return resolve(host, options as never);
    await new Promise((done) => setTimeout(done, VET_MS));
    return [{ address: '127.0.0.1', family: 4 }];
  };
  syncBuiltinESMExports();
  t.teardown(() => {
    (dnsPromises as { lookup: unknown }).lookup = resolve;
    syncBuiltinESMExports();
  });
  const silent = await rawServer(t, () => {});
  const port = new URL(silent.url).port;
  const client = new UpstreamClient({ timeoutMs: 60_000, connectTimeoutMs: BUDGET_MS, allowLoopback: true });
  t.teardown(() => client.close());

  const startedMs = Date.now();
  const reason = await failure(client.post(endpointOf(`https://slow-to-vet.test:${port}`, '/x', true), headers, body));
  const elapsedMs = Date.now() - startedMs;
  t.equal(reason, 'timeout', 'the silent port times out');
  t.equal(silent.sockets.length, 1, 'after the vetting, the vetted address was connected to');
  t.ok(elapsedMs >= BUDGET_MS - 50, `not before the budget is spent (${elapsedMs} ms)`);
  t.ok(elapsedMs < BUDGET_MS + 300, `within the one budget of ${BUDGET_MS} ms, not vetting plus a whole budget again (${elapsedMs} ms)`);

  // Vetting alone past the budget: refused at the budget, nothing connected.
  const slower = new UpstreamClient({ timeoutMs: 60_000, connectTimeoutMs: VET_MS / 2, allowLoopback: true });
  t.teardown(() => slower.close());
  const refusedAt = Date.now();
  t.equal(await failure(slower.post(endpointOf(`https://slow-to-vet.test:${port}`, '/x', true), headers, body)), 'refused', 'a host that cannot be vetted in time is not called');
  t.ok(Date.now() - refusedAt < VET_MS, `refused at the budget (${Date.now() - refusedAt} ms)`);
  t.equal(silent.sockets.length, 1, 'and never connected to');
});
