/**
 * Media that crosses the gateway on an image call: the caller's `image_urls` (decoded or fetched,
 * checked to be images, hosted), the caller's input video measured for its price, and the upstream's results (hosted so links do not expire).
 */
import { isIP } from 'node:net';
import { ApiError, badRequest } from '../http/errors.js';
import type { MediaStore } from './store.js';
import type { Config } from '../config.js';
import { DataUriError, decodeDataUri } from './data-uri.js';
import { UrlGuardError, fetchGuarded } from './url-guard.js';
import { isLoopbackAddress, isPublicAddress } from './public-address.js';
import { imageTypeNames, sniffMediaType, type SniffedType } from './sniff.js';
import { isMp4, mp4DurationSeconds } from './mp4-duration.js';
import { log } from '../log.js';

export interface MediaTransit {
  /** Undefined when MEDIA_STORAGE=off: nothing is hosted, inputs go upstream inline and results as they came. */
  readonly media: MediaStore | undefined;
  readonly maxBytes: number;
  readonly fetchTimeoutMs: number;
  /** Loopback allowed for callers' URLs (tests only). */
  readonly allowLoopback: boolean;
  /** Whether vendors can reach MEDIA_URL; when not (a local gateway), inputs go upstream as data URIs. */
  readonly mediaIsPublic: boolean;
  /** MEDIA_URL: addresses under it (uploads, earlier results) are read from storage, not fetched. */
  readonly mediaUrl: string;
}

/** The transit of a gateway's configuration. */
export function mediaTransitOf(config: Pick<Config, 'media' | 'fetch'>, media: MediaStore | undefined): MediaTransit {
  return {
    media,
    maxBytes: config.media.maxBytes,
    fetchTimeoutMs: config.fetch.timeoutMs,
    allowLoopback: config.fetch.allowLoopback,
    mediaIsPublic: isPublicMediaUrl(config.media.url),
    mediaUrl: config.media.url,
  };
}

const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, '');
const isLocalName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** Whether a MEDIA_URL names a host the vendors can reach (not loopback, private or `localhost`). */
export function isPublicMediaUrl(mediaUrl: string): boolean {
  const host = hostOf(mediaUrl);
  if (isLocalName(host)) return false;
  return isIP(host) === 0 || isPublicAddress(host, false);
}

/**
 * Whether a vendor's base URL is on loopback (the built-in mock vendor, or a local proxy the operator
 * configured): that vendor's result addresses on loopback are then fetched too.
 */
export function isLoopbackUrl(url: string): boolean {
  const host = hostOf(url);
  return isLocalName(host) || (isIP(host) !== 0 && isLoopbackAddress(host));
}

const dataUriOf = (bytes: Uint8Array, contentType: string) => `data:${contentType};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')}`;

type InputCode = 'invalid_image_url' | 'invalid_video_url';

/**
 * The bytes of a caller's input: a `data:` URI decoded in the worker pool, an address on this
 * gateway's media host (an upload) read from storage, any other http(s) URL fetched through the URL
 * guard; each within MEDIA_MAX_BYTES (413 beyond), and a fetch within the fetch timeout.
 */
async function inputBytes(entry: string, param: string, transit: MediaTransit, code: InputCode): Promise<{ bytes: Uint8Array; sha256?: string }> {
  try {
    if (/^data:/i.test(entry)) return await decodeDataUri(entry, transit.maxBytes);
    if (transit.media && entry.startsWith(`${transit.mediaUrl}/`)) {
      const name = entry.slice(transit.mediaUrl.length + 1);
      // The name fixes the bytes, so their size is known before they are read (a video result may be far larger).
      const size = (await transit.media.storage.head(name))?.bytes ?? 0;
      if (size > transit.maxBytes) throw new ApiError(413, 'payload_too_large', `'${param}' is larger than ${transit.maxBytes} bytes.`, param);
      const own = await transit.media.storage.get(name);
      if (!own?.body) throw badRequest(`'${param}' names media this gateway no longer has (unknown or expired).`, param, code);
      return { bytes: own.body };
    }
    if (/^https?:\/\//i.test(entry)) {
      return { bytes: (await fetchGuarded(entry, { maxBytes: transit.maxBytes, timeoutMs: transit.fetchTimeoutMs, allowLoopback: transit.allowLoopback })).bytes };
    }
    throw badRequest(`'${param}' must be an https URL${code === 'invalid_image_url' ? ' or a base64 data: URI' : ''}.`, param, code);
  } catch (error) {
    throw inputError(error, param, transit.maxBytes, code);
  }
}

/**
 * One entry of `image_urls` as the upstream is given it: its bytes (`inputBytes`) must be an image
 * (of the `accepted` types, when the model takes only some);
 * hosted on the media host, and passed on as the hosted URL (or, when vendors cannot reach the media
 * host, inline).
 */
export async function hostInputImage(entry: string, index: number, transit: MediaTransit, accepted?: readonly SniffedType[]): Promise<string> {
  const param = `image_urls[${index}]`;
  const { bytes, sha256 } = await inputBytes(entry, param, transit, 'invalid_image_url');
  const type = sniffMediaType(bytes);
  if (!type?.contentType.startsWith('image/')) {
    throw new ApiError(415, 'unsupported_media_type', `'${param}' is not an image (${accepted ? imageTypeNames(accepted) : 'PNG, JPEG, GIF, WEBP or AVIF'}).`, param);
  }
  if (accepted && !accepted.some((allowed) => allowed.contentType === type.contentType)) {
    throw new ApiError(415, 'unsupported_media_type', `'${param}' is ${imageTypeNames([type])}; this model takes ${imageTypeNames(accepted)} images.`, param);
  }
  if (!transit.media) return dataUriOf(bytes, type.contentType);
  const stored = await transit.media.store(bytes, param, sha256);
  return transit.mediaIsPublic ? stored.url : dataUriOf(bytes, stored.contentType);
}

/**
 * The length in seconds of one entry of `video_urls` (read as `inputBytes` reads it), from its MP4
 * movie header: a 400 naming the entry when it is not an MP4 or its length cannot be read.
 */
export async function inputVideoSeconds(entry: string, index: number, transit: MediaTransit): Promise<number> {
  const param = `video_urls[${index}]`;
  const { bytes } = await inputBytes(entry, param, transit, 'invalid_video_url');
  if (!isMp4(bytes)) throw badRequest(`'${param}' is not an MP4 video.`, param, 'invalid_video_url');
  const seconds = mp4DurationSeconds(bytes);
  if (seconds === undefined || seconds <= 0) {
    throw badRequest(`'${param}' has no readable length: its MP4 movie header (moov/mvhd) is missing, damaged or says 0 seconds.`, param, 'invalid_video_url');
  }
  return seconds;
}

function inputError(error: unknown, param: string, maxBytes: number, code: InputCode): unknown {
  if (error instanceof DataUriError) {
    if (error.reason === 'too_large') return new ApiError(413, 'payload_too_large', `'${param}' decodes to more than ${maxBytes} bytes; upload it with POST /v1/uploads.`, param);
    return badRequest(`'${param}' is not a valid base64 data: URI: ${error.message}`, param, code);
  }
  if (error instanceof UrlGuardError) {
    if (error.reason === 'too_large') return new ApiError(413, 'payload_too_large', `'${param}' is larger than ${maxBytes} bytes.`, param);
    return badRequest(`'${param}' could not be fetched: ${error.message}`, param, code);
  }
  return error;
}

/** How a result reached the client: hosted, or (hosting failed or is off) as the upstream gave it. */
export interface HostedResult {
  readonly url: string;
  readonly hosted: boolean;
}

/**
 * One upstream result on the media host. When that fails (the address cannot be fetched, storage
 * errs), the caller still gets the image as the upstream gave it: it was made and is charged.
 */
export async function hostResultImage(image: { b64: string } | { url: string }, transit: MediaTransit, vendorOnLoopback: boolean): Promise<HostedResult> {
  const fallback = 'b64' in image ? `data:image/png;base64,${image.b64}` : image.url;
  if (!transit.media) return { url: fallback, hosted: false };
  try {
    const { bytes, sha256 } = 'b64' in image
      ? await decodeDataUri(`data:application/octet-stream;base64,${image.b64}`, transit.maxBytes)
      // The vendor's own address: loopback only for the built-in mock vendor (or in tests).
      : { ...(await fetchGuarded(image.url, { maxBytes: transit.maxBytes, timeoutMs: transit.fetchTimeoutMs, allowLoopback: transit.allowLoopback || vendorOnLoopback })), sha256: undefined };
    const stored = await transit.media.store(bytes, null, sha256);
    return { url: stored.url, hosted: true };
  } catch (error) {
    log.warn('image result not rehosted; answering the upstream address', { error: (error as Error).message });
    return { url: fallback, hosted: false };
  }
}
