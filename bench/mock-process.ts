// The mock vendor in its own process, so its CPU is neither the bench's nor the gateway's.
import { fileURLToPath } from 'node:url';
import { freePort, spawnNode, waitUntil, type Child } from './child.js';

const MOCK_MAIN = fileURLToPath(new URL('../src/mock-vendor/main.js', import.meta.url));

export interface MockProcess {
  readonly child: Child;
  /** Like http://127.0.0.1:PORT */
  readonly url: string;
}

export async function startMockProcess(env: Readonly<Record<string, string>> = {}): Promise<MockProcess> {
  const port = await freePort();
  const child = spawnNode('mock vendor', MOCK_MAIN, {
    MOCK_VENDOR_PORT: String(port),
    // Keeping request records costs memory and CPU the benchmark does not want to measure.
    MOCK_KEEP_REQUESTS: '0',
    ...env,
  });
  await waitUntil(child, 'listening', async () => child.output.includes('mock vendor listening'));
  return { child, url: `http://127.0.0.1:${port}` };
}
