/**
 * Runway (docs/vendors/runway.md), API version `2024-11-06` (the `X-Runway-Version` header, required):
 * `POST {base}/image_to_video` answers `{id}`; `GET {base}/tasks/{id}` answers `status` in upper case
 * (`PENDING`, `THROTTLED`, `RUNNING`, `SUCCEEDED`, `FAILED`, `CANCELLED`), with `output[0]` (a URL
 * that expires within days) on success or `failure` and `failureCode` on failure. Request errors are
 * `{error, issues?}` with a 4xx. `DELETE {base}/tasks/{id}` cancels a task (or deletes a finished
 * one). Serves gen4_turbo image-to-video (profile RUNWAY-I2V) and gen4_aleph video-to-video
 * (`POST {base}/video_to_video`, profile RUNWAY-V2V), polled and cancelled alike.
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, entryOf, failedState, idSegment, jsonRequest, missingResult, polledStatus, submittedAtId, textOf, trimBase,
  type ErrorReader, type StatusMeaning,
} from './wire.js';

/** The API version this adapter speaks; Runway refuses a request without one. */
export const RUNWAY_API_VERSION = '2024-11-06';

interface RunwayImageToVideoBody {
  model: string;
  promptImage: string;
  promptText?: string;
  ratio: string;
  duration: number;
  seed?: number;
}

interface RunwayVideoToVideoBody {
  model: string;
  videoUri: string;
  promptText: string;
  ratio: string;
  seed?: number;
}

/** The gateway's aspect ratios as Runway's gen4_turbo (and gen4_aleph) output sizes (`ratio` is in pixels there). */
export const RUNWAY_RATIOS: Readonly<Record<string, string>> = Object.freeze({
  '16:9': '1280:720', '9:16': '720:1280', '4:3': '1104:832', '3:4': '832:1104', '1:1': '960:960', '21:9': '1584:672',
});

export const RUNWAY_STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  pending: 'running',
  throttled: 'running', // queued behind the account's concurrency limit: it starts by itself
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'failed',
  canceled: 'failed',
});

export function runwayImageToVideoBody(job: VideoJob): RunwayImageToVideoBody {
  return {
    model: job.upstreamModel,
    promptImage: job.imageUrls[0]!,
    promptText: job.prompt,
    ratio: entryOf(RUNWAY_RATIOS, job.aspectRatio ?? '16:9') ?? RUNWAY_RATIOS['16:9']!,
    duration: job.duration,
    seed: job.seed,
  };
}

export function runwayVideoToVideoBody(job: VideoJob): RunwayVideoToVideoBody {
  return {
    model: job.upstreamModel,
    videoUri: job.videoUrls[0]!,
    promptText: job.prompt ?? '',
    ratio: entryOf(RUNWAY_RATIOS, job.aspectRatio ?? '16:9') ?? RUNWAY_RATIOS['16:9']!,
    seed: job.seed,
  };
}

/** Every Runway call's headers (its image calls too). */
export const runwayHeaders = (target: { readonly apiKey: string }) => ({ authorization: `Bearer ${target.apiKey}`, 'x-runway-version': RUNWAY_API_VERSION });
const headers = runwayHeaders;

/** `{error: "…", issues: […]}`: a message, no code (the HTTP status names it). */
const readError: ErrorReader = (body) => ({ code: textOf(body.code), message: textOf(body.error) ?? textOf(body.message) });

export const RUNWAY_VIDEO = Object.freeze({
  family: 'runway',

  submit(job, target) {
    if (job.profile === 'RUNWAY-V2V') return jsonRequest('POST', `${trimBase(target.baseUrl)}/video_to_video`, headers(target), runwayVideoToVideoBody(job));
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/image_to_video`, headers(target), runwayImageToVideoBody(job));
  },

  submitted(httpStatus, body) {
    return submittedAtId(httpStatus, body, readError);
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/tasks/${idSegment(upstreamId)}`, headers: headers(target) };
  },

  polled(httpStatus, body) {
    const answer = polledStatus(httpStatus, body, readError, 'status', RUNWAY_STATUSES);
    if (answer.kind === 'refused') return answer;
    const { status, meaning } = answer;
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const output = answer.body.output;
      const url = Array.isArray(output) ? textOf(output[0]) : undefined;
      return url === undefined ? missingResult(httpStatus, status) : { kind: 'succeeded', status, resultUrl: url };
    }
    if (meaning === 'failed') {
      if (status.toLowerCase() !== 'failed') return failedState(status, 'cancelled', 'The task was cancelled at the vendor.');
      return failedState(status, codeOf(answer.body.failureCode) ?? UNNAMED_FAILURE, textOf(answer.body.failure) ?? 'The vendor reported the task failed without a reason.');
    }
    return { kind: 'unknown', status };
  },

  cancel(upstreamId, target) {
    return { method: 'DELETE', url: `${trimBase(target.baseUrl)}/tasks/${idSegment(upstreamId)}`, headers: headers(target) };
  },
} satisfies VideoAdapter);
