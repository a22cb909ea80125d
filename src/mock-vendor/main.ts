// CLI: `node dist/src/mock-vendor/main.js`, configured by environment variables.
import { faultsFromEnv } from './faults.js';
import { startMockVendor, type MockVendorOptions } from './server.js';

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** The options the environment gives; throws an Error naming the first bad variable. */
function optionsFromEnv(): MockVendorOptions {
  const defaults: { latencyMs?: number; chunks?: number; chunkDelayMs?: number } = {};
  const latencyMs = envInt('MOCK_LATENCY_MS');
  const chunks = envInt('MOCK_CHUNKS');
  const chunkDelayMs = envInt('MOCK_CHUNK_DELAY_MS');
  if (latencyMs !== undefined) defaults.latencyMs = latencyMs;
  if (chunks !== undefined) defaults.chunks = chunks;
  if (chunkDelayMs !== undefined) defaults.chunkDelayMs = chunkDelayMs;
  return {
    port: envInt('MOCK_VENDOR_PORT') ?? 8090,
    host: process.env.MOCK_VENDOR_HOST || '127.0.0.1',
    defaults,
    keepRequests: envInt('MOCK_KEEP_REQUESTS') ?? 200,
    videoJobMs: envInt('MOCK_VIDEO_JOB_MS'),
    audioJobMs: envInt('MOCK_AUDIO_JOB_MS'),
    faults: faultsFromEnv('MOCK_FAULTS', process.env.MOCK_FAULTS),
  };
}

let options: MockVendorOptions;
try {
  options = optionsFromEnv();
} catch (error) {
  // A setting the mock cannot use: one line that names it, and no server.
  console.error(JSON.stringify({ msg: 'mock vendor not started', error: (error as Error).message }));
  process.exit(1);
}

const mock = await startMockVendor(options);
console.log(JSON.stringify({ msg: 'mock vendor listening', url: mock.url }));

let closing = false;
const shutdown = (): void => {
  if (closing) return;
  closing = true;
  mock.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
