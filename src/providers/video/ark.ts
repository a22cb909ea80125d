/**
 * ByteDance Seedance on Volcengine Ark / BytePlus ModelArk content generation:
 * `POST {base}/contents/generations/tasks` answers only `{id}`; `GET {base}/contents/generations/tasks/{id}`
 * answers `status` in lower case, with `content.video_url` (24 h) on success or `error{code,message}`
 * on failure. Request errors are `{error:{code,message,type}}` with a 4xx. Output settings go as
 * top-level body fields, never as `--flags` in the prompt (one way or the other, not both). Serves
 * I2V-B (the image is the first frame), R2V-B (the image is a reference) and the Seedance 1.0 Pro and
 * 1.5 Pro schemas (text-to-video, or first and last frames; 1.5 Pro's `generate_audio`), and Seedance
 * 2.0's (reference images and videos).
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, entryOf, failedState, idSegment, isImageToVideo, jsonRequest, missingResult, objectAt, polledStatus, secondsOf, submittedAtId,
  textOf, trimBase, type ErrorReader, type StatusMeaning,
} from './wire.js';

type ArkContent =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string }; role: 'first_frame' | 'last_frame' | 'reference_image' }
  | { type: 'video_url'; video_url: { url: string }; role: 'reference_video' };

interface ArkSubmitBody {
  model: string;
  content: ArkContent[];
  ratio?: string;
  duration: number;
  resolution?: string;
  seed?: number;
  watermark?: boolean;
  camera_fixed?: boolean;
  generate_audio?: boolean;
  callback_url?: string;
}

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  queued: 'running',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  expired: 'failed',
  cancelled: 'failed',
  canceled: 'failed', // not Ark's documented spelling; a cancelled task must not be polled until the timeout
});

/** A failed status's code and message when the answer's `error` names none. */
const UNNAMED: Readonly<Record<string, { readonly code: string; readonly message: string }>> = Object.freeze({
  failed: { code: UNNAMED_FAILURE, message: 'The vendor reported the task failed without a reason.' },
  expired: { code: 'expired', message: 'The task expired at the vendor before it finished.' },
  cancelled: { code: 'cancelled', message: 'The task was cancelled at the vendor.' },
  canceled: { code: 'cancelled', message: 'The task was cancelled at the vendor.' },
});

export function arkSubmitBody(job: VideoJob, vendorCallbackUrl?: string): ArkSubmitBody {
  // Image-to-video: the first image opens the clip and a second one closes it.
  const roleAt = (index: number) => (!isImageToVideo(job) ? 'reference_image' : index === 0 ? 'first_frame' : 'last_frame');
  const content: ArkContent[] = job.prompt === undefined ? [] : [{ type: 'text', text: job.prompt }];
  job.imageUrls.forEach((url, index) => content.push({ type: 'image_url', image_url: { url }, role: roleAt(index) }));
  for (const url of job.videoUrls) content.push({ type: 'video_url', video_url: { url }, role: 'reference_video' });
  return {
    model: job.upstreamModel,
    content,
    ratio: job.aspectRatio,
    // R2V-B's duration is a string enum in the spec; the job holds it as a number, which is what Ark takes.
    duration: job.duration,
    // Ark documents 480p/720p/1080p in lower case; R2V-B's `2K` goes as `2k` (unverified for Ark).
    resolution: job.resolution?.toLowerCase(),
    seed: job.seed,
    watermark: job.watermark,
    camera_fixed: job.cameraFixed,
    // Seedance 1.5 Pro's sound switch; the job has none for silent models, and the field is then left out.
    generate_audio: job.audio,
    callback_url: vendorCallbackUrl,
  };
}

const authorization = (target: VendorTarget) => ({ authorization: `Bearer ${target.apiKey}` });

const tasksUrl = (target: VendorTarget) => `${trimBase(target.baseUrl)}/contents/generations/tasks`;

/** The OpenAI-like envelope `{error:{code,message,type}}`; a flat body is read too, in case. */
const readError: ErrorReader = (body) => {
  const error = objectAt(body, 'error');
  return { code: codeOf(error?.code) ?? codeOf(body.code), message: textOf(error?.message) ?? textOf(body.message) };
};

export const ARK_VIDEO = Object.freeze({
  family: 'modelark',

  submit(job, target, vendorCallbackUrl?: string) {
    return jsonRequest('POST', tasksUrl(target), authorization(target), arkSubmitBody(job, vendorCallbackUrl));
  },

  submitted(httpStatus, body) {
    return submittedAtId(httpStatus, body, readError);
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${tasksUrl(target)}/${idSegment(upstreamId)}`, headers: authorization(target) };
  },

  polled(httpStatus, body) {
    const answer = polledStatus(httpStatus, body, readError, 'status', STATUSES);
    if (answer.kind === 'refused') return answer;
    const { status, meaning } = answer;
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const videoUrl = textOf(objectAt(answer.body, 'content')?.video_url);
      if (videoUrl === undefined) return missingResult(httpStatus, status);
      const seconds = secondsOf(answer.body.duration);
      return seconds === undefined ? { kind: 'succeeded', status, resultUrl: videoUrl } : { kind: 'succeeded', status, resultUrl: videoUrl, seconds };
    }
    if (meaning === 'failed') {
      const error = objectAt(answer.body, 'error');
      const unnamed = entryOf(UNNAMED, status.toLowerCase()) ?? UNNAMED.failed!;
      return failedState(status, codeOf(error?.code) ?? unnamed.code, textOf(error?.message) ?? unnamed.message);
    }
    return { kind: 'unknown', status };
  },

  // Cancels a queued task (a finished one's record is deleted instead). The path is unverified.
  cancel(upstreamId, target) {
    return { method: 'DELETE', url: `${tasksUrl(target)}/${idSegment(upstreamId)}`, headers: authorization(target) };
  },
} satisfies VideoAdapter);
