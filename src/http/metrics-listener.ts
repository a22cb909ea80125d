/**
 * /metrics on a listener of its own (METRICS_PORT, METRICS_HOST): an address the public balancer does
 * not forward to. Served by the main thread, which gathers every HTTP thread's metrics anyway.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { MetricsAccessConfig } from '../config.js';
import { errorBody, internalError, notFound, type ApiError } from './errors.js';
import { METRICS_CONTENT_TYPE, metricsGuard } from './metrics-access.js';
import { log } from '../log.js';

export class MetricsListener {
  private constructor(private readonly server: Server) {}

  static async start(config: MetricsAccessConfig, metricsText: () => Promise<string>): Promise<MetricsListener> {
    const guard = metricsGuard(config.token);
    const server = createServer((req, res) => {
      const answer = (status: number, body: string, headers: Record<string, string>) => res.writeHead(status, headers).end(req.method === 'HEAD' ? undefined : body);
      const fail = (error: ApiError) => answer(error.status, errorBody(error), { 'content-type': 'application/json', ...error.headers });
      const path = (req.url ?? '/').split('?', 1)[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return fail(notFound(`No route for ${req.method} ${path}.`));
      try {
        guard(req.headers.authorization);
      } catch (error) {
        return fail(error as ApiError);
      }
      metricsText().then((text) => answer(200, text, { 'content-type': METRICS_CONTENT_TYPE }), (error) => {
        log.error('metrics collection failed', { error });
        fail(internalError());
      });
    });
    server.requestTimeout = 10_000;
    server.listen(config.port, config.host);
    await once(server, 'listening');
    return new MetricsListener(server);
  }

  get url(): string {
    const { address, port } = this.server.address() as AddressInfo;
    return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
