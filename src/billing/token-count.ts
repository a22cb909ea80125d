import { isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import { OnDemandWorkerPool } from '../worker-pool.js';
import type { ChatMessage } from '../http/schemas/chat.js';
import type { CountTokensInput } from '../../workers/count-tokens.js';
import { activeTraceparent, tracer } from '../tracing/tracing.js';

// Only calls without upstream usage, and keys with a token budget, need it. Its tokenizer's tables
// take about 45 MiB of resident memory, so a process with HTTP threads runs one counter thread
// (workers/token-counter.ts, started by the main thread: src/http/thread-pool.ts) that each HTTP
// thread asks over a port of its own. A thread without one (no HTTP threads), or whose port closed
// (the counter thread gone), counts in an on-demand pool of its own, started on first use.
const local = new OnDemandWorkerPool<CountTokensInput, number[]>(new URL('../../workers/count-tokens.js', import.meta.url));

/** What the main thread puts in an HTTP thread's workerData: its port to the counter thread. */
export interface TokenCounterPorts {
  readonly tokenCounter?: MessagePort;
}

export interface CountRequest {
  readonly id: number;
  readonly input: CountTokensInput;
  /** While tracing is on: the active span's context, the parent of the count's span on the counter thread. */
  readonly traceparent?: string;
}

export interface CountAnswer {
  readonly id: number;
  readonly counts?: number[];
  readonly error?: string;
}

/** Counts on the counter thread, over a port; what is pending when the port closes goes to the local pool. */
class RemoteCounter {
  private readonly pending = new Map<number, { input: CountTokensInput; resolve: (counts: number[]) => void; reject: (error: Error) => void }>();
  private seq = 0;
  private closed = false;

  constructor(private readonly port: MessagePort) {
    port.on('message', (answer: CountAnswer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.settled(answer.id);
      if (answer.counts) waiting.resolve(answer.counts);
      else waiting.reject(new Error(answer.error ?? 'token count failed'));
    });
    port.on('close', () => {
      this.closed = true;
      for (const [id, waiting] of this.pending) {
        this.settled(id);
        local.run(waiting.input).then(waiting.resolve, waiting.reject);
      }
    });
    port.unref(); // referenced only while an answer is awaited
  }

  run(input: CountTokensInput): Promise<number[]> {
    if (this.closed) return local.run(input);
    return new Promise((resolve, reject) => {
      const id = ++this.seq;
      if (this.pending.size === 0) this.port.ref();
      this.pending.set(id, { input, resolve, reject });
      this.port.postMessage((tracer === undefined ? { id, input } : { id, input, traceparent: activeTraceparent() }) satisfies CountRequest);
    });
  }

  private settled(id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) this.port.unref();
  }

  close(): void {
    this.port.close();
  }
}

const ports = (isMainThread ? undefined : workerData) as TokenCounterPorts | null | undefined;
const remote = ports?.tokenCounter ? new RemoteCounter(ports.tokenCounter) : undefined;
const counter: { run(input: CountTokensInput): Promise<number[]> } = remote ?? local;

export function closeTokenCounter(): Promise<void> {
  remote?.close();
  return local.close();
}

/** Tokens an image part is counted at when the upstream reported no usage (the low-detail floor). */
export const IMAGE_PART_TOKENS = 85;

/**
 * OpenAI's documented prompt scheme: 3 per message, its texts, 1 for a name, 3 to prime the reply;
 * each image part at `imageTokens`.
 */
export function promptTexts(messages: readonly ChatMessage[], imageTokens = IMAGE_PART_TOKENS): { texts: string[]; fixedTokens: number } {
  const texts: string[] = [];
  let fixedTokens = 3;
  for (const message of messages) {
    fixedTokens += 3;
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        if (part.type === 'text') texts.push(part.text);
        else fixedTokens += imageTokens;
      }
    }
    if (typeof (message as { name?: unknown }).name === 'string') fixedTokens += 1;
    const toolCalls = (message as { tool_calls?: { function: { name: string; arguments: string } }[] }).tool_calls;
    for (const call of toolCalls ?? []) texts.push(call.function.name, call.function.arguments);
  }
  return { texts, fixedTokens };
}

/** Prompt and completion tokens counted in one trip to the worker. */
export async function countTokens(messages: readonly ChatMessage[], completionText: string): Promise<{ promptTokens: number; completionTokens: number }> {
  const { texts, fixedTokens } = promptTexts(messages);
  const counts = await counter.run({ texts: [completionText, ...texts] });
  const [completionTokens = 0, ...promptCounts] = counts;
  return { promptTokens: fixedTokens + promptCounts.reduce((a, b) => a + b, 0), completionTokens };
}

/** Tokens of each text, counted in the worker (the tokenizer is too slow for an HTTP thread). */
export function countTexts(texts: readonly string[]): Promise<number[]> {
  return counter.run({ texts: [...texts] });
}
