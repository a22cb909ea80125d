import type { VideoJob } from '../../tasks/video-job.js';
import type { UpstreamCloud } from '../family.js';
import type { SniffedType } from '../../media/sniff.js';

/** Where and as whom a vendor call goes (the platform credential of `upstreamVendor`, or a routing target's). */
export interface VendorTarget {
  /** The vendor's configured base URL, no trailing slash (config `<VENDOR>_BASE_URL`); a cloud form's endpoint origin. */
  readonly baseUrl: string;
  /** The key; for a Vertex AI target, its service account's current access token. */
  readonly apiKey: string;
  /** A cloud provider's form of the vendor's API, for task APIs that speak it (`TaskApi.cloudForms`). */
  readonly cloud?: UpstreamCloud;
  /** An address the operator did not write (a Vertex AI endpoint derived from its region): every call is vetted and pinned. */
  readonly guarded?: boolean;
}

/** One HTTP exchange to make with the vendor, as plain data (a worker sends it). */
export interface VendorRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text, when the method carries a body. */
  readonly body?: string;
  /** The target's `guarded`: sent through the URL guard. */
  readonly guarded?: boolean;
}

/** The vendor refused or erred. `retryable`: a transient failure (429, 5xx, a garbled body): try again later. */
export interface VendorRefusal {
  readonly kind: 'refused';
  readonly retryable: boolean;
  /** The vendor's own error code where it gives one (`InvalidParameter`), else `http_<status>`. */
  readonly code: string;
  readonly message: string;
  readonly httpStatus: number;
  /** The gateway's own refusal of the task's input (an image it could not read for the submit), not the vendor's. */
  readonly ofInput?: boolean;
}

/** An input image the submit carries as bytes (fetched by the submit worker, its type sniffed). */
export interface InlineImage {
  readonly base64: string;
  readonly mimeType: string;
}

/** A vendor task's state as one poll saw it. `status` is the vendor's own spelling, for logs. */
export type VendorTaskState =
  | { readonly kind: 'running'; readonly status: string }
  | { readonly kind: 'succeeded'; readonly status: string; readonly resultUrl: string; readonly seconds?: number }
  | { readonly kind: 'failed'; readonly status: string; readonly code: string; readonly message: string }
  /** A status the adapter does not know: logged, and polled again. */
  | { readonly kind: 'unknown'; readonly status: string }
  /**
   * The result itself in the poll answer, base64 (Veo on Vertex AI without a storage URI): the poll
   * worker stores it on the media host (workers/poll-task.ts); never leaves the worker as such.
   */
  | { readonly kind: 'inline'; readonly status: string; readonly base64: string; readonly seconds?: number };

/** A poll that needs one more exchange to learn where the result is (MiniMax: the file's download URL). */
export interface RetrieveStep {
  readonly kind: 'retrieve';
  readonly status: string;
  readonly request: VendorRequest;
}

/**
 * A vendor's task API as pure functions: what to send, and what an answer means. No I/O: the worker
 * pool sends the requests (workers/submit-task.ts, workers/poll-task.ts). Statuses are compared
 * case-insensitively.
 */
export interface TaskApi<J> {
  /** The cloud forms this API also speaks (routing targets with such a `cloud` may take its tasks); none: the vendor's own API only. */
  readonly cloudForms?: readonly UpstreamCloud['kind'][];
  /** A poll answer may carry the result itself (`inline`): it is read up to the size of a base64 result of MEDIA_MAX_BYTES. */
  readonly resultsInAnswer?: boolean;
  /**
   * The job's input images the vendor takes only as bytes (Veo's first frame), in order: the submit
   * worker fetches them through the URL guard (bounded by MEDIA_MAX_BYTES and the fetch timeout),
   * keeps only the types `inlineImageTypes` names, and hands them to `submit` as `images`.
   */
  inlineImages?(job: J): readonly string[];
  /** The image types `inlineImages` may be (checked when the request is taken, and again on the bytes sent). */
  readonly inlineImageTypes?: readonly SniffedType[];
  /** `vendorCallbackUrl`: where the vendor may POST status hints (only vendors that take one use it); `images`: the `inlineImages`' bytes. */
  submit(job: J, target: VendorTarget, vendorCallbackUrl?: string, images?: readonly InlineImage[]): VendorRequest;
  /** The vendor's task id from the submit answer, or why there is none; `job`: the job submitted (Kling polls where it submitted). */
  submitted(httpStatus: number, body: string, job?: J): { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal;
  poll(upstreamId: string, target: VendorTarget): VendorRequest;
  /** `target`: for a `RetrieveStep`'s request (always given by the worker). */
  polled(httpStatus: number, body: string, target?: VendorTarget): VendorTaskState | VendorRefusal | RetrieveStep;
  /** Reads the answer to a `RetrieveStep`'s request. */
  retrieved?(httpStatus: number, body: string, status: string): VendorTaskState | VendorRefusal;
  /** The vendor's own cancel, where it has one. */
  cancel?(upstreamId: string, target: VendorTarget): VendorRequest;
  /**
   * Headers the download of a result URL needs, where the vendor serves results only to its key
   * (Google's Gemini API files); none for a URL off the vendor's own origin.
   */
  resultHeaders?(resultUrl: string, target: VendorTarget): Readonly<Record<string, string>> | undefined;
}

/** A video vendor's task API; `family` is the catalog family it serves (`dashscope`, `vidu`, `modelark`). */
export interface VideoAdapter extends TaskApi<VideoJob> {
  readonly family: string;
}
