// The audio vendors, each in its own wire format (shared/reference/media-vendor-apis.md §6):
// OpenAI speech (`POST /openai/v1/audio/speech`), ElevenLabs text-to-speech and music
// (`POST /elevenlabs/v1/text-to-speech/{voice_id}`, `POST /elevenlabs/v1/music`; binary answers),
// MiniMax async speech (`POST /minimax/v1/t2a_async_v2`, `GET /minimax/v1/query/t2a_async_query_v2`,
// `GET /minimax/v1/files/retrieve`) and MiniMax music (`POST /minimax/v1/music_generation`, one long
// synchronous request answering hex or a URL) and Stability's Stable Audio
// (`POST /stability/v1/audio/stable-audio-2/text-to-audio`: multipart/form-data in, the file or
// base64 JSON out; stability-audio.ts). Results are real MP3/WAV bytes of a chosen length
// (audio-files.ts); files handed out by URL are served at `/__mock/audio/…` until the URL expires.
//
// Steered by `[[mock …]]` keys in the speech text (`input`, `text`) or the music `prompt`:
// audio_ms=N (the output's length; speech defaults to 60 ms per character of the text without
// directives, at least 500 ms, divided by the request's speed; music to the requested length),
// fail=STATUS (that HTTP status in the vendor's error shape; MiniMax 429 is HTTP 200 + base_resp
// 1002), base_fail=CODE (MiniMax: HTTP 200 with that base_resp status_code), latency_ms=N (delay
// before answering a POST), job_ms=N (MiniMax async: Processing for N ms), task_fail (MiniMax async
// ends Failed), broken_url (the download URL 404s), url_ttl_ms=N (MiniMax: the download URL
// expires N ms after the file is made, default 9 h; the async task then reports Expired),
// not_audio (200 with the audio content type but HTML bytes), fail_times=K (MiniMax: only the first K
// requests with the same text fail). A lone key means `=1`.
//
// Every POST (OpenAI and ElevenLabs speech, ElevenLabs music, the MiniMax speech submit, MiniMax
// music and Stable Audio) also meets the mock's faults (faults.ts): by its credential from the settings, or `fault=…`
// in the text or prompt; a status fault answers in the vendor's error shape (elevenFailure, minimaxFailure, stabilityFailure). The
// MiniMax query and file retrieval and the audio files are never faulted: a poll is not a new call upstream.
import { randomBytes, randomUUID } from 'node:crypto';
import type http from 'node:http';
import { audioInfo } from '../media/audio-duration.js';
import { mockMp3, mockWav } from './audio-files.js';
import { directivePairs, parseDirectives } from './directives.js';
import { badJson, errorJson, hasBearerToken, isRevokedCredential, missingApiKey, notFound, simulatedFailure, type MockError } from './errors.js';
import { bearerToken, playFault, retryAfterHeader, type FaultBook, type MockFault } from './faults.js';
import { recordBody, type MockRequestRecord } from './records.js';
import { STABILITY_TEXT_TO_AUDIO, readStabilityAudio, stabilityError, stabilityFailure } from './stability-audio.js';

export const AUDIO_FILES_PREFIX = '/__mock/audio/';
const LIMIT = 5000;
const MINIMAX_URL_TTL_MS = 9 * 3_600_000;

const OPENAI_SPEECH = '/openai/v1/audio/speech';
const ELEVEN_TTS = /^\/elevenlabs\/v1\/text-to-speech\/([^/]+)$/;
const ELEVEN_MUSIC = '/elevenlabs/v1/music';
const MINIMAX_SUBMIT = '/minimax/v1/t2a_async_v2';
const MINIMAX_QUERY = '/minimax/v1/query/t2a_async_query_v2';
const MINIMAX_RETRIEVE = '/minimax/v1/files/retrieve';
const MINIMAX_MUSIC = '/minimax/v1/music_generation';
const EXACT_PATHS: ReadonlySet<string> = new Set([OPENAI_SPEECH, ELEVEN_MUSIC, MINIMAX_SUBMIT, MINIMAX_QUERY, MINIMAX_RETRIEVE, MINIMAX_MUSIC, STABILITY_TEXT_TO_AUDIO]);

const OPENAI_MODELS = ['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'gpt-4o-mini-tts-2025-12-15'];
const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'onyx', 'nova', 'sage', 'shimmer', 'verse', 'marin', 'cedar'];
const OPENAI_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];
/** ElevenLabs models and their per-request character limits. */
const ELEVEN_MODELS: Readonly<Record<string, number>> = { eleven_v3: 5000, eleven_flash_v2_5: 40_000, eleven_multilingual_v2: 10_000 };
/** Premade ElevenLabs voices (Rachel, George, Sarah); any other 20-alphanumeric id passes as a cloned voice. */
export const ELEVENLABS_PREMADE_VOICES: readonly string[] = ['21m00Tcm4TlvDq8ikWAM', 'JBFqnCBsd6RMkjVDRZzb', 'EXAVITQu4vr4xnSDxMaL'];
const ELEVEN_VOICE_ID = /^[A-Za-z0-9]{20}$/;
const MINIMAX_SPEECH_MODELS = ['speech-2.6-hd', 'speech-2.6-turbo', 'speech-02-hd', 'speech-02-turbo', 'speech-01-hd', 'speech-01-turbo'];
const MINIMAX_MUSIC_MODELS = ['music-2.5', 'music-2.6'];
const MINIMAX_MESSAGES: Readonly<Record<number, string>> = {
  1000: 'unknown error', 1001: 'request timeout', 1002: 'rate limit exceeded(RPM)', 1004: 'authentication failed',
  1008: 'insufficient balance', 1026: 'input new_sensitive', 1027: 'output new_sensitive', 2013: 'invalid params', 2049: 'invalid api key',
};

type AudioFormat = 'mp3' | 'wav';
const CONTENT_TYPES: Record<AudioFormat, string> = { mp3: 'audio/mpeg', wav: 'audio/wav' };
const NOT_AUDIO = Buffer.from('<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>\n');

/** What the route hands over: server.ts's Exchange, seen structurally. */
export interface AudioExchange {
  readonly record: MockRequestRecord;
  after(ms: number, next: () => void): void;
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void;
}
type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** How to make a result's bytes: kept instead of the bytes so thousands of stored results cost little. */
interface Recipe {
  readonly format: AudioFormat;
  readonly ms: number;
  readonly tag: string;
  readonly notAudio: boolean;
}
const render = (recipe: Recipe): Buffer =>
  recipe.notAudio ? NOT_AUDIO : recipe.format === 'wav' ? mockWav(recipe.ms / 1000, recipe.tag) : mockMp3(recipe.ms / 1000, recipe.tag);

interface StoredFile {
  readonly recipe: Recipe;
  readonly expiresAtMs: number;
  readonly broken: boolean;
}

interface SpeechTask {
  readonly taskId: number;
  readonly fileId: number;
  readonly createdMs: number;
  readonly jobMs: number;
  readonly failed: boolean;
  readonly urlTtlMs: number;
  readonly brokenUrl: boolean;
  readonly recipe: Recipe;
  /** The result's file name, made when the task is first seen succeeded. */
  file?: string;
}

interface Keys {
  audioMs: number | undefined;
  fail: number | undefined;
  baseFail: number | undefined;
  /** Only the first K requests with this text fail (then the call goes through). */
  failTimes: number | undefined;
  /** The text the keys came from (what `failTimes` counts by). */
  text: string;
  jobMs: number | undefined;
  latencyMs: number;
  urlTtlMs: number | undefined;
  taskFail: boolean;
  brokenUrl: boolean;
  notAudio: boolean;
}

function readKeys(text: string): Keys {
  const pairs = directivePairs(text);
  const count = (name: string) => (/^\d{1,9}$/.test(pairs.get(name) ?? '') ? Number(pairs.get(name)) : undefined);
  const flag = (name: string) => pairs.get(name) === '1' || pairs.get(name) === 'true';
  const fail = count('fail');
  return {
    audioMs: count('audio_ms'), fail: fail !== undefined && fail >= 400 && fail <= 599 ? fail : undefined, baseFail: count('base_fail'), failTimes: count('fail_times'), text,
    jobMs: count('job_ms'), latencyMs: count('latency_ms') ?? 0, urlTtlMs: count('url_ttl_ms'),
    taskFail: flag('task_fail'), brokenUrl: flag('broken_url'), notAudio: flag('not_audio'),
  };
}

/** The text as spoken: `[[mock …]]` blocks (as directives.ts finds them) removed. */
const spoken = (text: string) => text.replace(/\[\[mock(?:\s[\s\S]*?)?\]\]/g, '');
const characters = (text: string) => [...text].length;

/** Default speech length: 60 ms a character of the text without directives, at least 500 ms, faster speech shorter. */
export function defaultSpeechMs(text: string, speed = 1): number {
  return Math.round(Math.max(500, 60 * characters(spoken(text))) / speed);
}

function speechMs(keys: Keys, text: string, speed: number): number {
  return keys.audioMs ?? defaultSpeechMs(text, speed);
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
/** MiniMax ids are int64s sent as JSON numbers; these stay below 2^53 so they survive JSON.parse. */
const minimaxId = () => Math.floor(1e13 + Math.random() * (9e15 - 1e13));

/** The audio vendors of one mock: their MiniMax tasks and the files handed out by URL. */
export class AudioVendors {
  private readonly tasks = new Map<number, SpeechTask>();
  private readonly tasksByFile = new Map<number, SpeechTask>();
  private readonly files = new Map<string, StoredFile>();
  /** Failures so far of texts steered with fail_times. */
  private readonly failures = new Map<string, number>();
  /** Where the mock serves files (set once it listens). */
  url = '';

  constructor(private readonly defaultJobMs: number) {}

  /** Whether `path` belongs to an audio API or the audio files. */
  static handles(path: string): boolean {
    return path.startsWith(AUDIO_FILES_PREFIX) || EXACT_PATHS.has(path) || ELEVEN_TTS.test(path);
  }

  route(req: http.IncomingMessage, res: http.ServerResponse, exchange: AudioExchange, faults: FaultBook, path: string, query: string, readBody: ReadBody): void {
    if (path.startsWith(AUDIO_FILES_PREFIX)) return this.serveFile(req, res, path);
    const params = new URLSearchParams(query);
    const post = req.method === 'POST';
    if (path === OPENAI_SPEECH) {
      if (post) return readBody(req, (err, text) => this.openaiSpeech(res, exchange, faults, err, text));
    } else if (path.startsWith('/elevenlabs/')) {
      const apiKey = req.headers['xi-api-key'];
      exchange.record.authorization = typeof apiKey === 'string' && apiKey !== '' ? apiKey : undefined;
      const voice = ELEVEN_TTS.exec(path);
      if (post) return readBody(req, (err, text) => this.eleven(res, exchange, faults, err, text, params.get('output_format'), voice ? voice[1]! : undefined));
      req.resume();
      return exchange.sendJson(405, JSON.stringify({ detail: 'Method Not Allowed' }));
    } else if (path === STABILITY_TEXT_TO_AUDIO) {
      if (post) return readBody(req, (err, text) => this.stability(res, exchange, faults, err, text, req.headers['content-type'], req.headers.accept));
    } else {
      if (post && path === MINIMAX_SUBMIT) return readBody(req, (err, text) => this.minimaxSubmit(exchange, faults, err, text));
      if (post && path === MINIMAX_MUSIC) return readBody(req, (err, text) => this.minimaxMusic(exchange, faults, err, text));
      req.resume();
      if (req.method === 'GET' && path === MINIMAX_QUERY) return this.minimaxQuery(exchange, params.get('task_id'));
      if (req.method === 'GET' && path === MINIMAX_RETRIEVE) return this.minimaxRetrieve(exchange, params.get('file_id'));
      return exchange.sendJson(404, JSON.stringify({ base_resp: { status_code: 404, status_msg: `no route for ${req.method} ${path}` } }));
    }
    req.resume();
    const err = notFound(req.method ?? 'GET', path);
    exchange.sendJson(err.status, errorJson(err));
  }

  // --- OpenAI --------------------------------------------------------------------------------------

  private openaiSpeech(res: http.ServerResponse, exchange: AudioExchange, faults: FaultBook, err: MockError | undefined, text: string): void {
    const send = (e: MockError) => exchange.sendJson(e.status, errorJson(e), e.status === 429 ? { 'retry-after': '1' } : undefined);
    if (err) return send(err);
    const parseError = recordBody(exchange.record, text);
    const authorization = exchange.record.authorization;
    if (!hasBearerToken(authorization)) return send(missingApiKey);
    if (isRevokedCredential(authorization)) return send(simulatedFailure(401));
    if (parseError !== undefined) return send(badJson(parseError));
    const request = readOpenaiSpeech(exchange.record.body);
    if ('status' in request) return send(request);
    const keys = readKeys(request.input);
    const fault = faults.meet(bearerToken(authorization), parseDirectives(request.input));
    exchange.after(keys.latencyMs, () => {
      if (played(fault, exchange, (status, headers) => exchange.sendJson(status, errorJson(simulatedFailure(status, fault?.retryAfterSeconds)), headers))) return;
      if (keys.fail !== undefined) return send(simulatedFailure(keys.fail));
      const recipe: Recipe = { format: request.format, ms: speechMs(keys, request.input, request.speed), tag: exchange.record.id, notAudio: keys.notAudio };
      sendAudio(res, exchange, recipe, { 'x-request-id': `req_${randomBytes(16).toString('hex')}` });
    });
  }

  // --- ElevenLabs ----------------------------------------------------------------------------------

  /** Text-to-speech when `voiceId` is given, else music. */
  private eleven(res: http.ServerResponse, exchange: AudioExchange, faults: FaultBook, err: MockError | undefined, text: string, outputFormat: string | null, voiceId: string | undefined): void {
    const detail = (status: number, body: unknown) => exchange.sendJson(status, JSON.stringify({ detail: body }));
    const missing = (field: string) => detail(422, [{ loc: ['body', field], msg: 'field required', type: 'value_error.missing' }]);
    if (err) return detail(err.status, { status: 'invalid_request', message: err.message });
    const parseError = recordBody(exchange.record, text);
    if (exchange.record.authorization === undefined) return detail(401, { status: 'invalid_api_key', message: 'Invalid API key' });
    if (parseError !== undefined) return detail(422, [{ loc: ['body', 0], msg: `Expecting value: ${parseError}`, type: 'value_error.jsondecode' }]);
    const body = exchange.record.body;
    if (!isObject(body)) return detail(422, [{ loc: ['body'], msg: 'value is not a valid dict', type: 'type_error.dict' }]);
    const format = outputFormat === null || /^mp3_\d+_\d+$/.test(outputFormat) ? 'mp3' : /^wav_\d+$/.test(outputFormat) ? 'wav' : undefined;
    if (format === undefined) {
      return detail(422, { status: 'invalid_output_format', message: `Invalid output format '${outputFormat}'. The mock produces mp3_<sample rate>_<kbps> and wav_<sample rate>.` });
    }
    let prompt: string;
    let ms: (keys: Keys) => number;
    if (voiceId !== undefined) {
      if (typeof body.text !== 'string' || body.text === '') return missing('text');
      let voice = voiceId;
      try { voice = decodeURIComponent(voiceId); } catch { /* kept as sent: it fails the check below */ }
      if (!ELEVEN_VOICE_ID.test(voice) && !ELEVENLABS_PREMADE_VOICES.includes(voice)) {
        return detail(404, { status: 'voice_not_found', message: `A voice with voice_id ${voice} does not exist.` });
      }
      const model = body.model_id ?? 'eleven_multilingual_v2';
      const limit = typeof model === 'string' ? ELEVEN_MODELS[model] : undefined;
      if (limit === undefined) return detail(400, { status: 'model_not_found', message: `A model with model ID ${String(model)} does not exist.` });
      if (characters(body.text) > limit) {
        return detail(400, { status: 'max_character_limit_exceeded', message: `Text is too long: ${characters(body.text)} characters, ${model} takes at most ${limit}.` });
      }
      const settings = isObject(body.voice_settings) ? body.voice_settings : {};
      // ElevenLabs' speed setting runs 0.7..1.2; out-of-range values are left to the real API to refuse.
      const speed = isNumber(settings.speed) && settings.speed >= 0.7 && settings.speed <= 1.2 ? settings.speed : 1;
      prompt = body.text;
      ms = (keys) => speechMs(keys, prompt, speed);
    } else {
      if (typeof body.prompt !== 'string' || body.prompt === '') return missing('prompt');
      const length = body.music_length_ms;
      if (length !== undefined && length !== null && !(Number.isInteger(length) && (length as number) >= 3000 && (length as number) <= 600_000)) {
        const low = !isNumber(length) || length < 3000;
        return detail(422, [{
          loc: ['body', 'music_length_ms'], msg: `ensure this value is ${low ? 'greater than or equal to 3000' : 'less than or equal to 600000'}`,
          type: low ? 'value_error.number.not_ge' : 'value_error.number.not_le', ctx: { limit_value: low ? 3000 : 600_000 },
        }]);
      }
      if (body.model_id !== undefined && body.model_id !== 'music_v1') {
        return detail(400, { status: 'model_not_found', message: `A model with model ID ${String(body.model_id)} does not exist.` });
      }
      if (/\bcopyrighted\b/i.test(body.prompt)) {
        const suggestion = `An original piece: ${spoken(body.prompt).replace(/\bcopyrighted\b/gi, '').replace(/\s+/g, ' ').trim()}`;
        return detail(400, { status: 'bad_prompt', message: 'The prompt references copyrighted material.', data: { prompt_suggestion: suggestion } });
      }
      prompt = body.prompt;
      ms = (keys) => keys.audioMs ?? (isNumber(length) ? length : 30_000);
    }
    const keys = readKeys(prompt);
    const sendFailure = (status: number, headers: Record<string, string> | undefined) => exchange.sendJson(status, JSON.stringify({ detail: elevenFailure(status) }), headers);
    const fault = faults.meet(exchange.record.authorization, parseDirectives(prompt));
    exchange.after(keys.latencyMs, () => {
      if (played(fault, exchange, sendFailure)) return;
      if (keys.fail !== undefined) return sendFailure(keys.fail, retryAfterHeader(keys.fail, undefined));
      const recipe: Recipe = { format, ms: ms(keys), tag: exchange.record.id, notAudio: keys.notAudio };
      sendAudio(res, exchange, recipe, { 'request-id': randomBytes(10).toString('hex'), ...(voiceId !== undefined ? { 'x-character-count': String(characters(prompt)) } : {}) });
    });
  }

  // --- MiniMax -------------------------------------------------------------------------------------

  /** The common start of a MiniMax POST: the body as an object, or the answer already sent (undefined). */
  private minimaxBody(exchange: AudioExchange, err: MockError | undefined, text: string): Record<string, unknown> | undefined {
    const parseError = recordBody(exchange.record, text);
    if (!hasBearerToken(exchange.record.authorization)) return void minimaxError(exchange, 200, 1004);
    if (err) return void minimaxError(exchange, err.status, 2013, err.message);
    if (parseError !== undefined || !isObject(exchange.record.body)) return void minimaxError(exchange, 200, 2013, 'request body is not a JSON object');
    return exchange.record.body;
  }

  /** Steering shared by the MiniMax POSTs: latency, then a fault, a simulated failure or `answer`. */
  private minimaxAnswer(exchange: AudioExchange, faults: FaultBook, keys: Keys, answer: () => void): void {
    const fault = faults.meet(bearerToken(exchange.record.authorization), parseDirectives(keys.text));
    exchange.after(keys.latencyMs, () => {
      if (played(fault, exchange, (status, headers) => minimaxFailure(exchange, status, headers))) return;
      if (keys.failTimes !== undefined) {
        const failed = this.failures.get(keys.text) ?? 0;
        if (failed >= keys.failTimes) return answer();
        this.failures.set(keys.text, failed + 1);
        if (this.failures.size > LIMIT) this.failures.delete(this.failures.keys().next().value!);
      }
      if (keys.fail !== undefined) return minimaxFailure(exchange, keys.fail, undefined);
      if (keys.baseFail !== undefined && keys.baseFail !== 0) return minimaxError(exchange, 200, keys.baseFail);
      answer();
    });
  }

  private minimaxSubmit(exchange: AudioExchange, faults: FaultBook, err: MockError | undefined, text: string): void {
    const body = this.minimaxBody(exchange, err, text);
    if (!body) return;
    const request = readMinimaxSpeech(body);
    if (typeof request === 'string') return minimaxError(exchange, 200, 2013, request);
    const keys = readKeys(request.text);
    this.minimaxAnswer(exchange, faults, keys, () => {
      const task: SpeechTask = {
        taskId: minimaxId(), fileId: minimaxId(), createdMs: Date.now(), jobMs: keys.jobMs ?? this.defaultJobMs, failed: keys.taskFail,
        urlTtlMs: keys.urlTtlMs ?? MINIMAX_URL_TTL_MS, brokenUrl: keys.brokenUrl,
        recipe: { format: request.format, ms: speechMs(keys, request.text, request.speed), tag: exchange.record.id, notAudio: keys.notAudio },
      };
      this.tasks.set(task.taskId, task);
      this.tasksByFile.set(task.fileId, task);
      if (this.tasks.size > LIMIT) {
        const oldest = this.tasks.values().next().value as SpeechTask;
        this.tasks.delete(oldest.taskId);
        this.tasksByFile.delete(oldest.fileId);
      }
      exchange.sendJson(200, JSON.stringify({
        task_id: task.taskId, task_token: randomBytes(16).toString('hex'), file_id: task.fileId, usage_characters: characters(request.text),
        base_resp: { status_code: 0, status_msg: 'success' },
      }));
    });
  }

  private minimaxQuery(exchange: AudioExchange, taskId: string | null): void {
    if (!hasBearerToken(exchange.record.authorization)) return minimaxError(exchange, 200, 1004);
    const task = taskId !== null && /^\d{1,16}$/.test(taskId) ? this.tasks.get(Number(taskId)) : undefined;
    if (!task) return minimaxError(exchange, 200, 2013, 'task_id not found');
    const status = this.statusOf(task);
    exchange.sendJson(200, JSON.stringify({ task_id: task.taskId, status, file_id: task.fileId, base_resp: { status_code: 0, status_msg: 'success' } }));
  }

  private minimaxRetrieve(exchange: AudioExchange, fileId: string | null): void {
    if (!hasBearerToken(exchange.record.authorization)) return minimaxError(exchange, 200, 1004);
    const task = fileId !== null && /^\d{1,16}$/.test(fileId) ? this.tasksByFile.get(Number(fileId)) : undefined;
    const status = task ? this.statusOf(task) : undefined;
    if (!task || (status !== 'Success' && status !== 'Expired')) return minimaxError(exchange, 200, 2013, 'file_id not found');
    const name = this.fileOf(task);
    exchange.sendJson(200, JSON.stringify({
      file: {
        file_id: task.fileId, bytes: render(task.recipe).length, created_at: Math.floor((task.createdMs + task.jobMs) / 1000),
        filename: `output.${task.recipe.format}`, purpose: 't2a_async', download_url: `${this.url}${AUDIO_FILES_PREFIX}${name}`,
      },
      base_resp: { status_code: 0, status_msg: 'success' },
    }));
  }

  private statusOf(task: SpeechTask): 'Processing' | 'Success' | 'Failed' | 'Expired' {
    const endMs = task.createdMs + task.jobMs;
    const now = Date.now();
    if (now < endMs) return 'Processing';
    if (task.failed) return 'Failed';
    return now >= endMs + task.urlTtlMs ? 'Expired' : 'Success';
  }

  /** The task's result file, stored the first time it is asked for. */
  private fileOf(task: SpeechTask): string {
    task.file ??= this.store(task.recipe, task.createdMs + task.jobMs + task.urlTtlMs, task.brokenUrl);
    return task.file;
  }

  private minimaxMusic(exchange: AudioExchange, faults: FaultBook, err: MockError | undefined, text: string): void {
    const body = this.minimaxBody(exchange, err, text);
    if (!body) return;
    const request = readMinimaxMusic(body);
    if (typeof request === 'string') return minimaxError(exchange, 200, 2013, request);
    const keys = readKeys(request.prompt);
    this.minimaxAnswer(exchange, faults, keys, () => {
      const recipe: Recipe = { format: request.format, ms: keys.audioMs ?? 30_000, tag: exchange.record.id, notAudio: keys.notAudio };
      const bytes = render(recipe);
      const audio = request.url
        ? `${this.url}${AUDIO_FILES_PREFIX}${this.store(recipe, Date.now() + (keys.urlTtlMs ?? MINIMAX_URL_TTL_MS), keys.brokenUrl)}`
        : bytes.toString('hex');
      const seconds = audioInfo(bytes)?.seconds;
      exchange.sendJson(200, JSON.stringify({
        data: { audio, status: 2 },
        extra_info: {
          music_duration: seconds === undefined ? recipe.ms : Math.round(seconds * 1000),
          // What the bytes really are (audio-files.ts), whatever audio_setting asked for.
          music_sample_rate: recipe.format === 'wav' ? 8000 : 32000, music_channel: 1, bitrate: recipe.format === 'wav' ? 64_000 : 32_000, music_size: bytes.length,
        },
        trace_id: randomBytes(16).toString('hex'),
        base_resp: { status_code: 0, status_msg: 'success' },
      }));
    });
  }

  // --- Stability AI --------------------------------------------------------------------------------

  /** Stable Audio text-to-audio: the form is checked, then the file (or base64 JSON) of the asked length. */
  private stability(res: http.ServerResponse, exchange: AudioExchange, faults: FaultBook, err: MockError | undefined, text: string, contentType: string | undefined, accept: string | undefined): void {
    if (err) return exchange.sendJson(err.status, err.status === 413 ? stabilityFailure(413) : stabilityError('bad_request', `body: ${err.message}`));
    const authorization = exchange.record.authorization;
    if (!hasBearerToken(authorization)) return exchange.sendJson(401, stabilityFailure(401));
    const read = readStabilityAudio(text, contentType, accept);
    if (typeof read === 'string') return exchange.sendJson(400, stabilityError('bad_request', read));
    exchange.record.body = read.fields;
    const request = read.request;
    if (typeof request === 'string') return exchange.sendJson(400, stabilityError('bad_request', request));
    const keys = readKeys(request.prompt);
    const sendFailure = (status: number, headers: Record<string, string> | undefined) => exchange.sendJson(status, stabilityFailure(status), headers);
    const fault = faults.meet(bearerToken(authorization), parseDirectives(request.prompt));
    exchange.after(keys.latencyMs, () => {
      if (played(fault, exchange, sendFailure)) return;
      if (keys.fail !== undefined) return sendFailure(keys.fail, retryAfterHeader(keys.fail, undefined));
      const recipe: Recipe = { format: request.format, ms: keys.audioMs ?? request.seconds * 1000, tag: exchange.record.id, notAudio: keys.notAudio };
      if (request.json) return exchange.sendJson(200, JSON.stringify({ audio: render(recipe).toString('base64'), finish_reason: 'SUCCESS', seed: request.seed }));
      sendAudio(res, exchange, recipe, { 'finish-reason': 'SUCCESS', seed: String(request.seed), 'x-request-id': randomBytes(16).toString('hex') });
    });
  }

  // --- Files ---------------------------------------------------------------------------------------

  private store(recipe: Recipe, expiresAtMs: number, broken: boolean): string {
    const name = `${randomUUID()}.${recipe.format}`;
    this.files.set(name, { recipe, expiresAtMs, broken });
    if (this.files.size > LIMIT) this.files.delete(this.files.keys().next().value as string);
    return name;
  }

  private serveFile(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
    req.resume();
    const file = req.method === 'GET' || req.method === 'HEAD' ? this.files.get(path.slice(AUDIO_FILES_PREFIX.length)) : undefined;
    if (!file || file.broken || Date.now() >= file.expiresAtMs) {
      const body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>';
      return void res.writeHead(404, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
    }
    const bytes = render(file.recipe);
    res.writeHead(200, { 'content-type': CONTENT_TYPES[file.recipe.format], 'content-length': bytes.length });
    res.end(req.method === 'HEAD' ? undefined : bytes);
  }
}

/** A synchronous vendor's 200: the file's bytes (or, for not_audio, HTML) with the audio content type. */
function sendAudio(res: http.ServerResponse, exchange: AudioExchange, recipe: Recipe, headers: Record<string, string>): void {
  if (res.destroyed || res.headersSent) return;
  const bytes = render(recipe);
  exchange.record.status = 200;
  res.writeHead(200, { 'content-type': CONTENT_TYPES[recipe.format], 'content-length': bytes.length, ...headers }).end(bytes);
}

/** Plays the fault a POST met, if any: true when it is the whole answer (every audio answer is one body, so a `cut` resets). */
function played(fault: MockFault | undefined, exchange: AudioExchange, sendStatus: (status: number, headers: Record<string, string> | undefined) => void): boolean {
  return fault !== undefined && playFault(fault, false, exchange, sendStatus);
}

/** ElevenLabs' `detail` for a failure status (`fail=` and status faults). */
function elevenFailure(status: number): { status: string; message: string } {
  if (status === 429) return { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests (mock).' };
  if (status === 401) return { status: 'invalid_api_key', message: 'Invalid API key' };
  if (status >= 500) return { status: 'internal_server_error', message: `Mock upstream failure (${status}).` };
  return { status: 'mock_failure', message: `Mock request failure (${status}).` };
}

/**
 * MiniMax's answer to a failure status (`fail=` and status faults): a rate limit is HTTP 200 with
 * base_resp 1002 and no Retry-After, as MiniMax sends it; other statuses are that HTTP status with
 * base_resp 1000 (5xx), 1004 (401) or 2013, and the fault's Retry-After if it has one.
 */
function minimaxFailure(exchange: AudioExchange, status: number, headers: Record<string, string> | undefined): void {
  if (status === 429) return minimaxError(exchange, 200, 1002);
  minimaxError(exchange, status, status >= 500 ? 1000 : status === 401 ? 1004 : 2013, undefined, headers);
}

/** MiniMax's error envelope: usually HTTP 200, the failure in base_resp. */
function minimaxError(exchange: AudioExchange, httpStatus: number, code: number, detail?: string, headers?: Record<string, string>): void {
  const known = MINIMAX_MESSAGES[code] ?? `mock failure (${code})`;
  const status_msg = detail === undefined ? known : `${known}, ${detail}`;
  exchange.sendJson(httpStatus, JSON.stringify({ trace_id: randomBytes(16).toString('hex'), base_resp: { status_code: code, status_msg } }), headers);
}

const oaiError = (param: string, message: string, code = 'invalid_value'): MockError => ({ status: 400, message, type: 'invalid_request_error', code, param });

/** OpenAI's checks on a speech request, in its order; an error names the offending param. */
function readOpenaiSpeech(body: unknown): { input: string; format: AudioFormat; speed: number } | MockError {
  if (!isObject(body)) return oaiError('', 'The request body must be a JSON object.', 'invalid_type');
  const { model, input, voice } = body;
  if (model === undefined) return oaiError('model', "Missing required parameter: 'model'.", 'missing_required_parameter');
  if (typeof model !== 'string' || !OPENAI_MODELS.includes(model)) {
    return oaiError('model', `Invalid value: '${String(model)}'. Supported values are: ${OPENAI_MODELS.map((m) => `'${m}'`).join(', ')}.`);
  }
  if (input === undefined) return oaiError('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  if (typeof input !== 'string') return oaiError('input', "Invalid type for 'input': expected a string.", 'invalid_type');
  if (input.length === 0) return oaiError('input', "Invalid 'input': empty string. Expected a string with minimum length 1.", 'empty_string');
  if (input.length > 4096) return oaiError('input', `Invalid 'input': string too long. Expected a string with maximum length 4096, but got a string with length ${input.length} instead.`, 'string_above_max_length');
  if (voice === undefined) return oaiError('voice', "Missing required parameter: 'voice'.", 'missing_required_parameter');
  const customVoice = isObject(voice) && typeof voice.id === 'string' && voice.id.startsWith('voice_');
  if (!customVoice && (typeof voice !== 'string' || !OPENAI_VOICES.includes(voice))) {
    return oaiError('voice', `Invalid value: '${typeof voice === 'string' ? voice : JSON.stringify(voice)}'. Supported values are: ${OPENAI_VOICES.map((v) => `'${v}'`).join(', ')}.`);
  }
  const format = body.response_format ?? 'mp3';
  if (typeof format !== 'string' || !OPENAI_FORMATS.includes(format)) {
    return oaiError('response_format', `Invalid value: '${String(format)}'. Supported values are: ${OPENAI_FORMATS.map((f) => `'${f}'`).join(', ')}.`);
  }
  if (format !== 'mp3' && format !== 'wav') return oaiError('response_format', `The mock vendor produces only 'mp3' and 'wav', not '${format}'.`, 'unsupported_value');
  const speed = body.speed ?? 1;
  if (!isNumber(speed)) return oaiError('speed', "Invalid type for 'speed': expected a number.", 'invalid_type');
  if (speed < 0.25) return oaiError('speed', `Invalid 'speed': decimal below minimum value. Expected a value >= 0.25, but got ${speed} instead.`, 'decimal_below_min_value');
  if (speed > 4) return oaiError('speed', `Invalid 'speed': decimal above maximum value. Expected a value <= 4, but got ${speed} instead.`, 'decimal_above_max_value');
  if (body.instructions !== undefined && body.instructions !== null && (model === 'tts-1' || model === 'tts-1-hd')) {
    return oaiError('instructions', `Instructions are not supported for the model '${model}'.`, 'unsupported_parameter');
  }
  return { input, format, speed };
}

/** MiniMax's checks on an async speech request: its fields, or the detail of `invalid params, …`. */
function readMinimaxSpeech(body: Record<string, unknown>): { text: string; format: AudioFormat; speed: number } | string {
  if (typeof body.model !== 'string' || !MINIMAX_SPEECH_MODELS.includes(body.model)) return `model ${JSON.stringify(body.model ?? null)} is not supported`;
  if (typeof body.text !== 'string' || body.text === '') return 'text is required';
  if (characters(body.text) > 1_000_000) return 'text exceeds 1000000 characters';
  const voice = isObject(body.voice_setting) ? body.voice_setting : undefined;
  if (!voice || typeof voice.voice_id !== 'string' || voice.voice_id === '') return 'voice_setting.voice_id is required';
  const speed = voice.speed ?? 1;
  if (!isNumber(speed) || speed < 0.5 || speed > 2) return 'voice_setting.speed must be in [0.5, 2]';
  if (voice.vol !== undefined && !(isNumber(voice.vol) && voice.vol > 0 && voice.vol <= 10)) return 'voice_setting.vol must be in (0, 10]';
  if (voice.pitch !== undefined && !(Number.isInteger(voice.pitch) && Math.abs(voice.pitch as number) <= 12)) return 'voice_setting.pitch must be an integer in [-12, 12]';
  const audio = isObject(body.audio_setting) ? body.audio_setting : {};
  const setting = readMinimaxAudio(audio, [8000, 16000, 22050, 24000, 32000, 44100]);
  if (typeof setting === 'string') return setting;
  if (audio.channel !== undefined && audio.channel !== 1 && audio.channel !== 2) return 'audio_setting.channel must be 1 or 2';
  return { text: body.text, format: setting.format, speed };
}

/** MiniMax's checks on a music request. */
function readMinimaxMusic(body: Record<string, unknown>): { prompt: string; format: AudioFormat; url: boolean } | string {
  if (typeof body.model !== 'string' || !MINIMAX_MUSIC_MODELS.includes(body.model)) return `model ${JSON.stringify(body.model ?? null)} is not supported`;
  if (typeof body.prompt !== 'string' || body.prompt === '') return 'prompt is required';
  if (characters(body.prompt) > 2000) return 'prompt exceeds 2000 characters';
  if (body.is_instrumental !== true && (typeof body.lyrics !== 'string' || body.lyrics.trim() === '')) return 'lyrics is required when is_instrumental is not true';
  if (typeof body.lyrics === 'string' && characters(body.lyrics) > 3500) return 'lyrics exceeds 3500 characters';
  const output = body.output_format ?? 'hex';
  if (output !== 'hex' && output !== 'url') return "output_format must be 'hex' or 'url'";
  const setting = readMinimaxAudio(isObject(body.audio_setting) ? body.audio_setting : {}, [16000, 24000, 32000, 44100]);
  if (typeof setting === 'string') return setting;
  return { prompt: body.prompt, format: setting.format, url: output === 'url' };
}

/** `audio_setting`'s format (mp3 default) after checking sample_rate and bitrate; else the problem. */
function readMinimaxAudio(audio: Record<string, unknown>, rates: readonly number[]): { format: AudioFormat } | string {
  if (audio.sample_rate !== undefined && !rates.includes(audio.sample_rate as number)) return `audio_setting.sample_rate must be one of ${rates.join(', ')}`;
  if (audio.bitrate !== undefined && ![32000, 64000, 128000, 256000].includes(audio.bitrate as number)) return 'audio_setting.bitrate must be one of 32000, 64000, 128000, 256000';
  const format = audio.format ?? 'mp3';
  if (format !== 'mp3' && format !== 'wav') return `audio_setting.format ${JSON.stringify(format)} is not supported by the mock (mp3, wav)`;
  return { format };
}
