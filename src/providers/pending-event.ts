const LF2 = Buffer.from('\n\n');
const CRLF2 = Buffer.from('\r\n\r\n');

/** The most bytes of one streamed upstream event held before it ends (UPSTREAM_MAX_EVENT_BYTES's default). */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/**
 * The longest text, in UTF-16 units, one o200k token stands for: its longest token is 128 bytes
 * (test/upstream-limits.test.ts checks it), and a byte is at most one unit. A text cut at `tokens`
 * times this still counts at least `tokens` tokens, so cutting generated text there never lowers a
 * charge, which stops at the output allowance anyway.
 */
export const MAX_CHARS_PER_TOKEN = 128;

/** The generated text a relay keeps for counting when it is not told the call's output allowance. */
export const DEFAULT_MAX_GENERATED_CHARS = 128 * 1024 * MAX_CHARS_PER_TOKEN;

/** Which blank lines end an event: `\n\n`, `\r\n\r\n`, or either while the stream's framing is unknown. */
export type Separators = 'lf' | 'crlf' | 'either';

/**
 * The start of a streamed event whose blank line has not come yet, held as the pieces it came in:
 * they are joined once, by the chunk that ends the event, so a long event costs linear time instead of
 * a copy per chunk. Bounded: holding more than `maxBytes` throws (the stream then breaks), so an
 * upstream cannot make the gateway keep an endless event.
 */
export class PendingEvent {
  private readonly pieces: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** The pieces held, in order (an event's start, no blank line in it). */
  get held(): readonly Buffer[] {
    return this.pieces;
  }

  get length(): number {
    return this.bytes;
  }

  /** Holds `data`, which ends no event; throws once the event grows past the bound. */
  hold(data: Buffer): void {
    if (data.length === 0) return;
    this.bytes += data.length;
    if (this.bytes > this.maxBytes) throw new Error(`an upstream event grew past ${this.maxBytes} bytes without ending`);
    this.pieces.push(data);
  }

  /**
   * `chunk` after the bytes held: when `chunk` ends an event (a blank line in it, or one that begins
   * in the held bytes), all of it joined, and nothing is held any more; else `chunk` is held too and
   * the answer is undefined.
   */
  add(chunk: Buffer, separators: Separators): Buffer | undefined {
    if (this.bytes === 0) return chunk;
    if (!endsEvent(chunk, separators) && !this.endsAcross(chunk, separators)) {
      this.hold(chunk);
      return undefined;
    }
    this.pieces.push(chunk);
    const whole = Buffer.concat(this.pieces, this.bytes + chunk.length);
    this.pieces.length = 0;
    this.bytes = 0;
    return whole;
  }

  /** Takes what is held (the stream ended), joined. */
  take(): Buffer | undefined {
    if (this.bytes === 0) return undefined;
    const whole = this.pieces.length === 1 ? this.pieces[0]! : Buffer.concat(this.pieces, this.bytes);
    this.pieces.length = 0;
    this.bytes = 0;
    return whole;
  }

  /** Whether a blank line starts in the last held bytes and ends in `chunk`'s first ones. */
  private endsAcross(chunk: Buffer, separators: Separators): boolean {
    const tail: Buffer[] = [];
    let need = 3;
    for (let i = this.pieces.length - 1; i >= 0 && need > 0; i--) {
      const piece = this.pieces[i]!;
      const take = Math.min(need, piece.length);
      tail.unshift(piece.subarray(piece.length - take));
      need -= take;
    }
    tail.push(chunk.subarray(0, 3));
    return endsEvent(Buffer.concat(tail), separators);
  }
}

function endsEvent(data: Buffer, separators: Separators): boolean {
  return (separators !== 'crlf' && data.includes(LF2)) || (separators !== 'lf' && data.includes(CRLF2));
}
