/**
 * A TCP proxy in front of a real server (Postgres here) that a test can cut and restore, to play an
 * outage over real connections: `cut()` resets every live connection and refuses new ones (each is
 * reset as soon as it is accepted), `restore()` forwards again.
 */
import net from 'node:net';
import { once } from 'node:events';

export class TcpProxy {
  private readonly live = new Set<net.Socket>();
  private down = false;
  /** Connections accepted while cut (and reset at once). */
  refused = 0;

  private constructor(private readonly server: net.Server, readonly port: number) {}

  static async start(target: { host: string; port: number }, host = '127.0.0.1'): Promise<TcpProxy> {
    const server = net.createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, host, () => resolve());
    });
    const proxy = new TcpProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (client) => proxy.accept(client, target));
    return proxy;
  }

  /** Connections being forwarded now. */
  get connections(): number {
    return this.live.size / 2;
  }

  get isCut(): boolean {
    return this.down;
  }

  private accept(client: net.Socket, target: { host: string; port: number }): void {
    client.on('error', () => {});
    if (this.down) {
      this.refused++;
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host: target.host, port: target.port, noDelay: true });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    for (const socket of [client, upstream]) {
      this.live.add(socket);
      socket.once('close', () => this.live.delete(socket));
    }
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Resets every live connection and refuses new ones until `restore()`. */
  cut(): void {
    this.down = true;
    for (const socket of this.live) {
      if (!socket.destroyed) socket.resetAndDestroy();
    }
    this.live.clear();
  }

  restore(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    this.cut();
    const closed = once(this.server, 'close');
    this.server.close();
    await closed;
  }
}
