import type { MediaModel } from '../catalog/model.js';
import type { ImageRequest } from '../http/schemas/images.js';
import type { ImageCall } from '../billing/media-pricing.js';
import type { UpstreamTarget } from './family.js';
import type { UpstreamResponse } from './upstream-client.js';
import { ApiError, badRequest } from '../http/errors.js';

/**
 * One image call as an upstream adapter sends it: the request checked against the model's
 * capabilities, `aspect_ratio` turned into a `size` where the model is sized by pixels, and the input
 * images already fetched, checked and hosted (`inputImages` are what the upstream is given: hosted
 * URLs, or data URIs when the media host is not public).
 */
export interface ImageJob {
  readonly model: MediaModel;
  readonly prompt: string;
  readonly n: number;
  /** Undefined: the vendor's default (or `auto`, passed on as such). */
  readonly size?: string;
  readonly quality?: string;
  readonly resolution?: string;
  readonly aspectRatio?: string;
  readonly negativePrompt?: string;
  readonly inputImages: readonly string[];
}

/** One generated image as the upstream gave it: inline bytes (base64) or an address to fetch. */
export type GeneratedImage = { readonly b64: string } | { readonly url: string };

export interface ImageResult {
  readonly images: readonly GeneratedImage[];
  /** The size and quality the upstream reports it used (GPT Image does), to charge a call that left them open. */
  readonly size?: string;
  readonly quality?: string;
}

/** What an adapter may do upstream: the gateway's pooled client, its poll interval and the call's deadline. */
export interface ImageIo {
  post(url: string, headers: Readonly<Record<string, string>>, body: string): Promise<UpstreamResponse>;
  get(url: string, headers: Readonly<Record<string, string>>): Promise<UpstreamResponse>;
  /** The error for a vendor's answer other than 200 (counted; ours, or the vendor's as-is on the caller's own key). */
  refused(response: UpstreamResponse): Promise<ApiError>;
  /** Waits one poll interval; throws 504 once the call's deadline has passed. */
  wait(): Promise<void>;
}

/** An upstream image API: one synchronous call from the caller's point of view, however the vendor works. */
export interface ImageFamily {
  generate(job: ImageJob, target: UpstreamTarget, io: ImageIo): Promise<ImageResult>;
}

const AUTO = 'auto';

const listOf = (value: unknown): readonly string[] | undefined =>
  Array.isArray(value) && value.every((item) => typeof item === 'string') ? value as string[] : undefined;

/** `a:b` → the size `WxH` of `sizes` with that shape. */
function sizeOfAspectRatio(aspectRatio: string, sizes: readonly string[]): string | undefined {
  const ratio = /^(\d{1,3}):(\d{1,3})$/.exec(aspectRatio);
  if (!ratio) return undefined;
  return sizes.find((size) => {
    const [width, height] = size.split('x').map(Number) as [number, number];
    return width * Number(ratio[2]) === height * Number(ratio[1]);
  });
}

function refused(model: MediaModel, field: string): ApiError {
  return badRequest(`The model ${model.id} does not take '${field}'.`, field, 'unsupported_parameter');
}

function oneOf(model: MediaModel, field: string, value: string, allowed: readonly string[], auto = false): string {
  if (auto && value === AUTO) return AUTO;
  if (!allowed.includes(value)) {
    throw badRequest(`'${field}' ${value} is not one of the values ${model.id} takes: ${[...allowed, ...(auto ? [AUTO] : [])].join(', ')}.`, field);
  }
  return value;
}

/**
 * The request's fields checked against what `model` takes (400 naming the field, never clamped):
 * a field the model has no capability for is refused, a value outside its list too. Returns the job
 * without its input images (they are fetched and hosted after admission).
 */
export function imageJobOf(request: ImageRequest, model: MediaModel): Omit<ImageJob, 'inputImages'> {
  const caps = model.capabilities;
  const maxN = typeof caps.maxN === 'number' ? caps.maxN : 1;
  const n = request.n ?? 1;
  if (n > maxN) throw badRequest(`'n' is ${n}; ${model.id} makes at most ${maxN} image${maxN === 1 ? '' : 's'} per call.`, 'n');

  /** A field ruled by a capability list: absent, or one of the list (or `auto` where the vendor may choose). */
  const chosen = (field: string, value: string | null | undefined, capability: string, auto = false): string | undefined => {
    if (value == null) return undefined;
    const allowed = listOf(caps[capability]);
    if (!allowed) throw refused(model, field);
    return oneOf(model, field, value, allowed, auto);
  };
  const sizes = listOf(caps.sizes);
  let size = chosen('size', request.size, 'sizes', true);
  let aspectRatio = request.aspect_ratio ?? undefined;
  if (aspectRatio !== undefined) {
    const ratios = listOf(caps.aspectRatios);
    if (ratios) {
      oneOf(model, 'aspect_ratio', aspectRatio, ratios);
    } else if (sizes) {
      // A model sized in pixels takes the aspect ratios of its sizes.
      const shaped = sizeOfAspectRatio(aspectRatio, sizes);
      const offered = sizes.map((s) => { const [w, h] = s.split('x').map(Number) as [number, number]; const d = gcd(w, h); return `${w / d}:${h / d}`; });
      if (!shaped) throw badRequest(`'aspect_ratio' ${aspectRatio} is not one of the shapes ${model.id} makes: ${offered.join(', ')}.`, 'aspect_ratio');
      if (size !== undefined && size !== AUTO && size !== shaped) throw badRequest(`'aspect_ratio' ${aspectRatio} contradicts 'size' ${size}.`, 'aspect_ratio');
      size = shaped;
      aspectRatio = undefined;
    } else {
      throw refused(model, 'aspect_ratio');
    }
  }
  const quality = chosen('quality', request.quality, 'qualities', true);
  const resolution = chosen('resolution', request.resolution, 'resolutions');
  chosen('style', request.style, 'styles');
  if (request.negative_prompt != null && caps.negativePrompt !== true) throw refused(model, 'negative_prompt');

  const images = request.image_urls?.length ?? 0;
  if (images > 0 && caps.imageInput !== true) throw refused(model, 'image_urls');
  const maxImages = typeof caps.maxReferenceImages === 'number' ? caps.maxReferenceImages : 1;
  if (images > maxImages) throw badRequest(`'image_urls' holds ${images} images; ${model.id} takes at most ${maxImages}.`, 'image_urls');
  if (images === 0 && caps.requiresImage === true) {
    throw badRequest(`${model.id} edits images: 'image_urls' is required (an https URL or a data: URI per image).`, 'image_urls');
  }
  return {
    model, prompt: request.prompt, n,
    ...(size !== undefined ? { size } : {}),
    ...(quality !== undefined ? { quality } : {}),
    ...(resolution !== undefined ? { resolution } : {}),
    ...(aspectRatio !== undefined ? { aspectRatio } : {}),
    ...(request.negative_prompt != null ? { negativePrompt: request.negative_prompt } : {}),
  };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** The priced call of a job: `auto` leaves a tier open (the dearest is reserved); images sent make it an edit. */
export function imageCallOf(job: Omit<ImageJob, 'inputImages'>, inputImages: number): ImageCall {
  const open = (value: string | undefined) => (value === AUTO ? undefined : value);
  return {
    kind: 'image', n: job.n, size: open(job.size), quality: open(job.quality), resolution: job.resolution,
    mode: inputImages > 0 ? 'edit' : 'generate', inputImages,
  };
}
