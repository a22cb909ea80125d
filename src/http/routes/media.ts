import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { MEDIA_KEY, type MediaObject } from '../../media/storage.js';
import { MultipartError, multipartBoundary, readFilePart } from '../../media/multipart.js';
import { parseByteRange } from '../../media/byte-range.js';
import { UploadQuota } from '../../media/upload-quota.js';
import { keyLimitsOf } from '../../billing/credit-period.js';
import type { LedgerEvent } from '../../ledger/event.js';
import type { MediaStore } from '../../media/store.js';
import { log } from '../../log.js';

/** Room for the multipart framing (boundaries, part headers, other small fields) above MEDIA_MAX_BYTES. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const storageOff = () => new ApiError(503, 'media_storage_disabled', 'Media storage is off on this gateway (MEDIA_STORAGE=off).');
const missing = () => notFound('No such media (unknown, expired or malformed name).');
const busy = (limit: number) => new ApiError(503, 'media_busy', `The media host is serving its limit of ${limit} reads at once (MEDIA_READ_CONCURRENCY); try again shortly.`, null, { 'retry-after': '1' });

/**
 * The media store's own failure (an S3 endpoint down or silent, a full disk): a 503 the client may
 * retry, logged for the operator, never a 500.
 */
async function fromStore<T>(work: Promise<T>, what: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    log.warn('media store failed', { what, error });
    throw new ApiError(503, 'media_store_unavailable', `The media store could not ${what} just now; try again shortly.`, null, { 'retry-after': '1' });
  }
}
const unsatisfiable = (size: number, headers: Record<string, string>) => new ApiError(416, 'range_not_satisfiable',
  `The requested range starts past the end of the media (${size} bytes).`, null, { ...headers, 'content-range': `bytes */${size}` });

function cacheHeaders(object: MediaObject, now: number): Record<string, string> {
  const maxAge = Math.max(0, Math.floor((object.expiresAt.getTime() - now) / 1000));
  return {
    'cache-control': `public, max-age=${maxAge}, immutable`,
    etag: `"${object.sha256}"`,
    expires: object.expiresAt.toUTCString(),
    // Served with the sniffed type only: browsers must not guess another (e.g. HTML) from the bytes.
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'accept-ranges': 'bytes',
  };
}

/** `POST /v1/uploads` and the media host (`GET`/`HEAD /media/:key`). */
export function mediaRoutes(services: Services) {
  const { auth, admission, media, metrics, config } = services;
  const quota = new UploadQuota(services.redis, services.keys, config.media.userQuotaBytes, config.media.retentionMs);
  /** Reads in progress on this thread (each holds a file handle and a chunk until its client has the bytes). */
  let reading = 0;

  /**
   * Raw body (any declared type; the sniffed type wins) or multipart/form-data with one `file` field.
   * Counted in the key's request window like any authenticated request (an upload costs nothing, so
   * nothing is reserved or charged), and held to the user's storage quota.
   */
  const upload = async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    if (!media) throw storageOff();
    const startedAtMs = Date.now();
    const admitted = await admission.admit(key.userId, key.id, 0n, keyLimitsOf(key.row, startedAtMs));
    ctx.windowKey = undefined; // counted in its window by admission: a refusal from here on (the quota) is not counted again
    let status = 201;
    let errorCode: string | null = null;
    try {
      await store(ctx, media, key.userId, admitted.headers);
    } catch (error) {
      [status, errorCode] = error instanceof ApiError ? [error.status, error.code] : ctx.reply.aborted ? [499, 'client_closed'] : [500, 'internal_error'];
      throw error;
    } finally {
      // The request log's row of the upload (nothing is charged: the lease's slot is all it used).
      const event: LedgerEvent = {
        keyId: key.id, model: '', endpoint: '/v1/uploads', stream: false, status, errorCode, promptTokens: 0, completionTokens: 0,
        cachedTokens: 0, reasoningTokens: 0, reservedNano: '0', startedAtMs, durationMs: Date.now() - startedAtMs, ttfbMs: null, clientAborted: ctx.reply.aborted,
        traceId: ctx.span?.spanContext().traceId, // left out of the JSON when undefined (tracing off)
      };
      admission.settle(admitted.lease, ctx.requestId, 0n, 0, 0n, 0, JSON.stringify(event));
    }
  };

  const store = async (ctx: RequestContext, media: MediaStore, userId: string, rateHeaders: Readonly<Record<string, string>>): Promise<void> => {
    let boundary: string | undefined;
    try {
      boundary = multipartBoundary(ctx.headers.contentType);
    } catch (error) {
      if (error instanceof MultipartError) throw badRequest(`Invalid multipart body: ${error.message}.`, null, 'invalid_multipart');
      throw error;
    }
    const body = await ctx.body();
    let bytes: Uint8Array = body;
    let param: string | null = null;
    if (boundary !== undefined) {
      try {
        bytes = readFilePart(body, boundary).bytes;
      } catch (error) {
        if (error instanceof MultipartError) throw badRequest(`Invalid multipart body: ${error.message}.`, 'file', 'invalid_multipart');
        throw error;
      }
      param = 'file';
    }
    const named = media.name(bytes, param);
    const reservation = await quota.reserve(userId, named.key, bytes.byteLength);
    let stored;
    try {
      stored = await fromStore(media.put(named), 'keep the upload');
    } catch (error) {
      await quota.release(reservation);
      throw error;
    }
    await quota.keep(reservation, stored.expiresAt);
    metrics.mediaStored.labels(stored.contentType).inc();
    metrics.mediaStoredBytes.inc(stored.bytes);
    ctx.reply.json(201, {
      id: stored.key,
      object: 'upload',
      url: stored.url,
      content_type: stored.contentType,
      bytes: stored.bytes,
      sha256: stored.sha256,
      expires_at: stored.expiresAt.toISOString(),
    }, rateHeaders);
  };

  /**
   * The media host: public, so bounded by what it costs. A GET streams the object (or one byte range
   * of it) a chunk at a time as the client takes it; at most MEDIA_READ_CONCURRENCY run at once on a
   * thread, and a client that takes nothing for MEDIA_STALL_MS is dropped.
   */
  const get = async (ctx: RequestContext): Promise<void> => {
    const key = ctx.params[0] ?? '';
    if (!media || !MEDIA_KEY.test(key)) throw missing();
    if (reading >= config.media.readConcurrency) throw busy(config.media.readConcurrency);
    reading++;
    try {
      const handle = await fromStore(media.storage.openRead(key), 'read the media');
      if (!handle) throw missing();
      try {
        const { object } = handle;
        const headers = cacheHeaders(object, Date.now());
        const range = parseByteRange(ctx.headers.range, object.bytes);
        if (range.kind === 'unsatisfiable') throw unsatisfiable(object.bytes, headers);
        const [status, start, end] = range.kind === 'partial' ? [206, range.start, range.end] : [200, 0, object.bytes - 1];
        if (status === 206) headers['content-range'] = `bytes ${start}-${end}/${object.bytes}`;
        await ctx.reply.sendSized(status, object.contentType, headers, end - start + 1, handle.chunks(start, end), config.media.stallMs);
      } finally {
        await handle.close();
      }
    } finally {
      reading--;
    }
  };

  const head = async (ctx: RequestContext): Promise<void> => {
    const key = ctx.params[0] ?? '';
    if (!media || !MEDIA_KEY.test(key)) throw missing();
    const object = await fromStore(media.storage.head(key), 'read the media');
    if (!object) throw missing();
    ctx.reply.head(200, object.contentType, object.bytes, cacheHeaders(object, Date.now()));
  };

  return { upload, get, head };
}
