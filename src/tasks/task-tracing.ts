/**
 * A task's trace (docs/operations.md "Task spans"). Its creation starts a trace of its own, linked
 * to the submit request's span; the span's `traceparent` is stored on the row (tasks.trace_parent),
 * and every later step (submit to the vendor, each poll, make, settle, cancel, callback delivery) is
 * a child of it on whichever gateway runs the step: the row is read from Postgres, so a shard that
 * moves continues the same trace. The sampling decision is made once, at creation, and travels in
 * the traceparent's flags.
 *
 * Nothing here makes a span while tracing is off (`tracer` undefined), nor for a task created then.
 */
import { context, trace, type Attributes, type Link } from '@opentelemetry/api';
import { SpanKind, contextOf, endFailed, tracer, withSpan, type Span } from '../tracing/tracing.js';
import type { TaskKind, TaskRow, TaskStatus } from '../store/tasks.js';

/**
 * What a step span does: `gateway.step` and its name (`task.poll`). `made` records a result made at
 * once (audio), after the `make` step that asked for it.
 */
export type TaskStep = 'submit' | 'poll' | 'make' | 'made' | 'settle' | 'cancel' | 'callback';

/** The GenAI and gateway attributes every span of a task carries: never its job (prompt, images) or callback URL. */
function taskAttributes(task: { readonly id: string; readonly kind: TaskKind; readonly model: string; readonly vendor: string }): Attributes {
  return {
    'gen_ai.operation.name': 'generate_content',
    'gen_ai.provider.name': task.vendor,
    'gen_ai.system': task.vendor,
    'gen_ai.request.model': task.model,
    'gateway.task_id': task.id,
    'gateway.task_kind': task.kind,
  };
}

/**
 * The span a task's trace starts with (`task {model}`), made while its submit request is served and
 * ended by `endTaskCreation`; undefined when tracing is off. It is the root of a new trace: a task
 * outlives its request by minutes or days, and a trace per task keeps its steps together. It links
 * to the submit request's span (the active one: the request's server span).
 */
export function startTaskCreation(task: { readonly id: string; readonly kind: TaskKind; readonly model: string; readonly vendor: string }): Span | undefined {
  if (!tracer) return undefined;
  const submit = trace.getActiveSpan()?.spanContext();
  const links: Link[] = submit ? [{ context: submit, attributes: { 'gateway.link': 'submit_request' } }] : [];
  return tracer.startSpan(`task ${task.model}`, { root: true, kind: SpanKind.INTERNAL, links, attributes: { ...taskAttributes(task), 'gateway.step': 'create' } });
}

/** Ends the creation span: the task accepted (`pending`), or not (`errorCode`, the submit's error code). */
export function endTaskCreation(span: Span | undefined, errorCode?: string): void {
  if (!span) return;
  if (errorCode === undefined) {
    span.setAttribute('gateway.task_status', 'pending');
    span.end();
  } else endFailed(span, errorCode);
}

/**
 * Runs a step of `row` inside its span (`task.{step}`), a child of the task's creation span, so the
 * step's log lines and its worker's spans carry the task's trace id. Without tracing, or for a task
 * created without it, just runs `work`.
 */
export async function inTaskStep<T>(row: TaskRow, step: TaskStep, work: () => Promise<T>): Promise<T> {
  if (!tracer || !row.trace_parent) return work();
  const span = tracer.startSpan(`task.${step}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      ...taskAttributes({ id: row.id, kind: row.kind, model: row.model, vendor: row.upstream_vendor }),
      'gateway.step': step, 'gateway.task_status': row.status,
      ...(row.upstream_target ? { 'gateway.target': row.upstream_target } : {}),
      ...(row.upstream_status ? { 'gateway.upstream_status': row.upstream_status } : {}),
      ...(step === 'callback' ? { 'gateway.attempt': row.callback_attempts + 1 } : {}),
    },
  }, contextOf(row.trace_parent));
  let result: T;
  try {
    result = await withSpan(span, work);
  } catch (error) {
    endFailed(span, (error as Error)?.name ?? 'Error');
    throw error;
  }
  span.end();
  return result;
}

/** Runs `work` (a log line about the task, outside any step) in the task's trace, making no span. */
export function inTaskContext<T>(row: Pick<TaskRow, 'trace_parent'> | undefined, work: () => T): T {
  if (!tracer || !row?.trace_parent) return work();
  return context.with(contextOf(row.trace_parent), work);
}

/** Notes on the step under way what it changed: the task's status, the vendor's status of it, an error code. */
export function noteTaskOutcome(outcome: { readonly status?: TaskStatus; readonly upstreamStatus?: string | null; readonly errorCode?: string | null; readonly target?: string }): void {
  if (!tracer) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  if (outcome.status) span.setAttribute('gateway.task_status', outcome.status);
  if (outcome.upstreamStatus) span.setAttribute('gateway.upstream_status', outcome.upstreamStatus);
  if (outcome.errorCode) span.setAttribute('gateway.task_error', outcome.errorCode);
  if (outcome.target) span.setAttribute('gateway.target', outcome.target);
}


/** Span attributes made only while tracing is on (nothing is built otherwise). */
export function whenTracing<T>(attributes: () => T): T | undefined {
  return tracer ? attributes() : undefined;
}
