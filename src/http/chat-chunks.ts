// A family relay's output (chat.completion.chunk SSE events) read back by the endpoints that render
// it in another API's events (Responses, Anthropic's Messages).
import type { ChatStreamRelay } from '../providers/family.js';
import type { NormalizedUsage } from '../providers/usage.js';

const EVENT_BOUNDARY = /\r?\n\r?\n/;

/** One chat.completion.chunk, as far as a renderer reads it; `error` when the family's stream failed (sseErrorEvent). */
export interface ChatChunk {
  choices?: { delta?: Record<string, any>; finish_reason?: unknown }[];
  error?: { message?: unknown; type?: unknown; code?: unknown };
}

/** The chunks of complete SSE events, in order; `data: [DONE]` and events that are not JSON objects left out. */
export function chatChunksOf(bytes: Buffer): ChatChunk[] {
  const chunks: ChatChunk[] = [];
  for (const event of bytes.toString('utf8').split(EVENT_BOUNDARY)) {
    const dataAt = event.indexOf('data:');
    if (dataAt === -1) continue;
    const payload = event.slice(dataAt + 5).trim();
    if (!payload.startsWith('{')) continue;
    try {
      chunks.push(JSON.parse(payload) as ChatChunk);
    } catch {
      // a family emits whole events only; nothing to render from one that is not JSON
    }
  }
  return chunks;
}

/**
 * A relay over a family's relay, which keeps doing the billing work (usage, generated text), that
 * renders the chunks it emits in another API's events (`translate`).
 */
export abstract class ChunkRenderer implements ChatStreamRelay {
  constructor(protected readonly inner: ChatStreamRelay) {}

  get usage(): NormalizedUsage | undefined {
    return this.inner.usage;
  }

  get failure(): string | undefined {
    return this.inner.failure;
  }

  generatedText(): string {
    return this.inner.generatedText();
  }

  push(chunk: Buffer): Buffer | undefined {
    return this.translate(this.inner.push(chunk));
  }

  flush(): Buffer | undefined {
    return this.translate(this.inner.flush());
  }

  /** This API's events for the bytes the family's relay emitted (none: only what this API adds, if anything). */
  protected abstract translate(bytes: Buffer | undefined): Buffer | undefined;
}
