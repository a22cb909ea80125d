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
