import { OnDemandWorkerPool } from '../worker-pool.js';
import type { DecodeDataUriInput, DecodeDataUriOutput } from '../../workers/decode-data-uri.js';

export interface DecodedDataUri {
  readonly bytes: Buffer;
  /** The declared `type/subtype`, lowercased, without parameters. Not checked against the bytes. */
  readonly mediaType: string;
  /** Lowercase hex SHA-256 of the bytes. */
  readonly sha256: string;
}

export type DataUriFailure = 'malformed' | 'too_large';

export class DataUriError extends Error {
  constructor(readonly reason: DataUriFailure, message: string) {
    super(message);
    this.name = 'DataUriError';
  }
}

// Most requests carry no data: URI: the worker starts on first use.
const decoder = new OnDemandWorkerPool<DecodeDataUriInput, DecodeDataUriOutput>(new URL('../../workers/decode-data-uri.js', import.meta.url));

export function closeDataUriDecoder(): Promise<void> {
  return decoder.close();
}

/**
 * Decodes a base64 `data:` URI in a worker thread. What is plainly wrong is refused here without a
 * trip to the worker: a missing `data:` prefix, or a payload whose length alone says it decodes to
 * more than `maxBytes`. That estimate is also the bound on what the worker can return.
 */
export async function decodeDataUri(uri: string, maxBytes: number): Promise<DecodedDataUri> {
  const comma = /^data:/i.test(uri) ? uri.indexOf(',') : -1;
  if (comma < 0) throw new DataUriError('malformed', 'Not a data: URI.');
  if (mostDecodedBytes(uri, comma + 1) > maxBytes) {
    throw new DataUriError('too_large', `The data: URI's content exceeds ${maxBytes} bytes.`);
  }
  const result = await decoder.run({ uri });
  if (!result.ok) throw new DataUriError('malformed', `Malformed data: URI: ${result.reason}.`);
  const { bytes } = result;
  return { bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), mediaType: result.mediaType, sha256: result.sha256 };
}

/**
 * The most bytes a base64 payload can decode to: 3 per 4 characters, less the trailing padding.
 * Whitespace inside is counted as payload, so a line-wrapped payload near the limit may be refused.
 */
function mostDecodedBytes(uri: string, payloadStart: number): number {
  let end = uri.length;
  while (end > payloadStart && /\s/.test(uri[end - 1]!)) end--;
  let padding = 0;
  while (padding < 2 && end > payloadStart && uri[end - 1] === '=') {
    end--;
    padding++;
  }
  return Math.floor(((end - payloadStart + padding) * 3) / 4) - padding;
}
