// Small but real audio files the mock's audio vendors hand out, of a chosen length: a WAV (8 kHz,
// 8-bit mono PCM, a quiet tone) and an MP3 (MPEG-1 Layer III, 32 kbps, 32 kHz mono, silent frames).
// Each embeds a tag so every result (and its hash) differs. Enough for a sniffer and a duration
// parser, and they play.

const WAV_RATE = 8000;
/** MPEG-1 Layer III, no CRC; 32 kbps, 32000 Hz, no padding; mono, original. */
const MP3_HEADER = [0xff, 0xfb, 0x18, 0xc4];
const MP3_FRAME_BYTES = 144; // 144 * 32000 / 32000
const MP3_FRAME_SECONDS = 1152 / 32000; // 36 ms

/** A RIFF chunk, padded to an even length as RIFF requires. */
function chunk(id: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(id, 0, 'latin1');
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat(body.length % 2 ? [head, body, Buffer.alloc(1)] : [head, body]);
}

/** A WAV of `seconds` (to the sample): 8000 Hz, 8-bit unsigned, mono, a 440 Hz tone; `tag` in a LIST/INFO ICMT chunk. */
export function mockWav(seconds: number, tag: string): Buffer {
  const samples = Number.isFinite(seconds) ? Math.max(0, Math.round(seconds * WAV_RATE)) : 0;
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0); // PCM
  fmt.writeUInt16LE(1, 2); // mono
  fmt.writeUInt32LE(WAV_RATE, 4);
  fmt.writeUInt32LE(WAV_RATE, 8); // byte rate: 1 byte per sample
  fmt.writeUInt16LE(1, 12); // block align
  fmt.writeUInt16LE(8, 14); // bits per sample
  const pcm = Buffer.alloc(samples);
  // 8-bit WAV is unsigned around 128; an amplitude of 8 is quiet.
  for (let i = 0; i < samples; i++) pcm[i] = 128 + Math.round(8 * Math.sin((2 * Math.PI * 440 * i) / WAV_RATE));
  const info = chunk('LIST', Buffer.concat([Buffer.from('INFO', 'latin1'), chunk('ICMT', Buffer.from(`${tag}\0`, 'utf8'))]));
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt), info, chunk('data', pcm)]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

/** An ID3v2.3 tag holding one TXXX frame (description `mock`, value `tag`) in UTF-16, which v2.3 allows. */
function id3Tag(tag: string): Buffer {
  const bom = Buffer.from([0xff, 0xfe]);
  const text = Buffer.concat([Buffer.from([1]), bom, Buffer.from('mock', 'utf16le'), Buffer.alloc(2), bom, Buffer.from(tag, 'utf16le')]);
  const frameHead = Buffer.alloc(10);
  frameHead.write('TXXX', 0, 'latin1');
  frameHead.writeUInt32BE(text.length, 4); // v2.3 frame sizes are plain 32-bit
  const frames = Buffer.concat([frameHead, text]);
  const head = Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 0]);
  // The tag size is syncsafe: 7 bits per byte.
  for (let i = 0; i < 4; i++) head[9 - i] = (frames.length >> (7 * i)) & 0x7f;
  return Buffer.concat([head, frames]);
}

/**
 * An MP3 of round(seconds / 36 ms) frames (at least 2, so a parser can recognise the stream): an
 * ID3v2.3 tag holding `tag`, then silent 144-byte MPEG-1 Layer III frames.
 */
export function mockMp3(seconds: number, tag: string): Buffer {
  const frames = Number.isFinite(seconds) ? Math.max(2, Math.round(seconds / MP3_FRAME_SECONDS)) : 2;
  const id3 = id3Tag(tag);
  const out = Buffer.alloc(id3.length + frames * MP3_FRAME_BYTES);
  id3.copy(out, 0);
  for (let i = 0; i < frames; i++) out.set(MP3_HEADER, id3.length + i * MP3_FRAME_BYTES);
  return out;
}

/**
 * Raw 16-bit little-endian mono PCM of `seconds` at `rate` (a quiet 440 Hz tone), as the Gemini API's
 * speech models answer; the first sample carries a hash of `tag` so every result differs.
 */
export function mockPcm16(seconds: number, tag: string, rate = 24_000): Buffer {
  const samples = Number.isFinite(seconds) ? Math.max(0, Math.round(seconds * rate)) : 0;
  const pcm = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(800 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  let hash = 0;
  for (const char of tag) hash = (hash * 31 + char.charCodeAt(0)) | 0;
  if (samples > 0) pcm.writeInt16LE(hash % 32_768, 0);
  return pcm;
}
