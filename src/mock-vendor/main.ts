// CLI: `node dist/src/mock-vendor/main.js`, configured by environment variables.
import { startMockVendor } from './server.js';

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return value;
}

const defaults: { latencyMs?: number; chunks?: number; chunkDelayMs?: number } = {};
const latencyMs = envInt('MOCK_LATENCY_MS');
const chunks = envInt('MOCK_CHUNKS');
const chunkDelayMs = envInt('MOCK_CHUNK_DELAY_MS');
if (latencyMs !== undefined) defaults.latencyMs = latencyMs;
if (chunks !== undefined) defaults.chunks = chunks;
if (chunkDelayMs !== undefined) defaults.chunkDelayMs = chunkDelayMs;

const mock = await startMockVendor({
  port: envInt('MOCK_VENDOR_PORT') ?? 8090,
  host: process.env.MOCK_VENDOR_HOST || '127.0.0.1',
  defaults,
  keepRequests: envInt('MOCK_KEEP_REQUESTS') ?? 200,
  videoJobMs: envInt('MOCK_VIDEO_JOB_MS'),
  audioJobMs: envInt('MOCK_AUDIO_JOB_MS'),
});
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
