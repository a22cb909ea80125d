// Google Veo on the mock's Gemini API, a long-running operation as the real API runs one:
// `POST …/models/{model}:predictLongRunning` (key in `x-goog-api-key`, `instances: [{prompt}]`,
// `parameters` checked: durationSeconds 4|6|8, aspectRatio 16:9|9:16, resolution 720p|1080p|4k, 1080p
// and 4k only at 8 seconds, no 4k on a lite model) answers `{name: "models/{model}/operations/{id}"}`;
// `instances[0].image` (a first frame, `bytesBase64Encoded` and `mimeType`, PNG or JPEG) is checked;
// `GET …/{name}` answers `{name, done: false}` until the job ends, then `done: true` with
// `response.generateVideoResponse.generatedSamples[0].video.uri`, a file at `…/files/{id}:download?alt=media`
// served (an MP4 of the asked length) only to a request carrying the same key. Errors are Google's
// `{error:{code,message,status}}`. Prompt keys: job_ms, task_fail=CODE (the operation ends with
// `error{code,message}`; a number is the rpc code, a word is put in the message with code 13),
// filtered (done, no sample, raiMediaFilteredCount 1), submit_fail=STATUS, poll_fail=STATUS.
//
// Veo on Vertex AI, as Google serves it: `POST /v1/projects/{p}/locations/{r}/publishers/google/models/
// {model}:predictLongRunning` with an access token the mock issued (`Authorization: Bearer`), the
// same body and checks, answers `{name: "projects/{p}/locations/{r}/publishers/google/models/{model}/
// operations/{id}"}`; `POST …/models/{model}:fetchPredictOperation` `{operationName}` answers the
// operation, once done with `response.videos[0]` holding the MP4 itself (`bytesBase64Encoded`,
// `mimeType`), as Vertex does when no storageUri was sent. An operation belongs to its project: any
// valid token of the project polls it (tokens are replaced hourly). The same prompt keys apply.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { directivePairs, parseDirectives } from './directives.js';
import { playFault, type FaultBook } from './faults.js';
import { geminiErrorJson } from './gemini.js';
import { mockMp4 } from './mp4.js';
import { sniffMediaType } from '../media/sniff.js';
import { recordBody, type MockRequestRecord } from './records.js';
import type { MockError } from './errors.js';

const SUBMIT = /\/models\/([^/:]+):predictLongRunning$/;
const OPERATION = /\/(models\/[^/:]+\/operations\/[^/:]+)$/;
const FILE = /\/files\/([^/:]+):download$/;
const VERTEX_MODEL = /^\/v1\/(projects\/([^/]+)\/locations\/[^/]+\/publishers\/google\/models\/([^/:]+)):(predictLongRunning|fetchPredictOperation)$/;
const LIMIT = 2000;

interface Operation {
  readonly name: string;
  /** Who may poll it: the Gemini API key that made it, or `project:{id}` on Vertex AI. */
  readonly key: string;
  readonly vertex: boolean;
  readonly createdMs: number;
  readonly jobMs: number;
  readonly seconds: number;
  readonly failure: string | undefined;
  readonly filtered: boolean;
  readonly pollFail: number | undefined;
}

export interface VeoExchange {
  readonly record: MockRequestRecord;
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  reset(): void;
}

type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

const httpStatus = (value: string | undefined) => (/^[45]\d\d$/.test(value ?? '') ? Number(value) : undefined);

/** What is wrong with a submit body, as Google words it, or undefined. */
function invalidRequest(body: Record<string, any>, model: string): string | undefined {
  const instance = Array.isArray(body.instances) ? body.instances[0] : undefined;
  if (typeof instance?.prompt !== 'string' || instance.prompt === '') return 'instances[0].prompt is required.';
  if (instance.image !== undefined) {
    // A first frame, as both forms take it: the bytes themselves (no URL is fetched), PNG or JPEG.
    const { bytesBase64Encoded: data, mimeType } = (instance.image ?? {}) as Record<string, unknown>;
    if (typeof data !== 'string' || data === '') return 'instances[0].image.bytesBase64Encoded is required.';
    const kind = sniffMediaType(Buffer.from(data, 'base64'))?.contentType;
    if ((kind !== 'image/png' && kind !== 'image/jpeg') || mimeType !== kind) return `instances[0].image is not the ${String(mimeType)} image it says it is.`;
  }
  const parameters = (body.parameters ?? {}) as Record<string, unknown>;
  const duration = parameters.durationSeconds ?? 8;
  if (![4, 6, 8].includes(Number(duration))) return `durationSeconds must be 4, 6 or 8, got ${String(duration)}.`;
  if (parameters.aspectRatio !== undefined && !['16:9', '9:16'].includes(String(parameters.aspectRatio))) return `aspectRatio ${String(parameters.aspectRatio)} is not supported.`;
  const resolutions = model.includes('lite') ? ['720p', '1080p'] : ['720p', '1080p', '4k'];
  const resolution = String(parameters.resolution ?? '720p');
  if (!resolutions.includes(resolution)) return `resolution ${resolution} is not supported by ${model}.`;
  if (resolution !== '720p' && Number(duration) !== 8) return `resolution ${resolution} requires durationSeconds 8.`;
  return undefined;
}

/** The mock's Veo operations and their video files. */
export class VeoOperations {
  private readonly operations = new Map<string, Operation>();
  /** Where the mock serves files (set once it listens). */
  url = '';

  constructor(private readonly defaultJobMs: number) {}

  static handles(path: string, method: string | undefined): boolean {
    return (method === 'POST' && (SUBMIT.test(path) || VERTEX_MODEL.test(path))) || (method === 'GET' && (OPERATION.test(path) || FILE.test(path)));
  }

  /** `vertexToken`: whether an Authorization header holds an access token the mock issued (Vertex AI paths). */
  route(req: http.IncomingMessage, res: http.ServerResponse, exchange: VeoExchange, faults: FaultBook, path: string, query: string, readBody: ReadBody,
    vertexToken: (authorization: string | undefined) => boolean): void {
    const vertex = req.method === 'POST' ? VERTEX_MODEL.exec(path) : null;
    if (vertex) return this.routeVertex(req, exchange, vertex, readBody, vertexToken);
    const key = req.headers['x-goog-api-key'] ?? new URLSearchParams(query).get('key') ?? undefined;
    exchange.record.authorization = typeof key === 'string' ? key : undefined;
    const fail = (status: number, message: string, headers?: Record<string, string>) => exchange.sendJson(status, geminiErrorJson({ status, message }), headers);
    const submit = req.method === 'POST' ? SUBMIT.exec(path) : null;
    if (submit) {
      return readBody(req, (err, text) => {
        if (err) return fail(err.status, err.message);
        const parseError = recordBody(exchange.record, text);
        if (!exchange.record.authorization) return fail(403, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
        const body = exchange.record.body;
        if (parseError !== undefined || body === null || typeof body !== 'object' || Array.isArray(body)) return fail(400, 'Invalid JSON payload received.');
        const model = decodeURIComponent(submit[1]!);
        const invalid = invalidRequest(body as Record<string, any>, model);
        if (invalid !== undefined) return fail(400, invalid);
        const prompt = String((body as any).instances[0].prompt);
        const keys = directivePairs(prompt);
        const submitFail = httpStatus(keys.get('submit_fail'));
        if (submitFail !== undefined) return fail(submitFail, `Mock failure (${submitFail}).`);
        const fault = faults.meet(exchange.record.authorization, parseDirectives(prompt));
        if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => fail(status, `Mock failure (${status}).`, headers))) return;
        const operation = this.add(`models/${model}`, exchange.record.authorization, Number((body as any).parameters?.durationSeconds ?? 8), keys, false);
        return exchange.sendJson(200, JSON.stringify({ name: operation.name }));
      });
    }
    req.resume();
    if (!exchange.record.authorization) return fail(403, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
    const file = FILE.exec(path);
    if (file) return this.serveFile(res, exchange, decodeURIComponent(file[1]!), query, fail);
    const operation = this.operations.get(OPERATION.exec(path)![1]!);
    if (!operation || operation.key !== exchange.record.authorization) return fail(404, 'Operation not found.');
    if (operation.pollFail !== undefined) return fail(operation.pollFail, `Mock failure (${operation.pollFail}).`);
    exchange.sendJson(200, JSON.stringify(this.stateOf(operation)));
  }

  /** Vertex AI: a submit or a poll on the project's publisher model, with an access token the mock issued. */
  private routeVertex(req: http.IncomingMessage, exchange: VeoExchange, match: RegExpExecArray, readBody: ReadBody, vertexToken: (authorization: string | undefined) => boolean): void {
    const [, resource, project, encodedModel, method] = match as unknown as [string, string, string, string, string];
    const fail = (status: number, message: string) => exchange.sendJson(status, geminiErrorJson({ status, message }));
    readBody(req, (err, text) => {
      if (err) return fail(err.status, err.message);
      const parseError = recordBody(exchange.record, text);
      if (!vertexToken(exchange.record.authorization)) return fail(401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
      const body = exchange.record.body;
      if (parseError !== undefined || body === null || typeof body !== 'object' || Array.isArray(body)) return fail(400, 'Invalid JSON payload received.');
      const model = decodeURIComponent(encodedModel);
      if (method === 'fetchPredictOperation') {
        const name = (body as Record<string, unknown>).operationName;
        const operation = typeof name === 'string' && name.startsWith(`${resource}/operations/`) ? this.operations.get(name) : undefined;
        if (!operation || operation.key !== `project:${project}`) return fail(404, 'Operation not found.');
        if (operation.pollFail !== undefined) return fail(operation.pollFail, `Mock failure (${operation.pollFail}).`);
        return exchange.sendJson(200, JSON.stringify(this.stateOf(operation)));
      }
      const invalid = invalidRequest(body as Record<string, any>, model);
      if (invalid !== undefined) return fail(400, invalid);
      const keys = directivePairs(String((body as any).instances[0].prompt));
      const submitFail = httpStatus(keys.get('submit_fail'));
      if (submitFail !== undefined) return fail(submitFail, `Mock failure (${submitFail}).`);
      const operation = this.add(resource, `project:${project}`, Number((body as any).parameters?.durationSeconds ?? 8), keys, true);
      return exchange.sendJson(200, JSON.stringify({ name: operation.name }));
    });
  }

  /** A new operation of the model at `resource` (`models/{model}`, or Vertex AI's publisher model path). */
  private add(resource: string, key: string, seconds: number, keys: Map<string, string>, vertex: boolean): Operation {
    const jobMs = /^\d{1,9}$/.test(keys.get('job_ms') ?? '') ? Number(keys.get('job_ms')) : this.defaultJobMs;
    const operation: Operation = {
      name: `${resource}/operations/${randomUUID().replace(/-/g, '').slice(0, 12)}`, key, vertex, createdMs: Date.now(), jobMs, seconds,
      failure: keys.get('task_fail'), filtered: keys.has('filtered'), pollFail: httpStatus(keys.get('poll_fail')),
    };
    this.operations.set(operation.name, operation);
    if (this.operations.size > LIMIT) this.operations.delete(this.operations.keys().next().value as string);
    return operation;
  }

  private stateOf(operation: Operation): Record<string, unknown> {
    const metadata = { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningMetadata' };
    if (Date.now() - operation.createdMs < operation.jobMs) return { name: operation.name, metadata };
    if (operation.failure !== undefined) {
      const code = /^\d{1,2}$/.test(operation.failure) ? Number(operation.failure) : 13;
      return { name: operation.name, metadata, done: true, error: { code, message: `The operation failed (mock): ${operation.failure}.` } };
    }
    const filtered = { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['The prompt could not be rendered under the safety policy (mock).'] };
    if (operation.vertex) {
      const videos = operation.filtered ? {} : { videos: [{ bytesBase64Encoded: mockMp4(operation.seconds, operation.name).toString('base64'), mimeType: 'video/mp4' }] };
      return { name: operation.name, done: true, response: { '@type': 'type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse', ...(operation.filtered ? filtered : { raiMediaFilteredCount: 0 }), ...videos } };
    }
    const response = operation.filtered
      ? filtered
      : { generatedSamples: [{ video: { uri: `${this.url}/gemini/v1beta/files/${operation.name.split('/').pop()}:download?alt=media` } }] };
    return {
      name: operation.name, metadata, done: true,
      response: { '@type': 'type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse', generateVideoResponse: response },
    };
  }

  private serveFile(res: http.ServerResponse, exchange: VeoExchange, id: string, query: string, fail: (status: number, message: string) => void): void {
    const operation = [...this.operations.values()].find((candidate) => candidate.name.endsWith(`/operations/${id}`));
    // As Google's files: only to the key that made them.
    if (!operation || operation.key !== exchange.record.authorization || Date.now() - operation.createdMs < operation.jobMs) return fail(404, 'File not found.');
    if (new URLSearchParams(query).get('alt') !== 'media') return fail(400, 'Downloads take alt=media.');
    const bytes = mockMp4(operation.seconds, operation.name);
    exchange.record.status = 200;
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': bytes.length }).end(bytes);
  }
}
