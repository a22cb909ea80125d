/**
 * Runway Gen-4 Image (docs/vendors/runway.md), submit and poll like its video: `POST {base}/text_to_image`
 * (`X-Runway-Version` required) answers a task id; `GET {base}/tasks/{id}` answers `SUCCEEDED` with
 * `output[0]`, an image URL that expires (so the gateway rehosts it). `ratio` is in pixels: the
 * request's resolution and aspect ratio pick it. Up to 3 reference images. The caller sees one call.
 */
import type { ImageFamily, ImageJob } from '../image-family.js';
import { ApiError } from '../../http/errors.js';
import { RUNWAY_STATUSES, runwayHeaders } from '../video/runway.js';
import { entryOf, meaningOf, textOf } from '../video/wire.js';
import { invalidImageTask, runImageTask } from '../image-task.js';

/** gen4_image output sizes by resolution and aspect ratio (Runway's text_to_image `ratio` list). */
export const RUNWAY_IMAGE_RATIOS: Readonly<Record<string, Readonly<Record<string, string>>>> = Object.freeze({
  '720p': Object.freeze({ '16:9': '1280:720', '9:16': '720:1280', '1:1': '720:720', '4:3': '960:720', '3:4': '720:960', '21:9': '1680:720' }),
  '1080p': Object.freeze({ '16:9': '1920:1080', '9:16': '1080:1920', '1:1': '1080:1080', '4:3': '1440:1080', '3:4': '1080:1440', '21:9': '2112:912' }),
});

/** Without a resolution the dearer tier is reserved (media-pricing), so the dearer one is made. */
const DEFAULT_RESOLUTION = '1080p';

export function runwayImageBody(job: ImageJob): Record<string, unknown> {
  const sizes = entryOf(RUNWAY_IMAGE_RATIOS, job.resolution ?? DEFAULT_RESOLUTION) ?? RUNWAY_IMAGE_RATIOS[DEFAULT_RESOLUTION]!;
  return {
    model: job.model.upstreamModel,
    promptText: job.prompt,
    ratio: entryOf(sizes, job.aspectRatio ?? '16:9') ?? sizes['16:9'],
    ...(job.inputImages.length > 0 ? { referenceImages: job.inputImages.map((uri) => ({ uri })) } : {}),
  };
}

export const RUNWAY_IMAGES = Object.freeze({
  generate: (job, target, io) => runImageTask({
    vendor: 'runway',
    submitUrl: `${target.baseUrl}/text_to_image`,
    headers: runwayHeaders(target),
    body: runwayImageBody(job),
    pollUrl: (id) => `${target.baseUrl}/tasks/${encodeURIComponent(id)}`,
    outcome: (task) => {
      const status = textOf(task.status);
      if (status === undefined) return invalidImageTask('runway');
      const meaning = meaningOf(RUNWAY_STATUSES, status);
      if (meaning === 'succeeded') {
        const url = Array.isArray(task.output) ? textOf(task.output[0]) : undefined;
        return url === undefined ? invalidImageTask('runway') : { images: [{ url }] };
      }
      if (meaning !== 'failed') return undefined; // PENDING, THROTTLED, RUNNING, or a status new to us
      const code = textOf(task.failureCode) ?? status;
      if (code.startsWith('SAFETY')) return new ApiError(400, 'content_policy_violation', `The upstream vendor runway refused the request: ${code}.`, 'prompt');
      return new ApiError(502, 'upstream_error', `The upstream vendor runway failed the task: ${code}.`);
    },
  }, io),
} satisfies ImageFamily);
