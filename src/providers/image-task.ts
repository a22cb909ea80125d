/**
 * An image vendor that submits a task and is polled for it (Runway, Luma), seen by the caller as one
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
  readonly pollUrl: (id: string) => string;
  /** The task's result, or the error it ended in, or undefined while it runs. */
  readonly outcome: (task: JsonObject) => ImageResult | ApiError | undefined;
}

export function invalidImageTask(vendor: string): ApiError {
  return new ApiError(502, 'upstream_invalid_response', `The upstream vendor ${vendor} answered with a body that is not one of its tasks.`);
}

export async function runImageTask(calls: ImageTaskCalls, io: ImageIo): Promise<ImageResult> {
  const submitted = await io.post(calls.submitUrl, { ...calls.headers, 'content-type': 'application/json', accept: 'application/json' }, JSON.stringify(calls.body));
  if (submitted.status !== 200 && submitted.status !== 201) throw await io.refused(submitted);
  const id = textOf(parseObject(await submitted.text())?.id);
  if (id === undefined) throw invalidImageTask(calls.vendor);
  for (;;) {
    await io.wait();
    const answer = await io.get(calls.pollUrl(id), { ...calls.headers, accept: 'application/json' });
    if (answer.status !== 200) throw await io.refused(answer);
    const task = parseObject(await answer.text());
    if (task === undefined) throw invalidImageTask(calls.vendor);
    const outcome = calls.outcome(task);
    if (outcome instanceof ApiError) throw outcome;
    if (outcome !== undefined) return outcome;
  }
}
