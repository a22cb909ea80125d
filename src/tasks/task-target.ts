/**
 * The routing targets of a vendor task (docs/routing.md "Images, video and audio"): the job as a
 * target sends it, whether a refused submit may go to the next target, and the target that accepted
 * a task, which alone may poll and cancel it (a vendor task belongs to the account that created it).
 */
import { ApiError } from '../http/errors.js';
import type { Routing } from '../routing/routing.js';
import type { RouteTarget } from '../routing/targets.js';
import type { VendorRefusal, VendorTarget } from '../providers/video/adapter.js';
import type { TaskRow } from '../store/tasks.js';
import { taskApiOf } from './task-apis.js';

/** A model as task routing reads it. */
interface TaskModel {
  readonly id: string;
  readonly upstreamVendor: string;
  readonly family: string;
}

/** Answers that say the vendor may hold the job after all (an unreadable answer to a submit): the same target is asked again later, never another. */
const MAYBE_ACCEPTED = new Set(['invalid_response', 'answer_too_large']);

/**
 * Whether a refused submit may be sent to the next target now: a transient refusal (no answer, a
 * 429, a 5xx, the vendor's own rate-limit or overload code) that says the vendor did not take the job.
 */
export function movesOn(refusal: VendorRefusal): boolean {
  return refusal.retryable && !MAYBE_ACCEPTED.has(refusal.code);
}

/** A refusal as routing's breakers and logs read it (a 429 cools its target down for a second: task APIs' refusals keep no Retry-After). */
export function refusalError(refusal: VendorRefusal): ApiError {
  const status = refusal.httpStatus >= 400 ? refusal.httpStatus : 502;
  return new ApiError(status, refusal.code, refusal.message, null, status === 429 ? { 'retry-after': '1' } : {});
}

/** The job as `target` sends it: with the target's own upstream model id where it has one. */
export function jobFor<J extends { readonly upstreamModel: string }>(job: J, target: RouteTarget): J {
  return target.model === undefined || target.model === job.upstreamModel ? job : { ...job, upstreamModel: target.model };
}

/** What a worker is given of a target: its base URL, credential (a Vertex AI target's current access token) and cloud form, plain data. */
export function vendorTargetOf(target: RouteTarget): VendorTarget {
  return {
    baseUrl: target.baseUrl, apiKey: target.apiKey,
    ...(target.cloud ? { cloud: target.cloud } : {}), ...(target.guarded ? { guarded: true } : {}),
  };
}

/**
 * The credential and base URL of the target that accepted `row`'s task: the routing target it names,
 * else (a task accepted before targets were recorded, or by the vendor's one target) the vendor's own.
 * Undefined when the routing file no longer has it.
 */
export function acceptedTarget(routing: Routing, vendors: Readonly<Record<string, VendorTarget | undefined>>, model: TaskModel,
  row: Pick<TaskRow, 'upstream_target' | 'upstream_vendor'>): VendorTarget | undefined {
  const name = row.upstream_target;
  if (name === null) return vendors[row.upstream_vendor];
  const target = routing.mediaTargetNamed(model, name, taskApiOf(model.family)?.cloudForms);
  if (target) return vendorTargetOf(target);
  return name === row.upstream_vendor ? vendors[row.upstream_vendor] : undefined;
}
