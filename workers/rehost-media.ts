/**
 * piscina task: downloads a vendor's result through the URL guard (every hop vetted, bounded by size
 * and time) and stores it on the media host as it arrives (local storage; S3 is given it whole). Plain
 * data in and out; the storage is opened once per worker thread.
 */
import type { MediaConfig } from '../src/config.js';
import { threadMediaStorage } from '../src/media/open.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { UrlGuardError, fetchGuarded, fetchGuardedStream } from '../src/media/url-guard.js';
import { storeAudio } from '../src/media/audio-store.js';
import { SpanKind } from '../src/tracing/tracing.js';
import { inWorkerSpan, startWorkerTracing, type WorkerTrace } from '../src/tasks/worker-spans.js';

export interface RehostMediaInput {
  readonly url: string;
  readonly media: MediaConfig;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** Loopback vendors (the built-in mock) and tests. */
  readonly allowLoopback: boolean;
  /** What the bytes must be: `video` or `audio`. */
  readonly expect: 'video' | 'audio';
  /** Headers the vendor's result URL needs (its API key, for Google's file downloads); sent to that origin only. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The step's span (tracing on): the download is part of the task's trace. */
  readonly trace?: WorkerTrace;
}

export type RehostMediaOutput =
  | { readonly ok: true; readonly url: string; readonly bytes: number; readonly contentType: string; readonly audio?: { readonly format: string; readonly seconds: number } }
  | { readonly ok: false; readonly reason: string; readonly message: string };

await startWorkerTracing();

/**
 * The download is a client span of its own: the vendor's host only (a result URL's query is often a
 * signature), what was stored and its size. No `traceparent` goes to the result's host: a signed
 * storage URL may refuse a header it was not signed with.
 */
export default function rehostMedia(input: RehostMediaInput): Promise<RehostMediaOutput> {
  return inWorkerSpan(input.trace, 'media.rehost', SpanKind.CLIENT, () => rehosted(input), (output) => ({
    attributes: { 'http.request.method': 'GET', 'server.address': hostOf(input.url), 'gateway.expect': input.expect, ...(output.ok ? { 'http.response.body.size': output.bytes, 'gateway.content_type': output.contentType } : { 'gateway.rehost_failure': output.reason }) },
    ...(output.ok ? {} : { error: output.reason }),
  }));
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
};

async function rehosted(input: RehostMediaInput): Promise<RehostMediaOutput> {
  const store = await threadMediaStorage(input.media);
  if (!store) return { ok: false, reason: 'storage_off', message: 'Media storage is off.' };
  const options = { maxBytes: input.maxBytes, timeoutMs: input.timeoutMs, allowLoopback: input.allowLoopback, headers: input.headers };
  const expected = (contentType: string | undefined) => contentType?.startsWith(`${input.expect}/`) === true;
  const notMedia = (contentType: string | undefined): RehostMediaOutput =>
    ({ ok: false, reason: 'not_media', message: `The vendor's result is not ${input.expect === 'video' ? 'a video' : 'audio'} (${contentType ?? 'unknown type'}).` });
  try {
    if (input.expect === 'audio') {
      // Audio is timed from its bytes (a per-second price charges the measured length): taken whole.
      const audio = await storeAudio(store, (await fetchGuarded(input.url, options)).bytes);
      if (!audio.ok) return audio;
      return { ok: true, url: audio.url, bytes: audio.bytes, contentType: audio.contentType, audio: { format: audio.format, seconds: audio.seconds } };
    }
    let stored;
    if (store.putStream) {
      // Streamed to storage: a result of hundreds of megabytes never sits in memory whole.
      stored = await fetchGuardedStream(input.url, options, (chunks) => store.putStream!(chunks, expected));
      if ('refused' in stored) return notMedia(stored.refused);
    } else {
      const fetched = await fetchGuarded(input.url, options);
      const contentType = sniffMediaType(fetched.bytes)?.contentType;
      if (!expected(contentType)) return notMedia(contentType);
      stored = await store.put(fetched.bytes, contentType!);
    }
    return { ok: true, url: stored.url, bytes: stored.bytes, contentType: stored.contentType };
  } catch (error) {
    if (error instanceof UrlGuardError) return { ok: false, reason: error.reason, message: error.message };
    return { ok: false, reason: 'storage', message: (error as Error).message };
  }
}
