/**
 * Alibaba DashScope (Model Studio) Wan video synthesis, on DashScope's native async task API:
 * `POST {api}/services/aigc/video-generation/video-synthesis` (async only, `X-DashScope-Async: enable`)
 * answers `output.task_id`; `GET {api}/tasks/{id}` answers `output.task_status` in upper case, with
 * `output.video_url` (a signed URL, 24 h) on success or a flat `output.code`/`output.message` on failure.
 * Request errors are flat `{code, message}` bodies with a 4xx. Serves R2V-A (`wan2.6-r2v`) and
 * `wan2.6-r2v-flash` (the same body).
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, failedState, idSegment, jsonRequest, meaningOf, missingResult, missingTaskId, objectAt, readAnswer,
  secondsOf, textOf, trimBase, unreadableStatus, type ErrorReader, type StatusMeaning,
} from './wire.js';

/** The body of a Wan reference-to-video submit. */
interface WanSubmitBody {
  model: string;
  input: { prompt?: string; negative_prompt?: string; reference_urls: string[] };
  parameters: { size?: string; duration: number; shot_type?: string; audio?: boolean; watermark?: boolean; seed?: number };
}

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  pending: 'running',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'failed',
  cancelled: 'failed', // not DashScope's spelling, but a cancelled task must not be polled until the timeout
});

/** DashScope's answer for a task id it no longer knows (its records last 24 h). */
const FORGOTTEN = 'unknown';

/**
 * The native API base. The platform's configured DashScope base is the OpenAI-compatible chat one
 * (`…/compatible-mode/v1`), whose host also serves the native API under `/api/v1`; any other base (a
 * mock vendor's) is taken as the native base itself.
 */
export function dashscopeApiBase(baseUrl: string): string {
  return trimBase(baseUrl).replace(/\/compatible-mode\/v1$/, '/api/v1');
}

const authorization = (target: VendorTarget) => ({ authorization: `Bearer ${target.apiKey}` });

export function wanSubmitBody(job: VideoJob): WanSubmitBody {
  return {
    model: job.upstreamModel,
    // One mixed list, images first: the prompt names them character1, character2… in this order.
    input: { prompt: job.prompt, negative_prompt: job.negativePrompt, reference_urls: [...job.imageUrls, ...job.videoUrls] },
    parameters: { size: job.size, duration: job.duration, shot_type: job.shotType, audio: job.audio, watermark: job.watermark, seed: job.seed },
  };
}

const readError: ErrorReader = (body) => ({ code: codeOf(body.code), message: textOf(body.message) });

export const DASHSCOPE_VIDEO = Object.freeze({
  family: 'dashscope',

  submit(job, target) {
    const url = `${dashscopeApiBase(target.baseUrl)}/services/aigc/video-generation/video-synthesis`;
    return jsonRequest('POST', url, { ...authorization(target), 'x-dashscope-async': 'enable' }, wanSubmitBody(job));
  },

  submitted(httpStatus, body) {
    const answer = readAnswer('submit', httpStatus, body, readError);
    if (answer.kind === 'refused') return answer;
    const upstreamId = textOf(objectAt(answer.body, 'output')?.task_id);
    return upstreamId === undefined ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId };
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${dashscopeApiBase(target.baseUrl)}/tasks/${idSegment(upstreamId)}`, headers: authorization(target) };
  },

  polled(httpStatus, body) {
    const answer = readAnswer('poll', httpStatus, body, readError);
    if (answer.kind === 'refused') return answer;
    const output = objectAt(answer.body, 'output');
    const status = textOf(output?.task_status);
    if (output === undefined || status === undefined) return unreadableStatus(httpStatus);
    if (status.toLowerCase() === FORGOTTEN) return failedState(status, 'task_not_found', 'The vendor no longer knows the task: its record expired.');
    const meaning = meaningOf(STATUSES, status);
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const videoUrl = textOf(output.video_url);
      if (videoUrl === undefined) return missingResult(httpStatus, status);
      // The usage field names differ by model generation; the most specific one wins.
      const usage = objectAt(answer.body, 'usage');
      const seconds = secondsOf(usage?.video_duration) ?? secondsOf(usage?.output_video_duration) ?? secondsOf(usage?.duration);
      return seconds === undefined ? { kind: 'succeeded', status, resultUrl: videoUrl } : { kind: 'succeeded', status, resultUrl: videoUrl, seconds };
    }
    if (meaning === 'failed') {
      const cancelled = status.toLowerCase() !== 'failed';
      return failedState(
        status,
        codeOf(output.code) ?? (cancelled ? 'cancelled' : UNNAMED_FAILURE),
        textOf(output.message) ?? (cancelled ? 'The task was cancelled at the vendor.' : 'The vendor reported the task failed without a reason.'),
      );
    }
    return { kind: 'unknown', status };
  },

  // Only a PENDING task can be cancelled (400 UnsupportedOperation otherwise); lightly verified.
  cancel(upstreamId, target) {
    return { method: 'POST', url: `${dashscopeApiBase(target.baseUrl)}/tasks/${idSegment(upstreamId)}/cancel`, headers: authorization(target) };
  },
} satisfies VideoAdapter);
