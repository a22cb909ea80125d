import type { Reply } from '../http/reply.js';
import type { Metrics } from '../metrics.js';
import type { MeteredCall } from '../billing/metered-call.js';
import type { UpstreamRequest } from '../providers/family.js';
import { ApiError } from '../http/errors.js';
import { UpstreamAbort, endpointFor, type UpstreamClient, type UpstreamResponse } from '../providers/upstream-client.js';
import { upstreamUnreachable } from '../providers/upstream-errors.js';
import { tracer, traceparentOf, type Span } from '../tracing/tracing.js';
import { attemptAnswered, endWithError, endedWith, startAttemptSpan, type AttemptLabel } from '../tracing/call-spans.js';

/** The call an attempt is made for: whether its client left, and the vendor its errors are counted for. */
type AttemptCall = Pick<MeteredCall<{ readonly id: string; readonly upstreamVendor: string }>, 'clientAborted' | 'identity'>;

/**
 * One request's upstream attempts, made one after another: the client's abort cuts whichever attempt
 * is running, streamed or not (a non-streamed call left running would hold its connection and lease
 * for nothing), and an attempt with a head timeout of its own is given up alone.
 */
export class UpstreamSession {
  private current: AttemptCall | undefined;
  private readonly abort = new UpstreamAbort();
  /** The abort of an attempt with a head timeout of its own (a routing target's `head_timeout_ms`). */
  private attemptAbort: UpstreamAbort | undefined;
  /** While tracing is on: the span of the attempt that answered 200, open until its answer is relayed (`endAttempt`). */
  private answeredSpan: Span | undefined;

  constructor(reply: Reply, private readonly upstream: UpstreamClient, private readonly metrics: Metrics) {
    reply.onAbort(() => {
      if (this.current) this.current.clientAborted = true;
      this.abort.abort();
      this.attemptAbort?.abort();
    });
  }

  /**
   * Sends the request; any HTTP status comes back as a response, a transport failure as a 502 (or
   * 499). `guarded`: the target is an address a user chose (see upstreamUnreachable). `label`
   * describes the attempt for its span (given only while tracing is on).
   */
  send(call: AttemptCall, request: UpstreamRequest, guarded: boolean, headTimeoutMs?: number, label?: AttemptLabel): Promise<UpstreamResponse> {
    if (tracer !== undefined) return this.sendTraced(call, request, guarded, headTimeoutMs, label);
    return this.sendOnce(call, request, guarded, headTimeoutMs, undefined);
  }

  private async sendOnce(call: AttemptCall, request: UpstreamRequest, guarded: boolean, headTimeoutMs: number | undefined, traceparent: string | undefined): Promise<UpstreamResponse> {
    this.current = call;
    const vendor = call.identity.model.upstreamVendor;
    let abort = this.abort;
    let timer: NodeJS.Timeout | undefined;
    if (headTimeoutMs !== undefined) {
      // Its own abort, so giving up on this attempt leaves the next one free to start.
      abort = this.attemptAbort = new UpstreamAbort();
      if (this.abort.aborted) abort.abort();
      timer = setTimeout(() => abort.abort(), headTimeoutMs);
    }
    try {
      return await this.upstream.post(endpointFor(request.url, guarded), request.headers as Record<string, string>, request.body, abort, traceparent);
    } catch (error) {
      if (call.clientAborted) throw new ApiError(499, 'client_closed', 'The client closed the connection before the upstream answered.');
      if (timer !== undefined && abort.aborted) {
        this.metrics.upstreamErrors.inc({ vendor, reason: 'head_timeout' });
        throw new ApiError(502, 'upstream_unreachable', `The upstream vendor ${vendor} sent no response head within ${headTimeoutMs} ms.`);
      }
      this.metrics.upstreamErrors.inc({ vendor, reason: 'connect' });
      throw upstreamUnreachable(error, vendor, guarded);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /** An attempt in a span of its own, whose `traceparent` the upstream request carries. */
  private async sendTraced(call: AttemptCall, request: UpstreamRequest, guarded: boolean, headTimeoutMs: number | undefined, label: AttemptLabel | undefined): Promise<UpstreamResponse> {
    this.endAttempt();
    const span = startAttemptSpan(label, endpointFor(request.url, guarded));
    const startedMs = Date.now();
    let response: UpstreamResponse;
    try {
      response = await this.sendOnce(call, request, guarded, headTimeoutMs, traceparentOf(span));
    } catch (error) {
      endWithError(span, error);
      throw error;
    }
    attemptAnswered(span, response.status, startedMs);
    if (response.status === 200) this.answeredSpan = span;
    else span.end();
    return response;
  }

  /**
   * The call's admission, awaited in its `admission` span while tracing is on (BYOK attempts may run in
   * it); a failed admission also ends the span of a BYOK attempt that had answered. Tracing off: `admitting` as given.
   */
  admitted<T>(admitting: T | Promise<T>, span: Span | undefined): T | Promise<T> {
    if (tracer === undefined) return admitting;
    return (span ? endedWith(span, admitting) : Promise.resolve(admitting)).catch((error: unknown) => {
      this.endAttempt();
      throw error;
    });
  }

  /** The answering attempt's relay (`serving`), after which its span ends (tracing on), failed if the call failed. */
  relayed(call: { readonly errorCode: string | null }, serving: Promise<void>): Promise<void> {
    if (this.answeredSpan === undefined) return serving;
    return serving.finally(() => this.endAttempt(call.errorCode));
  }

  /** Ends the span of the attempt that answered (tracing on), failed with `errorCode` when the call failed after its answer began. */
  private endAttempt(errorCode?: string | null): void {
    const span = this.answeredSpan;
    if (span === undefined) return;
    this.answeredSpan = undefined;
    if (errorCode) endWithError(span, { code: errorCode });
    else span.end();
  }
}
