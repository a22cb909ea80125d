// Per-request behaviour control. Tests and benchmarks embed `[[mock key=value ...]]` in the text
// of the last user message; the mock reads it from there. Pure functions, no I/O.

export interface Directives {
  /** Content tokens per choice. */
  chunks?: number;
  /** Delay before each streamed token chunk. */
  delayMs?: number;
  /** Delay before the response head. */
  latencyMs?: number;
  /** Answer this HTTP status (400..599) with an OpenAI-style error. */
  fail?: number;
  /** Streaming: destroy the connection after this many content chunks. */
  disconnectAfter?: number;
  /** Reasoning tokens emitted before the content. */
  reasoning?: number;
  /** Reported prompt_tokens_details.cached_tokens (capped at prompt_tokens). */
  cached?: number;
  /** Never send a usage object. */
  noUsage?: boolean;
  /** Answer with a call to this function (only when the request has tools). */
  tool?: string;
}

export const DIRECTIVE_MARKER = '[[mock';

const NONE: Directives = Object.freeze({});

function nonNegativeInt(value: string): number | undefined {
  return /^\d{1,9}$/.test(value) ? Number(value) : undefined;
}

function applyDirective(into: Directives, key: string, value: string): void {
  switch (key) {
    case 'chunks': into.chunks = nonNegativeInt(value) ?? into.chunks; break;
    case 'delay_ms': into.delayMs = nonNegativeInt(value) ?? into.delayMs; break;
    case 'latency_ms': into.latencyMs = nonNegativeInt(value) ?? into.latencyMs; break;
    case 'disconnect_after': into.disconnectAfter = nonNegativeInt(value) ?? into.disconnectAfter; break;
    case 'reasoning': into.reasoning = nonNegativeInt(value) ?? into.reasoning; break;
    case 'cached': into.cached = nonNegativeInt(value) ?? into.cached; break;
    case 'fail': {
      const status = nonNegativeInt(value);
      if (status !== undefined && status >= 400 && status <= 599) into.fail = status;
      break;
    }
    case 'no_usage': into.noUsage = value === '1' || value === 'true'; break;
    case 'tool': if (value !== '') into.tool = value; break;
    default: break; // unknown keys are ignored so callers can annotate freely
  }
}

/** Every `[[mock ...]]` block in the text, merged left to right (later keys win). */
export function parseDirectives(text: string): Directives {
  let at = text.indexOf(DIRECTIVE_MARKER);
  if (at === -1) return NONE;
  const found: Directives = {};
  while (at !== -1) {
    const bodyStart = at + DIRECTIVE_MARKER.length;
    const end = text.indexOf(']]', bodyStart);
    if (end === -1) break;
    const body = text.slice(bodyStart, end);
    // `[[mockery]]` is not a directive: the marker must be followed by whitespace or the end.
    if (body === '' || /^\s/.test(body)) {
      for (const pair of body.trim().split(/\s+/)) {
        const eq = pair.indexOf('=');
        if (eq > 0) applyDirective(found, pair.slice(0, eq), pair.slice(eq + 1));
      }
    }
    at = text.indexOf(DIRECTIVE_MARKER, end + 2);
  }
  return found;
}

/** The text of a message's content: the string itself, or its `text` parts concatenated. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (part !== null && typeof part === 'object' && (part as { type?: unknown }).type === 'text') {
      const partText = (part as { text?: unknown }).text;
      if (typeof partText === 'string') text += partText;
    }
  }
  return text;
}

/**
 * Directives from the last user message of a chat request's `messages`, or from the tool results
 * after it: a tool result is what the model answers next (as Anthropic's and Gemini's user-turn
 * tool results are), so a conversation's `[[mock tool=NAME]]` turn does not call the tool forever.
 */
export function directivesFromMessages(messages: unknown): Directives {
  if (!Array.isArray(messages)) return NONE;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message: unknown = messages[i];
    const role = message !== null && typeof message === 'object' ? (message as { role?: unknown }).role : undefined;
    if (role === 'user' || role === 'tool') {
      const text = messageText((message as { content?: unknown }).content);
      return text.includes(DIRECTIVE_MARKER) ? parseDirectives(text) : NONE;
    }
  }
  return NONE;
}
