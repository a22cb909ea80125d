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
  | { readonly kind: 'succeeded'; readonly status: string; readonly videoUrl: string; readonly seconds?: number }
  | { readonly kind: 'failed'; readonly status: string; readonly code: string; readonly message: string }
  /** A status the adapter does not know: logged, and polled again. */
  | { readonly kind: 'unknown'; readonly status: string };

/**
 * A video vendor's task API as pure functions: what to send, and what an answer means. No I/O: the
 * worker pool sends the requests (workers/video-submit.ts, workers/video-poll.ts). Statuses are
 * compared case-insensitively.
 */
export interface VideoAdapter {
  /** The catalog `family` it serves (`dashscope`, `vidu`, `modelark`). */
  readonly family: string;
  /** `vendorCallbackUrl`: where the vendor may POST status hints (only vendors that take one use it). */
  submit(job: VideoJob, target: VendorTarget, vendorCallbackUrl?: string): VendorRequest;
  /** The vendor's task id from the submit answer, or why there is none. */
  submitted(httpStatus: number, body: string): { readonly kind: 'submitted'; readonly upstreamId: string } | VendorRefusal;
  poll(upstreamId: string, target: VendorTarget): VendorRequest;
  polled(httpStatus: number, body: string): VendorTaskState | VendorRefusal;
  /** The vendor's own cancel, where it has one. */
  cancel?(upstreamId: string, target: VendorTarget): VendorRequest;
}
