/**
 * Kuaishou Kling (docs/vendors/kling.md): `POST {base}/videos/text2video` or `/videos/image2video`
 * answers `{code: 0, data: {task_id}}`; `GET {base}/videos/{same path}/{id}` answers `data.task_status`
 * (`submitted`, `processing`, `succeed`, `failed`), with `data.task_result.videos[0].url` (kept 30
 * days) on success or `data.task_status_msg` on failure. Every answer is the `{code, message,
 * request_id, data}` envelope, a non-zero code an error. Auth is a short-lived HS256 JWT (`iss` the
 * access key, signed with the secret key), made for each request from the `<access key>:<secret key>`
 * credential. Kling POSTs status changes to `callback_url` (unsigned): a hint only. No cancel.
 */
import type { VendorRefusal, VendorTarget, VideoAdapter } from './adapter.js';
import type { VideoJob } from '../../tasks/video-job.js';
import { signHs256 } from '../../auth/jwt.js';
import {
  UNNAMED_FAILURE, codeOf, failedState, garbled, idSegment, jsonRequest, meaningOf, missingResult, missingTaskId, objectAt, parseObject,
  refusalOf, secondsOf, textOf, trimBase, unreadableStatus, type ErrorReader, type JsonObject, type StatusMeaning, type Step,
} from './wire.js';

type KlingTask = 'text2video' | 'image2video';

interface KlingSubmitBody {
  model_name: string;
  prompt?: string;
  negative_prompt?: string;
  image?: string;
  mode?: string;
  duration: string;
  aspect_ratio?: string;
  sound?: 'on' | 'off';
  callback_url?: string;
}

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({
  submitted: 'running',
  processing: 'running',
  succeed: 'succeeded',
  succeeded: 'succeeded', // not Kling's spelling (it writes `succeed`), read the same
  failed: 'failed',
});

/** Envelope codes that no retry fixes although Kling sends them with HTTP 429: the account has no funds or resource pack left. */
const ACCOUNT_CODES = new Set([1100, 1101, 1102, 1103]);
/** Envelope codes worth trying again: rate and concurrency limits, server errors. */
const TRANSIENT_CODES = new Set([1302, 1303, 5000, 5001, 5002]);

/** How long a signed token lives (Kling's sample: 30 min), and how far back it is valid from (clock skew). */
const TOKEN_SECONDS = 1800;
const SKEW_SECONDS = 5;

/** The Bearer token for one request, signed now with the credential's secret key. */
export function klingToken(apiKey: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const colon = apiKey.indexOf(':');
  // Config refuses a KUAISHOU_API_KEY without the colon; only the mock's placeholder key has none.
  const [accessKey, secretKey] = colon === -1 ? [apiKey, apiKey] : [apiKey.slice(0, colon), apiKey.slice(colon + 1)];
  return signHs256(secretKey, { iss: accessKey, exp: nowSeconds + TOKEN_SECONDS, nbf: nowSeconds - SKEW_SECONDS });
}

const authorization = (target: VendorTarget) => ({ authorization: `Bearer ${klingToken(target.apiKey)}` });

/** A first frame as Kling takes it: a URL, or the bare base64 of a data URI (Kling refuses the `data:` prefix). */
const imageOf = (url: string) => (/^data:/i.test(url) ? url.slice(url.indexOf(',') + 1) : url);

export function klingSubmit(job: VideoJob, vendorCallbackUrl?: string): { readonly task: KlingTask; readonly body: KlingSubmitBody } {
  const image = job.imageUrls[0];
  return {
    task: image === undefined ? 'text2video' : 'image2video',
    body: {
      model_name: job.upstreamModel,
      prompt: job.prompt,
      negative_prompt: job.negativePrompt,
      image: image === undefined ? undefined : imageOf(image),
      mode: job.mode,
      // Kling's duration is a string ("5").
      duration: String(job.duration),
      aspect_ratio: job.aspectRatio,
      sound: job.audio === undefined ? undefined : job.audio ? 'on' : 'off',
      callback_url: vendorCallbackUrl,
    },
  };
}

const readError: ErrorReader = (body) => ({ code: envelopeCode(body) === undefined ? undefined : `kling_${envelopeCode(body)}`, message: textOf(body.message) });

function envelopeCode(body: JsonObject): number | undefined {
  const code = body.code;
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
}

/** The answer's `data` when both the HTTP status and the envelope's code say success, else the refusal. */
function envelope(step: Step, httpStatus: number, body: string): { readonly kind: 'answer'; readonly data: JsonObject } | VendorRefusal {
  const parsed = parseObject(body);
  const code = parsed === undefined ? undefined : envelopeCode(parsed);
  if (httpStatus < 200 || httpStatus > 299 || (code !== undefined && code !== 0)) {
    const refusal = refusalOf(step, httpStatus, body, readError);
    if (code === undefined || refusal.code === 'task_not_found') return refusal;
    return { ...refusal, retryable: !ACCOUNT_CODES.has(code) && (TRANSIENT_CODES.has(code) || (refusal.retryable && httpStatus >= 300)) };
  }
  const data = parsed === undefined ? undefined : objectAt(parsed, 'data');
  return data === undefined ? garbled(httpStatus, `The vendor's ${step} answer has no data.`) : { kind: 'answer', data };
}

/** The upstream id names the path the task was made on (`image2video:<id>`): Kling is polled there. */
const TASKS: readonly KlingTask[] = ['text2video', 'image2video'];
function splitId(upstreamId: string): { task: KlingTask; id: string } {
  const colon = upstreamId.indexOf(':');
  const task = upstreamId.slice(0, colon) as KlingTask;
  return colon > 0 && TASKS.includes(task) ? { task, id: upstreamId.slice(colon + 1) } : { task: 'text2video', id: upstreamId };
}

export const KLING_VIDEO = Object.freeze({
  family: 'kling',

  submit(job, target, vendorCallbackUrl?: string) {
    const { task, body } = klingSubmit(job, vendorCallbackUrl);
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/videos/${task}`, authorization(target), body);
  },

  submitted(httpStatus, body, job?: VideoJob) {
    const answer = envelope('submit', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    // Task ids are 18 digits: kept as the text the vendor sent.
    const id = textOf(answer.data.task_id) ?? /"task_id"\s*:\s*(\d+)/.exec(body)?.[1];
    if (id === undefined) return missingTaskId(httpStatus);
    return { kind: 'submitted', upstreamId: `${job !== undefined && job.imageUrls.length > 0 ? 'image2video' : 'text2video'}:${id}` };
  },

  poll(upstreamId, target) {
    const { task, id } = splitId(upstreamId);
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/videos/${task}/${idSegment(id)}`, headers: authorization(target) };
  },

  polled(httpStatus, body) {
    const answer = envelope('poll', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    const status = textOf(answer.data.task_status);
    if (status === undefined) return unreadableStatus(httpStatus);
    const meaning = meaningOf(STATUSES, status);
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'succeeded') {
      const videos = objectAt(answer.data, 'task_result')?.videos;
      const first: unknown = Array.isArray(videos) ? videos[0] : undefined;
      const video = typeof first === 'object' && first !== null ? first as JsonObject : undefined;
      const url = textOf(video?.url);
      if (url === undefined) return missingResult(httpStatus, status);
      const seconds = secondsOf(video?.duration);
      return seconds === undefined ? { kind: 'succeeded', status, resultUrl: url } : { kind: 'succeeded', status, resultUrl: url, seconds };
    }
    if (meaning === 'failed') {
      const reason = textOf(answer.data.task_status_msg);
      return failedState(status, codeOf(answer.data.task_status_code) ?? UNNAMED_FAILURE, reason ?? 'The vendor reported the task failed without a reason.');
    }
    return { kind: 'unknown', status };
  },
} satisfies VideoAdapter);
