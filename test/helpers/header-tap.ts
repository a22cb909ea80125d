/**
 * An HTTP forwarder between the gateway and the mock vendor that remembers each request's method,
 * path and headers: the mock records bodies only, and some tests must see the headers the gateway
 * sent upstream (Anthropic's `anthropic-beta` and `anthropic-version`, which credential). Bodies
 * and answers are piped through untouched, streams included.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TappedRequest {
  readonly method: string;
  /** Path and query, as the gateway sent them. */
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

export interface HeaderTap {
  /** Like `http://127.0.0.1:PORT`, no trailing slash. */
  readonly url: string;
  requests(): TappedRequest[];
  close(): Promise<void>;
}

/** Only the tests' own traffic passes, so a small bound is plenty; older entries are dropped. */
const KEEP = 500;

export async function startHeaderTap(target: string): Promise<HeaderTap> {
  const upstream = new URL(target);
  const seen: TappedRequest[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers } });
    if (seen.length > KEEP) seen.splice(0, seen.length - KEEP);
    const forward = http.request({
      host: upstream.hostname, port: upstream.port, method: req.method, path: req.url,
      headers: { ...req.headers, host: upstream.host },
    }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    // A client that goes away takes the upstream request with it, as it would without the tap.
    res.on('close', () => { if (!res.writableFinished) forward.destroy(); });
    req.pipe(forward);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => seen.slice(),
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
