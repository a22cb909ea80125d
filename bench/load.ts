// The load generator: POSTs over undici keep-alive connections with a raw dispatch handler (no
// stream or promise per chunk, so the client's own cost per request stays small on 2 shared cores),
// timed with process.hrtime.bigint().
import { Client, Pool, type Dispatcher } from 'undici';
import { nsToMs } from './stats.js';

export type Side = 'direct' | 'gateway';

/** One side of a comparison: the mock directly, or the gateway in front of it. */
export interface Target {
  readonly side: Side;
  readonly origin: string;
  readonly path: string;
  readonly apiKey: string;
  /** Sent instead of `authorization: Bearer <apiKey>`, for an API that authenticates otherwise
   * (Anthropic's: `x-api-key` and `anthropic-version`). */
  readonly authHeaders?: Readonly<Record<string, string>>;
}

export interface Call {
  /** JSON request body. */
  readonly body: string;
  /** Streaming calls count SSE events and must end with `data: [DONE]` (or `endMarker`). */
  readonly stream: boolean;
  /** For a stream that ends otherwise (the Responses-style endpoint, Anthropic's Messages): bytes its last event carries, e.g. `event: response.completed`. */
  readonly endMarker?: string;
}

interface Sample {
  readonly ok: boolean;
  readonly latencyMs: number;
  /** Time to the first body chunk. */
  readonly ttfbMs: number;
  readonly events: number;
  /** Body chunks as undici hands them over: one per chunked-encoding chunk, so this counts the
   * server's separate writes (an SSE server writing per event shows one per event). */
  readonly bodyChunks: number;
  /** The gateway's `x-gateway-attempts` (platform attempts the call took); 0 when absent (the mock, a BYOK call). */
  readonly attempts: number;
  readonly error: string | undefined;
}

const ATTEMPTS_HEADER = 'x-gateway-attempts';
/** Calls by attempts are counted up to this; more is counted here too. */
const MAX_COUNTED_ATTEMPTS = 8;

/** What a side measured: every block of a scenario is merged into one. */
export class SideResult {
  requests = 0;
  errors = 0;
  events = 0;
  bodyChunks = 0;
  elapsedNs = 0n;
  /** CPU of the process serving this side, over the measured blocks (set by the caller). */
  serverCpuUs = 0;
  /** CPU of the load generator (this process) over the measured blocks. */
  clientCpuUs = 0;
  /** CPU of the whole machine over the measured blocks and their settle windows (set by the caller; ab.ts). */
  machineCpuUs = 0;
  readonly latenciesMs: number[] = [];
  readonly ttfbMs: number[] = [];
  readonly errorSamples: string[] = [];
  /** Calls by the attempts their answer named: index 0 for none named, the last for that many or more. */
  readonly byAttempts: number[] = new Array<number>(MAX_COUNTED_ATTEMPTS + 1).fill(0);

  add(sample: Sample): void {
    this.requests++;
    const slot = Math.min(sample.attempts, MAX_COUNTED_ATTEMPTS);
    this.byAttempts[slot] = (this.byAttempts[slot] ?? 0) + 1;
    this.latenciesMs.push(sample.latencyMs);
    this.ttfbMs.push(sample.ttfbMs);
    this.events += sample.events;
    this.bodyChunks += sample.bodyChunks;
    if (!sample.ok) {
      this.errors++;
      if (this.errorSamples.length < 5 && sample.error) this.errorSamples.push(sample.error);
    }
  }

  merge(other: SideResult): void {
    this.requests += other.requests;
    this.errors += other.errors;
    this.events += other.events;
    this.bodyChunks += other.bodyChunks;
    this.elapsedNs += other.elapsedNs;
    this.serverCpuUs += other.serverCpuUs;
    this.clientCpuUs += other.clientCpuUs;
    this.machineCpuUs += other.machineCpuUs;
    for (const value of other.latenciesMs) this.latenciesMs.push(value);
    for (const value of other.ttfbMs) this.ttfbMs.push(value);
    for (const error of other.errorSamples) if (this.errorSamples.length < 5) this.errorSamples.push(error);
    other.byAttempts.forEach((calls, slot) => { this.byAttempts[slot] = (this.byAttempts[slot] ?? 0) + calls; });
  }

  get seconds(): number {
    return Number(this.elapsedNs) / 1e9;
  }
}

/**
 * Keep-alive connections to one target: a Client for one connection, a Pool for more. Idle ones are
 * closed after 5 s, before uWS closes them at its 10 s: a side idle while the others run its blocks
 * must not send its next request into a connection the server is closing (ECONNRESET).
 */
export function connect(target: Target, connections: number): Dispatcher {
  const options = { keepAliveTimeout: 5_000, keepAliveMaxTimeout: 5_000, pipelining: 1 };
  return connections === 1 ? new Client(target.origin, options) : new Pool(target.origin, { ...options, connections });
}

const LF = 0x0a;
const DONE = Buffer.from('data: [DONE]');
const TAIL_BYTES = 32;

/** Counts `\n\n`-terminated SSE events across chunk boundaries and keeps the last bytes. */
class SseCounter {
  events = 0;
  private lastWasLf = false;
  private tail: Buffer = Buffer.alloc(0);
  private sawMarker = false;

  constructor(private readonly endMarker: Buffer | undefined) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.endMarker && !this.sawMarker) {
      // The marker may straddle two chunks: look at the previous tail joined to this chunk's start too.
      this.sawMarker = chunk.includes(this.endMarker) || Buffer.concat([this.tail, chunk.subarray(0, this.endMarker.length)]).includes(this.endMarker);
    }
    if (this.lastWasLf && chunk[0] === LF) this.events++;
    for (let at = chunk.indexOf('\n\n'); at !== -1; at = chunk.indexOf('\n\n', at + 2)) this.events++;
    this.lastWasLf = chunk[chunk.length - 1] === LF;
    this.tail = chunk.length >= TAIL_BYTES ? chunk.subarray(-TAIL_BYTES) : Buffer.concat([this.tail, chunk]).subarray(-TAIL_BYTES);
  }

  get sawDone(): boolean {
    return this.endMarker ? this.sawMarker : this.tail.includes(DONE);
  }
}

/** A target's request headers, built once per load rather than per request. */
function requestHeaders(target: Target): Record<string, string> {
  return { ...(target.authHeaders ?? { authorization: `Bearer ${target.apiKey}` }), 'content-type': 'application/json' };
}

function send(dispatcher: Dispatcher, target: Target, headers: Record<string, string>, call: Call): Promise<Sample> {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint();
    let status = 0;
    let firstChunkAt = 0n;
    let bodyChunks = 0;
    let attempts = 0;
    const sse = call.stream ? new SseCounter(call.endMarker === undefined ? undefined : Buffer.from(call.endMarker)) : undefined;
    const finish = (error: string | undefined): void => {
      const now = process.hrtime.bigint();
      const ok = error === undefined;
      resolve({
        ok,
        latencyMs: nsToMs(now - started),
        ttfbMs: nsToMs((firstChunkAt || now) - started),
        events: sse?.events ?? 0,
        bodyChunks,
        attempts,
        error,
      });
    };
    dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers,
        body: call.body,
      },
      {
        // undici treats a handler as the new-style API only when it has onRequestStart.
        onRequestStart() {},
        onResponseStart(_controller, statusCode, headers) {
          status = statusCode;
          const named = headers[ATTEMPTS_HEADER];
          const parsed = typeof named === 'string' ? Number.parseInt(named, 10) : 0;
          attempts = parsed > 0 ? parsed : 0;
        },
        onResponseData(_controller, chunk) {
          if (firstChunkAt === 0n) firstChunkAt = process.hrtime.bigint();
          bodyChunks++;
          sse?.push(chunk);
        },
        onResponseEnd() {
          if (status < 200 || status > 299) finish(`${target.side}: HTTP ${status}`);
          else if (sse && !sse.sawDone) finish(`${target.side}: stream ended without ${call.endMarker ?? 'data: [DONE]'}`);
          else finish(undefined);
        },
        onResponseError(_controller, error) {
          finish(`${target.side}: ${error.message}`);
        },
      },
    );
  });
}

export interface LoadPlan {
  readonly concurrency: number;
  /** Stop after this many requests (in total over all workers)... */
  readonly requests: number;
  /** ...or once this much time has passed, whichever comes first; requests in flight finish. */
  readonly durationMs?: number;
}

/** Runs `plan` against one target: `concurrency` workers, each sending sequentially. */
export async function runLoad(dispatcher: Dispatcher, target: Target, call: Call, plan: LoadPlan): Promise<SideResult> {
  const result = new SideResult();
  const started = process.hrtime.bigint();
  const deadline = plan.durationMs === undefined ? undefined : started + BigInt(Math.round(plan.durationMs * 1e6));
  const headers = requestHeaders(target);
  let issued = 0;
  const worker = async (): Promise<void> => {
    while (issued < plan.requests && (deadline === undefined || process.hrtime.bigint() < deadline)) {
      issued++;
      result.add(await send(dispatcher, target, headers, call));
    }
  };
  await Promise.all(Array.from({ length: plan.concurrency }, worker));
  result.elapsedNs = process.hrtime.bigint() - started;
  return result;
}
