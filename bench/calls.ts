// The request bodies of both sides: the same chat completion, addressed to the gateway by its
// catalog id and to the mock by the vendor's model name.
import type { Call } from './load.js';

export interface ChatCallOptions {
  readonly prompt: string;
  readonly stream: boolean;
  /** Must not cap the mock's `chunks` directive (the mock stops at max_tokens). */
  readonly maxTokens: number;
}

export function chatCalls(options: ChatCallOptions): { direct: Call; gateway: Call } {
  const messages = [{ role: 'user', content: options.prompt }];
  const stream = options.stream ? { stream: true } : {};
  return {
    gateway: {
      stream: options.stream,
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages, max_tokens: options.maxTokens, ...stream }),
    },
    direct: {
      stream: options.stream,
      // What the gateway sends upstream for a stream: usage included, so both sides carry the same events.
      body: JSON.stringify({
        model: 'gpt-4o-mini', messages, max_tokens: options.maxTokens,
        ...(options.stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
    },
  };
}

/** The same streaming call to the gateway for two of its models: a pass-through family against a translated one. */
export function familyCalls(options: ChatCallOptions & { readonly passThroughModel: string; readonly translatedModel: string }): { direct: Call; gateway: Call } {
  const body = (model: string) => JSON.stringify({
    model, messages: [{ role: 'user', content: options.prompt }], max_tokens: options.maxTokens, ...(options.stream ? { stream: true } : {}),
  });
  return {
    direct: { stream: options.stream, body: body(options.passThroughModel) },
    gateway: { stream: options.stream, body: body(options.translatedModel) },
  };
}

/**
 * The same call to the gateway's two inference endpoints: chat completions (as `direct`) and the
 * Responses-style endpoint (as `gateway`), for one model and prompt.
 */
export function responsesCalls(options: ChatCallOptions & { readonly model: string }): { direct: Call; gateway: Call } {
  const stream = options.stream ? { stream: true } : {};
  return {
    direct: { stream: options.stream, body: JSON.stringify({ model: options.model, messages: [{ role: 'user', content: options.prompt }], max_tokens: options.maxTokens, ...stream }) },
    gateway: {
      stream: options.stream,
      ...(options.stream ? { endMarker: 'event: response.completed' } : {}),
      body: JSON.stringify({ model: options.model, input: options.prompt, max_output_tokens: options.maxTokens, ...stream }),
    },
  };
}

/**
 * The same chat call to the gateway's pooled model twice: as `direct`, every attempt served (the
 * directive's rate is 0); as `gateway`, each attempt on the faulty target's key answered `status`
 * with probability `faultRate` (the mock's fault directives, docs/mock-vendor.md). The two bodies
 * differ only in that rate, so the mock and the gateway parse the same bytes on both sides.
 */
export function pooledCalls(options: ChatCallOptions & { readonly model: string; readonly faultyKey: string; readonly status: number; readonly faultRate: number }): { direct: Call; gateway: Call } {
  const body = (rate: number) => JSON.stringify({
    model: options.model,
    messages: [{ role: 'user', content: `${options.prompt} [[mock fault=${options.status} fault_rate=${rate} fault_key=${options.faultyKey}]]` }],
    max_tokens: options.maxTokens,
    ...(options.stream ? { stream: true } : {}),
  });
  return { direct: { stream: options.stream, body: body(0) }, gateway: { stream: options.stream, body: body(options.faultRate) } };
}

/** The last event of an Anthropic Messages stream (Anthropic's "Streaming Messages" docs: message_start,
 * content blocks, message_delta, then message_stop); the mock's stream ends the same way. */
export const MESSAGE_STOP = 'event: message_stop';

/** Anthropic's own request headers, for the mock's Anthropic endpoint (both required there, docs/mock-vendor.md). */
export function anthropicAuthHeaders(apiKey: string): Record<string, string> {
  return { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' };
}

/** A chat completion to the gateway for `model` (a catalog id). */
export function chatCall(options: ChatCallOptions & { readonly model: string }): Call {
  const stream = options.stream ? { stream: true } : {};
  return { stream: options.stream, body: JSON.stringify({ model: options.model, messages: [{ role: 'user', content: options.prompt }], max_tokens: options.maxTokens, ...stream }) };
}

/**
 * A call in Anthropic's Messages format: to the vendor with its model name, or to the gateway's
 * `/v1/messages` with a catalog id (which passes the body on as it is, but for the model).
 */
export function messagesCall(options: ChatCallOptions & { readonly model: string }): Call {
  return {
    stream: options.stream,
    ...(options.stream ? { endMarker: MESSAGE_STOP } : {}),
    body: JSON.stringify({ model: options.model, max_tokens: options.maxTokens, messages: [{ role: 'user', content: options.prompt }], ...(options.stream ? { stream: true } : {}) }),
  };
}
