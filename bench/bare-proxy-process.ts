// bench/bare-proxy.ts in its own process, in front of the mock: the floor `ab.js --floor` measures.
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, waitUntil, type Child } from './child.js';

const BARE_PROXY_MAIN = fileURLToPath(new URL('./bare-proxy.js', import.meta.url));

export async function startBareProxyProcess(mockUrl: string, threads: number): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = spawnNode('bare proxy', BARE_PROXY_MAIN, { BARE_PROXY_PORT: String(port), BARE_PROXY_UPSTREAM: mockUrl, BARE_PROXY_THREADS: String(threads) });
  await waitUntil(child, 'listening', async () => child.output.includes('bare proxy listening'));
  return { child, url: `http://127.0.0.1:${port}` };
}
