/**
 * An image vendor that submits a task and is polled for it (BFL, Runway, Luma), seen by the caller as one
 * synchronous call: submit, then ask after each poll interval until the vendor's task says how it
 * ended. The vendor's own answers are read by `outcome`; the rest (refusals, deadline) is the route's.
 */
import type { ImageIo, ImageResult } from './image-family.js';
import { ApiError } from '../http/errors.js';
import { parseObject, textOf, type JsonObject } from './video/wire.js';

export interface ImageTaskCalls {
  /** The vendor's name, for messages. */
  readonly vendor: string;
  readonly submitUrl: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  /** Where the task is polled; `submitted` is the submit's answer (BFL names a regional polling address there). */
  readonly pollUrl: (id: string, submitted: JsonObject) => string;
  /** The statuses a submit is accepted with (default 200 and 201). */
  readonly submitStatuses?: readonly number[];
  /** The task's result, or the error it ended in, or undefined while it runs. */
  readonly outcome: (task: JsonObject) => ImageResult | ApiError | undefined;
}

const ACCEPTED: readonly number[] = [200, 201];

export function invalidImageTask(vendor: string): ApiError {
  return new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${vendor} answered with a body that is not one of its tasks.`);
}

export async function runImageTask(calls: ImageTaskCalls, io: ImageIo): Promise<ImageResult> {
  const submitted = await io.post(calls.submitUrl, { ...calls.headers, 'content-type': 'application/json', accept: 'application/json' }, JSON.stringify(calls.body));
  if (!(calls.submitStatuses ?? ACCEPTED).includes(submitted.status)) throw await io.refused(submitted);
  const task = parseObject(await submitted.text());
  const id = textOf(task?.id);
  if (id === undefined) throw invalidImageTask(calls.vendor);
  const pollUrl = calls.pollUrl(id, task!);
  for (;;) {
    await io.wait();
    const answer = await io.get(pollUrl, { ...calls.headers, accept: 'application/json' });
    if (answer.status !== 200) throw await io.refused(answer);
    const task = parseObject(await answer.text());
    if (task === undefined) throw invalidImageTask(calls.vendor);
    const outcome = calls.outcome(task);
    if (outcome instanceof ApiError) throw outcome;
    if (outcome !== undefined) return outcome;
  }
}
