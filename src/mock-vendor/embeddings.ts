// The embeddings endpoints of the mock's vendors, each in its real wire format: OpenAI's
// `POST …/embeddings` (also Mistral's and DashScope's OpenAI-compatible ones, told apart by the
// model) and the Gemini API's `POST …/models/{model}:batchEmbedContents` (key in x-goog-api-key, no
// token usage in the answer). Vectors are deterministic: a PRNG seeded by sha256 of the model, the
// length and the input, normalised to unit length. `[[mock ...]]` directives are read from the
// input texts: latency_ms, fail=STATUS, no_usage, and the fault keys (faults.ts).
import { createHash } from 'node:crypto';
import type http from 'node:http';
import type { MockBehaviour } from './completion.js';
import { DIRECTIVE_MARKER, parseDirectives, type Directives } from './directives.js';
import { badJson, hasBearerToken, invalidParam, isRevokedCredential, missingApiKey, simulatedFailure, type MockError } from './errors.js';
import { bearerToken, playFault, type FaultBook } from './faults.js';
import { geminiErrorJson } from './gemini.js';
import type { ImageExchange } from './images.js';
import { recordBody } from './records.js';
import { textTokens } from './usage.js';

type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** What the mock knows of each embedding model: its length and the `dimensions` it takes. */
interface MockEmbeddingModel {
  readonly dimensions: number;
  readonly dimensionsRange?: readonly [number, number];
  readonly dimensionsChoices?: readonly number[];
  readonly maxInputs: number;
  readonly tokenInput: boolean;
}

const OPENAI_COMPATIBLE_MODELS: Readonly<Record<string, MockEmbeddingModel>> = Object.freeze({
  'text-embedding-3-small': { dimensions: 1536, dimensionsRange: [1, 1536], maxInputs: 2048, tokenInput: true },
  'text-embedding-3-large': { dimensions: 3072, dimensionsRange: [1, 3072], maxInputs: 2048, tokenInput: true },
  'mistral-embed': { dimensions: 1024, maxInputs: 2048, tokenInput: false },
  'text-embedding-v4': { dimensions: 1024, dimensionsChoices: [64, 128, 256, 512, 768, 1024, 1536, 2048], maxInputs: 10, tokenInput: false },
});
const GEMINI_MODELS: Readonly<Record<string, MockEmbeddingModel>> = Object.freeze({
  'gemini-embedding-001': { dimensions: 3072, dimensionsRange: [128, 3072], maxInputs: 100, tokenInput: false },
});

const GEMINI_PATH = /\/models\/([^/:]+):batchEmbedContents$/;

/** The embeddings API a POST path names, if any. */
export function embeddingsEndpoint(path: string): 'openai' | 'gemini' | undefined {
  if (path.endsWith('/embeddings')) return 'openai';
  if (GEMINI_PATH.test(path)) return 'gemini';
  return undefined;
}

/** A unit vector of `length` values, the same for the same seed text. */
export function mockVector(seed: string, length: number): number[] {
  const digest = createHash('sha256').update(seed).digest();
  let state = digest.readUInt32LE(0) || 1;
  const values = new Array<number>(length);
  let norm = 0;
  for (let i = 0; i < length; i++) {
    // xorshift32: cheap, deterministic, plenty for a mock.
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    const value = state / 0xffffffff - 0.5;
    values[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  // Rounded through float32, as vendors' vectors are: base64 and float answers carry the same values.
  for (let i = 0; i < length; i++) values[i] = Math.fround(values[i]! * scale);
  return values;
}

const base64Of = (vector: readonly number[]): string => {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
};

const directivesOf = (texts: readonly string[]): Directives => {
  const marked = texts.filter((text) => text.includes(DIRECTIVE_MARKER));
  return marked.length === 0 ? {} : parseDirectives(marked.join('\n'));
};

/** Checks `dimensions` against the model; the error text, or undefined when it is fine. */
function dimensionsProblem(model: MockEmbeddingModel, dimensions: unknown): string | undefined {
  if (dimensions === undefined || dimensions === null) return undefined;
  if (typeof dimensions !== 'number' || !Number.isInteger(dimensions)) return 'dimensions must be an integer';
  if (model.dimensionsRange) {
    const [min, max] = model.dimensionsRange;
    return dimensions >= min && dimensions <= max ? undefined : `dimensions must be between ${min} and ${max}`;
  }
  if (model.dimensionsChoices) return model.dimensionsChoices.includes(dimensions) ? undefined : `dimensions must be one of ${model.dimensionsChoices.join(', ')}`;
  return 'This model does not support specifying dimensions.';
}

/** OpenAI's `/embeddings` (and the compatible vendors'): usage reported, base64 when asked. */
export function openaiEmbeddings(req: http.IncomingMessage, exchange: ImageExchange, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody): void {
  const record = exchange.record;
  readBody(req, (err, text) => {
    if (err) return exchange.sendError(err);
    const parseError = recordBody(record, text);
    if (!hasBearerToken(record.authorization)) return exchange.sendError(missingApiKey);
    if (isRevokedCredential(record.authorization)) return exchange.sendError(simulatedFailure(401));
    if (parseError !== undefined) return exchange.sendError(badJson(parseError));
    const body = record.body as Record<string, unknown>;
    const name = typeof body?.model === 'string' ? body.model : '';
    const model = OPENAI_COMPATIBLE_MODELS[name];
    if (!model) return exchange.sendError({ status: 404, message: `The model \`${name}\` does not exist or you do not have access to it.`, type: 'invalid_request_error', code: 'model_not_found' });
    const input = body.input;
    const items: unknown[] = typeof input === 'string' ? [input] : Array.isArray(input) ? (typeof input[0] === 'number' ? [input] : input) : [];
    if (items.length === 0 || items.some((item) => item === '' || (typeof item !== 'string' && !(model.tokenInput && Array.isArray(item) && item.length > 0)))) {
      return exchange.sendError(invalidParam('input', "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."));
    }
    if (items.length > model.maxInputs) return exchange.sendError(invalidParam('input', `batch size is invalid, it should not be larger than ${model.maxInputs}.`));
    const problem = dimensionsProblem(model, body.dimensions);
    if (problem) return exchange.sendError(invalidParam('dimensions', problem));
    const length = typeof body.dimensions === 'number' ? body.dimensions : model.dimensions;
    const texts = items.filter((item): item is string => typeof item === 'string');
    const directives = directivesOf(texts);
    const fault = faults.meet(bearerToken(record.authorization), directives);
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, () => {
      if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => exchange.sendError(simulatedFailure(status, fault.retryAfterSeconds), headers))) return;
      if (directives.fail !== undefined) return exchange.sendError(simulatedFailure(directives.fail));
      const base64 = body.encoding_format === 'base64';
      let tokens = 0;
      const data = items.map((item, index) => {
        tokens += typeof item === 'string' ? textTokens(item) : (item as unknown[]).length;
        const vector = mockVector(`${name}\n${length}\n${JSON.stringify(item)}`, length);
        return { object: 'embedding', index, embedding: base64 ? base64Of(vector) : vector };
      });
      const usage = directives.noUsage ? {} : { usage: { prompt_tokens: tokens, total_tokens: tokens } };
      exchange.sendJson(200, JSON.stringify({ object: 'list', data, model: name, ...usage }));
    });
  });
}

/** The Gemini API's batchEmbedContents: one request per input, no usage; errors in Google's shape. */
export function geminiEmbeddings(req: http.IncomingMessage, exchange: ImageExchange, path: string, query: string, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody): void {
  const record = exchange.record;
  const key = req.headers['x-goog-api-key'] ?? new URLSearchParams(query).get('key') ?? undefined;
  record.authorization = typeof key === 'string' ? key : undefined;
  const name = GEMINI_PATH.exec(path)![1]!;
  const fail = (status: number, message: string, headers?: Record<string, string>) => exchange.sendJson(status, geminiErrorJson({ status, message }), headers);
  readBody(req, (err, text) => {
    if (err) return fail(err.status, err.message);
    const parseError = recordBody(record, text);
    if (parseError !== undefined) return fail(400, 'Invalid JSON payload received.');
    if (!record.authorization) return fail(403, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
    if (isRevokedCredential(record.authorization)) return fail(400, 'API key not valid. Please pass a valid API key.');
    const model = GEMINI_MODELS[name];
    if (!model) return fail(404, `models/${name} is not found for API version v1beta, or is not supported for embedContent.`);
    const requests = (record.body as { requests?: unknown })?.requests;
    if (!Array.isArray(requests) || requests.length === 0) return fail(400, '* BatchEmbedContentsRequest.requests: requests is not specified');
    if (requests.length > model.maxInputs) return fail(400, `* BatchEmbedContentsRequest.requests: at most ${model.maxInputs} requests can be in one batch`);
    const texts: string[] = [];
    for (let i = 0; i < requests.length; i++) {
      const entry = requests[i] as { model?: unknown; content?: { parts?: { text?: unknown }[] }; outputDimensionality?: unknown };
      if (entry?.model !== `models/${name}`) return fail(400, `Model names should be the same in batch requests: requests[${i}].model is ${String(entry?.model)}, not models/${name}.`);
      const parts = entry.content?.parts;
      const partText = Array.isArray(parts) ? parts.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('') : '';
      if (partText === '') return fail(400, `* BatchEmbedContentsRequest.requests[${i}].content: contents is not specified`);
      const problem = dimensionsProblem(model, entry.outputDimensionality);
      if (problem) return fail(400, `* BatchEmbedContentsRequest.requests[${i}].output_dimensionality: ${problem}`);
      texts.push(partText);
    }
    const first = requests[0] as { outputDimensionality?: number };
    const length = first.outputDimensionality ?? model.dimensions;
    const directives = directivesOf(texts);
    const fault = faults.meet(record.authorization, directives);
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, () => {
      if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => fail(status, `Mock failure (${status}).`, headers))) return;
      if (directives.fail !== undefined) return fail(directives.fail, `Mock failure (${directives.fail}).`);
      const embeddings = texts.map((item) => ({ values: mockVector(`${name}\n${length}\n${JSON.stringify(item)}`, length) }));
      exchange.sendJson(200, JSON.stringify({ embeddings }));
    });
  });
}
