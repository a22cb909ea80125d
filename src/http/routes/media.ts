import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { MEDIA_KEY, type MediaObject } from '../../media/storage.js';
import { MultipartError, multipartBoundary, readFilePart } from '../../media/multipart.js';

/** Room for the multipart framing (boundaries, part headers, other small fields) above MEDIA_MAX_BYTES. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const storageOff = () => new ApiError(503, 'media_storage_disabled', 'Media storage is off on this gateway (MEDIA_STORAGE=off).');
const missing = () => notFound('No such media (unknown, expired or malformed name).');

function cacheHeaders(object: MediaObject, now: number): Record<string, string> {
  const maxAge = Math.max(0, Math.floor((object.expiresAt.getTime() - now) / 1000));
  return {
    'cache-control': `public, max-age=${maxAge}, immutable`,
    etag: `"${object.sha256}"`,
    expires: object.expiresAt.toUTCString(),
    // Served with the sniffed type only: browsers must not guess another (e.g. HTML) from the bytes.
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
  };
}

/** `POST /v1/uploads` and the media host (`GET`/`HEAD /media/:key`). */
export function mediaRoutes(services: Services) {
  const { auth, media, metrics } = services;

  /** Raw body (any declared type; the sniffed type wins) or multipart/form-data with one `file` field. */
  const upload = async (ctx: RequestContext): Promise<void> => {
    await auth.apiKey(ctx);
    if (!media) throw storageOff();
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
    const stored = await media.store(bytes, param);
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
    });
  };

  const read = async (ctx: RequestContext, withBody: boolean): Promise<void> => {
    const key = ctx.params[0] ?? '';
    if (!media || !MEDIA_KEY.test(key)) throw missing();
    const object = withBody ? await media.storage.get(key) : await media.storage.head(key);
    if (!object) throw missing();
    const headers = cacheHeaders(object, Date.now());
    if (withBody) ctx.reply.send(200, object.body!, object.contentType, headers);
    else ctx.reply.head(200, object.contentType, object.bytes, headers);
  };

  return {
    upload,
    get: (ctx: RequestContext) => read(ctx, true),
    head: (ctx: RequestContext) => read(ctx, false),
  };
}
