import { audioInfo } from './audio-duration.js';
import { sniffMediaType } from './sniff.js';
import type { MediaStorage } from './storage.js';

export type StoredAudio =
  | { readonly ok: true; readonly url: string; readonly bytes: number; readonly contentType: string; readonly format: string; readonly seconds: number }
  | { readonly ok: false; readonly reason: 'not_media'; readonly message: string };

/**
 * Stores a generated audio file once it is known to be one the gateway can time (its header and
 * frames parse): the duration measured here is what a per-second price charges and what the task
 * record shows.
 */
export async function storeAudio(store: MediaStorage, bytes: Buffer): Promise<StoredAudio> {
  const info = audioInfo(bytes);
  const type = sniffMediaType(bytes);
  if (!info || !type?.contentType.startsWith('audio/')) {
    return { ok: false, reason: 'not_media', message: `The vendor's result is not an MP3 or WAV file the gateway can read (${type?.contentType ?? 'unknown type'}).` };
  }
  const stored = await store.put(bytes, type.contentType);
  return { ok: true, url: stored.url, bytes: stored.bytes, contentType: stored.contentType, format: info.format, seconds: info.seconds };
}
