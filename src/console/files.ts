/**
 * The console's built files (console/ compiled to dist/console), read once at start-up into memory:
 * served only by their exact names, so no request path can reach anything else on disk. Each file
 * is kept whole with a strong ETag, and with the gzip and Brotli forms the build wrote beside it
 * (`<name>.gz`, `<name>.br`): compressing at the build, once, keeps every HTTP thread's start cheap.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

/** A built console is a few hundred kilobytes: these bounds stop a wrong CONSOLE_DIR (a home folder) from filling memory. */
export const CONSOLE_MAX_FILES = 2_000;
export const CONSOLE_MAX_BYTES = 32 * 1024 * 1024;

const CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.webmanifest': 'application/manifest+json',
});
/** The suffixes of the compressed forms the build writes beside a file. */
const CODED_SUFFIXES = ['.br', '.gz'];

export const contentTypeOf = (name: string): string => CONTENT_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';

export interface ConsoleFile {
  readonly contentType: string;
  /** A strong validator: the content's hash, quoted. */
  readonly etag: string;
  readonly body: Buffer;
  /** The build's compressed forms, when it wrote them. */
  readonly gzip?: Buffer;
  readonly br?: Buffer;
}

export class ConsoleDirError extends Error {}

/**
 * Every regular file under `dir` by its path relative to it (`index.html`, `assets/app-1a2b.js`);
 * undefined when `dir` does not exist (the console was not built). Symbolic links are not followed.
 * Throws ConsoleDirError when `dir` holds no index.html or more than the bounds allow.
 */
export function loadConsoleFiles(dir: string): ReadonlyMap<string, ConsoleFile> | undefined {
  try {
    if (!statSync(dir).isDirectory()) throw new ConsoleDirError(`${dir} is not a folder`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const read = new Map<string, Buffer>();
  let total = 0;
  const walk = (folder: string, prefix: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const name = `${prefix}${entry.name}`;
      if (entry.isDirectory()) walk(join(folder, entry.name), `${name}/`);
      if (!entry.isFile()) continue;
      if (read.size >= CONSOLE_MAX_FILES) throw new ConsoleDirError(`${dir} holds more than ${CONSOLE_MAX_FILES} files: is CONSOLE_DIR the built console?`);
      const body = readFileSync(join(folder, entry.name));
      total += body.length;
      if (total > CONSOLE_MAX_BYTES) throw new ConsoleDirError(`${dir} holds more than ${CONSOLE_MAX_BYTES} bytes: is CONSOLE_DIR the built console?`);
      read.set(name, body);
    }
  };
  walk(dir, '');
  if (!read.has('index.html')) throw new ConsoleDirError(`${dir} has no index.html: is CONSOLE_DIR the built console?`);
  const files = new Map<string, ConsoleFile>();
  for (const [name, body] of read) {
    // A compressed form is served as its file's encoding, never under its own name.
    if (CODED_SUFFIXES.some((suffix) => name.endsWith(suffix) && read.has(name.slice(0, -suffix.length)))) continue;
    const gzip = read.get(`${name}.gz`);
    const br = read.get(`${name}.br`);
    files.set(name, {
      contentType: contentTypeOf(name), etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, body,
      ...(gzip ? { gzip } : {}), ...(br ? { br } : {}),
    });
  }
  return files;
}

/** Which stored form to send for an `Accept-Encoding` header: Brotli, then gzip, else the file as it is. */
export function encodingFor(file: ConsoleFile, acceptEncoding: string): { readonly body: Buffer; readonly encoding?: 'br' | 'gzip' } {
  const accepted = acceptedCodings(acceptEncoding);
  if (file.br && accepted.has('br')) return { body: file.br, encoding: 'br' };
  if (file.gzip && accepted.has('gzip')) return { body: file.gzip, encoding: 'gzip' };
  return { body: file.body };
}

/** The codings a client accepts, lower-cased; one given `q=0` is refused. */
function acceptedCodings(header: string): Set<string> {
  const accepted = new Set<string>();
  for (const part of header.split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (!coding) continue;
    const q = params.map((param) => param.trim()).find((param) => param.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) continue;
    accepted.add(coding.trim());
  }
  return accepted;
}
