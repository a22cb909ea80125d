// Faults the mock plays on purpose, as upstreams fail in production: an error status (429 with
// Retry-After, 5xx, Anthropic's 529), a connection reset before any byte, a hang before the response
// head, and a stream cut after some chunks. A fault comes from the mock's settings, keyed by the
// credential a request carries (so one key of a pool fails while another serves), or from the
// request's own directives (`fault=…`, see directives.ts). Each route renders a status fault in its
// vendor's own error shape; this module decides which requests meet a fault and counts them.
import * as v from 'valibot';
import type { Directives, FaultKind } from './directives.js';
import type { MockRequestRecord } from './records.js';

export interface MockFault {
  /**
   * 429 | 500 | 502 | 503 | 504 | 529 (an HTTP status), 'reset' (socket destroyed before any byte), 'hang' (no head until the
   * client leaves), 'cut' (stream cut after `afterChunks` content chunks; non-stream: reset), 'error' (stream ended after
   * `afterChunks` content chunks by the vendor's own error event, as a model failing mid-generation; non-stream: 500).
   */
  readonly kind: FaultKind;
  /** Probability in [0, 1] that a request meets the fault (default 1). */
  readonly rate?: number;
  /** With 429 (or 503/529): the Retry-After header, seconds. */
  readonly retryAfterSeconds?: number;
  /** With 'cut' or 'error': content chunks sent before the cut or the error event (default 1). */
  readonly afterChunks?: number;
}

/** Faults by the credential a request carries (the bearer token, `x-api-key`, `x-goog-api-key`, …). */
export type MockFaults = Readonly<Record<string, MockFault>>;

export interface FaultCounts {
  /** Requests with this credential that met a fault. */
  faulted: number;
  /** Requests with this credential that were answered as usual. */
  served: number;
}

/** How many credentials the counts remember (the oldest is forgotten first). */
const MAX_COUNTED_CREDENTIALS = 10_000;
const MAX_FAULTS = 10_000;
const MAX_RETRY_AFTER_SECONDS = 86_400;
const MAX_CHUNKS = 999_999_999;

const whole = (min: number, max: number, what: string) =>
  v.pipe(v.number(`must be ${what}`), v.integer(`must be ${what}`), v.minValue(min, `must be ${what}`), v.maxValue(max, `must be ${what}`));

const faultSchema = v.strictObject(
  {
    kind: v.union(
      [whole(400, 599, 'an HTTP status from 400 to 599'), v.picklist(['reset', 'hang', 'cut', 'error'])],
      "must be an HTTP status (400 to 599) or 'reset', 'hang', 'cut' or 'error'",
    ),
    rate: v.optional(v.pipe(v.number('must be a number from 0 to 1'), v.minValue(0, 'must be a number from 0 to 1'), v.maxValue(1, 'must be a number from 0 to 1'))),
    retryAfterSeconds: v.optional(whole(0, MAX_RETRY_AFTER_SECONDS, `a whole number of seconds from 0 to ${MAX_RETRY_AFTER_SECONDS}`)),
    afterChunks: v.optional(whole(0, MAX_CHUNKS, 'a whole number of chunks, 0 or more')),
  },
  'must be an object with kind and optionally rate, retryAfterSeconds, afterChunks (no other keys)',
);

const NOT_A_MAP = 'must be an object of credential -> fault';
const faultsSchema = v.pipe(
  v.record(v.pipe(v.string(), v.minLength(1, 'a credential must not be empty')), faultSchema, NOT_A_MAP),
  v.check((faults) => Object.keys(faults).length <= MAX_FAULTS, `must name at most ${MAX_FAULTS} credentials`),
);

/** Checks a faults map (the settings, `setFaults`, `MOCK_FAULTS`); throws an Error naming the first problem's place. */
export function checkFaults(value: unknown): MockFaults {
  if (Array.isArray(value)) throw new Error(`the faults ${NOT_A_MAP}`);
  const result = v.safeParse(faultsSchema, value);
  if (result.success) return Object.freeze({ ...result.output }) as MockFaults;
  const issue = result.issues[0];
  const place = (issue.path ?? []).map((item) => `[${JSON.stringify(item.key)}]`).join('');
  throw new Error(`${place === '' ? 'the faults' : place} ${issue.message}`);
}

/** Reads `MOCK_FAULTS` (or any variable holding the JSON map); an error names the variable. */
export function faultsFromEnv(name: string, raw: string | undefined): MockFaults {
  if (raw === undefined || raw.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new Error(`${name} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return checkFaults(value);
  } catch (error) {
    throw new Error(`${name}: ${(error as Error).message}`);
  }
}

/** The fault a request's directives ask for, if they ask for one that applies to its credential. */
function directiveFault(directives: Directives, credential: string | undefined): MockFault | undefined {
  if (directives.fault === undefined) return undefined;
  if (directives.faultKey !== undefined && directives.faultKey !== credential) return undefined;
  return { kind: directives.fault, rate: directives.faultRate, retryAfterSeconds: directives.retryAfter, afterChunks: directives.cutAfter };
}

/** The mock's faults (replaceable at run time) and, per credential, how many requests met one. */
export class FaultBook {
  /** A Map, not the object: a credential such as `constructor` must not find Object's own keys. */
  private faults: ReadonlyMap<string, MockFault>;
  private readonly counts = new Map<string, FaultCounts>();

  constructor(faults: MockFaults = {}) {
    this.faults = new Map(Object.entries(checkFaults(faults)));
  }

  set(faults: MockFaults): void {
    this.faults = new Map(Object.entries(checkFaults(faults)));
  }

  countsOf(credential: string): FaultCounts {
    const counts = this.counts.get(credential);
    return { faulted: counts?.faulted ?? 0, served: counts?.served ?? 0 };
  }

  /**
   * The fault this request meets, or undefined when it is to be answered as usual; counted under
   * its credential either way. The request's directives win over the settings; the rate is rolled
   * per request.
   */
  meet(credential: string | undefined, directives: Directives): MockFault | undefined {
    const candidate = directiveFault(directives, credential) ?? (credential === undefined ? undefined : this.faults.get(credential));
    const rate = candidate?.rate ?? 1;
    const fault = candidate !== undefined && (rate >= 1 || Math.random() < rate) ? candidate : undefined;
    if (credential !== undefined) this.count(credential, fault !== undefined);
    return fault;
  }

  private count(credential: string, faulted: boolean): void {
    let counts = this.counts.get(credential);
    if (counts === undefined) {
      if (this.counts.size >= MAX_COUNTED_CREDENTIALS) this.counts.delete(this.counts.keys().next().value as string);
      this.counts.set(credential, (counts = { faulted: 0, served: 0 }));
    }
    if (faulted) counts.faulted++;
    else counts.served++;
  }
}

/** What a route's exchange offers for a fault that is not an answer. */
export interface FaultExchange {
  /** Where the fault played is noted (`fault`). */
  readonly record: MockRequestRecord;
  /** Destroys the connection before any byte of the answer, as a reset upstream does. */
  reset(): void;
}

/** Renders a status fault in the route's vendor's error shape, with these extra headers. */
export type SendStatus = (status: number, headers: Record<string, string> | undefined) => void;

/**
 * Plays `fault` on a request. True when the fault is the whole answer (a status, a reset, a hang,
 * or a cut of a non-streamed answer, which is a reset); false for a cut stream, which goes ahead
 * and is cut at `cutPoint`.
 */
export function playFault(fault: MockFault, stream: boolean, exchange: FaultExchange, sendStatus: SendStatus): boolean {
  exchange.record.fault = String(fault.kind);
  switch (fault.kind) {
    case 'hang': return true; // nothing is written; the exchange ends when the client leaves
    case 'reset': exchange.reset(); return true;
    case 'cut':
      if (stream) return false;
      exchange.reset();
      return true;
    case 'error':
      if (stream) return false;
      sendStatus(500, undefined);
      return true;
    default:
      sendStatus(fault.kind, retryAfterHeader(fault.kind, fault.retryAfterSeconds));
      return true;
  }
}

/** Where a stream ends with the vendor's own error event (an `error` fault), and that event's bytes. */
export interface StreamFailure {
  readonly afterChunks: number;
  readonly data: string;
}

/** The `error` fault's end of a stream: after its chunks (default 1), `data` (the route's vendor's error event). */
export function streamFailure(fault: MockFault | undefined, data: string): StreamFailure | undefined {
  return fault?.kind === 'error' ? { afterChunks: fault.afterChunks ?? 1, data } : undefined;
}

/** Where a stream is cut: after the fault's chunks (a `cut`), or the `disconnect_after` directive's, whichever comes first. */
export function cutPoint(fault: MockFault | undefined, disconnectAfter: number | undefined): number | undefined {
  if (fault?.kind !== 'cut') return disconnectAfter;
  const afterChunks = fault.afterChunks ?? 1;
  return disconnectAfter === undefined ? afterChunks : Math.min(afterChunks, disconnectAfter);
}

/** Real vendors tell rate-limited clients when to come back: 1 s unless the fault says; other statuses only when it does. */
export function retryAfterHeader(status: number, seconds: number | undefined): Record<string, string> | undefined {
  if (seconds !== undefined) return { 'retry-after': String(seconds) };
  return status === 429 ? { 'retry-after': '1' } : undefined;
}

/** The token of `Authorization: Bearer <token>` (or of another scheme's `<Scheme> <token>`). */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^\S+\s+(\S+)\s*$/.exec(authorization);
  return match?.[1];
}
