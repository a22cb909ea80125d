// The mock upstream vendor: an OpenAI Chat Completions endpoint on node:http (the other wire
// formats live in their own files, embeddings.ts the embeddings endpoints), steered per request by `[[mock ...]]` directives and per
// credential by its faults (faults.ts). Built to be cheap per request (the benchmark runs it next
// to the gateway on a small machine): no logging, no per-chunk JSON.stringify, keep-alive on.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { ANTHROPIC_COUNT_TOKENS_SUFFIX, ANTHROPIC_MESSAGES_SUFFIX, VERTEX_CLAUDE_PATH, anthropicCountTokens, anthropicMessages, anthropicOnVertex } from './anthropic.js';
import { AudioVendors } from './audio.js';
import { BFL_PREFIX, BflTasks, bflRoute, type BflHost } from './bfl.js';
import { completionJson, parseChatRequest, planCompletion, type MockBehaviour } from './completion.js';
import { directivesFromMessages } from './directives.js';
import { geminiRoute, isGeminiPath } from './gemini.js';
import { endMidBody, resetConnection } from './connection.js';
import { FaultBook, bearerToken, cutPoint, playFault, retryAfterHeader, streamFailure, type FaultCounts, type MockFault, type MockFaults, type StreamFailure } from './faults.js';
import { FILES_PREFIX, FileStore, serveFile } from './files.js';
import { imageEndpoint, openaiImages } from './images.js';
import { QWEN_IMAGE_PATH, qwenImages } from './qwen-images.js';
import { embeddingsEndpoint, geminiEmbeddings, openaiEmbeddings } from './embeddings.js';
import { BEDROCK_PATH, MockCloud, TOKEN_PATH, type MockCloudOptions } from './cloud.js';
import { badJson, errorJson, hasBearerToken, isRevokedCredential, missingApiKey, notFound, simulatedFailure, type MockError } from './errors.js';
import { randomId } from './ids.js';
import { RequestLog, recordBody, type MockRequestRecord } from './records.js';
import { cutsBefore, streamFrames, type Frame } from './stream.js';
import { VideoTasks } from './video-tasks.js';
import { SAMPLES_PREFIX, sampleMedia } from './mp4.js';
import { VeoOperations } from './veo.js';
import { StripeMock, type StripeWebhookTarget } from './stripe.js';
import { localUrl } from '../local-url.js';

export type { MockBehaviour } from './completion.js';
export type { MockRequestRecord } from './records.js';
export type { FaultCounts, MockFault, MockFaults } from './faults.js';

export interface MockVendor {
  /** Like `http://127.0.0.1:PORT`, no trailing slash. */
  url: string;
  port: number;
  /** The cloud side: tokens issued by the service-account token endpoint, and so on. */
  cloud: MockCloud;
  /** The video vendors' tasks (DashScope, Vidu, Ark, MiniMax Hailuo, Kling, Runway, Luma). */
  videos: VideoTasks;
  /** Google Veo's long-running operations on the Gemini API. */
  veo: VeoOperations;
  /** The audio vendors (OpenAI speech, ElevenLabs, MiniMax, Stability): MiniMax's speech tasks and the result files. */
  audio: AudioVendors;
  /** Stripe's Checkout Sessions (the SDK reaches them at this URL's root; see stripe.ts). */
  stripe: StripeMock;
  requests(): MockRequestRecord[];
  clearRequests(): void;
  /** Replaces the faults by credential (tests switch a key from failing to healthy). Throws on an invalid map. */
  setFaults(faults: MockFaults): void;
  /** How many requests carrying this credential met a fault, and how many were answered as usual. */
  faultCounts(credential: string): FaultCounts;
  close(): Promise<void>;
}

export interface MockVendorOptions {
  /** 0 (the default) picks any free port. */
  port?: number;
  host?: string;
  defaults?: Partial<MockBehaviour>;
  /** How many recent request records to keep (default 200; 0 keeps none). */
  keepRequests?: number;
  /** Serve HTTPS with this key and certificate (the URL is then https://). */
  tls?: { key: string | Buffer; cert: string | Buffer };
  /** The cloud forms' credentials the mock accepts (Bedrock's SigV4 secrets, service accounts' public keys). */
  cloud?: MockCloudOptions;
  /** How long a video task runs unless its prompt says `[[mock job_ms=N]]` (default 1500 ms). */
  videoJobMs?: number;
  /** How long a MiniMax async speech task runs unless its text says `[[mock job_ms=N]]` (default 800 ms). */
  audioJobMs?: number;
  /** Faults to play, by the credential a request carries (see faults.ts). Throws on an invalid map. */
  faults?: Readonly<Record<string, MockFault>>;
  /** Where the checkout page delivers Stripe's signed events (a gateway's /hooks/stripe and its secret); unset: none are sent. */
  stripeWebhook?: StripeWebhookTarget;
}

const DEFAULT_BEHAVIOUR: MockBehaviour = { latencyMs: 0, chunks: 16, chunkDelayMs: 0 };
const INSPECTION_PATH = '/__mock/requests';
const CHAT_SUFFIX = '/chat/completions';
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export async function startMockVendor(opts: MockVendorOptions = {}): Promise<MockVendor> {
  const behaviour: MockBehaviour = { ...DEFAULT_BEHAVIOUR, ...opts.defaults };
  const log = new RequestLog(opts.keepRequests ?? 200);
  const cloud = new MockCloud(opts.cloud);
  const images: BflHost = { url: '', files: new FileStore(), tasks: new BflTasks() };
  const videos = new VideoTasks(opts.videoJobMs ?? 1500);
  const veo = new VeoOperations(opts.videoJobMs ?? 1500);
  const audio = new AudioVendors(opts.audioJobMs ?? 800);
  const faults = new FaultBook(opts.faults);
  const stripe = new StripeMock(opts.stripeWebhook);
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => route(req, res, behaviour, faults, log, cloud, images, videos, veo, audio, stripe);
  const server = opts.tls ? https.createServer({ key: opts.tls.key, cert: opts.tls.cert }, handler) : http.createServer(handler);
  // Clients (the gateway's pool, the bench) keep connections; do not drop them before they do.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = localUrl(host, port, opts.tls ? 'https' : 'http');
  cloud.url = url;
  images.url = url;
  videos.url = url;
  veo.url = url;
  audio.url = url;
  stripe.url = url;
  return {
    url,
    port,
    cloud,
    videos,
    veo,
    audio,
    stripe,
    requests: () => log.list(),
    clearRequests: () => log.clear(),
    setFaults: (next) => faults.set(next),
    faultCounts: (credential) => faults.countsOf(credential),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // In-flight streams would otherwise hold close() open; their records show clientAborted.
        server.closeAllConnections();
      }),
  };
}

/** A sample input (mp4.ts `sampleMedia`), as a caller's own server would serve it. */
function serveSample(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
  req.resume();
  const sample = sampleMedia(path);
  if (!sample) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('no such sample');
    return;
  }
  res.writeHead(200, { 'content-type': sample.contentType, 'content-length': sample.bytes.length }).end(sample.bytes);
}

const AZURE_PATH = /\/openai\/deployments\/([^/]+)\/chat\/completions$/;

function route(req: http.IncomingMessage, res: http.ServerResponse, behaviour: MockBehaviour, faults: FaultBook, log: RequestLog, cloud: MockCloud, images: BflHost, videos: VideoTasks, veo: VeoOperations, audio: AudioVendors, stripe: StripeMock): void {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === INSPECTION_PATH) {
    inspect(req, res, log);
    return;
  }
  if (path.startsWith(FILES_PREFIX)) return serveFile(req, res, path, images.files);
  if (StripeMock.handlesPage(path)) return stripe.page(req, res, path, readBody);
  if (isGeminiPath(path)) return geminiRoute(req, res, behaviour, faults, log, (authorization) => cloud.tokenValid(authorization));
  const record: MockRequestRecord = {
    id: randomId('chatcmpl-', 29),
    path,
    authorization: req.headers.authorization,
    body: undefined,
    stream: false,
    contentChunksWritten: 0,
    completed: false,
    clientAborted: false,
    status: 0,
  };
  log.add(record);
  const exchange = new Exchange(res, record);
  // Recorded, so a test can tell whether the gateway fetched an input.
  if (path.startsWith(SAMPLES_PREFIX)) return serveSample(req, res, path);
  if (StripeMock.handles(path)) return stripe.route(req, (status, body, headers) => exchange.sendJson(status, body, headers), path, readBody);
  const embeddings = req.method === 'POST' ? embeddingsEndpoint(path) : undefined;
  if (embeddings === 'openai') return openaiEmbeddings(req, exchange, behaviour, faults, readBody);
  if (embeddings === 'gemini') return geminiEmbeddings(req, exchange, path, query === -1 ? '' : url.slice(query + 1), behaviour, faults, readBody);
  if (req.method === 'POST' && path === QWEN_IMAGE_PATH) return qwenImages(req, exchange, faults, readBody, images);
  if (videos.handles(path, query === -1 ? '' : url.slice(query + 1))) return videos.route(req, res, exchange, faults, path, query === -1 ? '' : url.slice(query + 1), readBody);
  if (VeoOperations.handles(path, req.method)) return veo.route(req, res, exchange, faults, path, query === -1 ? '' : url.slice(query + 1), readBody, (authorization) => cloud.tokenValid(authorization));
  if (AudioVendors.handles(path)) return audio.route(req, res, exchange, faults, path, query === -1 ? '' : url.slice(query + 1), readBody);
  if (path.startsWith(BFL_PREFIX)) return bflRoute(req, exchange, path, query === -1 ? '' : url.slice(query + 1), behaviour, faults, readBody, images);
  const imageApi = req.method === 'POST' ? imageEndpoint(path) : undefined;
  if (imageApi) return openaiImages(req, exchange, imageApi, behaviour, faults, readBody, images);
  if (req.method === 'POST' && path.endsWith(ANTHROPIC_MESSAGES_SUFFIX)) return anthropicMessages(req, exchange, behaviour, faults, readBody);
  if (req.method === 'POST' && path.endsWith(ANTHROPIC_COUNT_TOKENS_SUFFIX)) return anthropicCountTokens(req, exchange, readBody);
  if (req.method === 'POST' && VERTEX_CLAUDE_PATH.test(path)) return anthropicOnVertex(req, exchange, behaviour, faults, readBody, (authorization) => cloud.tokenValid(authorization));
  if (req.method === 'POST' && path === TOKEN_PATH) return cloud.token(req, exchange, readBody);
  if (req.method === 'POST' && BEDROCK_PATH.test(path)) return cloud.bedrock(req, res, exchange, behaviour, faults, path, query === -1 ? '' : url.slice(query));
  const azure = req.method === 'POST' ? AZURE_PATH.exec(path) : null;
  if (azure) {
    // Azure OpenAI: the deployment is the model, the key comes in `api-key`, api-version is required.
    const apiKey = req.headers['api-key'];
    record.authorization = typeof apiKey === 'string' ? apiKey : undefined;
    const version = new URLSearchParams(query === -1 ? '' : url.slice(query + 1)).get('api-version');
    readBody(req, (err, text) => {
      if (err) return exchange.sendError(err);
      if (!version) return exchange.sendError({ status: 404, message: 'Resource not found', type: 'invalid_request_error', code: '404' });
      chatCompletion(exchange, text, behaviour, faults, decodeURIComponent(azure[1]!));
    });
    return;
  }
  if (req.method !== 'POST' || !path.endsWith(CHAT_SUFFIX)) {
    req.resume();
    exchange.sendError(notFound(req.method ?? 'GET', path));
    return;
  }
  readBody(req, (err, text) => {
    if (err) {
      exchange.sendError(err);
      return;
    }
    chatCompletion(exchange, text, behaviour, faults);
  });
}

function inspect(req: http.IncomingMessage, res: http.ServerResponse, log: RequestLog): void {
  req.resume();
  if (req.method === 'GET') {
    const body = JSON.stringify(log.list());
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  } else if (req.method === 'DELETE') {
    log.clear();
    res.writeHead(204).end();
  } else {
    const body = errorJson(notFound(req.method ?? 'GET', INSPECTION_PATH));
    res.writeHead(404, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  }
}

function readBody(req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (part: Buffer) => {
    size += part.length;
    if (size > MAX_BODY_BYTES) tooLarge = true;
    else parts.push(part);
  });
  req.on('end', () => {
    if (tooLarge) done({ status: 413, message: 'Request body too large.', type: 'invalid_request_error', code: null }, '');
    else done(undefined, parts.length === 1 ? (parts[0] as Buffer).toString('utf8') : Buffer.concat(parts).toString('utf8'));
  });
  // An aborted upload surfaces as the response's 'close' (see Exchange); nothing to answer.
  req.on('error', () => {});
}

function chatCompletion(exchange: Exchange, text: string, behaviour: MockBehaviour, faults: FaultBook, azureDeployment?: string): void {
  const record = exchange.record;
  const parseError = recordBody(record, text);
  // Like OpenAI: authentication is checked before the body is looked at (Azure: an `api-key`).
  if (azureDeployment === undefined ? !hasBearerToken(record.authorization) : !record.authorization) {
    exchange.sendError(azureDeployment === undefined ? missingApiKey : { status: 401, message: 'Access denied due to missing subscription key. Make sure to include subscription key when making requests to an API.', type: 'invalid_request_error', code: '401' });
    return;
  }
  if (isRevokedCredential(record.authorization)) {
    exchange.sendError(simulatedFailure(401));
    return;
  }
  if (parseError !== undefined) {
    exchange.sendError(badJson(parseError));
    return;
  }
  // The deployment names the model; the body's own `model` (if any) is ignored, as Azure does.
  const request = parseChatRequest(azureDeployment === undefined ? record.body : { ...(record.body as object), model: azureDeployment });
  if ('status' in request) {
    exchange.sendError(request);
    return;
  }
  record.stream = request.stream;
  const directives = directivesFromMessages(request.messages);
  const fail = directives.fail;
  // Azure's `api-key` is the credential itself; elsewhere it is the bearer token.
  const fault = faults.meet(azureDeployment === undefined ? bearerToken(record.authorization) : record.authorization, directives);
  const plan = fail === undefined ? planCompletion(record.id, request, directives, behaviour) : undefined;
  const respond = (): void => {
    if (fault !== undefined && playFault(fault, request.stream, exchange, (status, headers) => exchange.sendError(simulatedFailure(status, fault.retryAfterSeconds), headers))) return;
    if (plan === undefined) exchange.sendError(simulatedFailure(fail as number));
    else if (!request.stream) exchange.sendJson(200, completionJson(plan));
    else {
      // OpenAI ends a stream whose model failed mid-generation with an error object, no usage, no [DONE].
      const failure = streamFailure(fault, `data: ${errorJson(simulatedFailure(500))}\n\n`);
      exchange.stream(streamFrames(plan, request.includeUsage), directives.delayMs ?? behaviour.chunkDelayMs, cutPoint(fault, directives.disconnectAfter), failure);
    }
  };
  exchange.after(directives.latencyMs ?? behaviour.latencyMs, respond);
}

/**
 * One response in progress: writes it, keeps its record current, and stops all work (timers,
 * writes) the moment the connection closes.
 */
class Exchange {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Set when the mock itself cut the connection (disconnect_after), which is not a client abort. */
  private cutByServer = false;

  constructor(
    private readonly res: http.ServerResponse,
    readonly record: MockRequestRecord,
  ) {
    res.on('finish', () => {
      record.completed = true;
    });
    res.on('close', () => {
      this.closed = true;
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = undefined;
      if (!res.writableFinished && !this.cutByServer) record.clientAborted = true;
    });
  }

  /** Run `next` after `ms` (at once for 0), unless the client leaves first. */
  after(ms: number, next: () => void): void {
    if (ms <= 0) next();
    else this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.closed) next();
    }, ms);
  }

  sendJson(status: number, body: string, headers?: Record<string, string>): void {
    if (this.closed) return;
    this.record.status = status;
    this.res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
    this.res.end(body);
  }

  /** The error in OpenAI's shape; a 429 says Retry-After: 1 unless `headers` say otherwise. */
  sendError(err: MockError, headers = retryAfterHeader(err.status, undefined)): void {
    this.sendJson(err.status, errorJson(err), headers);
  }

  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void {
    this.cutByServer = true;
    resetConnection(this.res);
  }

  /**
   * Writes each frame with its own res.write, and waits for the socket to drain when one is refused,
   * as a real server's back-pressure holds it. With a delay, one timer per token frame; with none,
   * frames go out synchronously until the socket is full. `disconnectAfter` cuts the connection once that many content
   * chunks are out, before anything else is written; `failure` instead ends the stream there with its
   * error event (an `error` fault).
   */
  stream(frames: Generator<Frame, void, undefined>, delayMs: number, disconnectAfter: number | undefined, failure?: StreamFailure): void {
    if (this.closed) return;
    this.record.status = 200;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    /** False when the client is slow: the pump resumes once it drained. */
    const write = (frame: Frame): boolean => {
      const taken = this.res.write(frame.data);
      if (frame.kind === 'content') this.record.contentChunksWritten++;
      if (!taken) this.res.once('drain', pump);
      return taken;
    };
    const pump = (): void => {
      for (;;) {
        if (this.closed) return;
        const next = frames.next();
        if (next.done) {
          this.res.end();
          return;
        }
        const frame = next.value;
        if (disconnectAfter !== undefined && this.record.contentChunksWritten >= disconnectAfter && cutsBefore(frame)) {
          this.cut();
          return;
        }
        if (failure !== undefined && this.record.contentChunksWritten >= failure.afterChunks && cutsBefore(frame)) {
          this.res.end(failure.data);
          return;
        }
        if (delayMs > 0 && (frame.kind === 'content' || frame.kind === 'reasoning')) {
          this.timer = setTimeout(() => {
            this.timer = undefined;
            if (this.closed) return;
            if (write(frame)) pump();
          }, delayMs);
          return;
        }
        if (!write(frame)) return;
      }
    };
    pump();
  }

  /** Ends the answer mid-body, as an upstream that dies mid-stream (not a client abort). */
  cut(): void {
    this.cutByServer = true;
    endMidBody(this.res);
  }
}
