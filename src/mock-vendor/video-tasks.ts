// The video vendors' asynchronous task APIs, each in its own wire format (shared/reference/
// media-vendor-apis.md §1–3, docs/vendors/): Alibaba DashScope (`/alibaba/v1/services/aigc/video-generation/
// video-synthesis`, `/alibaba/v1/tasks/{id}`), ShengShu Vidu (`/shengshu/v1/ent/v2/reference2video`,
// `img2video`, `tasks/{id}/creations`), ByteDance Ark (`/bytedance/v1/contents/generations/tasks`) and
// MiniMax Hailuo (`/minimax/v1/video_generation`, `query/video_generation?task_id=`, then
// `files/retrieve?file_id=` for the download URL; MiniMax's own speech files stay with audio.ts) and
// Kuaishou Kling (`/kuaishou/v1/videos/text2video`, `image2video`, each polled at `…/{id}`; a JWT
// checked on every call), Runway (`/runway/v1/image_to_video`, `video_to_video`, `tasks/{id}`, `X-Runway-Version`) and
// Luma's Agents API (`/luma/v1/generations`, `generations/{id}`).
// One task store and clock: a job is queued, then running, then ends after `job_ms`; polls answer in
// the vendor's own spellings; results are small MP4s served at `/__mock/videos/…` until their URL
// expires. Steered by `[[mock …]]` keys in the prompt: job_ms, task_fail=CODE, submit_fail=STATUS,
// poll_fail=STATUS (poll_fail_times=K: only the first K polls), url_ttl_ms, broken_url,
// unknown_status=K (K polls after the end report a status no adapter knows). A submit also meets
// the mock's faults (faults.ts): by its credential from the settings, or `fault=…` in the prompt.
import { createHmac, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { directivePairs, parseDirectives } from './directives.js';
import { bearerToken, playFault, type FaultBook } from './faults.js';
import { mockMp4 } from './mp4.js';
import { mockPng } from './png.js';
import { recordBody, type MockRequestRecord } from './records.js';
import type { MockError } from './errors.js';

export const VIDEO_FILES_PREFIX = '/__mock/videos/';
const TASK_LIMIT = 5000;
const DAY_MS = 86_400_000;

type Phase = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'unknown';

interface VideoTask {
  readonly vendor: Dialect;
  readonly id: string;
  /** The result's id where the vendor names results apart from tasks (MiniMax `file_id`). */
  readonly fileId: string;
  readonly model: string;
  readonly createdMs: number;
  readonly jobMs: number;
  readonly seconds: number;
  readonly failCode: string | undefined;
  readonly pollFail: number | undefined;
  pollFailLeft: number;
  unknownLeft: number;
  readonly urlTtlMs: number;
  readonly brokenUrl: boolean;
  /** The result is a PNG image (Runway's text_to_image), not an MP4. */
  readonly image: boolean;
  cancelled: boolean;
  /** The result's file name, made at the first poll that sees success. */
  file?: string;
}

export interface VideoExchange {
  readonly record: MockRequestRecord;
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void;
}

/** What a submit asks for: `image` makes the result a PNG (an image task on a video vendor's task API). */
interface TaskFields { readonly model: string; readonly prompt: string; readonly seconds: number; readonly image?: boolean }

type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** A vendor's wire format: how it authenticates, reads a submit, spells statuses and shapes answers. */
interface Dialect {
  readonly prefix: string;
  readonly authorized: (authorization: string | undefined) => { status: number; body: unknown } | undefined;
  /** A header every request must carry, with the refusal of one that does not (Runway's API version). */
  readonly requiredHeader?: { readonly name: string; readonly value: string; readonly status: number; readonly body: unknown };
  readonly submitPath: (path: string) => boolean;
  /** The task fields of a submit body, or a message saying what is wrong with it. */
  readonly read: (body: Record<string, unknown>, path: string) => TaskFields | string;
  readonly newId: () => string;
  readonly submitted: (task: VideoTask, body: Record<string, unknown>) => unknown;
  readonly error: (status: number, code: string, message: string) => unknown;
  readonly pollPath: RegExp;
  /** The query parameter naming the task, when the poll path does not (MiniMax `task_id`). */
  readonly pollParam?: string;
  /** Where the result's download URL is asked for by its file id (MiniMax). */
  readonly retrieve?: { readonly path: string; readonly param: string; readonly answer: (task: VideoTask, url: string) => unknown };
  readonly cancelPath: RegExp;
  readonly cancelMethod: string;
  readonly polled: (task: VideoTask, phase: Phase, url: string | undefined) => unknown;
  /** The body of a status callback when it is not the poll answer itself (Kling's is the answer's `data`). */
  readonly callbackBody?: (polled: unknown) => unknown;
  readonly spelling: Record<Phase, string>;
}

const num = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : fallback);
const str = (value: unknown) => (typeof value === 'string' ? value : '');
const errorCodeFor = (status: number) => (status === 400 ? 'InvalidParameter' : status === 401 ? 'InvalidApiKey' : status === 429 ? 'Throttling' : 'InternalError');

const DASHSCOPE: Dialect = {
  prefix: '/alibaba/v1/',
  authorized: (authorization) => (/^Bearer \S+/.test(authorization ?? '') ? undefined
    : { status: 401, body: { request_id: randomUUID(), code: 'InvalidApiKey', message: 'Invalid API-key provided.' } }),
  submitPath: (path) => path === '/alibaba/v1/services/aigc/video-generation/video-synthesis',
  read: (body) => {
    const input = (body.input ?? {}) as Record<string, unknown>;
    const parameters = (body.parameters ?? {}) as Record<string, unknown>;
    if (typeof body.model !== 'string') return 'model is required';
    return { model: body.model, prompt: str(input.prompt), seconds: num(parameters.duration, 5) };
  },
  newId: () => randomUUID(),
  submitted: (task) => ({ output: { task_status: 'PENDING', task_id: task.id }, request_id: randomUUID() }),
  error: (_status, code, message) => ({ request_id: randomUUID(), code, message }),
  pollPath: /^\/alibaba\/v1\/tasks\/([^/]+)$/,
  cancelPath: /^\/alibaba\/v1\/tasks\/([^/]+)\/cancel$/,
  cancelMethod: 'POST',
  spelling: { queued: 'PENDING', running: 'RUNNING', succeeded: 'SUCCEEDED', failed: 'FAILED', cancelled: 'CANCELED', unknown: 'SUSPENDED' },
  polled: (task, phase, url) => ({
    request_id: randomUUID(),
    output: {
      task_id: task.id, task_status: DASHSCOPE.spelling[phase], submit_time: new Date(task.createdMs).toISOString(),
      ...(phase === 'succeeded' ? { video_url: url, end_time: new Date(task.createdMs + task.jobMs).toISOString() } : {}),
      ...(phase === 'failed' ? { code: task.failCode, message: `The task failed (mock): ${task.failCode}.` } : {}),
    },
    ...(phase === 'succeeded' ? { usage: { video_duration: task.seconds, video_count: 1 } } : {}),
  }),
};

const VIDU: Dialect = {
  prefix: '/shengshu/v1/',
  authorized: (authorization) => (/^Token \S+/.test(authorization ?? '') ? undefined : { status: 401, body: { code: 401, reason: 'Unauthorized', message: 'invalid token' } }),
  submitPath: (path) => path === '/shengshu/v1/ent/v2/reference2video' || path === '/shengshu/v1/ent/v2/img2video',
  read: (body) => {
    if (typeof body.model !== 'string') return 'model is required';
    const images = Array.isArray(body.images) ? body.images : Array.isArray(body.subjects) ? body.subjects : [];
    if (images.length === 0) return 'images or subjects are required';
    return { model: body.model, prompt: str(body.prompt), seconds: num(body.duration, 5) };
  },
  newId: () => String(randomInt(100_000_000, 999_999_999)) + String(randomInt(100_000_000, 999_999_999)),
  submitted: (task, body) => ({ ...body, task_id: task.id, state: 'created', credits: task.seconds * 10, created_at: new Date(task.createdMs).toISOString() }),
  error: (status, code, message) => ({ code: status, reason: code, message }),
  pollPath: /^\/shengshu\/v1\/ent\/v2\/tasks\/([^/]+)\/creations$/,
  cancelPath: /^\/shengshu\/v1\/ent\/v2\/tasks\/([^/]+)\/cancel$/,
  cancelMethod: 'POST',
  spelling: { queued: 'queueing', running: 'processing', succeeded: 'success', failed: 'failed', cancelled: 'failed', unknown: 'paused' },
  polled: (task, phase, url) => ({
    id: task.id, state: VIDU.spelling[phase], err_code: phase === 'cancelled' ? 'UserCancelled' : phase === 'failed' ? task.failCode : '',
    credits: task.seconds * 10, payload: '',
    creations: phase === 'succeeded' ? [{ id: `c-${task.id}`, url, cover_url: `${url}.jpg`, watermarked_url: url }] : [],
  }),
};

const ARK: Dialect = {
  prefix: '/bytedance/v1/',
  authorized: (authorization) => (/^Bearer \S+/.test(authorization ?? '') ? undefined
    : { status: 401, body: { error: { code: 'AuthenticationError', message: 'The API key is missing or invalid.', type: 'Unauthorized' } } }),
  submitPath: (path) => path === '/bytedance/v1/contents/generations/tasks',
  read: (body) => {
    if (typeof body.model !== 'string') return 'model is required';
    const content = Array.isArray(body.content) ? body.content as Record<string, unknown>[] : [];
    const text = str(content.find((item) => item?.type === 'text')?.text);
    const flag = /--(?:duration|dur)\s+(\d+)/.exec(text);
    return { model: body.model, prompt: text, seconds: num(body.duration, flag ? Number(flag[1]) : 5) };
  },
  newId: () => `cgt-${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}-${randomUUID().slice(0, 5)}`,
  submitted: (task) => ({ id: task.id }),
  error: (status, code, message) => ({ error: { code, message: `${message} Request ID: ${randomUUID()}`, type: status === 400 ? 'BadRequest' : 'InternalServerError' } }),
  pollPath: /^\/bytedance\/v1\/contents\/generations\/tasks\/([^/]+)$/,
  cancelPath: /^\/bytedance\/v1\/contents\/generations\/tasks\/([^/]+)$/,
  cancelMethod: 'DELETE',
  spelling: { queued: 'queued', running: 'running', succeeded: 'succeeded', failed: 'failed', cancelled: 'cancelled', unknown: 'paused' },
  polled: (task, phase, url) => ({
    id: task.id, model: task.model, status: ARK.spelling[phase],
    content: phase === 'succeeded' ? { video_url: url } : undefined,
    error: phase === 'failed' ? { code: task.failCode, message: `The task failed (mock): ${task.failCode}.` } : null,
    duration: task.seconds, resolution: '720p', ratio: '16:9', framespersecond: 24,
    usage: phase === 'succeeded' ? { completion_tokens: task.seconds * 21_600, total_tokens: task.seconds * 21_600 } : undefined,
    created_at: Math.floor(task.createdMs / 1000), updated_at: Math.floor(Date.now() / 1000),
  }),
};

/** MiniMax's `base_resp` codes for the HTTP failures the mock plays: its errors come as HTTP 200 with the code. */
const MINIMAX_CODES: Readonly<Record<number, number>> = { 400: 2013, 401: 1004, 404: 2013, 429: 1002 };
const minimaxResp = (code: number, message: string) => ({ base_resp: { status_code: code, status_msg: message } });
const MINIMAX_OK = minimaxResp(0, 'success');
const minimaxDigits = () => String(randomInt(100_000, 999_999)) + String(randomInt(100_000_000, 999_999_999));

const MINIMAX: Dialect = {
  prefix: '/minimax/v1/',
  authorized: (authorization) => (/^Bearer \S+/.test(authorization ?? '') ? undefined
    : { status: 200, body: minimaxResp(1004, 'login fail: Please carefully check the authorization header') }),
  submitPath: (path) => path === '/minimax/v1/video_generation',
  read: (body) => {
    if (typeof body.model !== 'string') return 'model is required';
    if (typeof body.prompt !== 'string' && typeof body.first_frame_image !== 'string') return 'prompt or first_frame_image is required';
    if (body.duration !== undefined && body.duration !== 6 && body.duration !== 10) return 'duration must be 6 or 10';
    return { model: body.model, prompt: str(body.prompt), seconds: num(body.duration, 6) };
  },
  newId: minimaxDigits,
  submitted: (task) => ({ task_id: task.id, ...MINIMAX_OK }),
  error: (status, _code, message) => minimaxResp(MINIMAX_CODES[status] ?? (status >= 500 ? 1000 : 2013), message),
  pollPath: /^\/minimax\/v1\/query\/(video_generation)$/,
  pollParam: 'task_id',
  retrieve: {
    path: '/minimax/v1/files/retrieve',
    param: 'file_id',
    answer: (task, url) => ({
      file: { file_id: Number(task.fileId), bytes: 0, created_at: Math.floor((task.createdMs + task.jobMs) / 1000), filename: 'output.mp4', purpose: 'video_generation', download_url: url },
      ...MINIMAX_OK,
    }),
  },
  cancelPath: /(?!)/, // MiniMax documents no cancel
  cancelMethod: 'NONE',
  spelling: { queued: 'Queueing', running: 'Processing', succeeded: 'Success', failed: 'Fail', cancelled: 'Fail', unknown: 'Paused' },
  polled: (task, phase) => {
    // A failed task names its reason in base_resp (1026 input, 1027 output review); task_fail=CODE picks it.
    const failCode = /^\d{4}$/.test(task.failCode ?? '') ? Number(task.failCode) : 1027;
    return {
      task_id: task.id, status: MINIMAX.spelling[phase],
      ...(phase === 'succeeded' ? { file_id: Number(task.fileId), video_width: 1366, video_height: 768 } : {}),
      ...(phase === 'failed' ? minimaxResp(failCode, 'generation failed (mock)') : MINIMAX_OK),
    };
  },
};

/**
 * A Kling access token: HS256, `iss` the access key, `exp` ahead and `nbf` behind now, signed with the
 * secret key. The mock knows no accounts: the secret key of any access key is the access key itself
 * (so the gateway's placeholder credential `mock-key` works). Undefined when valid, else Kling's code.
 */
function klingTokenProblem(authorization: string | undefined): { code: number; message: string } | undefined {
  const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
  const parts = token?.split('.');
  if (parts?.length !== 3) return { code: 1000, message: 'Authorization header is missing or not a Bearer JWT' };
  const json = (text: string) => {
    try {
      return JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  };
  const header = json(parts[0]!);
  const claims = json(parts[1]!);
  if (header?.alg !== 'HS256' || typeof claims?.iss !== 'string') return { code: 1002, message: 'token is not an HS256 JWT with an iss' };
  const expected = createHmac('sha256', claims.iss).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(parts[2]!, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { code: 1002, message: 'token signature is invalid' };
  const now = Date.now() / 1000;
  if (typeof claims.nbf === 'number' && claims.nbf > now) return { code: 1003, message: 'token is not yet valid' };
  if (typeof claims.exp !== 'number' || claims.exp <= now) return { code: 1004, message: 'token has expired' };
  return undefined;
}

/** Kling's envelope codes for the HTTP failures the mock plays. */
const KLING_CODES: Readonly<Record<number, number>> = { 400: 1201, 401: 1000, 404: 1203, 429: 1302 };
const klingEnvelope = (code: number, message: string, data?: unknown) => ({ code, message, request_id: randomUUID(), ...(data === undefined ? {} : { data }) });
const KLING_PATHS = /^\/kuaishou\/v1\/videos\/(?:text2video|image2video)$/;

const KLING: Dialect = {
  prefix: '/kuaishou/v1/',
  authorized: (authorization) => {
    const problem = klingTokenProblem(authorization);
    return problem === undefined ? undefined : { status: 401, body: klingEnvelope(problem.code, problem.message) };
  },
  submitPath: (path) => KLING_PATHS.test(path),
  read: (body) => {
    if (typeof body.model_name !== 'string') return 'model_name is required';
    if (body.duration !== undefined && (typeof body.duration !== 'string' || !/^(?:[3-9]|1[0-5])$/.test(body.duration))) return 'duration must be a string from "3" to "15"';
    if (typeof body.prompt !== 'string' && typeof body.image !== 'string') return 'prompt or image is required';
    if (typeof body.image === 'string' && /^data:/i.test(body.image)) return 'image must be a URL or base64 without the data: prefix';
    return { model: body.model_name, prompt: str(body.prompt), seconds: num(body.duration, 5) };
  },
  newId: () => String(randomInt(100_000_000, 999_999_999)) + String(randomInt(100_000_000, 999_999_999)),
  submitted: (task) => klingEnvelope(0, 'SUCCEED', { task_id: task.id, task_status: 'submitted', task_info: {}, created_at: task.createdMs, updated_at: task.createdMs }),
  error: (status, _code, message) => klingEnvelope(KLING_CODES[status] ?? (status >= 500 ? 5000 : 1200), message),
  pollPath: /^\/kuaishou\/v1\/videos\/(?:text2video|image2video)\/([^/]+)$/,
  cancelPath: /(?!)/, // Kling documents no cancel
  cancelMethod: 'NONE',
  spelling: { queued: 'submitted', running: 'processing', succeeded: 'succeed', failed: 'failed', cancelled: 'failed', unknown: 'paused' },
  polled: (task, phase, url) => klingEnvelope(0, 'SUCCEED', {
    task_id: task.id, task_status: KLING.spelling[phase],
    task_status_msg: phase === 'failed' ? `The task failed (mock): ${task.failCode}.` : '',
    task_info: {}, created_at: task.createdMs, updated_at: Date.now(),
    ...(phase === 'succeeded' ? { final_unit_deduction: String(task.seconds / 5), task_result: { videos: [{ id: `v-${task.id}`, url, duration: String(task.seconds) }] } } : {}),
  }),
  callbackBody: (polled) => (polled as { data: unknown }).data,
};

const RUNWAY: Dialect = {
  prefix: '/runway/v1/',
  authorized: (authorization) => (/^Bearer \S+/.test(authorization ?? '') ? undefined : { status: 401, body: { error: 'Invalid API key.' } }),
  requiredHeader: { name: 'x-runway-version', value: '2024-11-06', status: 400, body: { error: 'API version 2024-11-06 is required in the X-Runway-Version header.' } },
  submitPath: (path) => path === '/runway/v1/image_to_video' || path === '/runway/v1/video_to_video' || path === '/runway/v1/text_to_image',
  read: (body, path) => {
    if (typeof body.model !== 'string') return 'model is required';
    if (path === '/runway/v1/text_to_image') {
      if (typeof body.promptText !== 'string' || body.promptText === '') return 'promptText is required';
      if (typeof body.ratio !== 'string' || !/^\d+:\d+$/.test(body.ratio)) return 'ratio must be one of the output sizes, such as 1920:1080';
      const references = body.referenceImages;
      if (references !== undefined && (!Array.isArray(references) || references.length > 3 || references.some((r) => typeof (r as { uri?: unknown })?.uri !== 'string'))) {
        return 'referenceImages must be at most 3 objects with a uri';
      }
      return { model: body.model, prompt: body.promptText, seconds: 0, image: true };
    }
    if (path === '/runway/v1/video_to_video') {
      if (typeof body.videoUri !== 'string' || !/^(?:https?:\/\/|data:video\/)/.test(body.videoUri)) return 'videoUri must be an https URL or a data URI of a video';
      if (typeof body.promptText !== 'string' || body.promptText === '' || body.promptText.length > 1000) return 'promptText is required (at most 1000 characters)';
      if (typeof body.ratio !== 'string' || !/^\d+:\d+$/.test(body.ratio)) return 'ratio must be one of the output sizes, such as 1280:720';
      // Aleph edits at most the first 5 seconds of its input: the mock's clip is that long.
      return { model: body.model, prompt: body.promptText, seconds: 5 };
    }
    if (typeof body.promptImage !== 'string') return 'promptImage is required';
    if (typeof body.ratio !== 'string' || !/^\d+:\d+$/.test(body.ratio)) return 'ratio must be one of the output sizes, such as 1280:720';
    if (typeof body.duration !== 'number' || !Number.isInteger(body.duration) || body.duration < 2 || body.duration > 10) return 'duration must be a whole number from 2 to 10';
    return { model: body.model, prompt: str(body.promptText), seconds: body.duration };
  },
  newId: randomUUID,
  submitted: (task) => ({ id: task.id }),
  error: (_status, _code, message) => ({ error: message }),
  pollPath: /^\/runway\/v1\/tasks\/([^/]+)$/,
  cancelPath: /^\/runway\/v1\/tasks\/([^/]+)$/,
  cancelMethod: 'DELETE',
  spelling: { queued: 'PENDING', running: 'RUNNING', succeeded: 'SUCCEEDED', failed: 'FAILED', cancelled: 'CANCELLED', unknown: 'PAUSED' },
  polled: (task, phase, url) => ({
    id: task.id, status: RUNWAY.spelling[phase], createdAt: new Date(task.createdMs).toISOString(),
    ...(phase === 'running' ? { progress: 0.5 } : {}),
    ...(phase === 'succeeded' ? { output: [url] } : {}),
    ...(phase === 'failed' ? { failure: `The task failed (mock): ${task.failCode}.`, failureCode: task.failCode } : {}),
  }),
};

const LUMA: Dialect = {
  prefix: '/luma/v1/',
  authorized: (authorization) => (/^Bearer \S+/.test(authorization ?? '') ? undefined : { status: 401, body: { detail: 'Invalid API key' } }),
  submitPath: (path) => path === '/luma/v1/generations',
  read: (body) => {
    if (body.type === 'image' || body.type === 'image_edit') {
      if (body.model !== 'uni-1' && body.model !== 'uni-1-max') return 'model must be uni-1 or uni-1-max for images';
      if (typeof body.prompt !== 'string' || body.prompt === '') return 'prompt is required';
      if (body.type === 'image_edit' && typeof (body.source as { url?: unknown; data?: unknown } | undefined)?.url !== 'string'
        && typeof (body.source as { data?: unknown } | undefined)?.data !== 'string') return 'image_edit needs a source';
      if (Array.isArray(body.image_ref) && body.image_ref.length > 8) return 'image_ref takes at most 8 images for image_edit';
      return { model: body.model, prompt: body.prompt, seconds: 0, image: true };
    }
    const video = (body.video ?? {}) as Record<string, unknown>;
    if (body.model !== 'ray-3.2') return 'model must be ray-3.2 for video';
    if (body.type !== 'video') return "type must be 'video'";
    if (typeof body.prompt !== 'string' || body.prompt === '') return 'prompt is required';
    if (video.duration !== undefined && video.duration !== '5s' && video.duration !== '10s') return "video.duration must be '5s' or '10s'";
    const start = video.start_frame as Record<string, unknown> | undefined;
    if (start !== undefined && typeof start.url !== 'string' && (typeof start.data !== 'string' || typeof start.media_type !== 'string')) {
      return 'video.start_frame needs url, or data with media_type';
    }
    return { model: body.model, prompt: body.prompt, seconds: video.duration === '10s' ? 10 : 5 };
  },
  newId: randomUUID,
  submitted: (task) => LUMA.polled(task, 'queued', undefined),
  error: (_status, _code, message) => ({ detail: message }),
  pollPath: /^\/luma\/v1\/generations\/([^/]+)$/,
  cancelPath: /(?!)/, // the Agents API has no cancel
  cancelMethod: 'NONE',
  spelling: { queued: 'queued', running: 'processing', succeeded: 'completed', failed: 'failed', cancelled: 'failed', unknown: 'paused' },
  polled: (task, phase, url) => ({
    id: task.id, created_at: new Date(task.createdMs).toISOString(), model: task.model, type: task.image ? 'image' : 'video', state: LUMA.spelling[phase],
    ...(phase === 'succeeded' ? { output: [{ type: task.image ? 'image' : 'video', url }] } : {}),
    ...(phase === 'failed' ? { failure_code: task.failCode, failure_reason: `The generation failed (mock): ${task.failCode}.` } : {}),
  }),
};

const DIALECTS: readonly Dialect[] = [DASHSCOPE, VIDU, ARK, MINIMAX, KLING, RUNWAY, LUMA];

/**
 * Vidu's callback signature (reference §2): base64 HMAC-SHA256 keyed by the API token over
 * METHOD, path, query, "vidu", Date and the signed headers, one per line.
 */
export function viduSignedHeaders(callbackUrl: string, apiToken: string, date = new Date().toUTCString(), nonce = randomUUID()): Record<string, string> {
  const url = new URL(callbackUrl);
  const signed = ['Date', 'x-request-nonce'];
  const values: Record<string, string> = { Date: date, 'x-request-nonce': nonce };
  const signingString = ['POST', url.pathname, url.search.slice(1), 'vidu', date, signed.map((name) => `${name}:${values[name]}\n`).join('')].join('\n');
  return {
    Date: date, 'x-request-nonce': nonce, 'X-HMAC-SIGNED-HEADERS': signed.join(';'), 'X-HMAC-ALGORITHM': 'hmac-sha256', 'X-HMAC-ACCESS-KEY': 'vidu',
    'X-HMAC-SIGNATURE': createHmac('sha256', apiToken).update(signingString).digest('base64'),
  };
}

/** The video tasks and result files of one mock vendor. */
export class VideoTasks {
  private readonly tasks = new Map<string, VideoTask>();
  private readonly files = new Map<string, { bytes: Buffer; expiresAtMs: number; broken: boolean }>();
  /** Where the mock serves files (set once it listens). */
  url = '';
  /** Callbacks the vendors sent (Vidu, Ark), oldest first: for tests. */
  readonly callbacks: { taskId: string; url: string; phase: string; ok: boolean }[] = [];

  constructor(private readonly defaultJobMs: number) {}

  /**
   * Whether the request belongs to a video task API: its path, or a result's retrieval whose file id
   * is one of these tasks' (MiniMax retrieves speech and video files at the same path).
   */
  handles(path: string, query: string): boolean {
    if (path.startsWith(VIDEO_FILES_PREFIX)) return true;
    return DIALECTS.some((dialect) => path.startsWith(dialect.prefix) && (dialect.submitPath(path) || dialect.pollPath.test(path) || dialect.cancelPath.test(path)
      || (dialect.retrieve?.path === path && this.fileOwner(new URLSearchParams(query).get(dialect.retrieve.param)) !== undefined)));
  }

  private fileOwner(fileId: string | null): VideoTask | undefined {
    return fileId === null ? undefined : [...this.tasks.values()].find((task) => task.fileId === fileId);
  }

  /** The tasks a vendor (`alibaba`, `shengshu`, `bytedance`, `minimax`, `kuaishou`) holds, newest last: for tests. */
  list(vendor: string): { id: string; model: string; cancelled: boolean }[] {
    return [...this.tasks.values()].filter((task) => task.vendor.prefix === `/${vendor}/v1/`).map(({ id, model, cancelled }) => ({ id, model, cancelled }));
  }

  route(req: http.IncomingMessage, res: http.ServerResponse, exchange: VideoExchange, faults: FaultBook, path: string, query: string, readBody: ReadBody): void {
    if (path.startsWith(VIDEO_FILES_PREFIX)) return this.serveFile(req, res, path);
    const dialect = DIALECTS.find((candidate) => path.startsWith(candidate.prefix))!;
    const send = (status: number, body: unknown) => exchange.sendJson(status, JSON.stringify(body));
    const header = dialect.requiredHeader;
    const refused = dialect.authorized(exchange.record.authorization)
      ?? (header !== undefined && req.headers[header.name] !== header.value ? { status: header.status, body: header.body } : undefined);
    if (req.method === 'POST' && dialect.submitPath(path)) {
      return readBody(req, (err, text) => {
        if (err) return send(err.status, dialect.error(err.status, 'InvalidParameter', err.message));
        const parseError = recordBody(exchange.record, text);
        if (refused) return send(refused.status, refused.body);
        if (dialect === DASHSCOPE && req.headers['x-dashscope-async'] !== 'enable') {
          return send(403, dialect.error(403, 'AccessDenied', 'current user api does not support synchronous calls'));
        }
        const body = exchange.record.body;
        if (parseError !== undefined || body === null || typeof body !== 'object' || Array.isArray(body)) return send(400, dialect.error(400, 'InvalidParameter', 'The request body is not a JSON object.'));
        const fields = dialect.read(body as Record<string, unknown>, path);
        if (typeof fields === 'string') return send(400, dialect.error(400, 'InvalidParameter', fields));
        const keys = directivePairs(fields.prompt);
        const submitFail = Number(keys.get('submit_fail'));
        if (submitFail >= 400 && submitFail <= 599) return send(submitFail, dialect.error(submitFail, errorCodeFor(submitFail), `Mock failure (${submitFail}).`));
        // Faults play on the submit only (a poll is not a new call upstream); a submit is never a stream.
        const fault = faults.meet(bearerToken(exchange.record.authorization), parseDirectives(fields.prompt));
        const sendStatus = (status: number, headers: Record<string, string> | undefined) =>
          exchange.sendJson(status, JSON.stringify(dialect.error(status, errorCodeFor(status), `Mock failure (${status}).`)), headers);
        if (fault !== undefined && playFault(fault, false, exchange, sendStatus)) return;
        const task = this.add(dialect, fields, keys);
        const callbackUrl = (body as Record<string, unknown>).callback_url;
        if (dialect !== DASHSCOPE && typeof callbackUrl === 'string') this.callBack(task, callbackUrl, exchange.record.authorization ?? '');
        return send(200, dialect.submitted(task, body as Record<string, unknown>));
      });
    }
    req.resume();
    if (refused) return send(refused.status, refused.body);
    const cancel = req.method === dialect.cancelMethod ? dialect.cancelPath.exec(path) : null;
    if (cancel) {
      const task = this.tasks.get(decodeURIComponent(cancel[1]!));
      if (!task) return send(404, dialect.error(404, 'TaskNotFound', 'The task does not exist.'));
      const phase = this.phaseOf(task, false);
      // Vidu and Runway cancel a running task too; the others only a queued one.
      if (phase !== 'queued' && !((dialect === VIDU || dialect === RUNWAY) && phase === 'running')) {
        return send(400, dialect.error(400, 'UnsupportedOperation', `A ${dialect.spelling[phase]} task cannot be cancelled.`));
      }
      task.cancelled = true;
      return send(200, dialect === DASHSCOPE ? { request_id: randomUUID() } : {});
    }
    const params = new URLSearchParams(query);
    if (req.method === 'GET' && dialect.retrieve?.path === path) {
      const task = this.fileOwner(params.get(dialect.retrieve.param))!;
      if (this.phaseOf(task, false) !== 'succeeded') return send(200, dialect.error(404, 'NotFound', 'file not found'));
      return send(200, dialect.retrieve.answer(task, this.resultUrl(task)));
    }
    const poll = req.method === 'GET' ? dialect.pollPath.exec(path) : null;
    if (!poll) return send(404, dialect.error(404, 'NotFound', `No route for ${req.method} ${path}.`));
    const taskId = dialect.pollParam === undefined ? decodeURIComponent(poll[1]!) : params.get(dialect.pollParam) ?? '';
    const task = this.tasks.get(taskId);
    if (!task) {
      if (dialect === DASHSCOPE) return send(200, { request_id: randomUUID(), output: { task_id: poll[1], task_status: 'UNKNOWN' } });
      return send(404, dialect.error(404, 'TaskNotFound', 'The task does not exist.'));
    }
    if (task.pollFail !== undefined && task.pollFailLeft !== 0) {
      if (task.pollFailLeft > 0) task.pollFailLeft--;
      return send(task.pollFail, dialect.error(task.pollFail, errorCodeFor(task.pollFail), `Mock failure (${task.pollFail}).`));
    }
    const phase = this.phaseOf(task, true);
    return send(200, dialect.polled(task, phase, phase === 'succeeded' ? this.resultUrl(task) : undefined));
  }

  private add(vendor: Dialect, fields: TaskFields, keys: Map<string, string>): VideoTask {
    const count = (name: string, fallback: number) => (/^\d{1,9}$/.test(keys.get(name) ?? '') ? Number(keys.get(name)) : fallback);
    const pollFail = count('poll_fail', 0);
    const task: VideoTask = {
      vendor, id: vendor.newId(), fileId: minimaxDigits(), model: fields.model, createdMs: Date.now(), jobMs: count('job_ms', this.defaultJobMs), seconds: fields.seconds,
      failCode: keys.get('task_fail'), pollFail: pollFail >= 400 && pollFail <= 599 ? pollFail : undefined, pollFailLeft: count('poll_fail_times', -1),
      unknownLeft: count('unknown_status', 0), urlTtlMs: count('url_ttl_ms', DAY_MS), brokenUrl: keys.has('broken_url'), image: fields.image === true, cancelled: false,
    };
    this.tasks.set(task.id, task);
    if (this.tasks.size > TASK_LIMIT) this.tasks.delete(this.tasks.keys().next().value as string);
    return task;
  }

  /**
   * Vidu and Ark POST the task's query body to its `callback_url` when it starts running and when it
   * ends; the final one is retried up to 3 times until answered 2xx. Vidu signs its deliveries with the
   * API token that created the task; Ark does not sign.
   */
  private callBack(task: VideoTask, url: string, authorization: string): void {
    const deliver = (final: boolean, attempt: number) => {
      // The final delivery says how the task ended: its timer may fire a millisecond before Date.now() has moved jobMs on.
      const phase = final && !task.cancelled ? outcomeOf(task) : this.phaseOf(task, false);
      const polled = task.vendor.polled(task, phase, phase === 'succeeded' ? this.resultUrl(task) : undefined);
      const body = JSON.stringify(task.vendor.callbackBody ? task.vendor.callbackBody(polled) : polled);
      const headers = task.vendor === VIDU ? viduSignedHeaders(url, authorization.replace(/^Token /, '')) : {};
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.timeout(5000) })
        .then((response) => response.ok, () => false)
        .then((ok) => {
          this.callbacks.push({ taskId: task.id, url, phase, ok });
          if (this.callbacks.length > TASK_LIMIT) this.callbacks.shift();
          if (!ok && final && attempt < 3) setTimeout(() => deliver(true, attempt + 1), 200).unref();
        });
    };
    setTimeout(() => deliver(false, 0), task.jobMs * 0.3).unref();
    setTimeout(() => deliver(true, 0), task.jobMs).unref();
  }

  /** Where the task stands now; a poll (`counting`) after the end uses up `unknown_status`. */
  private phaseOf(task: VideoTask, counting: boolean): Phase {
    if (task.cancelled) return 'cancelled';
    const age = Date.now() - task.createdMs;
    if (age < task.jobMs * 0.3) return 'queued';
    if (age < task.jobMs) return 'running';
    if (counting && task.unknownLeft > 0) {
      task.unknownLeft--;
      return 'unknown';
    }
    return outcomeOf(task);
  }

  private resultUrl(task: VideoTask): string {
    if (!task.file) {
      task.file = `${randomUUID()}.${task.image ? 'png' : 'mp4'}`;
      const endedAtMs = task.createdMs + task.jobMs;
      const tag = `${task.vendor.prefix}${task.id}`;
      this.files.set(task.file, { bytes: task.image ? mockPng(tag) : mockMp4(task.seconds, tag), expiresAtMs: endedAtMs + task.urlTtlMs, broken: task.brokenUrl });
      if (this.files.size > TASK_LIMIT) this.files.delete(this.files.keys().next().value as string);
    }
    const expires = Math.floor((task.createdMs + task.jobMs + task.urlTtlMs) / 1000);
    return `${this.url}${VIDEO_FILES_PREFIX}${task.file}?Expires=${expires}&Signature=mock`;
  }

  private serveFile(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
    req.resume();
    const file = this.files.get(path.slice(VIDEO_FILES_PREFIX.length));
    if (!file || file.broken) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('NoSuchKey');
    if (Date.now() >= file.expiresAtMs) {
      const body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Request has expired.</Message></Error>';
      return void res.writeHead(403, { 'content-type': 'application/xml' }).end(body);
    }
    const type = path.endsWith('.png') ? 'image/png' : 'video/mp4';
    res.writeHead(200, { 'content-type': type, 'content-length': file.bytes.length }).end(file.bytes);
  }
}

/** How a task that ran to its end ended. */
function outcomeOf(task: VideoTask): Phase {
  return task.failCode === undefined ? 'succeeded' : 'failed';
}
