// OpenAI's Images API (`POST …/images/generations`, the JSON form of `POST …/images/edits`), which
// ByteDance ModelArk and xAI speak too. GPT Image models (`gpt-image*`) answer as OpenAI's do:
// base64 only, with `size`, `quality`, `output_format`, `background` and token `usage`. Other
// models answer `data: [{url}]` (or `b64_json` when asked), the URL served by the mock itself.
//
// Reported values for GPT Image: `size` echoes the request, `auto` or none reporting 1024x1024;
// `quality` echoes low/medium/high, `auto` or none reporting medium; `background` echoes
// transparent/opaque, `auto` or none reporting opaque; `output_format` is always png (the mock
// only draws PNGs).
import type http from 'node:http';
import type { MockBehaviour } from './completion.js';
import { parseDirectives, type Directives } from './directives.js';
import { badJson, hasBearerToken, isRevokedCredential, missingApiKey, simulatedFailure, type MockError } from './errors.js';
import { bearerToken, playFault, type FaultBook } from './faults.js';
import { fileUrlPath, type ImageHost } from './files.js';
import { randomId } from './ids.js';
import { isGptImage, parseImageRequest, type ImageEndpoint, type ImageRequest } from './image-request.js';
import { mockPng } from './png.js';
import { recordBody, type MockRequestRecord } from './records.js';
import { textTokens } from './usage.js';

/** What the route hands over: server.ts's Exchange, seen structurally. */
export interface ImageExchange {
  readonly record: MockRequestRecord;
  after(ms: number, next: () => void): void;
  sendJson(status: number, body: string, headers?: Record<string, string>): void;
  sendError(err: MockError, headers?: Record<string, string>): void;
  /** Destroys the connection before any byte of the answer (a `reset` fault). */
  reset(): void;
}
type ReadBody = (req: http.IncomingMessage, done: (err: MockError | undefined, text: string) => void) => void;

/** The endpoint a path names, if it is one of the Images API's. */
export function imageEndpoint(path: string): ImageEndpoint | undefined {
  if (path.endsWith('/images/generations')) return 'generations';
  if (path.endsWith('/images/edits')) return 'edits';
  return undefined;
}

/**
 * Output tokens of a 1024x1024 GPT Image by quality (OpenAI's published figures); other sizes
 * scale with the area, as OpenAI's own 1024x1536 figures do.
 */
const OUTPUT_TOKENS_1024 = { low: 272, medium: 1056, high: 4160 } as const;
/** Each input image of an edit: a 1024x1024 image at the vision tile rate (85 + 4 x 170). */
const INPUT_IMAGE_TOKENS = 765;
const DEFAULT_SIZE = '1024x1024';

export function openaiImages(req: http.IncomingMessage, exchange: ImageExchange, endpoint: ImageEndpoint, behaviour: MockBehaviour, faults: FaultBook, readBody: ReadBody, host: ImageHost): void {
  const record = exchange.record;
  record.id = randomId('img_', 24);
  readBody(req, (err, text) => {
    if (err) return exchange.sendError(err);
    const parseError = recordBody(record, text);
    // As the chat route: the credential is checked before the body is looked at.
    if (!hasBearerToken(record.authorization)) return exchange.sendError(missingApiKey);
    if (isRevokedCredential(record.authorization)) return exchange.sendError(simulatedFailure(401));
    if (parseError !== undefined) return exchange.sendError(badJson(parseError));
    const request = parseImageRequest(record.body, endpoint);
    if ('status' in request) return exchange.sendError(request);
    if (request.referenceImages.length > 0) record.referenceImages = request.referenceImages;
    const directives = parseDirectives(request.prompt);
    const fault = faults.meet(bearerToken(record.authorization), directives);
    exchange.after(directives.latencyMs ?? behaviour.latencyMs, () => {
      // Not a stream: a `cut` resets the connection.
      if (fault !== undefined && playFault(fault, false, exchange, (status, headers) => exchange.sendError(simulatedFailure(status, fault.retryAfterSeconds), headers))) return;
      if (directives.fail !== undefined) exchange.sendError(simulatedFailure(directives.fail));
      else exchange.sendJson(200, imagesJson(record.id, request, directives, host));
    });
  });
}

/** The response body: `images=K` caps how many of the `n` asked for are delivered. */
export function imagesJson(id: string, request: ImageRequest, directives: Directives, host: ImageHost): string {
  const count = Math.min(request.n, directives.images ?? request.n);
  const created = Math.floor(Date.now() / 1000);
  const gptImage = isGptImage(request.model);
  const base64 = gptImage || request.responseFormat === 'b64_json';
  const data: ({ b64_json: string } | { url: string })[] = [];
  for (let i = 0; i < count; i++) {
    const png = mockPng(`${id}:${i}`);
    if (base64) data.push({ b64_json: png.toString('base64') });
    else {
      const name = `${id}-${i}`;
      // broken_url: hand out the URL without storing the file behind it.
      data.push({ url: host.url + (directives.brokenUrl ? fileUrlPath(name) : host.files.put(name, png)) });
    }
  }
  if (!gptImage) return JSON.stringify({ created, data });
  const size = request.size === undefined || request.size === 'auto' ? DEFAULT_SIZE : request.size;
  const quality = request.quality === 'low' || request.quality === 'high' ? request.quality : 'medium';
  const background = request.background === 'transparent' ? 'transparent' : 'opaque';
  const textTokenCount = textTokens(request.prompt);
  const imageTokens = request.referenceImages.length * INPUT_IMAGE_TOKENS;
  const outputTokens = count * outputTokensPerImage(size, quality);
  return JSON.stringify({
    created, background, data, output_format: 'png', quality, size,
    usage: {
      input_tokens: textTokenCount + imageTokens,
      input_tokens_details: { text_tokens: textTokenCount, image_tokens: imageTokens },
      output_tokens: outputTokens,
      total_tokens: textTokenCount + imageTokens + outputTokens,
    },
  });
}

export function outputTokensPerImage(size: string, quality: keyof typeof OUTPUT_TOKENS_1024): number {
  const [width, height] = size.split('x').map(Number) as [number, number];
  return Math.round((OUTPUT_TOKENS_1024[quality] * width * height) / (1024 * 1024));
}
