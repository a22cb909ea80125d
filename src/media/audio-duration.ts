/**
 * Duration of audio bytes (WAV, MP3, FLAC) read from their headers and frames. Pure, no I/O: the
 * gateway bills audio by length, so it measures what a vendor delivered instead of trusting its
 * report. Untrusted input: every read is bounds-checked and every loop is bounded, so any bytes give
 * an answer or undefined, never an exception.
 */

export interface AudioInfo {
  readonly format: 'mp3' | 'wav' | 'flac';
  readonly seconds: number;
}

/** Garbage runs inside an MP3 stream that are skipped before giving up on the rest. */
const MAX_RESYNCS = 16;
/** How far past an ID3v2 tag the first MPEG frame may start (some taggers pad outside the tag). */
const MAX_LEAD_IN = 64 * 1024;
/** Concatenated ID3v2 tags skipped at the start. */
const MAX_ID3_TAGS = 4;

/** The format and length of `bytes`, or undefined when they are not a parseable MP3, WAV or FLAC file. */
export function audioInfo(bytes: Uint8Array): AudioInfo | undefined {
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WAVE')) return result('wav', wavSeconds(bytes));
  if (ascii(bytes, 0, 'fLaC')) return result('flac', flacSeconds(bytes, 0));
  const audioStart = skipId3v2(bytes);
  if (audioStart === undefined) return undefined;
  // FLAC files sometimes carry an ID3v2 tag in front.
  if (audioStart > 0 && ascii(bytes, audioStart, 'fLaC')) return result('flac', flacSeconds(bytes, audioStart));
  return result('mp3', mp3Seconds(bytes, audioStart, audioStart > 0));
}

function result(format: AudioInfo['format'], seconds: number | undefined): AudioInfo | undefined {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return undefined;
  return { format, seconds: Math.round(seconds * 1000) / 1000 };
}

function ascii(bytes: Uint8Array, at: number, text: string): boolean {
  if (at < 0 || bytes.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false;
  return true;
}

const u16le = (b: Uint8Array, at: number) => b[at]! | (b[at + 1]! << 8);
const u32le = (b: Uint8Array, at: number) => (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
const u32be = (b: Uint8Array, at: number) => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

// --- WAV -------------------------------------------------------------------------------------------

function wavSeconds(bytes: Uint8Array): number | undefined {
  let byteRate = 0;
  let blockAlign = 0;
  let dataBytes: number | undefined;
  for (let at = 12; at + 8 <= bytes.length;) {
    const size = u32le(bytes, at + 4);
    const body = at + 8;
    if (ascii(bytes, at, 'fmt ') && size >= 16 && body + 16 <= bytes.length) {
      const sampleRate = u32le(bytes, body + 4);
      blockAlign = u16le(bytes, body + 12);
      byteRate = u32le(bytes, body + 8) || sampleRate * blockAlign;
    } else if (ascii(bytes, at, 'data') && dataBytes === undefined) {
      // A truncated file, or a streaming writer's 0xFFFFFFFF placeholder: only what is present plays.
      dataBytes = Math.min(size, bytes.length - body);
    }
    // Chunks are word-aligned: an odd size is followed by one pad byte.
    at = body + size + (size & 1);
  }
  if (dataBytes === undefined || byteRate === 0) return undefined;
  const whole = blockAlign > 0 ? dataBytes - (dataBytes % blockAlign) : dataBytes;
  return whole / byteRate;
}

// --- FLAC ------------------------------------------------------------------------------------------

function flacSeconds(bytes: Uint8Array, start: number): number | undefined {
  // The first metadata block must be STREAMINFO (type 0, 34 bytes).
  const head = start + 4;
  if (bytes.length < head + 4 + 18) return undefined;
  if ((bytes[head]! & 0x7f) !== 0) return undefined;
  const length = (bytes[head + 1]! << 16) | (bytes[head + 2]! << 8) | bytes[head + 3]!;
  if (length !== 34) return undefined;
  const info = head + 4;
  // After min/max block size (2+2) and min/max frame size (3+3): 20 bits rate, 3 channels, 5 bps, 36 samples.
  const rate = (bytes[info + 10]! << 12) | (bytes[info + 11]! << 4) | (bytes[info + 12]! >> 4);
  const totalSamples = (bytes[info + 13]! & 0x0f) * 2 ** 32 + u32be(bytes, info + 14);
  if (rate === 0 || totalSamples === 0) return undefined; // 0 samples means "unknown" in STREAMINFO
  return totalSamples / rate;
}

// --- MP3 -------------------------------------------------------------------------------------------

/** Where the audio starts after any ID3v2 tags: 0 when there are none, undefined for a broken tag. */
function skipId3v2(bytes: Uint8Array): number | undefined {
  let at = 0;
  for (let tags = 0; tags < MAX_ID3_TAGS && ascii(bytes, at, 'ID3'); tags++) {
    if (bytes.length < at + 10) return undefined;
    const major = bytes[at + 3]!;
    const minor = bytes[at + 4]!;
    const flags = bytes[at + 5]!;
    if (major === 0xff || minor === 0xff) return undefined;
    let size = 0;
    for (let i = 6; i < 10; i++) {
      const byte = bytes[at + i]!;
      if (byte & 0x80) return undefined; // sizes are syncsafe: 7 bits per byte
      size = size * 128 + byte;
    }
    at += 10 + size + (flags & 0x10 ? 10 : 0); // the footer flag adds a 10-byte footer
  }
  return at;
}

interface Frame {
  /** 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5 (the header's own bits). */
  readonly version: number;
  /** 3 layer I, 2 layer II, 1 layer III (the header's own bits). */
  readonly layer: number;
  readonly rateIndex: number;
  readonly sampleRate: number;
  readonly samples: number;
  readonly length: number;
  readonly mono: boolean;
  readonly crc: boolean;
}

// kbps by [table][index]; index 0 (free format) and 15 are not usable.
const BITRATES: readonly (readonly number[])[] = [
  [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448], // MPEG-1 layer I
  [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384], // MPEG-1 layer II
  [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320], // MPEG-1 layer III
  [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256], // MPEG-2/2.5 layer I
  [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160], // MPEG-2/2.5 layers II, III
];
const SAMPLE_RATES: Readonly<Record<number, readonly number[]>> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };

function frameAt(bytes: Uint8Array, at: number): Frame | undefined {
  if (at < 0 || at + 4 > bytes.length) return undefined;
  const b1 = bytes[at + 1]!;
  const b2 = bytes[at + 2]!;
  const b3 = bytes[at + 3]!;
  if (bytes[at] !== 0xff || (b1 & 0xe0) !== 0xe0) return undefined;
  const version = (b1 >> 3) & 3;
  const layer = (b1 >> 1) & 3;
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (version === 1 || layer === 0 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3 || (b3 & 3) === 2) return undefined;
  const mpeg1 = version === 3;
  const table = mpeg1 ? 3 - layer : layer === 3 ? 3 : 4;
  const kbps = BITRATES[table]![bitrateIndex]!;
  const sampleRate = SAMPLE_RATES[version]![rateIndex]!;
  const padding = (b2 >> 1) & 1;
  const samples = layer === 3 ? 384 : layer === 2 || mpeg1 ? 1152 : 576;
  const length = layer === 3
    ? (Math.floor((12 * kbps * 1000) / sampleRate) + padding) * 4
    : Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  if (length < 4) return undefined;
  return { version, layer, rateIndex, sampleRate, samples, length, mono: b3 >> 6 === 3, crc: (b1 & 1) === 0 };
}

/** A frame belonging to the same stream as `first` (a stream keeps its version, layer and rate). */
function sameStream(bytes: Uint8Array, at: number, first: Frame): Frame | undefined {
  const frame = frameAt(bytes, at);
  return frame && frame.version === first.version && frame.layer === first.layer && frame.rateIndex === first.rateIndex ? frame : undefined;
}

/** A frame at `at` followed by another of its stream (or by the end of the bytes): a real sync, not a chance 0xFF. */
function syncedAt(bytes: Uint8Array, at: number, like: Frame | undefined, endIsEnough: boolean): Frame | undefined {
  const frame = like ? sameStream(bytes, at, like) : frameAt(bytes, at);
  if (!frame) return undefined;
  const next = at + frame.length;
  if (endIsEnough && next === bytes.length) return frame;
  return sameStream(bytes, next, frame) ? frame : undefined;
}

/** Frames counted by a Xing/Info (LAME) or VBRI (Fraunhofer) header in the first frame, which is not audio itself. */
function vbrHeader(bytes: Uint8Array, at: number, frame: Frame): { frames: number | undefined } | undefined {
  if (frame.layer !== 1) return undefined;
  const sideInfo = frame.version === 3 ? (frame.mono ? 17 : 32) : frame.mono ? 9 : 17;
  const xing = at + 4 + (frame.crc ? 2 : 0) + sideInfo;
  if (ascii(bytes, xing, 'Xing') || ascii(bytes, xing, 'Info')) {
    if (xing + 12 > bytes.length) return { frames: undefined };
    const flags = u32be(bytes, xing + 4);
    return { frames: flags & 1 ? u32be(bytes, xing + 8) : undefined };
  }
  const vbri = at + 4 + 32;
  if (ascii(bytes, vbri, 'VBRI')) return { frames: vbri + 18 <= bytes.length ? u32be(bytes, vbri + 14) : undefined };
  return undefined;
}

/** Stops the frame walk: an ID3v1 (`TAG`), APEv2 or Lyrics3 trailer. */
const trailerAt = (bytes: Uint8Array, at: number) => ascii(bytes, at, 'TAG') || ascii(bytes, at, 'APETAGEX') || ascii(bytes, at, 'LYRICS');

function mp3Seconds(bytes: Uint8Array, start: number, tagged: boolean): number | undefined {
  // Untagged bytes must open with a frame; after a tag, a little padding before the first one is tolerated.
  let at = start;
  const leadLimit = tagged ? Math.min(bytes.length, start + MAX_LEAD_IN) : start + 1;
  let first: Frame | undefined;
  for (; at < leadLimit; at++) {
    first = syncedAt(bytes, at, undefined, false);
    if (first) break;
  }
  if (!first) return undefined;
  const vbr = vbrHeader(bytes, at, first);
  if (vbr?.frames !== undefined && vbr.frames > 0) return (vbr.frames * first.samples) / first.sampleRate;
  let seconds = 0;
  let resyncs = 0;
  if (vbr) at += first.length; // an Info frame without a count: skip it, it is silence
  while (at + 4 <= bytes.length) {
    if (trailerAt(bytes, at)) break;
    const frame = sameStream(bytes, at, first);
    if (frame) {
      if (at + frame.length > bytes.length) break; // a truncated last frame does not play
      seconds += frame.samples / frame.sampleRate;
      at += frame.length;
      continue;
    }
    if (resyncs++ >= MAX_RESYNCS) break;
    let found = -1;
    for (let scan = at + 1; scan + 4 <= bytes.length; scan++) {
      if (syncedAt(bytes, scan, first, true)) {
        found = scan;
        break;
      }
    }
    if (found === -1) break;
    at = found;
  }
  return seconds;
}
