/**
 * Black Forest Labs' FLUX API, submit and poll: `POST {base}/<model>` (header `x-key`) answers a task
 * id and its `polling_url`; `GET` on it answers `Pending` until `Ready` with `result.sample`, a signed
 * address that expires after minutes (so the gateway rehosts it). The caller sees one synchronous call
 * (runImageTask).
 */
import type { ImageFamily, ImageJob, ImageResult, ImageIo } from '../image-family.js';
import type { UpstreamTarget } from '../family.js';
import { ApiError } from '../../http/errors.js';
import { invalidImageTask, runImageTask } from '../image-task.js';

/** FLUX.2 takes pixel dimensions (multiples of 32); these are about one megapixel, the size the catalog prices. */
export const FLUX2_DIMENSIONS: Readonly<Record<string, readonly [number, number]>> = Object.freeze({
  '1:1': [1024, 1024], '16:9': [1344, 768], '9:16': [768, 1344], '4:3': [1152, 864], '3:4': [864, 1152],
});

const FAILED = new Set(['Error', 'Failed', 'Task not found']);
const MODERATED = new Set(['Content Moderated', 'Request Moderated']);

export function submitBody(job: ImageJob): Record<string, unknown> {
  const body: Record<string, unknown> = { prompt: job.prompt, output_format: 'png' };
  job.inputImages.forEach((image, index) => { body[index === 0 ? 'input_image' : `input_image_${index + 1}`] = image; });
  if (job.aspectRatio !== undefined) {
    const dimensions = FLUX2_DIMENSIONS[job.aspectRatio];
    // Kontext takes the ratio itself; FLUX.2 takes width and height.
    if (job.model.upstreamModel.startsWith('flux-kontext') || !dimensions) body.aspect_ratio = job.aspectRatio;
    else [body.width, body.height] = dimensions;
  }
  return body;
}

/** The vendor's polling address when it is the vendor's own (a regional host), else the base URL's. */
export function pollingUrl(target: UpstreamTarget, id: string, offered: unknown): string {
  const fallback = `${target.baseUrl}/get_result?id=${encodeURIComponent(id)}`;
  if (typeof offered !== 'string') return fallback;
  try {
    const url = new URL(offered);
    const base = new URL(target.baseUrl);
    const own = url.origin === base.origin || (url.protocol === 'https:' && url.hostname.endsWith('.bfl.ai'));
    return own ? url.href : fallback;
  } catch {
    return fallback;
  }
}

export const BFL_IMAGES: ImageFamily = Object.freeze({
  generate(job: ImageJob, target: UpstreamTarget, io: ImageIo): Promise<ImageResult> {
    return runImageTask({
      vendor: 'bfl',
      submitUrl: `${target.baseUrl}/${job.model.upstreamModel}`,
      headers: { 'x-key': target.apiKey },
      body: submitBody(job),
      submitStatuses: [200],
      pollUrl: (id, submitted) => pollingUrl(target, id, submitted.polling_url),
      outcome: (state) => {
        const status = String(state.status);
        if (status === 'Ready') {
          const sample = (state.result as { sample?: unknown } | null)?.sample;
          if (typeof sample !== 'string' || !sample) return invalidImageTask('bfl');
          return { images: [{ url: sample }] };
        }
        if (MODERATED.has(status)) return new ApiError(400, 'content_policy_violation', `The upstream vendor bfl refused the request: ${status}.`, 'prompt');
        if (FAILED.has(status)) return new ApiError(502, 'upstream_error', `The upstream vendor bfl failed the task: ${status}.`);
        return undefined; // Pending (or any in-progress state): ask again after the poll interval.
      },
    }, io);
  },
});
