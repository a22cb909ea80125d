import { ApiError } from '../http/errors.js';
import { sniffMediaType, MEDIA_TYPES } from './sniff.js';
import type { MediaStorage, StoredMedia } from './storage.js';

export const mediaTooLarge = (limit: number) =>
  new ApiError(413, 'payload_too_large', `The media exceeds the limit of ${limit} bytes (MEDIA_MAX_BYTES).`);

export const ACCEPTED_TYPES = Object.values(MEDIA_TYPES).map((t) => t.contentType).join(', ');

/**
 * What uploads and (later) image rehosting call: checks the size, sniffs the type from the bytes and
 * stores them. Errors are ApiErrors: 400 empty, 413 too large, 415 not a media type the gateway keeps.
 */
export class MediaStore {
  constructor(readonly storage: MediaStorage, readonly maxBytes: number) {}

  /** `sha256`: the bytes' hash when the caller has it (a data: URI decoded in the worker pool). */
  async store(bytes: Uint8Array, param: string | null = null, sha256?: string): Promise<StoredMedia> {
    if (bytes.byteLength === 0) throw new ApiError(400, 'invalid_request', 'The media is empty.', param);
    if (bytes.byteLength > this.maxBytes) throw mediaTooLarge(this.maxBytes);
    const type = sniffMediaType(bytes);
    if (!type) {
      throw new ApiError(415, 'unsupported_media_type', `The bytes are not a supported media type; accepted: ${ACCEPTED_TYPES}.`, param);
    }
    return this.storage.put(bytes, type.contentType, sha256);
  }
}
