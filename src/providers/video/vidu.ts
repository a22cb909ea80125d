/**
 * ShengShu Vidu's task API (`Authorization: Token <key>`): `POST {base}/ent/v2/reference2video` or
 * `/ent/v2/img2video` answers a `task_id`; `GET {base}/ent/v2/tasks/{id}/creations` answers `state`
 * in lower case, with `creations[0].url` (24 h) on success or an `err_code` on failure. Serves R2V-C
 * (`viduq2`, subjects form, audio-capable), R2V-D (`viduq1`, images form), I2V-A (`viduq3-pro`), and
 * Vidu Q3's schemas (`viduq3` reference-to-video in the subjects form, `viduq3-turbo` img2video).
 */
import type { VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import {
  UNNAMED_FAILURE, codeOf, entryOf, failedState, idSegment, isImageToVideo, jsonRequest, meaningOf, missingResult, missingTaskId, readAnswer,
  textOf, trimBase, unreadableStatus, type ErrorReader, type JsonObject, type StatusMeaning,
} from './wire.js';

/** Fields every Vidu create body may carry. */
interface ViduCommon {
  model: string;
  prompt?: string;
  duration: number;
  resolution?: string;
  movement_amplitude?: string;
  seed?: number;
  callback_url?: string;
}

/** `reference2video`, subjects form: each subject is addressed as `@<id>` in the prompt; may speak. */
interface ViduSubjectsBody extends ViduCommon {
  subjects: { id: string; images: string[] }[];
  audio?: boolean;
  aspect_ratio?: string;
  bgm?: boolean;
}

/** `reference2video`, images form: video only (background music allowed). */
interface ViduImagesBody extends ViduCommon {
  images: string[];
  aspect_ratio?: string;
  bgm?: boolean;
}

/** `img2video`: `images` holds exactly the start frame. */
interface ViduImageToVideoBody extends ViduCommon {
  images: string[];
  audio: boolean;
}

export type ViduSubmit =
  | { readonly path: '/ent/v2/reference2video'; readonly body: ViduSubjectsBody | ViduImagesBody }
  | { readonly path: '/ent/v2/img2video'; readonly body: ViduImageToVideoBody };

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  created: 'running',
  queueing: 'running',
  processing: 'running',
  success: 'succeeded',
  failed: 'failed',
});

/** Vidu's task failure codes (its error-code table), as messages a caller can act on. */
const FAILURE_MESSAGES: Readonly<Record<string, string>> = Object.freeze({
  AuditSubmitIllegal: 'The input did not pass the vendor\'s content review.',
  TaskPromptPolicyViolation: 'The prompt did not pass the vendor\'s content review.',
  CreationPolicyViolation: 'The generated video did not pass the vendor\'s content review.',
  ImageDownloadFailure: 'The vendor could not download a reference image.',
  ImageFormatInvalid: 'A reference image is not in a format the vendor accepts.',
  ModelUnavailable: 'The model is unavailable at the vendor.',
  UserCancelled: 'The task was cancelled at the vendor.',
  CreditInsufficient: 'The vendor account has too few credits.',
});

/**
 * The gateway's amplitude words as Vidu spells them: the spec offers `high` (R2V-C, I2V-A), Vidu's
 * official docs `large` (`high` is a reseller spelling).
 */
const AMPLITUDES: Readonly<Record<string, string>> = Object.freeze({ high: 'large' });

const amplitudeOf = (value: string | undefined) => (value === undefined ? undefined : (entryOf(AMPLITUDES, value.toLowerCase()) ?? value));

/**
 * The create call a job needs. A reference job that may have sound (R2V-C's profile, or audio asked
 * for) takes the subjects form, the only one that carries audio; others take the images form.
 */
export function viduSubmit(job: VideoJob, vendorCallbackUrl?: string): ViduSubmit {
  const common: ViduCommon = {
    model: job.upstreamModel,
    prompt: job.prompt,
    duration: job.duration,
    resolution: job.resolution,
    movement_amplitude: amplitudeOf(job.movementAmplitude),
    seed: job.seed,
    callback_url: vendorCallbackUrl,
  };
  if (isImageToVideo(job)) {
    // Native audio is part of I2V-A's price: on unless the job says otherwise.
    return { path: '/ent/v2/img2video', body: { ...common, images: [...job.imageUrls], audio: job.audio ?? true } };
  }
  const shaping = { aspect_ratio: job.aspectRatio, bgm: job.bgm };
  if (job.profile === 'R2V-C' || job.profile === 'VIDU-Q3-R2V' || job.audio === true) {
    // Subject ids 1, 2, … in the caller's image order: the prompt's @1, @2 address them.
    const subjects = job.imageUrls.map((url, index) => ({ id: String(index + 1), images: [url] }));
    return { path: '/ent/v2/reference2video', body: { ...common, subjects, audio: job.audio, ...shaping } };
  }
  return { path: '/ent/v2/reference2video', body: { ...common, images: [...job.imageUrls], ...shaping } };
}

const authorization = (target: VendorTarget) => ({ authorization: `Token ${target.apiKey}` });

/**
 * HTTP error bodies: the docs' one sample is `{code: 400, reason: "BadRequest", message, metadata}`, so
 * the named code is `reason`, and a numeric `code` only repeats the HTTP status (it yields `http_<n>`).
 * Other spellings are unverified; whichever string names the code is read.
 */
const readError: ErrorReader = (body) => ({
  code: textOf(body.reason) ?? textOf(body.err_code) ?? textOf(body.code),
  message: textOf(body.message),
});

/**
 * The task id, a string in the docs. Vidu ids are 18 digits, past a double's exact range: an id sent
 * as a JSON number is read from the raw text, and only if it is the number the body parsed to.
 */
function taskIdOf(body: JsonObject, raw: string): string | undefined {
  const id = body.task_id;
  if (typeof id === 'string') return textOf(id);
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) return undefined;
  const digits = /"task_id"\s*:\s*(\d+)/.exec(raw)?.[1];
  if (digits !== undefined && Number(digits) === id) return digits;
  return Number.isSafeInteger(id) ? String(id) : undefined;
}

export const VIDU_VIDEO = Object.freeze({
  family: 'vidu',

  submit(job, target, vendorCallbackUrl?: string) {
    const { path, body } = viduSubmit(job, vendorCallbackUrl);
    return jsonRequest('POST', `${trimBase(target.baseUrl)}${path}`, authorization(target), body);
  },

  submitted(httpStatus, body) {
    const answer = readAnswer('submit', httpStatus, body, readError);
    if (answer.kind === 'refused') return answer;
    const upstreamId = taskIdOf(answer.body, body);
    return upstreamId === undefined ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId };
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/ent/v2/tasks/${idSegment(upstreamId)}/creations`, headers: authorization(target) };
  },

  polled(httpStatus, body) {
    const answer = readAnswer('poll', httpStatus, body, readError);
    if (answer.kind === 'refused') return answer;
    // The query answer says `state`; the docs call the callback's field `status` (same body otherwise).
    const status = textOf(answer.body.state) ?? textOf(answer.body.status);
    if (status === undefined) return unreadableStatus(httpStatus);
    const meaning = meaningOf(STATUSES, status);
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const creations = answer.body.creations;
      const first: unknown = Array.isArray(creations) ? creations[0] : undefined;
      const videoUrl = typeof first === 'object' && first !== null ? textOf((first as JsonObject).url) : undefined;
      return videoUrl === undefined ? missingResult(httpStatus, status) : { kind: 'succeeded', status, resultUrl: videoUrl };
    }
    if (meaning === 'failed') {
      const code = codeOf(answer.body.err_code);
      if (code === undefined) return failedState(status, UNNAMED_FAILURE, 'The vendor reported the task failed without a reason.');
      return failedState(status, code, entryOf(FAILURE_MESSAGES, code) ?? code);
    }
    return { kind: 'unknown', status };
  },

  // The reference marks this path unverified; the vendor's "Cancel Generation" page (seen through a
  // search copy) shows it with the id repeated in a JSON body, answering `{}`.
  cancel(upstreamId, target) {
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/ent/v2/tasks/${idSegment(upstreamId)}/cancel`, authorization(target), { id: upstreamId });
  },
} satisfies VideoAdapter);
