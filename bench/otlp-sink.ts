// `node dist/bench/otlp-sink.js [port]`: a tiny OTLP/HTTP trace receiver for measuring tracing's cost
// (docs/benchmarks.md "Tracing's cost"). It answers every POST /v1/traces with 200 and discards the
// body, counting requests, bytes and spans (the `"spanId"` fields of OTLP JSON: no parse), and prints
// the counts as one JSON line when stopped (SIGINT, SIGTERM). A body over 16 MiB is refused (413).
// Port 4318 (OTLP/HTTP's) unless given; 0 picks a free one. Its URL is printed on stderr at start.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const MAX_BODY_BYTES = 16 << 20;
const SPAN_FIELD = Buffer.from('"spanId"');
const port = Number(process.argv[2] ?? process.env.OTLP_SINK_PORT ?? 4318);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`otlp-sink: ${process.argv[2]} is not a port`);

const counts = { requests: 0, refused: 0, bytes: 0, spans: 0 };

/** `"spanId"` occurrences in a chunk (with the tail of the one before: a field may straddle two chunks). */
function spansIn(text: Buffer): number {
  let found = 0;
  for (let at = text.indexOf(SPAN_FIELD); at !== -1; at = text.indexOf(SPAN_FIELD, at + SPAN_FIELD.length)) found++;
  return found;
}

const server = createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/v1/traces') {
    req.resume();
    res.writeHead(404).end();
    return;
  }
  let size = 0;
  let spans = 0;
  let tail = Buffer.alloc(0);
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      counts.refused++;
      res.writeHead(413, { connection: 'close' }).end();
      req.destroy();
      return;
    }
    const text = tail.length ? Buffer.concat([tail, chunk]) : chunk;
    spans += spansIn(text);
    // What could start a field cut by the chunk's end (shorter than a whole one: never counted twice).
    tail = Buffer.from(text.subarray(text.length - Math.min(SPAN_FIELD.length - 1, text.length)));
  });
  req.on('end', () => {
    if (res.headersSent) return;
    counts.requests++;
    counts.bytes += size;
    counts.spans += spans;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  req.on('error', () => undefined);
});

server.listen(port, '127.0.0.1', () => {
  process.stderr.write(`otlp-sink: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});

function stop(): void {
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  server.closeAllConnections();
  server.close(() => process.exit(0));
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
