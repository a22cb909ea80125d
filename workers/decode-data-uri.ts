/**
 * piscina task: decodes a base64 `data:` URI and hashes the bytes. Runs off the HTTP threads because a
 * payload of megabytes takes milliseconds to validate, decode and hash.
 */
import { createHash } from 'node:crypto';
import { move, transferableSymbol, valueSymbol } from 'piscina';

export interface DecodeDataUriInput {
  readonly uri: string;
}

export type DecodeDataUriOutput =
  | { readonly ok: true; readonly bytes: Uint8Array; readonly mediaType: string; readonly sha256: string }
  | { readonly ok: false; readonly reason: string };

// `type/subtype`, then `;name=value` parameters, then `;base64,` (RFC 2397, tokens as in RFC 9110).
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const HEADER = new RegExp(`^data:(${TOKEN}/${TOKEN})((?:;${TOKEN}=${TOKEN})*);base64$`, 'i');
// Matched only before the first comma, and only this long, so the pattern never runs over the payload.
const MAX_HEADER_LENGTH = 1024;
const WHITESPACE = /[ \t\r\n\f]/;
const ALL_WHITESPACE = /[ \t\r\n\f]+/g;
// A plain character class: a pattern of four-character groups overflows the regexp stack on megabytes.
const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/** Returns a DecodeDataUriOutput; a success arrives wrapped for piscina to move its buffer. */
export default function decodeDataUriTask({ uri }: DecodeDataUriInput): DecodeDataUriOutput | ReturnType<typeof move> {
  const comma = uri.indexOf(',');
  const header = comma >= 0 && comma <= MAX_HEADER_LENGTH ? HEADER.exec(uri.slice(0, comma)) : null;
  if (!header) return { ok: false, reason: 'not a data:<type>/<subtype>[;param=value]*;base64,<payload> URI' };
  const raw = uri.slice(comma + 1);
  // Testing first: replace() is slow on megabytes even when nothing matches.
  const payload = WHITESPACE.test(raw) ? raw.replace(ALL_WHITESPACE, '') : raw;
  if (payload.length === 0) return { ok: false, reason: 'the payload is empty' };
  // Buffer's decoder skips characters it does not know; checking first keeps garbage from passing.
  if (!BASE64_ALPHABET.test(payload) || payload.length % 4 !== 0) return { ok: false, reason: 'the payload is not valid base64' };
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  // A buffer of its own: small Buffers share a pool, and moving the pool would detach it here.
  const bytes = new Uint8Array((payload.length / 4) * 3 - padding);
  Buffer.from(bytes.buffer).write(payload, 'base64');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const result: DecodeDataUriOutput = { ok: true, bytes, mediaType: header[1]!.toLowerCase(), sha256 };
  // piscina moves only a top-level transferable, so the result names the buffer to move itself.
  return move({ [transferableSymbol]: [bytes.buffer], [valueSymbol]: result });
}
