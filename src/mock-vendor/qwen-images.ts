// Alibaba DashScope's Qwen-Image models (`POST /alibaba/v1/services/aigc/multimodal-generation/generation`),
// synchronous: one user message of `{image}` items and a `{text}` prompt; `parameters.n` 1 to 6,
// `size` `W*H` with between 512*512 and 2048*2048 pixels, at most 3 input images. The answer holds
// one `{image: url}` per image, PNGs the mock serves itself. DashScope's flat `{request_id, code,
// message}` errors. Directives in the prompt: `fail=STATUS`, `images=K` (K of the n delivered),
// `broken_url`, the faults.
import type http from 'node:http';
import { parseDirectives } from './directives.js';
import { badJson, type MockError } from './errors.js';
import { bearerToken, playFault, type FaultBook } from './faults.js';
import { fileUrlPath, type ImageHost } from './files.js';
import { randomId } from './ids.js';
import type { ImageExchange } from './images.js';
import { mockPng } from './png.js';
import { recordBody } from './records.js';

export const QWEN_IMAGE_PATH = '/alibaba/v1/services/aigc/multimodal-generation/generation';
type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

const MAX_INPUT_IMAGES = 3;
const MIN_PIXELS = 512 * 512;
const MAX_PIXELS = 2048 * 2048;

const dashscopeError = (status: number, code: string, message: string) => JSON.stringify({ request_id: randomId('req-', 16), code, message });

interface Parsed { model: string; prompt: string; images: string[]; n: number }

/** The request as DashScope checks it, or its InvalidParameter message. */
function parse(body: unknown): Parsed | string {
  const request = (typeof body === 'object' && body !== null ? body : {}) as Record<string, any>;
  if (typeof request.model !== 'string' || request.model === '') return 'Model not exist.';
  const content: unknown[] = request.input?.messages?.[0]?.content;
  if (!Array.isArray(content)) return 'input.messages[0].content is required.';
  const prompt = content.map((item: any) => item?.text).find((text) => typeof text === 'string');
  if (typeof prompt !== 'string' || prompt === '') return 'The text of the message is required.';
  const images = content.map((item: any) => item?.image).filter((image): image is string => typeof image === 'string');
  if (images.length > MAX_INPUT_IMAGES) return `At most ${MAX_INPUT_IMAGES} input images are supported.`;
  const parameters = (request.parameters ?? {}) as Record<string, unknown>;
  const n = parameters.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 6) return 'parameters.n must be an integer from 1 to 6.';
  if (parameters.size !== undefined) {
    const size = /^(\d{3,4})\*(\d{3,4})$/.exec(String(parameters.size));
    const pixels = size ? Number(size[1]) * Number(size[2]) : 0;
    if (pixels < MIN_PIXELS || pixels > MAX_PIXELS) return `parameters.size ${String(parameters.size)} is not supported: width*height between 512*512 and 2048*2048.`;
  }
  return { model: request.model, prompt, images, n };
}

export function qwenImages(req: http.IncomingMessage, exchange: ImageExchange, faults: FaultBook, readBody: ReadBody, host: ImageHost): void {
  const record = exchange.record;
  record.id = randomId('qwen-', 16);
  readBody(req, (err, text) => {
    if (err) return exchange.sendError(err);
    const parseError = recordBody(record, text);
    if (!/^Bearer \S+/.test(record.authorization ?? '')) return exchange.sendJson(401, dashscopeError(401, 'InvalidApiKey', 'Invalid API-key provided.'));
    if (parseError !== undefined) return exchange.sendError(badJson(parseError));
    const request = parse(record.body);
    if (typeof request === 'string') return exchange.sendJson(400, dashscopeError(400, 'InvalidParameter', request));
    if (request.images.length > 0) record.referenceImages = request.images;
    const directives = parseDirectives(request.prompt);
    const fault = faults.meet(bearerToken(record.authorization), directives);
    exchange.after(directives.latencyMs ?? 0, () => {
      if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => exchange.sendJson(status, dashscopeError(status, 'Throttling', 'Requests rate limit exceeded.'), headers))) return;
      if (directives.fail !== undefined) return exchange.sendJson(directives.fail, dashscopeError(directives.fail, 'InternalError', 'Mock failure.'));
      const count = Math.min(request.n, directives.images ?? request.n);
      const content = Array.from({ length: count }, (_, i) => {
        const name = `${record.id}-${i}`;
        return { image: host.url + (directives.brokenUrl ? fileUrlPath(name) : host.files.put(name, mockPng(`${record.id}:${i}`))) };
      });
      exchange.sendJson(200, JSON.stringify({
        output: { choices: [{ finish_reason: 'stop', message: { role: 'assistant', content } }] },
        usage: { image_count: count, width: 2048, height: 2048 },
        request_id: record.id,
      }));
    });
  });
}
