/**
 * What the video vendors' task APIs share, so each adapter states only its own wire format: how an
 * HTTP answer becomes a body or a refusal, how a status word is read, how a request is written.
 * Pure: no I/O, no logging (answers carry vendor result URLs, which must never reach a log).
 */
import { randomBytes } from 'node:crypto';
import type { VendorRefusal, VendorRequest, VendorTaskState } from './adapter.js';
import type { VideoJob, VideoSchemaName } from '../../tasks/video-job.js';

export type JsonObject = Readonly<Record<string, unknown>>;

/** A vendor's error code and message, as far as its error body names them. */
export interface VendorError {
  readonly code?: string;
  readonly message?: string;
}

/** Reads one vendor's error body (its own shape) into a code and a message. */
export type ErrorReader = (body: JsonObject) => VendorError;

/** The step an answer belongs to: a missing task means something else after a submit than during polling. */
export type Step = 'submit' | 'poll';

/** What a task is asked to do with its images (or its video), by the spec's profile or vendor schema (a new one must be placed here). */
const PROFILE_TASK: Readonly<Record<VideoSchemaName, 'reference-to-video' | 'image-to-video' | 'video-to-video'>> = Object.freeze({
  'R2V-A': 'reference-to-video',
  'R2V-B': 'reference-to-video',
  'R2V-C': 'reference-to-video',
  'R2V-D': 'reference-to-video',
  'I2V-A': 'image-to-video',
  'I2V-B': 'image-to-video',
  VEO: 'image-to-video',
  'VEO-LITE': 'image-to-video',
  'WAN-R2V-FLASH': 'reference-to-video',
  'VIDU-Q3-R2V': 'reference-to-video',
  'VIDU-Q3-I2V': 'image-to-video',
  'SEEDANCE-1.0-PRO': 'image-to-video',
  'SEEDANCE-1.5-PRO': 'image-to-video',
  'SEEDANCE-2.0': 'reference-to-video',
  HAILUO: 'image-to-video',
  KLING: 'image-to-video',
  'RUNWAY-I2V': 'image-to-video',
  'RUNWAY-V2V': 'video-to-video',
  'LUMA-RAY': 'image-to-video',
});

/** Whether the job's image is the video's first frame (image-to-video) rather than a reference to draw from. */
export function isImageToVideo(job: VideoJob): boolean {
  return PROFILE_TASK[job.profile] === 'image-to-video';
}

/** Vendor messages are kept on the task and shown to its owner: long ones are cut. */
const MAX_MESSAGE_CHARS = 500;

/** The configured base without trailing slashes, so paths join with exactly one. */
export function trimBase(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** A path segment made of a vendor's task id: never able to change the path it sits in. */
export function idSegment(upstreamId: string): string {
  return encodeURIComponent(upstreamId);
}

export function jsonRequest(method: 'POST', url: string, headers: Readonly<Record<string, string>>, body: unknown): VendorRequest {
  return { method, url, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

/**
 * A `multipart/form-data` request of text fields (Stability's APIs take no JSON); undefined fields are
 * left out. The boundary is random and, to be certain, appears in no value.
 */
export function formRequest(method: 'POST', url: string, headers: Readonly<Record<string, string>>, fields: Readonly<Record<string, string | number | undefined>>): VendorRequest {
  const entries = Object.entries(fields).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)] as const]));
  let boundary: string;
  do boundary = `gateway-${randomBytes(12).toString('hex')}`; while (entries.some(([, value]) => value.includes(boundary)));
  const parts = entries.map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  return { method, url, headers: { ...headers, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: `${parts.join('')}--${boundary}--\r\n` };
}

/** The body as a JSON object, or undefined when it is not one (not JSON, an array, null). */
export function parseObject(text: string): JsonObject | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : undefined;
  } catch {
    return undefined; // not JSON: the caller decides what a garbled answer means
  }
}

/** A nested object field, or undefined. */
export function objectAt(value: unknown, key: string): JsonObject | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const inner = (value as JsonObject)[key];
  return typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? (inner as JsonObject) : undefined;
}

/** A non-empty string (trimmed), or undefined. */
export function textOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** A vendor code: a non-empty string, or a number some vendors use instead. */
export function codeOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return textOf(value);
}

/** Seconds of video a vendor reports (a number, or a numeric string), if positive. */
export function secondsOf(value: unknown): number | undefined {
  const seconds = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds : undefined;
}

function cut(message: string): string {
  return message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : message;
}

/** A transient failure of the answer itself: the step is tried again later. */
export function garbled(httpStatus: number, message: string): VendorRefusal {
  return { kind: 'refused', retryable: true, code: 'invalid_response', message, httpStatus };
}

/**
 * Statuses whose failure is worth trying again: a timeout (408), a rate limit (429), a request the
 * vendor saw abandoned (499, listed by Vidu), any server error, and anything outside 4xx/5xx that is
 * not a success (no answer at all, in effect). Other 4xx are refusals of this very request.
 */
function isTransient(httpStatus: number): boolean {
  return httpStatus === 408 || httpStatus === 429 || httpStatus === 499 || httpStatus >= 500 || httpStatus < 400;
}

/**
 * A non-2xx answer as a refusal. Transient statuses retry; every other 4xx is final, with the vendor's
 * code and message where its body names them; a 404 while polling means the vendor no longer has the
 * task, whatever it calls that. The body is never quoted when it is not the vendor's error JSON (an
 * HTML error page says nothing useful, and an answer may carry result URLs).
 */
export function refusalOf(step: Step, httpStatus: number, body: string, readError: ErrorReader): VendorRefusal {
  const parsed = parseObject(body);
  const error = parsed ? readError(parsed) : {};
  const message = cut(error.message ?? `The vendor answered HTTP ${httpStatus}.`);
  if (step === 'poll' && httpStatus === 404) return { kind: 'refused', retryable: false, code: 'task_not_found', message, httpStatus };
  return { kind: 'refused', retryable: isTransient(httpStatus), code: error.code ?? `http_${httpStatus}`, message, httpStatus };
}

/** A 2xx answer's JSON object, or the refusal the answer amounts to. */
export function readAnswer(step: Step, httpStatus: number, body: string, readError: ErrorReader): { readonly kind: 'answer'; readonly body: JsonObject } | VendorRefusal {
  if (httpStatus < 200 || httpStatus > 299) return refusalOf(step, httpStatus, body, readError);
  const parsed = parseObject(body);
  if (!parsed) return garbled(httpStatus, `The vendor's ${step} answer is not a JSON object.`);
  return { kind: 'answer', body: parsed };
}

/** What a vendor's status word means; keys are lower case (statuses are compared case-insensitively). */
export type StatusMeaning = 'running' | 'succeeded' | 'failed';

/** `table[key]` when the table itself has the key: a vendor's word is never read as `constructor` or `toString`. */
export function entryOf<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/** The meaning of `status` in `table`, case-insensitively; undefined when the vendor's word is new to us. */
export function meaningOf(table: Readonly<Record<string, StatusMeaning>>, status: string): StatusMeaning | undefined {
  return entryOf(table, status.toLowerCase());
}

export function failedState(status: string, code: string, message: string): VendorTaskState {
  return { kind: 'failed', status, code, message: cut(message) };
}

export function unreadableStatus(httpStatus: number): VendorRefusal {
  return garbled(httpStatus, "The vendor's poll answer has no task status.");
}

export function missingResult(httpStatus: number, status: string): VendorRefusal {
  return garbled(httpStatus, `The vendor reported ${status} without a result URL.`);
}

export function missingTaskId(httpStatus: number): VendorRefusal {
  return garbled(httpStatus, "The vendor's submit answer has no task id.");
}

/** Google's `{error:{code,message,status}}` (Veo, Gemini speech): the status word (`INVALID_ARGUMENT`) is the code, else the number. */
export const readGoogleError: ErrorReader = (body) => {
  const error = objectAt(body, 'error');
  return { code: textOf(error?.status) ?? codeOf(error?.code), message: textOf(error?.message) };
};

/** A submit answer whose task id is its top-level `id` (Ark, Runway, Luma), or the refusal it amounts to. */
export function submittedAtId(httpStatus: number, body: string, readError: ErrorReader): { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal {
  const answer = readAnswer('submit', httpStatus, body, readError);
  if (answer.kind === 'refused') return answer;
  const upstreamId = textOf(answer.body.id);
  return upstreamId === undefined ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId };
}

/** A poll answer's status word (its top-level `field`) and what `table` says it means, or the refusal the answer amounts to. */
export function polledStatus(httpStatus: number, body: string, readError: ErrorReader, field: string, table: Readonly<Record<string, StatusMeaning>>):
  { readonly kind: 'status'; readonly body: JsonObject; readonly status: string; readonly meaning: StatusMeaning | undefined } | VendorRefusal {
  const answer = readAnswer('poll', httpStatus, body, readError);
  if (answer.kind === 'refused') return answer;
  const status = textOf(answer.body[field]);
  if (status === undefined) return unreadableStatus(httpStatus);
  return { kind: 'status', body: answer.body, status, meaning: meaningOf(table, status) };
}

/** Failure code when the vendor names none. */
export const UNNAMED_FAILURE = 'upstream_failed';
