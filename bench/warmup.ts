// A global warm-up before any scenario. V8 compiles the gateway's hot paths for thousands of
// requests, separately in each isolate (every HTTP thread and the main thread): after only 1000
// requests a fifth of the gateway's CPU still went to TurboFan on its helper threads, which would
// be billed to the first scenario. Concurrent connections spread over all HTTP threads
// (SO_REUSEPORT), and both the non-streaming and the streaming paths are exercised.
import { chatCalls } from './calls.js';
import { connect, runLoad, type Call, type Target } from './load.js';

const CONNECTIONS = 32;
const LOADS: { readonly requests: number; readonly calls: { direct: Call; gateway: Call } }[] = [
  { requests: 8000, calls: chatCalls({ prompt: 'Warm up.', stream: false, maxTokens: 64 }) },
  { requests: 2000, calls: chatCalls({ prompt: 'Warm up. [[mock chunks=64]]', stream: true, maxTokens: 128 }) },
];

/** Returns the number of failed warm-up requests (both sides). */
export async function warmUpServers(targets: readonly Target[], scale: number): Promise<number> {
  let errors = 0;
  for (const target of targets) {
    const dispatcher = connect(target, CONNECTIONS);
    try {
      for (const load of LOADS) {
        const requests = Math.max(CONNECTIONS, Math.round(load.requests * scale));
        errors += (await runLoad(dispatcher, target, load.calls[target.side], { concurrency: CONNECTIONS, requests })).errors;
      }
    } finally {
      await dispatcher.close();
    }
  }
  return errors;
}
