// Black Forest Labs' FLUX API, submit and poll. `POST /bfl/v1/<model>` (key in `x-key`) answers a
// task id and its polling_url; `GET /bfl/v1/get_result?id=…` answers Pending `polls=K` times
// (default 1), then Ready with `result.sample` served from the mock's files route, or the failure
// status `task_status=` chose. Errors in FastAPI's shape: `{"detail": "…"}`, or for 422 the list
// of bad fields.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { bflCost, isBflModel, jsonDecodeError, parseBflRequest } from './bfl-request.js';
import type { MockBehaviour } from './completion.js';
import { parseDirectives, type TaskFailure } from './directives.js';
import { isRevokedCredential, type MockError } from './errors.js';
import { playFault, retryAfterHeader, type FaultBook } from './faults.js';
import { fileUrlPath, type ImageHost } from './files.js';
import { randomId } from './ids.js';
import type { ImageExchange } from './images.js';
import { mockPng } from './png.js';
import { recordBody } from './records.js';

/** The image host with BFL's tasks, which its polling endpoint reads. */
export interface BflHost extends ImageHost {
  readonly tasks: BflTasks;
}

export const BFL_PREFIX = '/bfl/v1/';
const RESULT_PATH = '/bfl/v1/get_result';
const TASK_LIMIT = 1000;
const DEFAULT_POLLS = 1;

type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

interface Task {
  id: string;
  prompt: string;
  seed: number;
  /** Pending answers still to give, of `pendingTotal`. */
  pendingLeft: number;
  pendingTotal: number;
  final: 'Ready' | TaskFailure;
  brokenUrl: boolean;
  pollFail: number | undefined;
  /** Seconds since the epoch, as BFL reports times. */
  startTime: number;
  endTime?: number;
  /** Set at the first Ready answer; later polls hand out the same URL. */
  sample?: string;
}

/** The most recent TASK_LIMIT tasks; an older id is "Task not found", as an expired one upstream. */
export class BflTasks {
  private readonly tasks = new Map<string, Task>();

  add(task: Task): void {
    this.tasks.set(task.id, task);
    if (this.tasks.size > TASK_LIMIT) this.tasks.delete(this.tasks.keys().next().value as string);
  }

  get(id: string): Task | undefined {
    return this.tasks.get(id);
  }
}

const FAILURE_DETAILS: Readonly<Record<number, string>> = {
  400: 'Bad Request', 402: 'Insufficient credits', 403: 'Not authenticated', 404: 'Not Found',
  429: 'You have reached the limit of active tasks.', 500: 'Internal Server Error', 503: 'Service Unavailable',
};
const FAILURE_REASONS: Readonly<Record<TaskFailure, string>> = {
  'Error': 'The generation failed (mock).',
  'Content Moderated': 'The generated image was flagged by moderation (mock).',
  'Request Moderated': 'The prompt or input image was flagged by moderation (mock).',
};

function sendDetail(exchange: ImageExchange, status: number, detail: unknown, headers = retryAfterHeader(status, undefined)): void {
  exchange.sendJson(status, JSON.stringify({ detail }), headers);
}

/** What the `fail=` and `poll_fail=` directives (and a status fault) answer: the status with BFL's error body. */
function sendFailure(exchange: ImageExchange, status: number, headers?: Record<string, string>): void {
  const detail = status === 422 ? [{ loc: ['body'], msg: 'Mock validation failure', type: 'value_error' }] : FAILURE_DETAILS[status] ?? `Mock failure (${status}).`;
  sendDetail(exchange, status, detail, headers);
}

export function bflRoute(req: http.IncomingMessage, exchange: ImageExchange, path: string, query: string, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody, host: BflHost): void {
  const record = exchange.record;
  const key = req.headers['x-key'];
  record.authorization = typeof key === 'string' ? key : undefined;
  // A key containing "revoked" stands for one BFL no longer accepts.
  const authorized = record.authorization !== undefined && record.authorization !== '' && !isRevokedCredential(record.authorization);
  const model = path.slice(BFL_PREFIX.length);
  if (path !== RESULT_PATH && !isBflModel(model)) {
    req.resume();
    return sendDetail(exchange, 404, 'Not Found');
  }
  if (req.method !== (path === RESULT_PATH ? 'GET' : 'POST')) {
    req.resume();
    return sendDetail(exchange, 405, 'Method Not Allowed');
  }
  if (path === RESULT_PATH) {
    req.resume();
    record.id = randomId('poll_', 24);
    if (!authorized) return sendDetail(exchange, 403, 'Not authenticated');
    return poll(exchange, new URLSearchParams(query).get('id'), host);
  }
  record.id = randomUUID();
  readBody(req, (err, text) => {
    if (err) return sendDetail(exchange, err.status, err.message);
    const parsed = recordBody(record, text) === undefined;
    if (!authorized) return sendDetail(exchange, 403, 'Not authenticated');
    if (!parsed) return sendDetail(exchange, 422, jsonDecodeError);
    const request = parseBflRequest(record.body);
    if (Array.isArray(request)) return sendDetail(exchange, 422, request);
    if (request.inputImages.length > 0) record.referenceImages = request.inputImages;
    const directives = parseDirectives(request.prompt);
    // Faults play on the submit only (a poll is not a new call upstream).
    const fault = faults.meet(record.authorization, directives);
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, () => {
      if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => sendFailure(exchange, status, headers))) return;
      if (directives.fail !== undefined) return sendFailure(exchange, directives.fail);
      const polls = directives.polls ?? DEFAULT_POLLS;
      host.tasks.add({
        id: record.id, prompt: request.prompt, seed: request.seed ?? Math.floor(Math.random() * 2 ** 31),
        pendingLeft: polls, pendingTotal: polls, final: directives.taskStatus ?? 'Ready',
        brokenUrl: directives.brokenUrl === true, pollFail: directives.pollFail, startTime: Date.now() / 1000,
      });
      const { cost, inputMp, outputMp } = bflCost(model, request);
      exchange.sendJson(200, JSON.stringify({ id: record.id, polling_url: `${host.url}${RESULT_PATH}?id=${record.id}`, cost, input_mp: inputMp, output_mp: outputMp }));
    });
  });
}

function poll(exchange: ImageExchange, id: string | null, host: BflHost): void {
  if (id === null || id === '') return sendDetail(exchange, 422, [{ loc: ['query', 'id'], msg: 'Field required', type: 'missing' }]);
  const task = host.tasks.get(id);
  if (task === undefined) return exchange.sendJson(404, JSON.stringify({ id, status: 'Task not found' }));
  if (task.pollFail !== undefined) return sendFailure(exchange, task.pollFail);
  if (task.pendingLeft > 0) {
    const progress = Math.round(((task.pendingTotal - task.pendingLeft) / (task.pendingTotal + 1)) * 100) / 100;
    task.pendingLeft--;
    return exchange.sendJson(200, JSON.stringify({ id, status: 'Pending', result: null, progress }));
  }
  task.endTime ??= Date.now() / 1000;
  if (task.final !== 'Ready') {
    return exchange.sendJson(200, JSON.stringify({ id, status: task.final, result: FAILURE_REASONS[task.final], progress: null }));
  }
  // broken_url: hand out the URL without storing the file behind it.
  task.sample ??= host.url + (task.brokenUrl ? fileUrlPath(id) : host.files.put(id, mockPng(id)));
  const duration = Math.round((task.endTime - task.startTime) * 1000) / 1000;
  exchange.sendJson(200, JSON.stringify({
    id, status: 'Ready',
    result: { sample: task.sample, prompt: task.prompt, seed: task.seed, start_time: task.startTime, end_time: task.endTime, duration },
    progress: 1,
  }));
}
