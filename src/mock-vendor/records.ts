// What the mock saw: one record per request, pushed when the request arrives and updated in place
// as the response progresses, so tests can inspect a stream's fate after (or while) it happens.

export interface MockRequestRecord {
  /** Also the `id` of the completion answered to this request. */
  id: string;
  path: string;
  authorization: string | undefined;
  /** The parsed JSON body; the raw text if it was not JSON; undefined until read (or not read). */
  body: unknown;
  stream: boolean;
  /** Content chunks (content tokens or tool-argument fragments) written, over all choices. */
  contentChunksWritten: number;
  /** The whole response was handed to the OS. */
  completed: boolean;
  /** The client went away before the response was complete. */
  clientAborted: boolean;
  /** HTTP status sent; 0 until the response head is written. */
  status: number;
  /** The fault the request met (faults.ts): its status as text, or reset, hang, cut. */
  fault?: string;
  /** Anthropic's routes: the `anthropic-version` and `anthropic-beta` headers as received. */
  anthropicVersion?: string;
  anthropicBeta?: string;
  /** Image routes: the reference images the request carried (URLs or data URIs), in order. */
  referenceImages?: string[];
}

/** Records a request body as its JSON, or as the raw text when it is not JSON; returns the parse error's message then. */
export function recordBody(record: MockRequestRecord, text: string): string | undefined {
  try {
    record.body = JSON.parse(text);
    return undefined;
  } catch (error) {
    record.body = text;
    return (error as Error).message;
  }
}

/** A ring of the most recent records; capacity 0 keeps none (the benchmark's setting). */
export class RequestLog {
  private records: MockRequestRecord[] = [];

  constructor(private readonly capacity: number) {}

  add(record: MockRequestRecord): void {
    if (this.capacity <= 0) return;
    this.records.push(record);
    if (this.records.length > this.capacity) this.records.splice(0, this.records.length - this.capacity);
  }

  /** Oldest first. */
  list(): MockRequestRecord[] {
    return this.records.slice();
  }

  clear(): void {
    this.records = [];
  }
}
