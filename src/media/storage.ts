/**
 * Media storage behind one interface: content-addressed names (`<sha256>.<ext>`), the type sniffed
 * from the bytes, retention by age. `LocalMediaStorage` is the default; `S3MediaStorage` (./s3.ts)
 * is used when an S3 bucket is configured.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readFile, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MEDIA_TYPES, sniffMediaType } from './sniff.js';

/** A stored name: the SHA-256 of the bytes in lowercase hex, a dot, a known extension. Nothing else is ever looked up. */
export const MEDIA_KEY = new RegExp(`^[0-9a-f]{64}\\.(?:${Object.keys(MEDIA_TYPES).join('|')})$`);

export interface StoredMedia {
  /** The stored name, also the last segment of `url`. */
  readonly key: string;
  /** Lowercase hex SHA-256 of the bytes. */
  readonly sha256: string;
  /** Where anyone can fetch the bytes until `expiresAt`. */
  readonly url: string;
  readonly bytes: number;
  readonly contentType: string;
  readonly expiresAt: Date;
}

export interface MediaObject {
  readonly key: string;
  readonly sha256: string;
  readonly contentType: string;
  readonly bytes: number;
  readonly expiresAt: Date;
  /** The content; absent when only the metadata was asked for (`head`). */
  readonly body?: Buffer;
}

export interface MediaStorage {
  /**
   * Stores `bytes` of the (sniffed) `contentType` under their hash. Storing the same bytes again
   * returns the same key and URL and restarts their retention. `sha256` is the bytes' hash when the
   * caller already has it (computed in the worker pool), so it is not computed again here.
   */
  put(bytes: Uint8Array, contentType: string, sha256?: string): Promise<StoredMedia>;
  /** The object with its bytes, or undefined when the key is malformed, unknown or expired. */
  get(key: string): Promise<MediaObject | undefined>;
  /** Like `get` without reading the bytes. */
  head(key: string): Promise<MediaObject | undefined>;
  /**
   * Opens the object for reading in bounded chunks (the media host never holds an object whole), or
   * undefined when the key is malformed, unknown or expired. The caller closes the handle on every path.
   */
  openRead(key: string): Promise<MediaReadHandle | undefined>;
  /** Deletes every object stored (or last re-stored) before `olderThan`; returns how many. */
  sweep(olderThan: Date): Promise<number>;
  /**
   * Stores bytes as they arrive, never holding them whole (a storage without it is given them whole
   * through `put`). The type is sniffed from the first bytes; `accept` refuses a type, and then nothing
   * is stored and the answer is the type refused.
   */
  putStream?(chunks: AsyncIterable<Uint8Array>, accept: (contentType: string | undefined) => boolean): Promise<StoredMedia | { readonly refused: string | undefined }>;
}

/** An object open for reading; `close` releases what it holds (a file descriptor, a connection). */
export interface MediaReadHandle {
  readonly object: MediaObject;
  /**
   * Bytes `start` to `end` (inclusive), at most READ_CHUNK_BYTES a chunk, each read only when asked
   * for. A chunk is valid until the next is asked for (its memory may be reused).
   */
  chunks(start: number, end: number): AsyncIterator<Uint8Array>;
  close(): Promise<void>;
}

/** The media host reads (and holds per client) at most this much at a time. */
export const READ_CHUNK_BYTES = 64 * 1024;

/** Bytes kept from the start of a streamed object for sniffing its type (matroska's DocType sits early). */
const SNIFF_BYTES = 4096;

export interface MediaStorageOptions {
  /** Public base address of stored objects (`MEDIA_URL`), without a trailing slash. */
  readonly baseUrl: string;
  readonly retentionMs: number;
  readonly now?: () => number;
}

export const sha256Hex = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

/** The stored name of `bytes` of a sniffed type. */
export function mediaKey(sha256: string, contentType: string): string {
  const type = Object.values(MEDIA_TYPES).find((t) => t.contentType === contentType);
  if (!type) throw new Error(`not a stored media type: ${contentType}`);
  return `${sha256}.${type.extension}`;
}

/** The content type a stored name is served with. */
export function contentTypeOfKey(key: string): string {
  return MEDIA_TYPES[key.slice(key.lastIndexOf('.') + 1)]!.contentType;
}

const TEMP_PREFIX = '.tmp-';
/** A temporary file this old was left by a crash mid-write. */
const STALE_TEMP_MS = 3_600_000;

/**
 * Files in one directory. The file's mtime is its storage time (re-storing the same bytes touches
 * it), so retention needs no sidecar. Writes go to a temporary file renamed into place, so a reader
 * never sees a half-written object and concurrent writers of the same bytes both succeed.
 */
export class LocalMediaStorage implements MediaStorage {
  private ready: Promise<unknown> | undefined;
  private readonly now: () => number;

  constructor(readonly dir: string, private readonly options: MediaStorageOptions) {
    this.now = options.now ?? Date.now;
  }

  private ensureDir(): Promise<unknown> {
    this.ready ??= mkdir(this.dir, { recursive: true }).catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    return this.ready;
  }

  async put(bytes: Uint8Array, contentType: string, knownSha256?: string): Promise<StoredMedia> {
    const sha256 = knownSha256 ?? sha256Hex(bytes);
    const key = mediaKey(sha256, contentType);
    const path = join(this.dir, key);
    await this.ensureDir();
    const now = new Date(this.now());
    const existing = await stat(path).catch(() => undefined);
    if (existing && existing.size === bytes.byteLength) {
      await utimes(path, now, now);
    } else {
      const temp = join(this.dir, `${TEMP_PREFIX}${randomUUID()}`);
      try {
        await writeFile(temp, bytes, { flag: 'wx' });
        await utimes(temp, now, now);
        await rename(temp, path);
      } catch (error) {
        await unlink(temp).catch(() => {});
        throw error;
      }
    }
    return {
      key, sha256, contentType, bytes: bytes.byteLength,
      url: `${this.options.baseUrl}/${key}`,
      expiresAt: new Date(now.getTime() + this.options.retentionMs),
    };
  }

  async putStream(chunks: AsyncIterable<Uint8Array>, accept: (contentType: string | undefined) => boolean): Promise<StoredMedia | { readonly refused: string | undefined }> {
    await this.ensureDir();
    const temp = join(this.dir, `${TEMP_PREFIX}${randomUUID()}`);
    const hash = createHash('sha256');
    const head: Uint8Array[] = [];
    let headBytes = 0;
    let total = 0;
    const file = await open(temp, 'wx');
    let kept = false;
    try {
      for await (const chunk of chunks) {
        hash.update(chunk);
        if (headBytes < SNIFF_BYTES) {
          head.push(chunk);
          headBytes += chunk.byteLength;
        }
        total += chunk.byteLength;
        await file.write(chunk);
      }
      await file.close();
      const contentType = total === 0 ? undefined : sniffMediaType(Buffer.concat(head))?.contentType;
      if (contentType === undefined || !accept(contentType)) return { refused: contentType };
      const sha256 = hash.digest('hex');
      const key = mediaKey(sha256, contentType);
      const now = new Date(this.now());
      await utimes(temp, now, now);
      // The same bytes stored already: renaming over them is the same content, and restarts their retention.
      await rename(temp, join(this.dir, key));
      kept = true;
      return { key, sha256, contentType, bytes: total, url: `${this.options.baseUrl}/${key}`, expiresAt: new Date(now.getTime() + this.options.retentionMs) };
    } finally {
      await file.close().catch(() => {});
      if (!kept) await unlink(temp).catch(() => {});
    }
  }

  async head(key: string): Promise<MediaObject | undefined> {
    if (!MEDIA_KEY.test(key)) return undefined;
    const info = await stat(join(this.dir, key)).catch(() => undefined);
    if (!info?.isFile()) return undefined;
    const expiresAt = new Date(info.mtimeMs + this.options.retentionMs);
    if (expiresAt.getTime() <= this.now()) return undefined;
    return { key, sha256: key.slice(0, 64), contentType: contentTypeOfKey(key), bytes: info.size, expiresAt };
  }

  async openRead(key: string): Promise<MediaReadHandle | undefined> {
    const meta = await this.head(key);
    if (!meta) return undefined;
    const file = await open(join(this.dir, key), 'r').catch(() => undefined);
    if (!file) return undefined;
    try {
      // The size of the file opened (a re-store renames the same bytes over it: the name fixes the content).
      const { size } = await file.stat();
      return { object: { ...meta, bytes: size }, chunks: (start, end) => fileChunks(file, start, end), close: () => file.close().catch(() => {}) };
    } catch (error) {
      await file.close().catch(() => {});
      throw error;
    }
  }

  async get(key: string): Promise<MediaObject | undefined> {
    const meta = await this.head(key);
    if (!meta) return undefined;
    const body = await readFile(join(this.dir, key)).catch(() => undefined);
    return body && { ...meta, bytes: body.byteLength, body };
  }

  async sweep(olderThan: Date): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    let deleted = 0;
    const staleTemp = this.now() - STALE_TEMP_MS;
    for (const name of names) {
      const media = MEDIA_KEY.test(name);
      if (!media && !name.startsWith(TEMP_PREFIX)) continue; // not ours: leave it alone
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) continue;
      const limit = media ? olderThan.getTime() : staleTemp;
      if (info.mtimeMs >= limit) continue;
      try {
        await unlink(path);
        if (media) deleted++;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
    return deleted;
  }
}

/**
 * Reads `start`..`end` (inclusive) of an open file one bounded chunk at a time into one buffer (a
 * reader holds one chunk, however long it reads); a file that ends early ends the chunks.
 */
async function* fileChunks(file: FileHandle, start: number, end: number): AsyncGenerator<Uint8Array> {
  const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, end - start + 1));
  for (let position = start; position <= end;) {
    const want = Math.min(buffer.byteLength, end - position + 1);
    const { bytesRead } = await file.read(buffer, 0, want, position);
    if (bytesRead === 0) return;
    position += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}
