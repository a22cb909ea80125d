/**
 * A `fetch` whose answer body is read whole, at most `maxBytes`, before it is handed on: the identity
 * provider's discovery document and key set come from trusted configuration, but a broken or
 * hijacked endpoint must still not make a gateway thread buffer without bound. The time bound is the
 * caller's `signal` (it covers the body too).
 */
export class ResponseTooLarge extends Error {
  constructor(url: string, maxBytes: number) {
    super(`${url} answered more than ${maxBytes} bytes`);
  }
}

/** Statuses a Response may not be built with a body for. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

export async function fetchBounded(url: string | URL, init: RequestInit, maxBytes: number): Promise<Response> {
  const response = await fetch(url, init);
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new ResponseTooLarge(String(url), maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new ResponseTooLarge(String(url), maxBytes);
      }
      chunks.push(value);
    }
  }
  // Status 204/304 and the like take no body; any other keeps it (a token endpoint's 400 explains itself in JSON).
  const body = NULL_BODY_STATUSES.has(response.status) ? null : Buffer.concat(chunks);
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
