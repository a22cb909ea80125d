// Images the mock hands out by URL (the OpenAI-shape `url` responses, BFL's `result.sample`), served at
// `GET /__mock/files/<name>.png`. Kept in memory, the most recent FILE_LIMIT only: a URL older than
// that 404s, as a real vendor's expired result URL does.
import type http from 'node:http';

export const FILES_PREFIX = '/__mock/files/';
const FILE_LIMIT = 500;

/** What the image routes share within one mock: its URL (set once it listens) and its files. */
export interface ImageHost {
  url: string;
  readonly files: FileStore;
}

export class FileStore {
  /** Map keeps insertion order: the first key is the oldest file. */
  private readonly files = new Map<string, Buffer>();

  /** Stores the PNG and returns its path (append it to the mock's URL). */
  put(name: string, png: Buffer): string {
    this.files.set(name, png);
    if (this.files.size > FILE_LIMIT) this.files.delete(this.files.keys().next().value as string);
    return fileUrlPath(name);
  }

  get(name: string): Buffer | undefined {
    return this.files.get(name);
  }
}

/** Names are the mock's own ids (letters, digits, dashes), safe in a URL as they are. */
export const fileUrlPath = (name: string): string => `${FILES_PREFIX}${name}.png`;

/** GET (or HEAD) /__mock/files/<name>.png: the bytes as image/png, or 404. */
export function serveFile(req: http.IncomingMessage, res: http.ServerResponse, path: string, store: FileStore): void {
  req.resume();
  const file = /^([^/]+)\.png$/.exec(path.slice(FILES_PREFIX.length));
  const png = file && (req.method === 'GET' || req.method === 'HEAD') ? store.get(file[1]!) : undefined;
  if (png === undefined) {
    const body = JSON.stringify({ error: { message: 'File not found.', type: 'invalid_request_error', param: null, code: 'not_found' } });
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    return;
  }
  res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
  res.end(req.method === 'HEAD' ? undefined : png);
}
