/**
 * Luma UNI-1 images on the Luma Agents API (docs/vendors/luma.md), submit and poll like its video:
 * `POST {base}/generations` with `type: "image"`, or `"image_edit"` when images are sent (the first is
 * the `source`, the others `image_ref`, as Luma prices an edit: one reference included, each further
 * one extra); `GET {base}/generations/{id}` until `completed` with an `output` image URL (1 h, so the
 * gateway rehosts it). The caller sees one call.
 */
import type { ImageFamily, ImageJob } from '../image-family.js';
import { ApiError } from '../../http/errors.js';
import { LUMA_REFUSALS, LUMA_STATES, imageRefOf, lumaAuthorization } from '../video/luma.js';
import { meaningOf, textOf, type JsonObject } from '../video/wire.js';
import { invalidImageTask, runImageTask } from '../image-task.js';

export function lumaImageBody(job: ImageJob): Record<string, unknown> {
  const [source, ...references] = job.inputImages;
  return {
    model: job.model.upstreamModel,
    type: source === undefined ? 'image' : 'image_edit',
    prompt: job.prompt,
    ...(job.aspectRatio !== undefined ? { aspect_ratio: job.aspectRatio } : {}),
    ...(source !== undefined ? { source: imageRefOf(source) } : {}),
    ...(references.length > 0 ? { image_ref: references.map(imageRefOf) } : {}),
    output_format: 'png',
  };
}

export const LUMA_IMAGES = Object.freeze({
  generate: (job, target, io) => runImageTask({
    vendor: 'luma',
    submitUrl: `${target.baseUrl}/generations`,
    headers: lumaAuthorization(target),
    body: lumaImageBody(job),
    pollUrl: (id) => `${target.baseUrl}/generations/${encodeURIComponent(id)}`,
    outcome: (task) => {
      const state = textOf(task.state);
      if (state === undefined) return invalidImageTask('luma');
      const meaning = meaningOf(LUMA_STATES, state);
      if (meaning === 'succeeded') {
        const outputs = Array.isArray(task.output) ? task.output as JsonObject[] : [];
        const url = textOf(outputs.find((item) => item?.type === 'image')?.url ?? outputs[0]?.url);
        return url === undefined ? invalidImageTask('luma') : { images: [{ url }] };
      }
      if (meaning !== 'failed') return undefined; // queued, processing, or a state new to us
      const code = textOf(task.failure_code) ?? state;
      const reason = textOf(task.failure_reason) ?? code;
      if (code === 'content_moderated') return new ApiError(400, 'content_policy_violation', `The upstream vendor luma refused the request: ${reason}`, 'prompt');
      if (LUMA_REFUSALS.has(code)) return new ApiError(400, 'invalid_request', `The upstream vendor luma refused the request (${code}): ${reason}`);
      return new ApiError(502, 'upstream_error', `The upstream vendor luma failed the task: ${code}.`);
    },
  }, io),
} satisfies ImageFamily);
