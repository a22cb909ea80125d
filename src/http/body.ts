import type { HttpResponse } from './uws.js';
import { ApiError } from './errors.js';
import type { Reply } from './reply.js';

export const payloadTooLarge = (limit: number) =>
  new ApiError(413, 'payload_too_large', `Request body exceeds the limit of ${limit} bytes.`);

/** The client went away; nothing is left to answer. */
export class ClientGone extends Error {
  constructor() {
    super('client closed the connection');
    this.name = 'ClientGone';
  }
}

/**
 * Reads the request body, refusing more than `limit` bytes (by Content-Length up front, and by
 * counting as data arrives). Must be called synchronously inside the uWS handler.
 */
export function readBody(res: HttpResponse, reply: Reply, limit: number, declaredLength: number | undefined): Promise<Buffer> {
  const body = new Promise<Buffer>((resolve, reject) => {
    reply.onAbort(() => reject(new ClientGone()));
    if (declaredLength !== undefined && declaredLength > limit) {
      res.onData(() => {});
      reject(payloadTooLarge(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed) return;
      if (reply.finished) {
        // Answered without the body (401, a forged hook token, 429): the rest is not kept.
        failed = true;
        chunks.length = 0;
        return;
      }
      received += chunk.byteLength;
      if (received > limit) {
        failed = true;
        reject(payloadTooLarge(limit));
        return;
      }
      // uWS reuses the ArrayBuffer after this callback returns: copy it.
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    });
  });
  body.catch(() => {}); // handlers that never read the body must not leave an unhandled rejection
  return body;
}
