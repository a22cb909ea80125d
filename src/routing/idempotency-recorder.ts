/**
 * Records the answer of a request made under an Idempotency-Key, as the reply sends it, within a size
 * bound: a whole response, or a stream's head and bytes up to its end.
 */
import { isUtf8 } from 'node:buffer';
import type { ReplyRecorder } from '../http/reply.js';

/**
 * Headers that describe the moment of the first request rather than its answer: the key's rate window
 * then (a replay takes no place in it). Everything else a handler sent is kept.
 */
const MOMENT_HEADERS = /^x-ratelimit-/i;

function keptHeaders(headers: Readonly<Record<string, string>> | undefined, contentType: string | undefined): Record<string, string> {
  const kept: Record<string, string> = {};
  if (contentType !== undefined) kept['content-type'] = contentType;
  if (headers) for (const name in headers) if (!MOMENT_HEADERS.test(name)) kept[name.toLowerCase()] = headers[name]!;
  return kept;
}

export class AnswerRecorder implements ReplyRecorder {
  status = 0;
  /** The answer came as a stream (beginStream), not as one response. */
  streamed = false;
  /** The whole answer was seen: one response, or a stream to its end. */
  complete = false;
  /** Bytes went past the bound: the answer is not kept, only its status. */
  tooLarge = false;
  private headers: Record<string, string> = {};
  private readonly chunks: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  whole(status: number, contentType: string, headers: Readonly<Record<string, string>> | undefined, body: string | Uint8Array): void {
    if (this.complete || this.streamed) return; // the first answer is the one the client got
    this.status = status;
    this.headers = keptHeaders(headers, contentType);
    this.add(body);
    this.complete = true;
  }

  streamHead(status: number, headers: Readonly<Record<string, string>>): void {
    if (this.complete || this.streamed) return;
    this.streamed = true;
    this.status = status;
    this.headers = keptHeaders(headers, undefined);
  }

  streamChunk(chunk: Uint8Array | string): void {
    if (this.streamed && !this.complete) this.add(chunk);
  }

  streamEnd(): void {
    if (this.streamed) this.complete = true;
  }

  /**
   * The headers and body to keep, or undefined when they do not fit the bound. Paid endpoints answer
   * JSON or SSE, which are UTF-8 text, and are replayed as text; a body that is not is not kept either.
   */
  answer(): { headers: Readonly<Record<string, string>>; body: Buffer } | undefined {
    if (this.tooLarge) return undefined;
    const head = JSON.stringify(this.headers);
    if (this.bytes + Buffer.byteLength(head) > this.maxBytes) return undefined;
    const body = Buffer.concat(this.chunks, this.bytes);
    return isUtf8(body) ? { headers: this.headers, body } : undefined;
  }

  private add(chunk: Uint8Array | string): void {
    if (this.tooLarge) return;
    // A copy: a relay may reuse the buffer it wrote from.
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk);
    this.bytes += bytes.length;
    if (this.bytes > this.maxBytes) {
      this.tooLarge = true;
      this.chunks.length = 0;
      return;
    }
    this.chunks.push(bytes);
  }
}
