// A family relay's output (chat.completion.chunk SSE events) read back by the endpoints that render
// it in another API's events (Responses, Anthropic's Messages).

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
