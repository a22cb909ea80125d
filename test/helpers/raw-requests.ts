// A raw TCP server's view of HTTP/1.1: requests cut out of the byte stream by their head and
// Content-Length, for tests whose upstream must answer in ways no HTTP server library would.
import type net from 'node:net';

/** Calls `onRequest` with each whole request (head and body, latin1) the socket receives, in order. */
export function eachRequest(socket: net.Socket, onRequest: (request: string) => void): void {
  let pending = '';
  socket.on('data', (data) => {
    pending += data.toString('latin1');
    for (;;) {
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(pending)?.[1] ?? 0);
      if (pending.length < end + 4 + length) return;
      const request = pending.slice(0, end + 4 + length);
      pending = pending.slice(end + 4 + length);
      onRequest(request);
    }
  });
}
