import { ApiError } from '../http/errors.js';
import { sniffMediaType, MEDIA_TYPES } from './sniff.js';
import { mediaKey, sha256Hex, type MediaStorage, type StoredMedia } from './storage.js';

/** Bytes checked to be storable, with the name they will be stored under. */
export interface NamedMedia {
  readonly bytes: Uint8Array;
  readonly contentType: string;
  readonly sha256: string;
  readonly key: string;
}

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
    return this.put(this.name(bytes, param, sha256));
  }

  /** Checks what `store` checks (the same ApiErrors) and names the bytes, without storing them. */
  name(bytes: Uint8Array, param: string | null = null, sha256?: string): NamedMedia {
    if (bytes.byteLength === 0) throw new ApiError(400, 'invalid_request', 'The media is empty.', param);
    if (bytes.byteLength > this.maxBytes) throw mediaTooLarge(this.maxBytes);
    const type = sniffMediaType(bytes);
    if (!type) {
      throw new ApiError(415, 'unsupported_media_type', `The bytes are not a supported media type; accepted: ${ACCEPTED_TYPES}.`, param);
    }
    const hash = sha256 ?? sha256Hex(bytes);
    return { bytes, contentType: type.contentType, sha256: hash, key: mediaKey(hash, type.contentType) };
  }

  /** Stores bytes `name` checked. */
  put(media: NamedMedia): Promise<StoredMedia> {
    return this.storage.put(media.bytes, media.contentType, media.sha256);
  }
}
