/**
 * The OpenAI Images API (`/images/generations`, and `/images/edits` in its JSON form), also spoken by
 * ByteDance ModelArk (Seedream) and xAI. OpenAI takes input images on the edits endpoint as
 * `images: [{image_url}]`; ModelArk takes them on the generations endpoint as `image`.
 */
import type { ImageFamily, ImageJob, ImageResult, ImageIo, GeneratedImage } from '../image-family.js';
import type { UpstreamTarget } from '../family.js';
import { ApiError } from '../../http/errors.js';

interface ImagesResponse {
  data?: { b64_json?: unknown; url?: unknown }[];
  size?: unknown;
  quality?: unknown;
}

export function imagesBody(job: ImageJob, vendor: string): { path: string; body: Record<string, unknown> } {
  const body: Record<string, unknown> = { model: job.model.upstreamModel, prompt: job.prompt, n: job.n };
  if (job.size !== undefined) body.size = job.size;
  if (job.quality !== undefined) body.quality = job.quality;
  if (job.inputImages.length === 0) return { path: '/images/generations', body };
  if (vendor === 'openai') return { path: '/images/edits', body: { ...body, images: job.inputImages.map((url) => ({ image_url: url })) } };
  return { path: '/images/generations', body: { ...body, image: job.inputImages.length === 1 ? job.inputImages[0] : [...job.inputImages] } };
}

/** The images of an Images API answer; anything else is the upstream's fault (502). */
export function imagesOf(text: string, vendor: string): ImageResult {
  let parsed: ImagesResponse;
  try {
    parsed = JSON.parse(text) as ImagesResponse;
  } catch {
    throw invalid(vendor);
  }
  if (!Array.isArray(parsed?.data)) throw invalid(vendor);
  const images: GeneratedImage[] = [];
  for (const item of parsed.data) {
    if (typeof item?.b64_json === 'string' && item.b64_json) images.push({ b64: item.b64_json });
    else if (typeof item?.url === 'string' && item.url) images.push({ url: item.url });
    else throw invalid(vendor);
  }
  return {
    images,
    ...(typeof parsed.size === 'string' ? { size: parsed.size } : {}),
    ...(typeof parsed.quality === 'string' ? { quality: parsed.quality } : {}),
  };
}

const invalid = (vendor: string) =>
  new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${vendor} answered with a body that is not an image result.`);

export const OPENAI_IMAGES: ImageFamily = Object.freeze({
  async generate(job: ImageJob, target: UpstreamTarget, io: ImageIo): Promise<ImageResult> {
    const vendor = job.model.upstreamVendor;
    const { path, body } = imagesBody(job, vendor);
    const response = await io.post(target.baseUrl + path, { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' }, JSON.stringify(body));
    if (response.status !== 200) throw await io.refused(response);
    return imagesOf(await response.text(), vendor);
  },
});
