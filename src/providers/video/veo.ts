/**
 * Google Veo 3.1 on the Gemini API, a long-running operation: `POST {base}/models/{model}:predictLongRunning`
 * (key in `x-goog-api-key`) with `instances: [{prompt}]` and `parameters` answers an operation
 * `{name}`; `GET {base}/{name}` answers `done: false` until `done: true` with either `error{code,
 * message,status}` or `response.generateVideoResponse.generatedSamples[0].video.uri`, a file of the
 * Gemini API that is served only to the API key (so the download sends it; the result is rehosted,
 * Google keeps generated videos for 2 days). Videos withheld by Google's filters come back as
 * `raiMediaFilteredCount` with reasons and no sample. There is no cancel for a Veo operation.
 * Request errors: Google's `{error:{code,message,status}}`.
 *
 * On Vertex AI (a routing target with `cloud: vertex`, the service account's access token as a Bearer
 * token) the same body goes to the project's publisher model, `{endpoint}/v1/projects/{p}/locations/{r}/
 * publishers/google/models/{model}:predictLongRunning`, whose operation is named under that model
 * (`projects/…/models/{model}/operations/{id}`) and polled with `POST {model}:fetchPredictOperation`
 * `{operationName}`. Without a storage URI the finished operation carries the video itself,
 * `response.videos[0].bytesBase64Encoded` (the poll worker stores it on the media host); a Cloud
 * Storage result (`gcsUri`, only when a storage URI was sent, which the gateway never does) is not
 * read. Sources: docs/vendors/google-media.md.
 */
import type { InlineImage, VendorRefusal, VendorTarget, VendorTaskState, VideoAdapter } from './adapter.js';
import { JPEG, PNG } from '../../media/sniff.js';
import type { VideoJob } from '../../tasks/video-job.js';
import { vertexAuthorization, vertexModelUrl } from '../cloud/vertex.js';
import {
  UNNAMED_FAILURE, codeOf, failedState, jsonRequest, missingResult, missingTaskId, objectAt, readAnswer, readGoogleError, textOf, trimBase, type JsonObject,
} from './wire.js';

interface VeoSubmitBody {
  instances: [{ prompt: string; image?: { bytesBase64Encoded: string; mimeType: string } }];
  parameters: { aspectRatio?: string; durationSeconds: number; resolution?: string; negativePrompt?: string; seed?: number };
}

/** The body of both forms (the Gemini API and Vertex AI take the same one); `images[0]`: the first frame's bytes. */
export function veoSubmitBody(job: VideoJob, images: readonly InlineImage[] = []): VeoSubmitBody {
  const [first] = images;
  return {
    instances: [{ prompt: job.prompt ?? '', ...(first ? { image: { bytesBase64Encoded: first.base64, mimeType: first.mimeType } } : {}) }],
    parameters: {
      aspectRatio: job.aspectRatio,
      durationSeconds: job.duration,
      resolution: job.resolution,
      negativePrompt: job.negativePrompt,
      seed: job.seed,
    },
  };
}

/**
 * An operation name as Google spells it (`models/veo-3.1-generate-preview/operations/abc123`, on
 * Vertex AI `projects/p/locations/r/publishers/google/models/m/operations/id`): path segments of
 * letters, digits, `.`, `_` and `-`, none of them `.` or `..`, so it can only name a path under the
 * base URL.
 */
const OPERATION_NAME = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+){1,9}$/;
/** A Vertex AI operation: the publisher model it runs under, then its id. */
const VERTEX_OPERATION = /^(projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\/[^/]+)\/operations\/[^/]+$/;

const RUNNING = 'RUNNING';
const DONE = 'DONE';
const FAILED = 'FAILED';

const keyHeader = (target: VendorTarget) => ({ 'x-goog-api-key': target.apiKey });
const isVertex = (target: VendorTarget) => target.cloud?.kind === 'vertex';
/** Throws a 503 ApiError when the target has no access token yet (the worker makes it a retryable refusal). */
const bearerHeader = (target: VendorTarget) => ({ authorization: vertexAuthorization(target) });
const encodedPath = (name: string) => name.split('/').map(encodeURIComponent).join('/');

/** A finished Vertex AI operation's `response`: the first video's bytes, or why there are none. */
function vertexResult(httpStatus: number, response: JsonObject | undefined): VendorTaskState | VendorRefusal {
  const first: unknown = Array.isArray(response?.videos) ? response.videos[0] : undefined;
  const video = typeof first === 'object' && first !== null && !Array.isArray(first) ? first as JsonObject : undefined;
  const base64 = typeof video?.bytesBase64Encoded === 'string' && video.bytesBase64Encoded !== '' ? video.bytesBase64Encoded : undefined;
  if (base64 !== undefined) return { kind: 'inline', status: DONE, base64 };
  // Only a request with a storage URI is answered this way, and the gateway sends none.
  if (textOf(video?.gcsUri) !== undefined) return failedState(DONE, 'result_unavailable', 'The vendor stored the video in Cloud Storage, which the gateway does not read.');
  return filteredOrMissing(httpStatus, response);
}

/** No video in a finished operation: withheld by the safety filters (with Google's reasons), or a garbled answer. */
function filteredOrMissing(httpStatus: number, response: JsonObject | undefined): VendorTaskState | VendorRefusal {
  const filtered = response?.raiMediaFilteredCount;
  if (typeof filtered === 'number' && filtered > 0) {
    const reasons = Array.isArray(response?.raiMediaFilteredReasons) ? response.raiMediaFilteredReasons.filter((r): r is string => typeof r === 'string') : [];
    return failedState(DONE, 'content_filtered', `The vendor's safety filters withheld the video${reasons.length > 0 ? `: ${reasons.join(' ')}` : '.'}`);
  }
  return missingResult(httpStatus, DONE);
}

export const VEO_VIDEO = Object.freeze({
  family: 'gemini-video',
  cloudForms: ['vertex'],
  resultsInAnswer: true,
  // The first frame goes as bytes: neither form fetches a public URL for Veo.
  inlineImages: (job) => job.imageUrls.slice(0, 1),
  inlineImageTypes: [PNG, JPEG],

  submit(job, target, _vendorCallbackUrl?, images?) {
    const { cloud } = target;
    if (cloud?.kind === 'vertex') {
      return { ...jsonRequest('POST', vertexModelUrl(trimBase(target.baseUrl), cloud, 'google', job.upstreamModel, 'predictLongRunning'), bearerHeader(target), veoSubmitBody(job, images)), guarded: target.guarded };
    }
    return jsonRequest('POST', `${trimBase(target.baseUrl)}/models/${encodeURIComponent(job.upstreamModel)}:predictLongRunning`, keyHeader(target), veoSubmitBody(job, images));
  },

  submitted(httpStatus, body) {
    const answer = readAnswer('submit', httpStatus, body, readGoogleError);
    if (answer.kind === 'refused') return answer;
    const name = textOf(answer.body.name);
    return name === undefined || !OPERATION_NAME.test(name) ? missingTaskId(httpStatus) : { kind: 'submitted', upstreamId: name };
  },

  poll(upstreamId, target) {
    // The name was checked when the submit answered it; each segment is encoded all the same.
    if (isVertex(target)) {
      // Polled on the model the operation runs under, as Google's own SDK does (the name's part before `/operations/`).
      const model = VERTEX_OPERATION.exec(upstreamId)?.[1] ?? upstreamId;
      return { ...jsonRequest('POST', `${trimBase(target.baseUrl)}/v1/${encodedPath(model)}:fetchPredictOperation`, bearerHeader(target), { operationName: upstreamId }), guarded: target.guarded };
    }
    return { method: 'GET', url: `${trimBase(target.baseUrl)}/${encodedPath(upstreamId)}`, headers: keyHeader(target) };
  },

  polled(httpStatus, body) {
    const answer = readAnswer('poll', httpStatus, body, readGoogleError);
    if (answer.kind === 'refused') return answer;
    if (answer.body.done !== true) return { kind: 'running', status: RUNNING };
    const error = objectAt(answer.body, 'error');
    if (error) {
      return failedState(FAILED, textOf(error.status) ?? codeOf(error.code) ?? UNNAMED_FAILURE, textOf(error.message) ?? 'The vendor reported the operation failed without a reason.');
    }
    const response = objectAt(answer.body, 'response');
    // The Gemini API wraps its samples in `generateVideoResponse`; Vertex AI answers `response.videos`.
    const generated = objectAt(response, 'generateVideoResponse');
    if (generated === undefined) return vertexResult(httpStatus, response);
    const samples = generated?.generatedSamples;
    const uri = Array.isArray(samples) ? textOf(objectAt(samples[0], 'video')?.uri) : undefined;
    if (uri !== undefined) return { kind: 'succeeded', status: DONE, resultUrl: uri };
    return filteredOrMissing(httpStatus, generated);
  },

  /** The key goes only to the vendor's own origin: a result URL elsewhere is fetched without it. */
  resultHeaders(resultUrl, target) {
    if (isVertex(target)) return undefined;
    try {
      return new URL(resultUrl).origin === new URL(target.baseUrl).origin ? keyHeader(target) : undefined;
    } catch {
      return undefined;
    }
  },
} satisfies VideoAdapter);
