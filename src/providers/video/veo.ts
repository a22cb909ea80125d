/**
 * Google Veo 3.1 on the Gemini API, a long-running operation: `POST {base}/models/{model}:predictLongRunning`
 * (key in `x-goog-api-key`) with `instances: [{prompt}]` and `parameters` answers an operation
 * `{name}`; `GET {base}/{name}` answers `done: false` until `done: true` with either `error{code,
 * message,status}` or `response.generateVideoResponse.generatedSamples[0].video.uri`, a file of the
 * Gemini API that is served only to the API key (so the download sends it; the result is rehosted,
 * Google keeps generated videos for 2 days). Videos withheld by Google's filters come back as
 * `raiMediaFilteredCount` with reasons and no sample. There is no cancel for a Veo operation.
 * Request errors: Google's `{error:{code,message,status}}`. Sources: docs/vendors/google-media.md.
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, failedState, jsonRequest, missingResult, missingTaskId, objectAt, readAnswer, readGoogleError, textOf, trimBase,
} from './wire.js';

interface VeoSubmitBody {
  instances: [{ prompt: string }];
  parameters: { aspectRatio?: string; durationSeconds: number; resolution?: string; negativePrompt?: string; seed?: number };
}

export function veoSubmitBody(job: VideoJob): VeoSubmitBody {
  return {
    instances: [{ prompt: job.prompt ?? '' }],
    parameters: {
      aspectRatio: job.aspectRatio,
      durationSeconds: job.duration,
      resolution: job.resolution,
      negativePrompt: job.negativePrompt,
      seed: job.seed,
    },
  };
}

/**
 * An operation name as Google spells it (`models/veo-3.1-generate-preview/operations/abc123`): path
 * segments of letters, digits, `.`, `_` and `-`, none of them `.` or `..`, so it can only name a path
 * under the base URL.
 */
const OPERATION_NAME = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+){1,5}$/;

const RUNNING = 'RUNNING';
const DONE = 'DONE';
const FAILED = 'FAILED';

const keyHeader = (target: VendorTarget) => ({ 'x-goog-api-key': target.apiKey });


export const VEO_VIDEO = Object.freeze({
  family: 'gemini-video',

  submit(job, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/models/${encodeURIComponent(job.upstreamModel)}:predictLongRunning`, keyHeader(target), veoSubmitBody(job));
  },

  submitted(httpStatus, body) {
    const answer = readAnswer('submit', httpStatus, body, readGoogleError);
    if (answer.kind === 'refused') return answer;
    const name = textOf(answer.body.name);
    return name === undefined || !OPERATION_NAME.test(name) ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId: name };
  },

  poll(upstreamId, target) {
    // The name was checked when the submit answered it; each segment is encoded all the same.
    const path = upstreamId.split('/').map(encodeURIComponent).join('/');
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/${path}`, headers: keyHeader(target) };
  },

  polled(httpStatus, body) {
    const answer = readAnswer('poll', httpStatus, body, readGoogleError);
    if (answer.kind === 'refused') return answer;
    if (answer.body.done !== true) return { kind: 'running', status: RUNNING };
    const error = objectAt(answer.body, 'error');
    if (error) {
      return failedState(FAILED, textOf(error.status) ?? codeOf(error.code) ?? UNNAMED_FAILURE, textOf(error.message) ?? 'The vendor reported the operation failed without a reason.');
    }
    const generated = objectAt(objectAt(answer.body, 'response'), 'generateVideoResponse');
    const samples = generated?.generatedSamples;
    const uri = Array.isArray(samples) ? textOf(objectAt(samples[0], 'video')?.uri) : undefined;
    if (uri !== undefined) return { kind: 'succeeded', status: DONE, resultUrl: uri };
    const filtered = generated?.raiMediaFilteredCount;
    if (typeof filtered === 'number' && filtered > 0) {
      const reasons = Array.isArray(generated?.raiMediaFilteredReasons) ? generated.raiMediaFilteredReasons.filter((r): r is string => typeof r === 'string') : [];
      return failedState(DONE, 'content_filtered', `The vendor's safety filters withheld the video${reasons.length > 0 ? `: ${reasons.join(' ')}` : '.'}`);
    }
    return missingResult(httpStatus, DONE);
  },

  /** The key goes only to the vendor's own origin: a result URL elsewhere is fetched without it. */
  resultHeaders(resultUrl, target) {
    try {
      return new URL(resultUrl).origin === new URL(target.baseUrl).origin ? keyHeader(target) : undefined;
    } catch {
      return undefined;
    }
  },
} satisfies VideoAdapter);
