// Per-request behaviour control. Tests and benchmarks embed `[[mock key=value ...]]` in the text
// of the last user message (the image routes: in `prompt`); the mock reads it from there. Pure
// functions, no I/O. Chat keys: chunks, delay_ms, latency_ms, fail, disconnect_after, reasoning,
// cached, no_usage, tool, tool_text (with `tool`: that many content words before the call, in the
// same assistant turn, as a model that says what it is about to do). Image keys (images.ts, bfl.ts): latency_ms, fail, images=K (deliver at
// most K images whatever `n` asked), broken_url (the result URL 404s), and for BFL's tasks
// polls=K (Pending answers before the final one, default 1), task_status=Error|Content_Moderated|
// Request_Moderated (the final status instead of Ready; `_` stands for a space) and
// poll_fail=STATUS (every get_result for the task answers that HTTP status). A flag (no_usage,
// broken_url) may stand alone, meaning `=1`. The video task APIs and the audio APIs read their own
// keys (video-tasks.ts, audio.ts, through `directivePairs`).
//
// Fault keys (faults.ts; the chat and image routes): fault=429|500|502|503|504|529|reset|hang|cut|error
// (any status 400..599 is accepted), fault_rate=0..1 (the chance a request meets it, default 1),
// retry_after=SECONDS (the Retry-After header of a status fault), cut_after=N (with `cut` or `error`:
// content chunks before the cut or the error event, default 1) and fault_key=CREDENTIAL (only requests carrying that credential
// meet the fault).

/** An HTTP status (400..599), or a fault that is not an answer: 'reset', 'hang', 'cut', 'error' (see faults.ts). */
export type FaultKind = number | 'reset' | 'hang' | 'cut' | 'error';

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
  /** With `tool`: content words before the call, in the same assistant turn. */
  toolText?: number;
  /** Image routes: deliver at most this many images, however many were asked for. */
  images?: number;
  /** Image routes: the result URL points at a file that is not there (404). */
  brokenUrl?: boolean;
  /** BFL: Pending answers to get_result before the final status. */
  polls?: number;
  /** BFL: the task's final status instead of Ready. */
  taskStatus?: TaskFailure;
  /** BFL: get_result answers this HTTP status (400..599). */
  pollFail?: number;
  /** A fault to play (faults.ts): an HTTP status (400..599), 'reset', 'hang', 'cut' or 'error'. */
  fault?: FaultKind;
  /** The chance in [0, 1] that this request meets `fault` (default 1). */
  faultRate?: number;
  /** With a status fault: the Retry-After header, seconds. */
  retryAfter?: number;
  /** With `fault=cut`: content chunks sent before the cut. */
  cutAfter?: number;
  /** `fault` applies only to requests carrying this credential. */
  faultKey?: string;
}

export const TASK_FAILURES = ['Error', 'Content Moderated', 'Request Moderated'] as const;
export type TaskFailure = (typeof TASK_FAILURES)[number];

/** Keys that may stand alone (`[[mock broken_url]]`), meaning `=1`. */
const FLAGS: ReadonlySet<string> = new Set(['no_usage', 'broken_url']);

export const DIRECTIVE_MARKER = '[[mock';

const NONE: Directives = Object.freeze({});

function nonNegativeInt(value: string): number | undefined {
  return /^\d{1,9}$/.test(value) ? Number(value) : undefined;
}

function errorStatus(value: string): number | undefined {
  const status = nonNegativeInt(value);
  return status !== undefined && status >= 400 && status <= 599 ? status : undefined;
}

const flag = (value: string): boolean => value === '1' || value === 'true';

function faultKind(value: string): FaultKind | undefined {
  if (value === 'reset' || value === 'hang' || value === 'cut' || value === 'error') return value;
  return errorStatus(value);
}

/** A probability written as a decimal in [0, 1] (`0.3`, `.3`, `1`). */
function probability(value: string): number | undefined {
  if (!/^(?:\d{1,9}(?:\.\d{0,9})?|\.\d{1,9})$/.test(value)) return undefined;
  const rate = Number(value);
  return rate <= 1 ? rate : undefined;
}

function applyDirective(into: Directives, key: string, value: string): void {
  switch (key) {
    case 'chunks': into.chunks = nonNegativeInt(value) ?? into.chunks; break;
    case 'delay_ms': into.delayMs = nonNegativeInt(value) ?? into.delayMs; break;
    case 'latency_ms': into.latencyMs = nonNegativeInt(value) ?? into.latencyMs; break;
    case 'disconnect_after': into.disconnectAfter = nonNegativeInt(value) ?? into.disconnectAfter; break;
    case 'reasoning': into.reasoning = nonNegativeInt(value) ?? into.reasoning; break;
    case 'cached': into.cached = nonNegativeInt(value) ?? into.cached; break;
    case 'fail': into.fail = errorStatus(value) ?? into.fail; break;
    case 'no_usage': into.noUsage = flag(value); break;
    case 'tool': if (value !== '') into.tool = value; break;
    case 'tool_text': into.toolText = nonNegativeInt(value) ?? into.toolText; break;
    case 'images': into.images = nonNegativeInt(value) ?? into.images; break;
    case 'broken_url': into.brokenUrl = flag(value); break;
    case 'polls': into.polls = nonNegativeInt(value) ?? into.polls; break;
    case 'task_status': {
      const status = TASK_FAILURES.find((s) => s === value.replaceAll('_', ' '));
      if (status !== undefined) into.taskStatus = status;
      break;
    }
    case 'poll_fail': into.pollFail = errorStatus(value) ?? into.pollFail; break;
    case 'fault': into.fault = faultKind(value) ?? into.fault; break;
    case 'fault_rate': into.faultRate = probability(value) ?? into.faultRate; break;
    case 'retry_after': into.retryAfter = nonNegativeInt(value) ?? into.retryAfter; break;
    case 'cut_after': into.cutAfter = nonNegativeInt(value) ?? into.cutAfter; break;
    case 'fault_key': if (value !== '') into.faultKey = value; break;
    default: break; // unknown keys are ignored so callers can annotate freely
  }
}

/** Every `[[mock ...]]` block in the text, merged left to right (later keys win). */
export function parseDirectives(text: string): Directives {
  if (!text.includes(DIRECTIVE_MARKER)) return NONE;
  const found: Directives = {};
  eachPair(text, (key, value) => {
    if (value !== undefined) applyDirective(found, key, value);
    else if (FLAGS.has(key)) applyDirective(found, key, '1');
  });
  return found;
}

/** The raw `key=value` pairs of every `[[mock ...]]` block (a lone word is `=1`), later keys winning: for handlers with keys of their own. */
export function directivePairs(text: string): Map<string, string> {
  const found = new Map<string, string>();
  eachPair(text, (key, value) => found.set(key, value ?? '1'));
  return found;
}

/** Calls `visit` for each word of each `[[mock ...]]` block, in order: `key=value`, or a lone `key` (value undefined). */
function eachPair(text: string, visit: (key: string, value: string | undefined) => void): void {
  let at = text.indexOf(DIRECTIVE_MARKER);
  while (at !== -1) {
    const bodyStart = at + DIRECTIVE_MARKER.length;
    const end = text.indexOf(']]', bodyStart);
    if (end === -1) break;
    const body = text.slice(bodyStart, end);
    // `[[mockery]]` is not a directive: the marker must be followed by whitespace or the end.
    if (body === '' || /^\s/.test(body)) {
      for (const pair of body.trim().split(/\s+/)) {
        const eq = pair.indexOf('=');
        if (eq > 0) visit(pair.slice(0, eq), pair.slice(eq + 1));
        else if (pair !== '') visit(pair, undefined);
      }
    }
    at = text.indexOf(DIRECTIVE_MARKER, end + 2);
  }
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
