/**
 * MiniMax (shared/reference/media-vendor-apis.md §6d), Bearer auth, every answer in the
 * `{…, base_resp: {status_code, status_msg}}` envelope where a non-zero code is an error even on
 * HTTP 200. Speech runs as the vendor's async task: `POST {base}/t2a_async_v2` answers `task_id`;
 * `GET {base}/query/t2a_async_query_v2?task_id=` answers `Processing`/`Success`/`Failed`/`Expired` and
 * the `file_id`, whose download URL (9 h) `GET {base}/files/retrieve?file_id=` gives. Music is one long
 * `POST {base}/music_generation` whose answer carries a download URL (`output_format: "url"`).
 * Ids are int64 JSON numbers: they are read from the text, digit for digit, never through a double.
 */
import type { AudioAdapter } from './adapter.js';
import type { RetrieveStep, TaskApi, VendorRefusal, VendorTarget, VendorTaskState } from '../video/adapter.js';
import type { AudioJob } from '../../tasks/audio-job.js';
import {
  failedState, garbled, jsonRequest, meaningOf, objectAt, parseObject, refusalOf, textOf, trimBase, type JsonObject, type StatusMeaning, type Step,
} from '../video/wire.js';

/** base_resp codes worth trying again: unknown error, timeout, rate limits, internal and system errors. */
const TRANSIENT_CODES = new Set([1000, 1001, 1002, 1024, 1033, 1039]);

const STATUSES: Readonly<Record<string, StatusMeaning>> = Object.freeze({ processing: 'running', success: 'succeeded', failed: 'failed', expired: 'failed' });

export const authorization = (target: VendorTarget) => ({ authorization: `Bearer ${target.apiKey}` });

/** A digit-for-digit id field of the raw answer (`"task_id": 95157322514444`, or a quoted one). */
export function rawId(body: string, field: string): string | undefined {
  return new RegExp(`"${field}"\\s*:\\s*"?(\\d{1,20})"?`).exec(body)?.[1];
}

/** The answer's JSON when it is a success in both the HTTP status and `base_resp`, else the refusal (MiniMax video reads it too). */
export function envelope(step: Step, httpStatus: number, body: string): { kind: 'answer'; body: JsonObject } | VendorRefusal {
  // The same `minimax_<code>` whether the code comes with HTTP 200 (as usual) or with an error status.
  const readError = (parsed: JsonObject) => {
    const code = baseCode(parsed);
    return { code: code === undefined ? undefined : `minimax_${code}`, message: textOf(objectAt(parsed, 'base_resp')?.status_msg) };
  };
  if (httpStatus < 200 || httpStatus > 299) return refusalOf(step, httpStatus, body, readError);
  const parsed = parseObject(body);
  if (!parsed) return garbled(httpStatus, `The vendor's ${step} answer is not a JSON object.`);
  const code = baseCode(parsed);
  if (code === undefined) return garbled(httpStatus, `The vendor's ${step} answer has no base_resp.`);
  if (code !== 0) {
    const message = textOf(objectAt(parsed, 'base_resp')?.status_msg) ?? `The vendor answered status_code ${code}.`;
    return { kind: 'refused', retryable: TRANSIENT_CODES.has(code), code: `minimax_${code}`, message: message.slice(0, 500), httpStatus };
  }
  return { kind: 'answer', body: parsed };
}

export function baseCode(body: JsonObject): number | undefined {
  const code = objectAt(body, 'base_resp')?.status_code;
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
}

/** A finished task's next step: asking where its `file_id`'s file is (speech and video alike). */
export function fileRetrieval(httpStatus: number, body: string, status: string, target: VendorTarget | undefined): RetrieveStep | VendorRefusal {
  const fileId = rawId(body, 'file_id');
  if (fileId === undefined || target === undefined) return garbled(httpStatus, `The vendor reported ${status} without a file id.`);
  return { kind: 'retrieve', status, request: { method: 'GET', url: `${trimBase(target.baseUrl)}/files/retrieve?file_id=${fileId}`, headers: authorization(target) } };
}

/** The answer of `files/retrieve`: the file's download URL is the task's result. */
export function downloadOf(httpStatus: number, body: string, status: string): VendorTaskState | VendorRefusal {
  const answer = envelope('poll', httpStatus, body);
  if (answer.kind === 'refused') return answer;
  const url = textOf(objectAt(answer.body, 'file')?.download_url);
  return url === undefined ? garbled(httpStatus, 'The vendor described the file without a download URL.') : { kind: 'succeeded', status, resultUrl: url };
}

function speechOf(job: AudioJob) {
  if (job.task !== 'speech') throw new Error('MiniMax async tasks make speech only.');
  return job;
}

const SPEECH_TASKS = Object.freeze({
  submit(job, target) {
    const speech = speechOf(job);
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/t2a_async_v2`, authorization(target), {
      model: speech.upstreamModel,
      text: speech.input,
      voice_setting: { voice_id: speech.voice, speed: speech.speed ?? 1 },
      audio_setting: { format: speech.format, sample_rate: 32_000, bitrate: 128_000, channel: 1 },
    });
  },

  submitted(httpStatus, body) {
    const answer = envelope('submit', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    const upstreamId = rawId(body, 'task_id');
    return upstreamId === undefined ? garbled(httpStatus, "The vendor's submit answer has no task id.") : { kind: 'submitted', upstreamId };
  },

  poll(upstreamId, target) {
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/query/t2a_async_query_v2?task_id=${encodeURIComponent(upstreamId)}`, headers: authorization(target) };
  },

  polled(httpStatus, body, target?: VendorTarget): VendorTaskState | VendorRefusal | RetrieveStep {
    const answer = envelope('poll', httpStatus, body);
    if (answer.kind === 'refused') return answer;
    const status = textOf(answer.body.status);
    if (status === undefined) return garbled(httpStatus, "The vendor's poll answer has no task status.");
    const meaning = meaningOf(STATUSES, status);
    if (meaning === 'running') return { kind: 'running', status };
    if (meaning === 'failed') {
      const expired = status.toLowerCase() === 'expired';
      return failedState(status, expired ? 'task_expired' : 'upstream_failed', expired ? 'The vendor expired the task before it finished.' : 'The vendor reported the speech task failed.');
    }
    if (meaning === 'succeeded') return fileRetrieval(httpStatus, body, status, target);
    return { kind: 'unknown', status };
  },

  retrieved: downloadOf,
} satisfies TaskApi<AudioJob>);

export const MINIMAX_AUDIO = Object.freeze({
  family: 'minimax',
  tasks: SPEECH_TASKS,
  runsAsTask: (job) => job.task === 'speech',
  generate(job, target) {
    if (job.task !== 'music') throw new Error('MiniMax speech runs as a task.');
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/music_generation`, authorization(target), {
      model: job.upstreamModel, prompt: job.prompt, lyrics: job.lyrics, is_instrumental: job.instrumental,
      output_format: 'url', audio_setting: { sample_rate: 44_100, bitrate: 256_000, format: job.format },
    });
  },
  generated(httpStatus, _contentType, body) {
    const text = body.toString('utf8');
    const answer = envelope('submit', httpStatus, text);
    if (answer.kind === 'refused') return answer;
    const url = textOf(objectAt(answer.body, 'data')?.audio);
    if (url === undefined || !/^https?:\/\//i.test(url)) return garbled(httpStatus, 'The vendor answered without the audio URL.');
    return { kind: 'url', url };
  },
} satisfies AudioAdapter);
