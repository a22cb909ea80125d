import type { HttpResponse } from './uws.js';
import { ApiError, errorBody } from './errors.js';

const STATUS_TEXT: Readonly<Record<number, string>> = Object.freeze({
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 206: '206 Partial Content', 304: '304 Not Modified', 400: '400 Bad Request', 401: '401 Unauthorized',
  402: '402 Payment Required', 403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed',
  409: '409 Conflict', 413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 416: '416 Range Not Satisfiable', 422: '422 Unprocessable Entity',
  429: '429 Too Many Requests', 500: '500 Internal Server Error', 502: '502 Bad Gateway', 503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
});
export const statusLine = (status: number) => STATUS_TEXT[status] ?? String(status);

/**
 * Sees what a handler answers (src/routing/idempotency.ts keeps it): a whole response even when the
 * client has gone (the answer was made, and maybe charged), a stream's head and the bytes written.
 */
export interface ReplyRecorder {
  whole(status: number, contentType: string, headers: Readonly<Record<string, string>> | undefined, body: string | Uint8Array): void;
  streamHead(status: number, headers: Readonly<Record<string, string>>): void;
  streamChunk(chunk: Uint8Array | string): void;
  streamEnd(): void;
}

/**
 * The one owner of a uWS response: tracks client abort and completion, corks every write (writes
 * from async code must be corked), and records the status for metrics and logs.
 */
export class Reply {
  aborted = false;
  finished = false;
  status = 0;
  private readonly abortHandlers: (() => void)[] = [];
  /** A streamed response's headers, until the first write sends them (see beginStream). */
  private pendingHead: Readonly<Record<string, string>> | undefined;
  /** Chunks written in this turn, sent together at its end (see write). */
  private unsent: (Uint8Array | string)[] = [];
  private flushQueued = false;
  /** A send found the client slow (uWS buffered it) and it has not drained since. */
  private congested = false;
  private resumeWhenDrained: (() => void) | undefined;
  /** Set only for a request whose answer is kept (Idempotency-Key); the hot path checks it and nothing more. */
  recorder: ReplyRecorder | undefined = undefined;
  /**
   * The request's id, sent as `x-request-id` on every answer (errors too) unless the answer names its
   * own (a replayed answer keeps its first request's). Set for the API's paths (/v1, /api/v1).
   */
  requestId: string | undefined = undefined;

  constructor(private readonly res: HttpResponse) {
    res.onAborted(() => this.abort());
  }

  private abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const handler of this.abortHandlers.splice(0)) handler();
  }

  /** Runs `handler` when the client goes away before the response is finished. */
  onAbort(handler: () => void): void {
    if (this.aborted) handler();
    else this.abortHandlers.push(handler);
  }

  get open(): boolean {
    return !this.aborted && !this.finished;
  }

  send(status: number, body: string | Uint8Array, contentType = 'application/json', headers?: Readonly<Record<string, string>>): void {
    this.status = status;
    if (this.recorder !== undefined && !this.finished) this.recorder.whole(status, contentType, this.withRequestId(headers), body);
    if (!this.open) return;
    this.finished = true;
    this.pendingHead = undefined; // a stream that never wrote answers as a whole response instead
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      if (status !== 204) this.res.writeHeader('content-type', contentType);
      this.writeHeaders(headers);
      if (status === 204) this.res.endWithoutBody();
      else this.res.end(body);
    });
  }

  /** A HEAD answer: the headers a GET would send, `content-length` included, and no body. */
  head(status: number, contentType: string, contentLength: number, headers?: Readonly<Record<string, string>>): void {
    this.status = status;
    if (!this.open) return;
    this.finished = true;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      this.res.writeHeader('content-type', contentType);
      this.writeHeaders(headers);
      this.res.endWithoutBody(contentLength);
    });
  }

  /**
   * A 302 to `location` setting `cookies` (one Set-Cookie header each, which a header record cannot
   * hold). Never cached: sign-in redirects carry one-time state.
   */
  redirect(location: string, cookies: readonly string[]): void {
    this.status = 302;
    if (!this.open) return;
    this.finished = true;
    this.res.cork(() => {
      this.res.writeStatus('302 Found');
      this.res.writeHeader('location', location);
      this.res.writeHeader('cache-control', 'no-store');
      for (const cookie of cookies) this.res.writeHeader('set-cookie', cookie);
      this.res.end('');
    });
  }

  json(status: number, value: unknown, headers?: Readonly<Record<string, string>>): void {
    this.send(status, JSON.stringify(value), 'application/json', headers);
  }

  /**
   * How this reply renders an error: the gateway's envelope. A route that speaks another API's
   * (Anthropic's) sets its own on the reply; the prototype's serves every other request unassigned.
   */
  errorBody(error: ApiError): string {
    return errorBody(error);
  }

  error(error: ApiError): void {
    this.send(error.status, this.errorBody(error), 'application/json', error.headers);
  }

  /**
   * Starts a streamed response: status and headers leave with the first `write`, or at `sendHead`,
   * whichever comes first (one send instead of two when body bytes are at hand already).
   */
  beginStream(status: number, headers: Readonly<Record<string, string>>): void {
    this.status = status;
    if (this.recorder !== undefined) this.recorder.streamHead(status, this.withRequestId(headers));
    if (this.open) this.pendingHead = headers;
  }

  /** Sends a streamed response's status and headers if no `write` took them yet (with the turn's writes). */
  sendHead(): void {
    if (this.pendingHead && this.open) this.queueFlush();
  }

  /**
   * Writes a chunk: it leaves with the other writes and the end of this turn (one corked send, so one
   * system call where a stream's relay writes twice and ends in one turn). False means the client is
   * slow (uWS buffered the last send) and the caller should pause; a caller learns it one write late,
   * so a slow client costs at most one more chunk here.
   */
  write(chunk: Uint8Array | string): boolean {
    if (!this.open) return true;
    if (this.recorder !== undefined) this.recorder.streamChunk(chunk);
    this.unsent.push(chunk);
    this.queueFlush();
    return !this.congested;
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(this.flushTurn);
  }

  private readonly flushTurn = () => {
    this.flushQueued = false;
    if (this.open && (this.pendingHead || this.unsent.length > 0)) this.res.cork(() => this.writeUnsent());
  };

  /** Inside a cork: the pending head and the turn's chunks. */
  private writeUnsent(): void {
    if (this.pendingHead) this.writeHead();
    const chunks = this.unsent;
    if (chunks.length === 0) return;
    this.unsent = [];
    let ok = true;
    for (const chunk of chunks) ok = this.res.write(chunk) && ok;
    if (ok || this.congested) return;
    // Watched from the send that found the client slow, so a drain before anyone waits is not missed.
    this.congested = true;
    this.res.onWritable(() => {
      this.congested = false;
      const resume = this.resumeWhenDrained;
      this.resumeWhenDrained = undefined;
      resume?.();
      return true;
    });
  }

  /** Inside a cork: the status and headers `beginStream` left pending. */
  private writeHead(): void {
    const headers = this.pendingHead!;
    this.pendingHead = undefined;
    this.res.writeStatus(statusLine(this.status));
    this.writeHeaders(headers);
  }

  /** `headers` as they are sent, `x-request-id` included (what a kept answer replays: the first request's id). */
  private withRequestId<H extends Readonly<Record<string, string>> | undefined>(headers: H): H | Readonly<Record<string, string>> {
    return this.requestId === undefined || headers?.['x-request-id'] !== undefined ? headers : { ...headers, 'x-request-id': this.requestId };
  }

  /** Inside a cork: `headers`, and `x-request-id` when they do not name one. */
  private writeHeaders(headers: Readonly<Record<string, string>> | undefined): void {
    if (headers) for (const name in headers) this.res.writeHeader(name, headers[name]!);
    if (this.requestId !== undefined && headers?.['x-request-id'] === undefined) this.res.writeHeader('x-request-id', this.requestId);
  }

  /** Calls `resume` once the client has drained what uWS buffered (at once if it has). */
  whenWritable(resume: () => void): void {
    if (!this.open) return;
    if (this.congested) this.resumeWhenDrained = resume;
    else queueMicrotask(resume);
  }

  /**
   * Sends a body of known `size` from `chunks` with back-pressure: the next chunk is read only once
   * uWS has taken the previous one (`tryEnd` sends what the socket accepts and buffers nothing more),
   * so a slow client costs one chunk here, never the body. A client that takes no bytes for `stallMs`
   * is disconnected. Resolves once the body is sent or the client is gone; a source that fails or
   * ends early after the head left closes the connection (the client sees a short body, not a wrong one).
   */
  async sendSized(status: number, contentType: string, headers: Readonly<Record<string, string>>, size: number, chunks: AsyncIterator<Uint8Array>, stallMs: number): Promise<void> {
    this.status = status;
    if (!this.open) return;
    if (size === 0) return this.send(status, '', contentType, headers);
    let headSent = false;
    let wake: (() => void) | undefined;
    this.onAbort(() => wake?.());
    try {
      for (;;) {
        const next = await chunks.next();
        if (!this.open) return;
        if (next.done) throw new Error(`the media ended before its ${size} bytes`);
        let chunk = next.value;
        let sentBefore = 0;
        let result: [boolean, boolean] = [false, false];
        this.res.cork(() => {
          if (!headSent) {
            this.res.writeStatus(statusLine(status));
            this.res.writeHeader('content-type', contentType);
            this.writeHeaders(headers);
            headSent = true;
          }
          sentBefore = this.res.getWriteOffset();
          result = this.res.tryEnd(chunk, size);
        });
        if (result[1]) {
          this.finished = true;
          return;
        }
        if (result[0]) continue;
        // Back-pressure: the part of this chunk the socket did not take is sent as the client drains.
        const drained = await new Promise<boolean>((resolve) => {
          const stalled = setTimeout(() => resolve(false), stallMs);
          wake = () => {
            clearTimeout(stalled);
            resolve(true);
          };
          this.res.onWritable((offset) => {
            const [ok, done] = this.res.tryEnd(chunk.subarray(offset - sentBefore), size);
            if (done) this.finished = true;
            if (ok || done) wake!();
            else if (offset > sentBefore) {
              // Progress: the stall clock restarts, and what was taken is not offered again.
              chunk = chunk.subarray(offset - sentBefore);
              sentBefore = offset;
              stalled.refresh();
            }
            return ok;
          });
        });
        wake = undefined;
        if (!drained) return this.close();
        if (!this.open) return;
      }
    } catch (error) {
      if (!headSent) throw error;
      this.close();
    }
  }

  /** Drops the connection at once (a stalled or broken response); abort handlers run. */
  close(): void {
    if (!this.open) return;
    this.unsent = [];
    this.res.close();
    this.abort(); // in case uWS did not report it: the response must not be touched again
  }

  end(chunk?: Uint8Array | string): void {
    if (!this.open) return;
    if (this.recorder !== undefined) {
      if (chunk !== undefined) this.recorder.streamChunk(chunk);
      this.recorder.streamEnd();
    }
    this.finished = true;
    this.res.cork(() => {
      this.writeUnsent();
      this.res.end(chunk ?? '');
    });
  }
}
