/** Redis Cluster's hash slots: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key's UTF-8 bytes, mod 16384. */
export const SLOT_COUNT = 16_384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16Bytes(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** CRC16 of `text[from, to)` as UTF-8, without encoding it when it is ASCII (the usual key). */
function crc16(text: string, from: number, to: number): number {
  let crc = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return crc16Bytes(Buffer.from(text.slice(from, to), 'utf8'));
    crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ code) & 0xff]!;
  }
  return crc;
}

/**
 * The slot of `key`. With a hash tag (the text between the first `{` and the first `}` after it,
 * when not empty) only the tag is hashed, so keys sharing a tag share a slot. `{` and `}` never occur
 * inside a multi-byte UTF-8 sequence, so finding them in the string finds them in the bytes.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key, open + 1, close) % SLOT_COUNT;
  }
  return crc16(key, 0, key.length) % SLOT_COUNT;
}
