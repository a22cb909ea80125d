/**
 * OpenTelemetry traces (docs/operations.md "Traces"), through the official JavaScript SDK, configured
 * by the standard `OTEL_*` variables and off unless an OTLP endpoint is set.
 *
 * Every thread that makes spans (HTTP threads, the main thread's task runtime, the worker pool's
 * threads, the token counter) starts its own provider with `startTracing`: a batch processor and an
 * OTLP/HTTP exporter of its own, the context of a call carried in AsyncLocalStorage. Across threads,
 * processes and vendors a span's context travels as a W3C `traceparent` string.
 *
 * When tracing is off, `tracer` stays undefined and no context manager is registered: a hot path
 * tests `tracer` once and does nothing more (no span objects, no async-context hooks).
 */
import { hostname } from 'node:os';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace, type Attributes, type Context, type Link, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
// Only types from the SDK here: its modules load when tracing starts (they take a thread some
// 0.5 s of CPU to load, paid by every thread of every gateway otherwise).
import type { Sampler, TracerProvider } from '@opentelemetry/sdk-trace';
import { setLogContext } from '../log.js';

export { SpanKind, SpanStatusCode, type Attributes, type Context, type Link, type Span, type SpanContext };

/** The instrumentation scope's name on every span this gateway makes. */
const SCOPE = 'model-gateway';

/** This thread's tracer: undefined unless tracing is on. Hot paths test it before anything else. */
export let tracer: Tracer | undefined;
let provider: TracerProvider | undefined;

/** What the `OTEL_*` variables ask for, or undefined when tracing is off. */
export interface TracingSettings {
  /** Where spans go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`). */
  readonly endpoint: string;
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, parsed. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly sampler: SamplerChoice;
  /** The sampler as configured (`parentbased_traceidratio 0.01`), for the start-up log. */
  readonly samplerName: string;
  /** The batch processor's `OTEL_BSP_*` settings (the specification's defaults otherwise, the delay 1 s). */
  readonly batch: { readonly scheduledDelayMillis: number; readonly maxQueueSize: number; readonly maxExportBatchSize: number; readonly exportTimeoutMillis: number };
  /** Variables that were set but not understood: each is logged, and the default used. */
  readonly warnings: readonly string[];
}

/** The variables this gateway reads itself (the OTLP exporter reads its own `OTEL_EXPORTER_OTLP_*` too). */
export type TracingVariable = keyof ReturnType<typeof tracingEnvironment>;

/** The tracing variables of this process's environment, each named (docs/configuration.md lists them). */
function tracingEnvironment() {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_SDK_DISABLED: process.env.OTEL_SDK_DISABLED,
    OTEL_TRACES_EXPORTER: process.env.OTEL_TRACES_EXPORTER,
    OTEL_SERVICE_NAME: process.env.OTEL_SERVICE_NAME,
    OTEL_RESOURCE_ATTRIBUTES: process.env.OTEL_RESOURCE_ATTRIBUTES,
    OTEL_TRACES_SAMPLER: process.env.OTEL_TRACES_SAMPLER,
    OTEL_TRACES_SAMPLER_ARG: process.env.OTEL_TRACES_SAMPLER_ARG,
    OTEL_BSP_SCHEDULE_DELAY: process.env.OTEL_BSP_SCHEDULE_DELAY,
    OTEL_BSP_MAX_QUEUE_SIZE: process.env.OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
    OTEL_BSP_EXPORT_TIMEOUT: process.env.OTEL_BSP_EXPORT_TIMEOUT,
  };
}

/** A sampler as the variables choose it (built with the SDK once tracing starts). */
export interface SamplerChoice {
  readonly root: 'always_on' | 'always_off' | 'traceidratio';
  readonly ratio: number;
  /** Follows the caller's `traceparent` decision; `root` decides for a new trace. */
  readonly parentBased: boolean;
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/**
 * Reads the standard variables: tracing is on when an OTLP endpoint is set, unless
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The sampler defaults, as the
 * specification says, to `parentbased_always_on`; an unknown sampler or a ratio outside 0..1 is
 * reported and the default used, as the specification asks of an SDK.
 */
export function tracingSettingsOf(env: Readonly<Partial<Record<TracingVariable, string>>> = tracingEnvironment()): TracingSettings | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return undefined;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase()).filter(Boolean) ?? [];
  if (exporters.includes('none')) return undefined;
  const warnings: string[] = [];
  if (exporters.some((name) => name !== 'otlp')) warnings.push(`OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER}: only otlp is offered; otlp is used`);
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol && protocol !== 'http/json') warnings.push(`OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: spans are sent as OTLP/HTTP JSON (http/json)`);

  let name = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase() || 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    warnings.push(`OTEL_TRACES_SAMPLER=${env.OTEL_TRACES_SAMPLER} is not one of ${SAMPLERS.join(', ')}; parentbased_always_on is used`);
    name = 'parentbased_always_on';
  }
  let ratio = 1;
  if (name.endsWith('traceidratio')) {
    const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    const parsed = arg ? Number(arg) : 1;
    if (Number.isFinite(parsed) && parsed >= 0 && parsed <= 1) ratio = parsed;
    else warnings.push(`OTEL_TRACES_SAMPLER_ARG=${env.OTEL_TRACES_SAMPLER_ARG} is not a ratio from 0 to 1; 1 is used`);
  }
  const sampler: SamplerChoice = {
    root: name.endsWith('always_on') ? 'always_on' : name.endsWith('always_off') ? 'always_off' : 'traceidratio', ratio, parentBased: name.startsWith('parentbased_'),
  };
  const count = (variable: TracingVariable, fallback: number, max: number): number => {
    const text = env[variable]?.trim();
    if (!text) return fallback;
    const value = Number(text);
    if (Number.isSafeInteger(value) && value > 0 && value <= max) return value;
    warnings.push(`${variable}=${text} is not a whole number from 1 to ${max}; ${fallback} is used`);
    return fallback;
  };
  const maxQueueSize = count('OTEL_BSP_MAX_QUEUE_SIZE', 2048, 1_000_000);
  const batch = {
    scheduledDelayMillis: count('OTEL_BSP_SCHEDULE_DELAY', 1000, 3_600_000),
    maxQueueSize,
    maxExportBatchSize: Math.min(maxQueueSize, count('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1_000_000)),
    exportTimeoutMillis: count('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 3_600_000),
  };
  const resourceAttributes = resourceAttributesOf(env.OTEL_RESOURCE_ATTRIBUTES);
  return {
    // OTEL_SERVICE_NAME wins over a `service.name` in OTEL_RESOURCE_ATTRIBUTES, as the specification says.
    endpoint, serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || 'model-gateway', resourceAttributes, sampler,
    samplerName: name.endsWith('traceidratio') ? `${name} ${ratio}` : name, batch, warnings,
  };
}

/**
 * Starts this thread's tracing when the settings ask for it; returns the settings (undefined: off).
 * `thread` names the thread in the spans' resource (`thread.name`), so a trace shows which thread
 * of which process did each step.
 */
export async function startTracing(thread: string, settings: TracingSettings | undefined = tracingSettingsOf()): Promise<TracingSettings | undefined> {
  if (!settings || tracer) return settings;
  const [{ AsyncLocalStorageContextManager }, { OTLPTraceExporter }, { resourceFromAttributes }, sdk] = await Promise.all([
    import('@opentelemetry/context-async-hooks'), import('@opentelemetry/exporter-trace-otlp-http'), import('@opentelemetry/resources'), import('@opentelemetry/sdk-trace'),
  ]);
  if (tracer) return settings; // started meanwhile
  const { root: rootName, ratio, parentBased } = settings.sampler;
  const root: Sampler = rootName === 'always_on' ? new sdk.AlwaysOnSampler() : rootName === 'always_off' ? new sdk.AlwaysOffSampler() : new sdk.TraceIdRatioBasedSampler(ratio);
  provider = new sdk.TracerProvider({
    sampler: parentBased ? new sdk.ParentBasedSampler({ root }) : root,
    resource: resourceFromAttributes({
      'service.instance.id': `${hostname()}-${process.pid}`,
      ...settings.resourceAttributes,
      'service.name': settings.serviceName,
      'process.pid': process.pid,
      'thread.name': thread,
    }),
    // A span never grows without bound: a runaway attribute or event list is cut.
    spanLimits: { attributeValueLengthLimit: 1024, attributeCountLimit: 64, eventCountLimit: 32, linkCountLimit: 8 },
    // The OTLP exporter reads its own variables: endpoint, headers, timeout, compression, certificates.
    // The queue is bounded (spans beyond it are dropped, never buffered without limit).
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...settings.batch })],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  tracer = provider.getTracer(SCOPE);
  setLogContext(logFieldsOfActiveSpan);
  return settings;
}

/**
 * What a thread that owns a worker posts to it before ending it, and what the worker answers once
 * its queued spans are exported (`stopTracing`): a terminated thread's queue would be lost.
 */
export const STOP_TRACING = 'tracing:stop';
export const TRACING_STOPPED = 'tracing:stopped';

/** Exports what is queued and stops (graceful shutdown); a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stopping = provider;
  if (!stopping) return;
  tracer = undefined;
  provider = undefined;
  setLogContext(undefined);
  await stopping.shutdown().catch(() => undefined);
}

/** Exports what is queued now (tests; a worker thread before it idles). */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush().catch(() => undefined);
}

/** `key1=value1,key2=value2`, percent-decoded, as OTEL_RESOURCE_ATTRIBUTES carries them. */
function resourceAttributesOf(text: string | undefined): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const pair of text?.split(',') ?? []) {
    const equals = pair.indexOf('=');
    if (equals <= 0) continue;
    try {
      attributes[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim());
    } catch {
      // A malformed escape: the pair is left out, as the specification lets an SDK do.
    }
  }
  return attributes;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The span context a W3C `traceparent` names, or undefined when it is absent or malformed (an
 * all-zero id, version ff, a version-00 header with more fields: the Trace Context rules).
 */
export function spanContextOf(traceparent: string | undefined | null): SpanContext | undefined {
  if (!traceparent || traceparent.length > 512) return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) & 1, isRemote: true };
}

/** A parent context for a span continuing a `traceparent` (the root context when there is none). */
export function contextOf(traceparent: string | undefined | null): Context {
  const parent = spanContextOf(traceparent);
  return parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
}

/** The W3C `traceparent` of a span (or span context): how its context crosses a thread, a process or a vendor. */
export function traceparentOf(span: Span | SpanContext): string {
  const { traceId, spanId, traceFlags } = 'spanContext' in span ? span.spanContext() : span;
  return `00-${traceId}-${spanId}-${(traceFlags & 1) === 1 ? '01' : '00'}`;
}

/** The active span's `traceparent`, or undefined when tracing is off or nothing is active. */
export function activeTraceparent(): string | undefined {
  if (!tracer) return undefined;
  const span = trace.getActiveSpan();
  return span ? traceparentOf(span) : undefined;
}

/** The active span's trace id, or undefined when tracing is off or nothing is active. */
export function activeTraceId(): string | undefined {
  if (!tracer) return undefined;
  return trace.getActiveSpan()?.spanContext().traceId;
}

/** Runs `work` with `span` active: spans and log lines made inside are its children and carry its trace id. */
export function withSpan<T>(span: Span, work: () => T): T {
  return context.with(trace.setSpan(context.active(), span), work);
}

/**
 * `callback` bound to the active context while tracing is on (as is otherwise): for a callback an
 * event emitter runs, such as a pooled upstream socket's data, which would otherwise run in the
 * context of the call that opened the socket, and log with that call's trace id.
 */
export function inActiveContext<F extends (...args: never[]) => unknown>(callback: F): F {
  return tracer === undefined ? callback : context.bind(context.active(), callback);
}

/**
 * Ends `span` as failed with `code` (an error code of this API, or an exception's name), never the
 * message: a message may quote what the caller or a vendor sent.
 */
export function endFailed(span: Span, code: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  span.setAttribute('error.type', code);
  span.end();
}

/** The trace and span ids a log line of the active span carries (logs and traces meet on them). */
function logFieldsOfActiveSpan(): Record<string, string> | undefined {
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
