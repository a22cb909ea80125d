import type { MediaConfig } from '../config.js';
import { LocalMediaStorage, type MediaStorage } from './storage.js';

/** The configured storage, or undefined when media storage is off. */
export async function openMediaStorage(config: MediaConfig): Promise<MediaStorage | undefined> {
  const common = { baseUrl: config.url, retentionMs: config.retentionMs };
  if (config.storage === 'off') return undefined;
  if (config.storage === 's3') {
    const { S3MediaStorage } = await import('./s3.js');
    return S3MediaStorage.create({ ...common, ...config.s3!, readConcurrency: config.readConcurrency });
  }
  return new LocalMediaStorage(config.dir, common);
}

let threadStorage: Promise<MediaStorage | undefined> | undefined;

/**
 * This thread's media storage, opened once with the first configuration it is given: a task worker
 * thread runs every task module (submit, poll, rehost, generate-audio), and each S3 client costs
 * memory of its own.
 */
export function threadMediaStorage(config: MediaConfig): Promise<MediaStorage | undefined> {
  threadStorage ??= openMediaStorage(config);
  return threadStorage;
}
