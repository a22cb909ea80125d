// Small, valid PNG images drawn in code, so the image routes return real bytes without fixtures:
// signature, IHDR, one IDAT (zlib via node:zlib), IEND, each chunk with its CRC-32.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
export const MOCK_IMAGE_SIDE = 8;

// zlib.crc32 only exists from Node 22; the project still runs on 20.
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (ISO-HDLC, the one PNG and zlib use) of the bytes. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = (CRC_TABLE[(c ^ bytes[i]!) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  // The CRC covers the type and the data, not the length.
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** An 8-bit RGB PNG of `width` x `height` from `rgb` (3 bytes per pixel, rows top to bottom). */
export function encodePng(width: number, height: number, rgb: Uint8Array): Buffer {
  if (rgb.length !== width * height * 3) throw new Error(`expected ${width * height * 3} RGB bytes, got ${rgb.length}`);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour
  // bytes 10..12: compression, filter and interlace methods, all 0
  const rowBytes = width * 3;
  const raw = Buffer.alloc(height * (rowBytes + 1));
  for (let y = 0; y < height; y++) {
    // Each row starts with its filter type; 0 (None) keeps the encoder trivial.
    Buffer.from(rgb.buffer, rgb.byteOffset + y * rowBytes, rowBytes).copy(raw, y * (rowBytes + 1) + 1);
  }
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * An 8x8 image whose pixels come from the SHA-256 of `seed`: distinct seeds (a request id and an
 * image index) give distinct bytes, which matters because the gateway stores media by content hash.
 */
export function mockPng(seed: string): Buffer {
  const digest = createHash('sha256').update(seed).digest();
  const rgb = new Uint8Array(MOCK_IMAGE_SIDE * MOCK_IMAGE_SIDE * 3);
  for (let i = 0; i < rgb.length; i++) rgb[i] = digest[i % digest.length]!;
  return encodePng(MOCK_IMAGE_SIDE, MOCK_IMAGE_SIDE, rgb);
}
