/**
 * Content type of media bytes from their magic numbers. Pure: the declared Content-Type of an upload
 * is never believed, because the media host serves a file with the type found here.
 */

export interface SniffedType {
  /** The MIME type the media host serves the bytes with. */
  readonly contentType: string;
  /** The file extension of the stored name (no dot). */
  readonly extension: string;
}

const type = (contentType: string, extension: string): SniffedType => Object.freeze({ contentType, extension });

export const PNG = type('image/png', 'png');
export const JPEG = type('image/jpeg', 'jpg');
export const GIF = type('image/gif', 'gif');
export const WEBP = type('image/webp', 'webp');
export const AVIF = type('image/avif', 'avif');
export const MP4 = type('video/mp4', 'mp4');
export const MOV = type('video/quicktime', 'mov');
export const M4A = type('audio/mp4', 'm4a');
export const WEBM = type('video/webm', 'webm');
export const MKV = type('video/x-matroska', 'mkv');
export const MP3 = type('audio/mpeg', 'mp3');
export const WAV = type('audio/wav', 'wav');
export const OGG = type('audio/ogg', 'ogg');
export const FLAC = type('audio/flac', 'flac');

/** Image types as a person names them (`PNG or JPEG`), for messages. */
export const imageTypeNames = (types: readonly SniffedType[]): string => types.map((t) => t.contentType.replace(/^image\//, '').toUpperCase()).join(' or ');

/** Every type the gateway stores, by extension (the media host maps a stored name back to its type with it). */
export const MEDIA_TYPES: Readonly<Record<string, SniffedType>> = Object.freeze(Object.fromEntries(
  [PNG, JPEG, GIF, WEBP, AVIF, MP4, MOV, M4A, WEBM, MKV, MP3, WAV, OGG, FLAC].map((t) => [t.extension, t]),
));

const ascii = (bytes: Uint8Array, at: number, text: string): boolean => {
  if (bytes.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

const startsWith = (bytes: Uint8Array, magic: readonly number[]): boolean =>
  bytes.length >= magic.length && magic.every((byte, i) => bytes[i] === byte);

/** ISO base media (MP4, MOV, M4A, AVIF): `ftyp` at offset 4, then the major brand. */
function isoMedia(bytes: Uint8Array): SniffedType | undefined {
  if (!ascii(bytes, 4, 'ftyp') || bytes.length < 12) return undefined;
  const brand = String.fromCharCode(bytes[8]!, bytes[9]!, bytes[10]!, bytes[11]!);
  if (brand === 'qt  ') return MOV;
  if (brand === 'M4A ' || brand === 'M4B ') return M4A;
  if (brand === 'avif' || brand === 'avis') return AVIF;
  // HEIC and other image brands are not served: browsers do not show them, and no model here takes them.
  if (brand === 'heic' || brand === 'heix' || brand === 'mif1' || brand === 'msf1') return undefined;
  return MP4;
}

/** Matroska/WebM: the EBML magic, then the DocType element says which. */
function matroska(bytes: Uint8Array): SniffedType | undefined {
  if (!startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return undefined;
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 64));
  return head.includes('webm', 0, 'latin1') ? WEBM : MKV;
}

/** An MPEG-1/2 audio layer III frame header (no ID3 tag in front). */
function mp3Frame(bytes: Uint8Array): boolean {
  if (bytes.length < 3 || bytes[0] !== 0xff || (bytes[1]! & 0xe0) !== 0xe0) return false;
  const version = (bytes[1]! >> 3) & 0x03; // 01 is reserved
  const layer = (bytes[1]! >> 1) & 0x03; // 01 is layer III
  const bitrate = bytes[2]! >> 4; // 1111 is invalid
  const rate = (bytes[2]! >> 2) & 0x03; // 11 is reserved
  return version !== 1 && layer === 1 && bitrate !== 0x0f && rate !== 0x03;
}

/** The type of `bytes`, or undefined when they are none of the media types the gateway stores. */
export function sniffMediaType(bytes: Uint8Array): SniffedType | undefined {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return PNG;
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return JPEG;
  if (ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a')) return GIF;
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WEBP')) return WEBP;
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WAVE')) return WAV;
  if (ascii(bytes, 0, 'OggS')) return OGG;
  if (ascii(bytes, 0, 'fLaC')) return FLAC;
  if (ascii(bytes, 0, 'ID3') || mp3Frame(bytes)) return MP3;
  return isoMedia(bytes) ?? matroska(bytes);
}
