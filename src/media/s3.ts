/**
 * S3-compatible media storage (AWS SDK v3), used when `MEDIA_S3_BUCKET` is set. Credentials come from
 * the SDK's default chain (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, instance roles, ...). The
 * test suite runs it against a fake S3 on loopback (test/media-s3.test.ts), not against AWS itself.
 *
 * Objects are named `<prefix><sha256>.<ext>`; their `LastModified` is their storage time (storing the
 * same bytes again re-puts them, which restarts retention). A bucket lifecycle rule expiring objects
 * after the retention period is the better janitor; `sweep` does the same by listing.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { withinTime } from '../within-time.js';
import { MEDIA_KEY, contentTypeOfKey, mediaKey, sha256Hex, type MediaObject, type MediaReadHandle, type MediaStorage, type MediaStorageOptions, type StoredMedia } from './storage.js';

export interface S3Options extends MediaStorageOptions {
  readonly bucket: string;
  readonly region: string;
  /** For S3-compatible stores (MinIO, R2, ...); unset for AWS. */
  readonly endpoint?: string;
  readonly forcePathStyle: boolean;
  /** Key prefix inside the bucket, e.g. `media/`. */
  readonly prefix: string;
  /** Media host reads in progress at once (MEDIA_READ_CONCURRENCY): each holds one connection to the store. */
  readonly readConcurrency: number;
  /**
   * The longest the store may keep the gateway waiting (MEDIA_S3_TIMEOUT_MS): to connect, for an
   * answer's head, for each piece of a body being read. Without it, a store that goes silent would
   * hold a read's slot for good.
   */
  readonly timeoutMs: number;
}

/** Connections to the store beyond the reads': uploads, HEADs of the media host, the janitor. */
const OTHER_CONNECTIONS = 64;

type Sdk = typeof import('@aws-sdk/client-s3');

export class S3MediaStorage implements MediaStorage {
  private readonly now: () => number;

  private constructor(private readonly sdk: Sdk, private readonly client: S3Client, private readonly options: S3Options) {
    this.now = options.now ?? Date.now;
  }

  /** Loads the SDK only when S3 is configured. */
  static async create(options: S3Options): Promise<S3MediaStorage> {
    const sdk = await import('@aws-sdk/client-s3');
    // A read holds its GetObject's connection for as long as its client takes the bytes: the SDK's
    // default pool (50 sockets) would queue the reads past it, and every HEAD and upload behind them.
    const maxSockets = options.readConcurrency + OTHER_CONNECTIONS;
    const client = new sdk.S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle,
      requestHandler: {
        httpAgent: { maxSockets }, httpsAgent: { maxSockets },
        connectionTimeout: options.timeoutMs, requestTimeout: options.timeoutMs, throwOnRequestTimeout: true,
      },
    });
    return new S3MediaStorage(sdk, client, options);
  }

  async put(bytes: Uint8Array, contentType: string, knownSha256?: string): Promise<StoredMedia> {
    const sha256 = knownSha256 ?? sha256Hex(bytes);
    const key = mediaKey(sha256, contentType);
    await this.client.send(new this.sdk.PutObjectCommand({
      Bucket: this.options.bucket,
      Key: this.options.prefix + key,
      Body: bytes,
      ContentType: contentType,
      ContentLength: bytes.byteLength,
      CacheControl: 'public, max-age=31536000, immutable',
    }));
    return {
      key, sha256, contentType, bytes: bytes.byteLength,
      url: `${this.options.baseUrl}/${key}`,
      expiresAt: new Date(this.now() + this.options.retentionMs),
    };
  }

  private meta(key: string, bytes: number, lastModified: Date | undefined): MediaObject | undefined {
    const expiresAt = new Date((lastModified?.getTime() ?? this.now()) + this.options.retentionMs);
    if (expiresAt.getTime() <= this.now()) return undefined;
    return { key, sha256: key.slice(0, 64), contentType: contentTypeOfKey(key), bytes, expiresAt };
  }

  private static missing(error: unknown): boolean {
    const name = (error as { name?: string }).name;
    return name === 'NoSuchKey' || name === 'NotFound';
  }

  async head(key: string): Promise<MediaObject | undefined> {
    if (!MEDIA_KEY.test(key)) return undefined;
    try {
      const out = await this.client.send(new this.sdk.HeadObjectCommand({ Bucket: this.options.bucket, Key: this.options.prefix + key }));
      return this.meta(key, out.ContentLength ?? 0, out.LastModified);
    } catch (error) {
      if (S3MediaStorage.missing(error)) return undefined;
      throw error;
    }
  }

  /**
   * A handle whose chunks are one ranged GetObject, read as the client takes them (the SDK's body is a
   * Node stream: not pulling it is back-pressure on the store's connection). Only the wait for the
   * store is timed (each piece within `timeoutMs`), never the wait for the client.
   */
  async openRead(key: string): Promise<MediaReadHandle | undefined> {
    const object = await this.head(key);
    if (!object) return undefined;
    const bodies = new Set<{ destroy?: () => void }>();
    const { bucket, prefix, timeoutMs } = this.options;
    const { client, sdk } = this;
    return {
      object,
      async *chunks(start: number, end: number) {
        const out = await client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: prefix + key, Range: `bytes=${start}-${end}` }));
        const body = out.Body as (AsyncIterable<Uint8Array> & { destroy?: () => void }) | undefined;
        if (!body) return;
        bodies.add(body);
        try {
          const pieces = body[Symbol.asyncIterator]();
          for (;;) {
            const next = await withinTime(pieces.next(), timeoutMs, () => new Error(`the store sent nothing for ${timeoutMs} ms (MEDIA_S3_TIMEOUT_MS)`));
            if (next.done) return;
            yield next.value;
          }
        } finally {
          body.destroy?.();
          bodies.delete(body);
        }
      },
      close: async () => {
        for (const body of bodies) body.destroy?.();
        bodies.clear();
      },
    };
  }

  async get(key: string): Promise<MediaObject | undefined> {
    if (!MEDIA_KEY.test(key)) return undefined;
    try {
      const out = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: this.options.prefix + key }));
      const body = Buffer.from(await out.Body!.transformToByteArray());
      const meta = this.meta(key, body.byteLength, out.LastModified);
      return meta && { ...meta, body };
    } catch (error) {
      if (S3MediaStorage.missing(error)) return undefined;
      throw error;
    }
  }

  async sweep(olderThan: Date): Promise<number> {
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await this.client.send(new this.sdk.ListObjectsV2Command({ Bucket: this.options.bucket, Prefix: this.options.prefix, ContinuationToken: token }));
      const old = (page.Contents ?? []).filter((o) => o.Key && MEDIA_KEY.test(o.Key.slice(this.options.prefix.length)) && o.LastModified && o.LastModified < olderThan);
      if (old.length) {
        await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.options.bucket, Delete: { Objects: old.map((o) => ({ Key: o.Key! })), Quiet: true } }));
        deleted += old.length;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }
}
