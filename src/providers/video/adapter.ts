import type { VideoJob } from '../../tasks/video-job.js';

/** Where and as whom a vendor call goes (the platform credential of `upstreamVendor`). */
export interface VendorTarget {
  /** The vendor's configured base URL, no trailing slash (config `<VENDOR>_BASE_URL`). */
  readonly baseUrl: string;
  readonly apiKey: string;
}

/** One HTTP exchange to make with the vendor, as plain data (a worker sends it). */
export interface VendorRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text, when the method carries a body. */
  readonly body?: string;
}

/** The vendor refused or erred. `retryable`: a transient failure (429, 5xx, a garbled body): try again later. */
export interface VendorRefusal {
  readonly kind: 'refused';
  readonly retryable: boolean;
  /** The vendor's own error code where it gives one (`InvalidParameter`), else `http_<status>`. */
  readonly code: string;
  readonly message: string;
  readonly httpStatus: number;
}

/** A vendor task's state as one poll saw it. `status` is the vendor's own spelling, for logs. */
export type VendorTaskState =
  | { readonly kind: 'running'; readonly status: string }
  | { readonly kind: 'succeeded'; readonly status: string; readonly resultUrl: string; readonly seconds?: number }
  | { readonly kind: 'failed'; readonly status: string; readonly code: string; readonly message: string }
  /** A status the adapter does not know: logged, and polled again. */
  | { readonly kind: 'unknown'; readonly status: string };

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
  /** `vendorCallbackUrl`: where the vendor may POST status hints (only vendors that take one use it). */
  submit(job: J, target: VendorTarget, vendorCallbackUrl?: string): VendorRequest;
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
