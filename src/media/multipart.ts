/**
 * A small `multipart/form-data` reader (one file field, or every part), over a body already read
 * (and bounded) in full. Pure; every malformation is a MultipartError (the upload route answers 400 with it).
 */

export class MultipartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MultipartError';
  }
}

export interface FilePart {
  readonly bytes: Buffer;
  readonly filename: string | undefined;
  /** The part's own Content-Type header (not believed; the bytes are sniffed). */
  readonly contentType: string | undefined;
}

/** The boundary of a `multipart/form-data` Content-Type, or undefined for any other type. */
export function multipartBoundary(contentType: string): string | undefined {
  const [type, ...params] = contentType.split(';');
  if (type!.trim().toLowerCase() !== 'multipart/form-data') return undefined;
  for (const param of params) {
    const at = param.indexOf('=');
    if (at < 0 || param.slice(0, at).trim().toLowerCase() !== 'boundary') continue;
    let value = param.slice(at + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    // RFC 2046: 1 to 70 characters of a restricted set.
    if (!/^[0-9A-Za-z'()+_,\-./:=? ]{1,70}$/.test(value) || value.endsWith(' ')) throw new MultipartError('the multipart boundary is malformed');
    return value;
  }
  throw new MultipartError('multipart/form-data without a boundary parameter');
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');
const MAX_HEADER_BYTES = 8 * 1024;

/** A header parameter such as `name="file"` of a Content-Disposition value. */
function dispositionParam(value: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]+))`, 'i').exec(value);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2];
}

/** One part of a form: its field name, and its bytes (a slice of the body). */
export interface FormPart extends FilePart {
  readonly name: string | undefined;
}

/** Every part of a form, in order. The body must hold a closing delimiter. */
export function formParts(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  // The first delimiter may follow a preamble; later ones always follow CRLF.
  let at = body.subarray(0, delimiter.length).equals(delimiter) ? 0 : body.indexOf(Buffer.concat([CRLF, delimiter]));
  if (at < 0) throw new MultipartError('the body holds no multipart delimiter');
  if (at > 0) at += CRLF.length;
  const next = Buffer.concat([CRLF, delimiter]);
  const parts: FormPart[] = [];
  for (;;) {
    let cursor = at + delimiter.length;
    if (body[cursor] === 0x2d && body[cursor + 1] === 0x2d) break; // `--`: the closing delimiter
    // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
    while (body[cursor] === 0x20 || body[cursor] === 0x09) cursor++;
    if (body[cursor] !== 0x0d || body[cursor + 1] !== 0x0a) throw new MultipartError('a multipart delimiter is not followed by CRLF');
    cursor += 2;
    const headerEnd = body.indexOf(HEADER_END, cursor - 2);
    if (headerEnd < 0 || headerEnd - cursor > MAX_HEADER_BYTES) throw new MultipartError('a multipart part has no end of headers');
    const headers = new Map<string, string>();
    const headerText = headerEnd >= cursor ? body.subarray(cursor, headerEnd).toString('latin1') : '';
    for (const line of headerText ? headerText.split('\r\n') : []) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new MultipartError('a multipart part has a malformed header');
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const contentStart = headerEnd + HEADER_END.length;
    const end = body.indexOf(next, contentStart);
    if (end < 0) throw new MultipartError('the multipart body is not closed by its final delimiter');
    const disposition = headers.get('content-disposition') ?? '';
    if (!/^form-data\s*(;|$)/i.test(disposition)) throw new MultipartError('a multipart part lacks Content-Disposition: form-data');
    parts.push({
      name: dispositionParam(disposition, 'name'), bytes: body.subarray(contentStart, end),
      filename: dispositionParam(disposition, 'filename'), contentType: headers.get('content-type'),
    });
    at = end + CRLF.length;
  }
  return parts;
}

/**
 * The bytes of the form field `field` (exactly one such field must be present; other fields are
 * ignored). The body must hold a closing delimiter.
 */
export function readFilePart(body: Buffer, boundary: string, field = 'file'): FilePart {
  const found = formParts(body, boundary).filter((part) => part.name === field);
  if (found.length > 1) throw new MultipartError(`more than one '${field}' field`);
  if (found.length === 0) throw new MultipartError(`the form has no '${field}' field`);
  const { bytes, filename, contentType } = found[0]!;
  return { bytes, filename, contentType };
}
