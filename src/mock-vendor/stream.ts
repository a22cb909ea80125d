// The streamed form of a planned completion, as OpenAI sends it: one `data: <chunk json>\n\n`
// event per chunk, then `data: [DONE]`. Chunks are assembled from pre-serialised pieces (the
// per-request head and the per-word JSON) instead of JSON.stringify on every chunk, to keep the
// mock's CPU cost per token small; the bytes are the same as JSON.stringify would produce, with
// OpenAI's key order (id, object, created, model, system_fingerprint, choices, usage).
import type { CompletionPlan } from './completion.js';
import { randomId } from './ids.js';
import { CONTENT_WORDS, REASONING_WORDS, TOOL_ARGUMENT_FRAGMENTS } from './words.js';

/**
 * head: the first chunk of a choice; reasoning/content: one token each (content also covers
 * tool-call argument fragments); toolHeader: the tool call's id and name after reasoning.
 */
export type FrameKind = 'head' | 'reasoning' | 'toolHeader' | 'content' | 'finish' | 'usage' | 'done';

export interface Frame {
  kind: FrameKind;
  /** The complete SSE event, `data: ...\n\n`. */
  data: string;
}

const CONTENT_JSON = CONTENT_WORDS.map((w) => JSON.stringify(w));
const REASONING_JSON = REASONING_WORDS.map((w) => JSON.stringify(w));
const ARGUMENT_JSON = TOOL_ARGUMENT_FRAGMENTS.map((f) => JSON.stringify(f));

/** Frames a cut (disconnect_after, a `cut` fault) happens before: everything from the content phase on. */
export function cutsBefore(frame: Frame): boolean {
  return frame.kind !== 'head' && frame.kind !== 'reasoning';
}

const DONE_FRAME: Frame = { kind: 'done', data: 'data: [DONE]\n\n' };

function toolCallJson(id: string, name: string): string {
  return `[{"index":0,"id":${JSON.stringify(id)},"type":"function","function":{"name":${JSON.stringify(name)},"arguments":""}}]`;
}

export function* streamFrames(plan: CompletionPlan, includeUsage: boolean): Generator<Frame, void, undefined> {
  const sendUsage = includeUsage && plan.usage !== undefined;
  const head =
    `data: {"id":${JSON.stringify(plan.id)},"object":"chat.completion.chunk","created":${plan.created},` +
    `"model":${JSON.stringify(plan.model)},"system_fingerprint":"fp_mock","choices":[`;
  // With include_usage, OpenAI sends "usage":null on every chunk before the usage chunk.
  const tail = sendUsage ? '],"usage":null}\n\n' : ']}\n\n';
  const frame = (kind: FrameKind, index: number, delta: string, finishReason = 'null'): Frame => ({
    kind,
    data: `${head}{"index":${index},"delta":${delta},"logprobs":null,"finish_reason":${finishReason}}${tail}`,
  });
  const choices = plan.choices;
  const toolName = plan.answerTokens > 0 ? plan.toolName : undefined;
  // OpenAI folds the role into the tool call's first delta when nothing comes before it.
  const toolInHead = toolName !== undefined && plan.reasoningTokens === 0 && plan.toolTextTokens === 0;

  for (let index = 0; index < choices; index++) {
    const delta = toolInHead
      ? `{"role":"assistant","content":null,"tool_calls":${toolCallJson(randomId('call_', 24), toolName)},"refusal":null}`
      : '{"role":"assistant","content":""}';
    yield frame('head', index, delta);
  }
  for (let t = 0; t < plan.reasoningTokens; t++) {
    const word = REASONING_JSON[t % REASONING_JSON.length] as string;
    for (let index = 0; index < choices; index++) yield frame('reasoning', index, `{"reasoning_content":${word}}`);
  }
  // A model that says what it is about to do: text first, then the call, in one turn.
  for (let t = 0; t < plan.toolTextTokens; t++) {
    const word = CONTENT_JSON[t % CONTENT_JSON.length] as string;
    for (let index = 0; index < choices; index++) yield frame('content', index, `{"content":${word}}`);
  }
  if (toolName !== undefined) {
    if (!toolInHead) {
      for (let index = 0; index < choices; index++) {
        yield frame('toolHeader', index, `{"tool_calls":${toolCallJson(randomId('call_', 24), toolName)}}`);
      }
    }
    for (let t = 0; t < plan.answerTokens; t++) {
      const fragment = ARGUMENT_JSON[t] as string;
      for (let index = 0; index < choices; index++) {
        yield frame('content', index, `{"tool_calls":[{"index":0,"function":{"arguments":${fragment}}}]}`);
      }
    }
  } else {
    for (let t = 0; t < plan.answerTokens; t++) {
      const word = CONTENT_JSON[t % CONTENT_JSON.length] as string;
      for (let index = 0; index < choices; index++) yield frame('content', index, `{"content":${word}}`);
    }
  }
  const finishReason = JSON.stringify(plan.finishReason);
  for (let index = 0; index < choices; index++) yield frame('finish', index, '{}', finishReason);
  if (sendUsage) {
    const usageChunk = `${head}],"usage":${JSON.stringify(plan.usage)}}\n\n`;
    yield { kind: 'usage', data: usageChunk };
  }
  yield DONE_FRAME;
}
