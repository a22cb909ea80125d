/** piscina task: submits a job to its vendor's task API and reads the vendor's task id from the answer. Plain data in and out. */
import type { MediaConfig } from '../src/config.js';
import type { InlineImage, VendorRefusal, VendorTarget } from '../src/providers/video/adapter.js';
import { builtRequest, exchange } from '../src/tasks/vendor-exchange.js';
import { taskApiOf, type TaskJob } from '../src/tasks/task-apis.js';
import { threadMediaStorage } from '../src/media/open.js';
import { imageTypeNames, sniffMediaType, type SniffedType } from '../src/media/sniff.js';
import { UrlGuardError, fetchGuarded } from '../src/media/url-guard.js';
import { SpanKind } from '../src/tracing/tracing.js';
import { inWorkerSpan, startWorkerTracing, type WorkerTrace } from '../src/tasks/worker-spans.js';

export interface SubmitTaskInput {
  readonly family: string;
  readonly job: TaskJob;
  readonly target: VendorTarget;
  readonly timeoutMs: number;
  /** Where the vendor may call back with status hints (vendors that take one). */
  readonly vendorCallbackUrl?: string;
  /** Loopback vendors (the built-in mock) and tests: a guarded target, an input image's address. */
  readonly allowLoopback: boolean;
  /** Where the job's hosted input images are read from (adapters that send images as bytes). */
  readonly media: MediaConfig;
  /** The submit step's span (tracing on): the exchange is part of the task's trace. */
  readonly trace?: WorkerTrace;
}

export type SubmitTaskOutput = { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal;

await startWorkerTracing();

export default function submitTask(input: SubmitTaskInput): Promise<SubmitTaskOutput> {
  return inWorkerSpan(input.trace, 'vendor.submit', SpanKind.INTERNAL, () => submitted(input), (output) => output.kind === 'refused'
    ? { attributes: { 'gateway.task_api': input.family, 'gateway.retryable': output.retryable }, error: output.code }
    : { attributes: { 'gateway.task_api': input.family } });
}

async function submitted(input: SubmitTaskInput): Promise<SubmitTaskOutput> {
  const api = taskApiOf(input.family);
  if (!api) return { kind: 'refused', retryable: false, code: 'family_not_served', message: `No adapter for the ${input.family} task API.`, httpStatus: 0 };
  const images: InlineImage[] = [];
  for (const [index, entry] of (api.inlineImages?.(input.job) ?? []).entries()) {
    const image = await inlineImage(entry, index, api.inlineImageTypes ?? [], input);
    if ('kind' in image) return image;
    images.push(image);
  }
  const request = builtRequest(() => api.submit(input.job, input.target, input.vendorCallbackUrl, images));
  if ('kind' in request) return request;
  const answer = await exchange(request, input.timeoutMs, { allowLoopback: input.allowLoopback });
  return answer.kind === 'answer' ? api.submitted(answer.status, answer.body, input.job) : answer;
}

/**
 * The bytes of an input image the vendor takes inline, as base64: the copy the request hosted (a
 * `data:` URI the gateway wrote, or a name on its media host), else the address fetched through the
 * URL guard; within MEDIA_MAX_BYTES and the fetch timeout, of a type the vendor takes.
 */
async function inlineImage(entry: string, index: number, types: readonly SniffedType[], input: SubmitTaskInput): Promise<InlineImage | VendorRefusal> {
  const param = `image_urls[${index}]`;
  const refused = (message: string, retryable = false): VendorRefusal =>
    ({ kind: 'refused', retryable, code: 'invalid_image_url', message: `'${param}' ${message}`, httpStatus: 400, ofInput: true });
  const maxBytes = input.media.maxBytes;
  let bytes: Buffer;
  try {
    const comma = entry.indexOf(',');
    if (/^data:[^,]*;base64,/i.test(entry)) bytes = Buffer.from(entry.slice(comma + 1), 'base64');
    else if (entry.startsWith(`${input.media.url}/`)) {
      const own = await (await threadMediaStorage(input.media))?.get(entry.slice(input.media.url.length + 1));
      if (!own?.body) return refused('is no longer on this gateway\'s media host (its retention passed); submit the task again.');
      bytes = own.body;
    } else bytes = (await fetchGuarded(entry, { maxBytes, timeoutMs: input.timeoutMs, allowLoopback: input.allowLoopback })).bytes;
  } catch (error) {
    if (!(error instanceof UrlGuardError)) throw error;
    return refused(`could not be read: ${error.message}`, error.reason === 'timeout' || error.reason === 'network');
  }
  if (bytes.length > maxBytes) return refused(`is larger than ${maxBytes} bytes.`);
  const type = sniffMediaType(bytes);
  if (!type || !types.some((allowed) => allowed.contentType === type.contentType)) return refused(`is not a ${imageTypeNames(types)} image.`);
  return { base64: bytes.toString('base64'), mimeType: type.contentType };
}
