// The Response object of the Responses-style endpoint, rendered from what the chat pipeline made. Pure.
import type { ChatRequest } from '../schemas/chat.js';
import type { NormalizedUsage } from '../../providers/usage.js';

/** What a Response says about its request, fixed before the upstream answers. */
export interface ResponseMeta {
  /** `resp_...` */
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
  /** The gateway's model id. */
  readonly model: string;
  /** Prefix of the ids of the items (`msg_<x>`, `fc_<x>_<n>`). */
  readonly itemKey: string;
  readonly request: ChatRequest;
  /** Whether the output items are kept for `item_reference` (echoed as `store`). */
  readonly store: boolean;
  /** The call's charge for a usage in USD (`usage.cost`); absent: no `cost` rendered. */
  readonly costOf?: (usage: NormalizedUsage) => number;
}

export function responseMeta(callId: string, createdAtMs: number, model: string, request: ChatRequest, store = false, costOf?: (usage: NormalizedUsage) => number): ResponseMeta {
  const hex = callId.replaceAll('-', '');
  return { id: `resp_${hex}`, createdAt: Math.floor(createdAtMs / 1000), model, itemKey: hex, request, store, costOf };
}

export const messageItemId = (meta: ResponseMeta, n: number) => (n === 0 ? `msg_${meta.itemKey}` : `msg_${meta.itemKey}_${n}`);
export const functionCallItemId = (meta: ResponseMeta, n: number) => `fc_${meta.itemKey}_${n}`;

export interface OutputTextPart { type: 'output_text'; text: string; annotations: unknown[] }
export interface MessageItem { type: 'message'; id: string; status: 'in_progress' | 'completed' | 'incomplete'; role: 'assistant'; content: OutputTextPart[] }
export interface FunctionCallItem { type: 'function_call'; id: string; call_id: string; name: string; arguments: string; status: 'in_progress' | 'completed' | 'incomplete' }
export type OutputItem = MessageItem | FunctionCallItem;

/** `usage` as the spec words it; the details are always present (0 when none); `cost` (USD) when known. */
export function responseUsage(usage: NormalizedUsage, cost?: number): Record<string, unknown> {
  const rendered: Record<string, unknown> = {
    input_tokens: usage.promptTokens,
    input_tokens_details: { cached_tokens: usage.cachedTokens },
    output_tokens: usage.completionTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
  if (cost !== undefined) rendered.cost = cost;
  return rendered;
}

/** A chat finish reason as the Response's status: a cut-off answer is `incomplete`, with the reason. */
export function statusOf(finishReason: unknown): { status: 'completed' | 'incomplete'; incomplete_details: { reason: string } | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** The request's settings as a Response echoes them (tools back in the flat form). */
function echo(request: ChatRequest, store: boolean): Record<string, unknown> {
  const choice = request.tool_choice;
  return {
    instructions: null,
    max_output_tokens: request.max_completion_tokens ?? request.max_tokens ?? null,
    metadata: {},
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    store,
    temperature: request.temperature ?? null,
    text: { format: request.response_format?.type === 'json_schema' ? { type: 'json_schema', ...request.response_format.json_schema } : { type: request.response_format?.type ?? 'text' } },
    tool_choice: choice == null ? 'auto' : typeof choice === 'string' ? choice : { type: 'function', name: choice.function.name },
    tools: (request.tools ?? []).map((tool) => ({ type: 'function', name: tool.function.name, description: tool.function.description ?? null, parameters: tool.function.parameters ?? null, strict: tool.function.strict ?? null })),
    top_p: request.top_p ?? null,
    truncation: 'disabled',
    user: request.user ?? null,
  };
}

/** The Response object; `usage` null while the response is in progress. */
export function responseObject(meta: ResponseMeta, status: 'in_progress' | 'completed' | 'incomplete', incompleteDetails: { reason: string } | null, output: readonly OutputItem[], usage: NormalizedUsage | null): Record<string, unknown> {
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status,
    error: null,
    incomplete_details: incompleteDetails,
    model: meta.model,
    output,
    ...echo(meta.request, meta.store),
    usage: usage ? responseUsage(usage, meta.costOf?.(usage)) : null,
  };
}

/** A finished chat.completion body (the family's rendering) as the Response object's JSON. */
export function responseFromCompletion(completionJson: string, usage: NormalizedUsage, meta: ResponseMeta): string {
  return completionResponse(completionJson, usage, meta).json;
}

/** The Response object's JSON for a finished chat.completion body, and its output items. */
export function completionResponse(completionJson: string, usage: NormalizedUsage, meta: ResponseMeta): { json: string; output: OutputItem[] } {
  const completion = JSON.parse(completionJson) as { choices?: { message?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }[] };
  const choice = completion.choices?.[0] ?? {};
  const message = choice.message ?? {};
  const { status, incomplete_details } = statusOf(choice.finish_reason);
  const output: OutputItem[] = [];
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]) : [];
  const text = typeof message.content === 'string' ? message.content : '';
  if (text !== '' || calls.length === 0) {
    output.push({ type: 'message', id: messageItemId(meta, 0), status, role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
  }
  calls.forEach((call, n) => {
    output.push({
      type: 'function_call', id: functionCallItemId(meta, n), call_id: String(call.id ?? ''), name: String(call.function?.name ?? ''),
      arguments: typeof call.function?.arguments === 'string' ? call.function.arguments : '', status: 'completed',
    });
  });
  return { json: JSON.stringify(responseObject(meta, status, incomplete_details, output, usage)), output };
}
