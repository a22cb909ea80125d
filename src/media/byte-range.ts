/**
 * The `Range` header of a media read (RFC 9110 §14), for one object of known size. One range is
 * answered (206); a header that is not a single well-formed `bytes=` range (other units, a list of
 * ranges, garbage) is ignored and the whole object is sent (200), as the RFC allows: a multipart/
 * byteranges answer would cost more than the one it saves.
 */
export type ByteRange =
  | { readonly kind: 'whole' }
  /** Inclusive byte positions, `start <= end < size`. */
  | { readonly kind: 'partial'; readonly start: number; readonly end: number }
  /** A well-formed range that starts at or past the end (416, `Content-Range: bytes *\/size`). */
  | { readonly kind: 'unsatisfiable' };

const WHOLE: ByteRange = Object.freeze({ kind: 'whole' });
const UNSATISFIABLE: ByteRange = Object.freeze({ kind: 'unsatisfiable' });
const SINGLE = /^bytes=[ \t]*(\d*)-(\d*)[ \t]*$/i;
/** Positions beyond this cannot be exact numbers: such a header is garbage. */
const MAX_DIGITS = 15;

export function parseByteRange(header: string | undefined, size: number): ByteRange {
  if (!header) return WHOLE;
  const match = SINGLE.exec(header);
  if (!match) return WHOLE;
  const [, first = '', last = ''] = match;
  if (first.length > MAX_DIGITS || last.length > MAX_DIGITS) return WHOLE;
  if (first === '') {
    // A suffix: the last N bytes.
    if (last === '') return WHOLE;
    const length = Number(last);
    if (length === 0 || size === 0) return UNSATISFIABLE;
    return { kind: 'partial', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return WHOLE; // invalid: ignored
  if (start >= size) return UNSATISFIABLE;
  const end = last === '' ? size - 1 : Number(last);
  return { kind: 'partial', start, end: Math.min(end, size - 1) };
}
