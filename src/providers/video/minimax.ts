/**
 * MiniMax Hailuo video (docs/vendors/minimax-hailuo.md), on the same API, key and base URL as MiniMax
 * speech (src/providers/audio/minimax.ts): `POST {base}/video_generation` answers `task_id`;
 * `GET {base}/query/video_generation?task_id=` answers `Preparing`/`Queueing`/`Processing`/`Success`/
 * `Fail` and, on success, a `file_id` whose download URL `GET {base}/files/retrieve?file_id=` gives.
 * Every answer carries `base_resp`; a non-zero code is an error even on HTTP 200, except that a `Fail`
 * task reports why in it (1026 sensitive input, 1027 sensitive output). No cancel is documented; the
 * vendor's callback needs a challenge echoed first, so the task is polled only.
 */
import type { RetrieveStep, VendorRefusal, VendorTarget, VendorTaskState, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import { authorization, baseCode, downloadOf, envelope, fileRetrieval, rawId } from '../audio/minimax.js';
import {
  UNNAMED_FAILURE, entryOf, failedState, jsonRequest, meaningOf, missingTaskId, objectAt, parseObject, textOf, trimBase, unreadableStatus, type StatusMeaning,
} from './wire.js';

interface HailuoSubmitBody {
  model: string;
  prompt?: string;
  first_frame_image?: string;
  duration: number;
  resolution?: string;
  prompt_optimizer?: boolean;
}

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  preparing: 'running',
  queueing: 'running',
  processing: 'running',
  success: 'succeeded',
  fail: 'failed',
  failed: 'failed', // the speech API's spelling; read the same way should video ever use it
});

/** The `base_resp` codes a failed task reports, as messages a caller can act on. */
const FAILURE_MESSAGES: Readonly<Record<string, string>> = Object.freeze({
  1026: 'The prompt or image did not pass the vendor\'s content review.',
  1027: 'The generated video did not pass the vendor\'s content review.',
});

export function hailuoSubmitBody(job: VideoJob): HailuoSubmitBody {
  return {
    model: job.upstreamModel,
    prompt: job.prompt,
    first_frame_image: job.imageUrls[0],
    duration: job.duration,
    resolution: job.resolution,
    prompt_optimizer: job.promptOptimizer,
  };
}

export const MINIMAX_VIDEO = Object.freeze({
  family: 'minimax-video',

  submit(job, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/video_generation`, authorization(target), hailuoSubmitBody(job));
  },

  submitted(httpStatus, body) {
    const answer = envelope('submit', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    const upstreamId = rawId(body, 'task_id');
    return upstreamId === undefined ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId };
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/query/video_generation?task_id=${encodeURIComponent(upstreamId)}`, headers: authorization(target) };
  },

  polled(httpStatus, body, target?: VendorTarget): VendorTaskState | VendorRefusal | RetrieveStep {
    // A failed task may carry its reason as a non-zero base_resp: read the status before the envelope.
    const parsed = httpStatus >= 200 && httpStatus <= 299 ? parseObject(body) : undefined;
    const failed = parsed === undefined ? undefined : textOf(parsed.status);
    if (failed !== undefined && meaningOf(STATUSES, failed) === 'failed') {
      const code = baseCode(parsed!);
      if (code === undefined || code === 0) return failedState(failed, UNNAMED_FAILURE, 'The vendor reported the task failed without a reason.');
      const message = entryOf(FAILURE_MESSAGES, String(code)) ?? textOf(objectAt(parsed, 'base_resp')?.status_msg) ?? `The vendor reported status_code ${code}.`;
      return failedState(failed, `minimax_${code}`, message);
    }
    const answer = envelope('poll', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    const status = textOf(answer.body.status);
    if (status === undefined) return unreadableStatus(httpStatus);
    const meaning = meaningOf(STATUSES, status);
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') return fileRetrieval(httpStatus, body, status, target);
    return { kind: 'unknown', status };
  },

  retrieved: downloadOf,
} satisfies VideoAdapter);
