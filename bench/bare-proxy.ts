// The floor under the gateway's added latency: the same front end (uWS threads on one port) and the
// same upstream client, relaying chat completions to the mock with nothing in between (no auth,
// validation, admission, billing or rewriting; no back-pressure either). What a bench run measures
// for it is the cost of the extra hop on this machine at that moment; the gateway's figure above it
// is what the gateway's own work adds. `node dist/bench/bare-proxy.js` with BARE_PROXY_PORT,
// BARE_PROXY_UPSTREAM (the mock's origin) and BARE_PROXY_THREADS; bench/ab.ts starts it for `--floor`.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { loadUws, type HttpResponse, type us_listen_socket } from '../src/http/uws.js';
import { UpstreamClient, endpointFor, type UpstreamResponse } from '../src/providers/upstream-client.js';
import { statusLine } from '../src/http/reply.js';
import { collectWhenIdle } from '../src/idle-gc.js';

interface ProxySettings {
  readonly port: number;
  readonly upstream: string;
}

function serve({ port, upstream }: ProxySettings): void {
  const uws = loadUws();
  collectWhenIdle(); // as the gateway's threads do: memory figures compare what each holds, not when V8 collects
  // The gateway's defaults (UPSTREAM_TIMEOUT_MS, UPSTREAM_MAX_CONNECTIONS): streams held open idle (bench/stream-memory.ts) stay open.
  const client = new UpstreamClient({ timeoutMs: 600_000, maxConnectionsPerOrigin: 10_000 });
  const endpoint = endpointFor(`${upstream}/openai/v1/chat/completions`);
  const headers = Object.freeze({ authorization: 'Bearer bench', 'content-type': 'application/json' });
  let listenSocket: us_listen_socket | undefined;

  const relay = (res: HttpResponse, state: { aborted: boolean }, response: UpstreamResponse) => {
    if (state.aborted) return;
    const whole = response.headers['content-type']?.startsWith('text/event-stream') !== true;
    if (whole) {
      const end = (text: string) => { if (!state.aborted) res.cork(() => res.writeStatus(statusLine(response.status)).writeHeader('content-type', 'application/json').end(text)); };
      const text = response.receivedText();
      if (text !== undefined) end(text);
      else response.text().then(end, () => { if (!state.aborted) res.close(); });
      return;
    }
    res.cork(() => res.writeStatus(statusLine(response.status)).writeHeader('content-type', 'text/event-stream'));
    response.consume({
      data: (chunk) => { if (!state.aborted) res.cork(() => res.write(chunk)); },
      end: () => { if (!state.aborted) res.cork(() => res.end()); },
      error: () => { if (!state.aborted) res.close(); },
    });
  };

  const app = uws.App().post('/v1/chat/completions', (res) => {
    const state = { aborted: false };
    res.onAborted(() => { state.aborted = true; });
    const parts: Buffer[] = [];
    res.onData((data, last) => {
      parts.push(Buffer.from(data.slice(0))); // uWS reuses `data` after the callback
      if (!last) return;
      client.post(endpoint, headers, Buffer.concat(parts).toString()).then(
        (response) => relay(res, state, response),
        (error: Error) => { if (!state.aborted) res.cork(() => res.writeStatus('502 Bad Gateway').end(error.message)); },
      );
    });
  });
  app.listen('127.0.0.1', port, (socket) => {
    listenSocket = socket || undefined;
    parentPort!.postMessage(socket ? 'listening' : 'listen-failed');
  });
  parentPort!.on('message', () => {
    // A thread must close its listen socket (and its connections) before it ends.
    if (listenSocket) uws.us_listen_socket_close(listenSocket);
    (app as unknown as { close(): void }).close();
    void client.close();
    parentPort!.close();
  });
}

async function main(): Promise<void> {
  const settings: ProxySettings = { port: Number(process.env.BARE_PROXY_PORT), upstream: process.env.BARE_PROXY_UPSTREAM ?? '' };
  if (!settings.port || !settings.upstream) throw new Error('BARE_PROXY_PORT and BARE_PROXY_UPSTREAM are required');
  const threads = Array.from({ length: Number(process.env.BARE_PROXY_THREADS || '2') }, () => new Worker(new URL(import.meta.url), { workerData: settings }));
  await Promise.all(threads.map((thread) => new Promise<void>((resolve, reject) => {
    thread.once('message', (message) => (message === 'listening' ? resolve() : reject(new Error(`could not listen on ${settings.port}`))));
    thread.once('error', reject);
  })));
  process.stdout.write(`bare proxy listening on ${settings.port}\n`);
  process.once('SIGTERM', () => { for (const thread of threads) thread.postMessage('stop'); });
}

if (isMainThread) await main();
else serve(workerData as ProxySettings);
