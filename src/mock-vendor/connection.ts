import type http from 'node:http';

/**
 * Simulates an upstream dying mid-stream: what was written arrives, then the connection ends with
 * the chunked body unterminated (no finish chunk, no usage, no [DONE]).
 */
export function endMidBody(res: http.ServerResponse): void {
  const socket = res.socket;
  if (socket === null) return;
  // end() flushes the corked writes first; destroying at once could drop them.
  socket.end();
  socket.once('finish', () => socket.destroy());
}

/**
 * Simulates an upstream that resets the connection before answering: no byte of the response is
 * written, and the client sees ECONNRESET (a TCP RST where the socket allows one, else a close).
 */
export function resetConnection(res: http.ServerResponse): void {
  const socket = res.socket;
  if (socket === null) return;
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy(); // not a TCP handle (TLS): a plain close is the nearest thing
  }
}
