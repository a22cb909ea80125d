/**
 * Settings production takes but an operator should look at twice: each is a line for the start-up log.
 * (What production must never run with is refused by config.ts instead.)
 */
import type { Config } from './config.js';

const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|localhost|\[?::1\]?)$/;

export function productionWarnings(config: Config): string[] {
  if (!config.production) return [];
  const warnings: string[] = [];
  const plain = Object.values(config.vendors).filter((vendor) => vendor.served && !vendor.mocked && vendor.baseUrl.startsWith('http://'));
  if (plain.length > 0) warnings.push(`vendors reached over plain http (their API keys cross the network unencrypted): ${plain.map((vendor) => vendor.name).join(', ')}`);
  const { metrics } = config;
  if (metrics.port !== undefined && metrics.token === undefined && !LOOPBACK_HOST.test(metrics.host)) {
    warnings.push(`/metrics is open on ${metrics.host}:${metrics.port} with no METRICS_TOKEN: keep that address private`);
  }
  if (config.tasks.publicUrl?.startsWith('http://')) warnings.push('PUBLIC_URL is plain http: vendors\' callback hints and their tokens cross the network unencrypted');
  return warnings;
}
