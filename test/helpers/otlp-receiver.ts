/**
 * A local OTLP/HTTP trace receiver for the tracing tests: it takes what the gateway's exporter posts to
 * `/v1/traces` (OTLP JSON, as @opentelemetry/exporter-trace-otlp-http sends it) and keeps every span,
 * flattened with its resource's attributes.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

export type AttributeValue = string | number | boolean | AttributeValue[] | undefined;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Record<string, AttributeValue>;
  readonly resource: Record<string, AttributeValue>;
  readonly links: { traceId: string; spanId: string; attributes: Record<string, AttributeValue> }[];
  readonly events: { name: string; attributes: Record<string, AttributeValue> }[];
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  readonly status: { code: number; message: string };
  readonly startNs: bigint;
  readonly endNs: bigint;
}

/** OTLP JSON carries ids as hex (the JSON encoding's rule); some exporters send base64: both are read. */
function hexId(id: string | undefined, bytes: number): string {
  if (!id) return '';
  if (new RegExp(`^[0-9a-f]{${bytes * 2}}$`, 'i').test(id)) return id.toLowerCase();
  return Buffer.from(id, 'base64').toString('hex');
}

function valueOf(value: AnyValue | undefined): AttributeValue {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) attributes[key] = valueOf(value);
  return attributes;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every request body as received, for checks over the raw export (nothing sensitive anywhere in it). */
  readonly bodies: string[] = [];
  private readonly server: Server;

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= 64 << 20) chunks.push(chunk);
      });
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        const text = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(text);
        try {
          this.take(JSON.parse(text));
        } catch {
          res.writeHead(400).end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  }

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends `/v1/traces`). */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  /** Waits until `ready` holds for the spans received (checked on each export and every 50 ms). */
  async waitFor(ready: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs = 15_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    while (!ready(this.spans)) {
      if (Date.now() > deadline) throw new Error(`spans not received in ${timeoutMs} ms; have: ${this.spans.map((s) => s.name).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.spans;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private take(body: { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] }): void {
    for (const resourceSpans of body.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const raw of scope.spans ?? []) {
          const span = raw as {
            traceId?: string; spanId?: string; parentSpanId?: string; name?: string; kind?: number; attributes?: KeyValue[];
            links?: { traceId?: string; spanId?: string; attributes?: KeyValue[] }[]; events?: { name?: string; attributes?: KeyValue[] }[];
            status?: { code?: number; message?: string }; startTimeUnixNano?: string | number; endTimeUnixNano?: string | number;
          };
          this.spans.push({
            traceId: hexId(span.traceId, 16), spanId: hexId(span.spanId, 8), parentSpanId: hexId(span.parentSpanId, 8),
            name: span.name ?? '', kind: span.kind ?? 0, attributes: attributesOf(span.attributes), resource,
            links: (span.links ?? []).map((link) => ({ traceId: hexId(link.traceId, 16), spanId: hexId(link.spanId, 8), attributes: attributesOf(link.attributes) })),
            events: (span.events ?? []).map((event) => ({ name: event.name ?? '', attributes: attributesOf(event.attributes) })),
            status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
            startNs: BigInt(span.startTimeUnixNano ?? 0), endNs: BigInt(span.endTimeUnixNano ?? 0),
          });
        }
      }
    }
  }
}
