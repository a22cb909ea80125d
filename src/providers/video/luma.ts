/**
 * Luma AI Ray on the Luma Agents API (docs/vendors/luma.md): `POST {base}/generations` with
 * `type: "video"` answers the generation (`id`, `state`); `GET {base}/generations/{id}` answers `state`
 * in lower case (`queued`, `processing`, `completed`, `failed`), with `output[]` of `{type, url}` (a
 * presigned URL, 1 h) on completion or `failure_code` and `failure_reason` on failure. Bearer auth. No
 * cancel and no callback in this API: the task is polled. Serves ray-3.2 (profile LUMA-RAY).
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, failedState, idSegment, jsonRequest, missingResult, objectAt, polledStatus, submittedAtId, textOf, trimBase,
  type ErrorReader, type JsonObject, type StatusMeaning,
} from './wire.js';

/** A media reference: a URL, or inline base64 with its MIME type. */
type ImageRef = { url: string } | { data: string; media_type: string };

interface LumaVideoBody {
  model: string;
  type: 'video';
  prompt: string;
  aspect_ratio?: string;
  video: { resolution?: string; duration: string; hdr?: boolean; start_frame?: ImageRef };
}

export const LUMA_STATES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  queued: 'running',
  processing: 'running',
  dreaming: 'running', // the Dream Machine API's word for it, read the same
  completed: 'succeeded',
  failed: 'failed',
});

/** A first frame or reference image as Luma takes it: a data URI becomes inline `data` with its `media_type`. */
export function imageRefOf(url: string): ImageRef {
  const inline = /^data:([^;,]+);base64,(.*)$/is.exec(url);
  return inline ? { data: inline[2]!, media_type: inline[1]! } : { url };
}

export function lumaVideoBody(job: VideoJob): LumaVideoBody {
  const image = job.imageUrls[0];
  return {
    model: job.upstreamModel,
    type: 'video',
    prompt: job.prompt ?? '',
    aspect_ratio: job.aspectRatio,
    video: {
      resolution: job.resolution,
      duration: `${job.duration}s`,
      hdr: job.dynamicRange === undefined ? undefined : job.dynamicRange === 'hdr',
      start_frame: image === undefined ? undefined : imageRefOf(image),
    },
  };
}

/** Luma's Bearer header (its image calls too). */
export const lumaAuthorization = (target: { readonly apiKey: string }) => ({ authorization: `Bearer ${target.apiKey}` });
const authorization = lumaAuthorization;

/** FastAPI-style `{detail}` (a string, or a list of field errors), or `{error: {code, message}}`. */
const readError: ErrorReader = (body) => {
  const error = objectAt(body, 'error');
  const detail = Array.isArray(body.detail) ? textOf((body.detail[0] as JsonObject | undefined)?.msg) : textOf(body.detail);
  return { code: codeOf(error?.code) ?? codeOf(body.code), message: textOf(error?.message) ?? detail ?? textOf(body.message) };
};

/** Luma's failure codes that mean the request itself was refused (the caller's to change), not a vendor fault. */
export const LUMA_REFUSALS: ReadonlySet<string> = new Set(['content_moderated', 'invalid_request', 'image_too_large', 'unsupported_format', 'corrupt_input']);

export const LUMA_VIDEO = Object.freeze({
  family: 'luma',

  submit(job, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/generations`, authorization(target), lumaVideoBody(job));
  },

  submitted(httpStatus, body) {
    return submittedAtId(httpStatus, body, readError);
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/generations/${idSegment(upstreamId)}`, headers: authorization(target) };
  },

  polled(httpStatus, body) {
    const answer = polledStatus(httpStatus, body, readError, 'state', LUMA_STATES);
    if (answer.kind === 'refused') return answer;
    const { status, meaning } = answer;
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const outputs = Array.isArray(answer.body.output) ? answer.body.output as unknown[] : [];
      const video = outputs.find((item): item is JsonObject => typeof item === 'object' && item !== null && (item as JsonObject).type === 'video')
        ?? (outputs[0] as JsonObject | undefined);
      const url = textOf(video?.url);
      return url === undefined ? missingResult(httpStatus, status) : { kind: 'succeeded', status, resultUrl: url };
    }
    if (meaning === 'failed') {
      return failedState(status, codeOf(answer.body.failure_code) ?? UNNAMED_FAILURE, textOf(answer.body.failure_reason) ?? 'The vendor reported the task failed without a reason.');
    }
    return { kind: 'unknown', status };
  },
} satisfies VideoAdapter);
