/**
 * The length of an MP4 (ISO base media: MP4, MOV) from its movie header, `moov/mvhd`: duration over
 * timescale, version 0 (32-bit fields) or 1 (64-bit). Pure, no I/O: the gateway prices a
 * video-to-video call by its input's length before holding the price. Untrusted input: every read is
 * bounds-checked and each walk advances by at least a box header, so any bytes give an answer or
 * undefined, never an exception or a loop.
 */

/** Box header: 32-bit size and four-character type; size 1 adds a 64-bit size, size 0 runs to the end. */
const HEADER = 8;
const LARGE_HEADER = 16;
/** Top-level boxes looked at before giving up (a real file has a handful; a hostile one may have millions). */
const MAX_BOXES = 4096;

interface Box {
  readonly type: string;
  /** Where the payload starts and ends (end within the bytes). */
  readonly body: number;
  readonly end: number;
}

/** The box at `at` within `[at, limit)`, or undefined when its header or size does not fit there. */
function boxAt(bytes: Uint8Array, at: number, limit: number): Box | undefined {
  if (at + HEADER > limit) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size32 = view.getUint32(at);
  const type = String.fromCharCode(bytes[at + 4]!, bytes[at + 5]!, bytes[at + 6]!, bytes[at + 7]!);
  if (size32 === 0) return { type, body: at + HEADER, end: limit };
  if (size32 === 1) {
    if (at + LARGE_HEADER > limit) return undefined;
    const size = view.getBigUint64(at + 8);
    if (size < BigInt(LARGE_HEADER) || size > BigInt(limit - at)) return undefined;
    return { type, body: at + LARGE_HEADER, end: at + Number(size) };
  }
  if (size32 < HEADER || size32 > limit - at) return undefined;
  return { type, body: at + HEADER, end: at + size32 };
}

/** The first box of `type` among the boxes filling `[from, limit)`. */
function findBox(bytes: Uint8Array, from: number, limit: number, type: string): Box | undefined {
  let at = from;
  for (let count = 0; count < MAX_BOXES && at < limit; count++) {
    const box = boxAt(bytes, at, limit);
    if (box === undefined) return undefined;
    if (box.type === type) return box;
    at = box.end; // at least HEADER past `at`: the walk always moves on
  }
  return undefined;
}

/** Whether `bytes` start as ISO base media: an `ftyp` box first. */
export function isMp4(bytes: Uint8Array): boolean {
  const first = boxAt(bytes, 0, bytes.length);
  return first?.type === 'ftyp';
}

/**
 * The seconds `moov/mvhd` gives, or undefined when `bytes` are not an MP4, have no movie header, or
 * one whose timescale is 0 or whose duration is unknown (all ones, as a fragmented file may write).
 */
export function mp4DurationSeconds(bytes: Uint8Array): number | undefined {
  if (!isMp4(bytes)) return undefined;
  const moov = findBox(bytes, 0, bytes.length, 'moov');
  if (moov === undefined) return undefined;
  const mvhd = findBox(bytes, moov.body, moov.end, 'mvhd');
  if (mvhd === undefined || mvhd.body + 4 > mvhd.end) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = bytes[mvhd.body]!;
  // After version and flags: creation and modification times, then timescale and duration.
  if (version === 0) {
    if (mvhd.body + 20 > mvhd.end) return undefined;
    const timescale = view.getUint32(mvhd.body + 12);
    const duration = view.getUint32(mvhd.body + 16);
    return secondsOf(BigInt(duration), timescale, 0xffff_ffffn);
  }
  if (version === 1) {
    if (mvhd.body + 32 > mvhd.end) return undefined;
    const timescale = view.getUint32(mvhd.body + 20);
    const duration = view.getBigUint64(mvhd.body + 24);
    return secondsOf(duration, timescale, 0xffff_ffff_ffff_ffffn);
  }
  return undefined;
}

function secondsOf(duration: bigint, timescale: number, unknown: bigint): number | undefined {
  if (timescale === 0 || duration === unknown) return undefined;
  const seconds = Number(duration) / timescale;
  return Number.isFinite(seconds) ? seconds : undefined;
}
