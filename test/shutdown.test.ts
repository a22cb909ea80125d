// Graceful shutdown: SIGTERM stops accepting connections at once, lets in-flight calls (a stream and a
// slow non-streaming call) finish completely, settles and writes their charges, and exits 0.
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { sleep, sseEvents } from './helpers/http-tools.js';

// gpt-4o-mini list prices in nano-USD per token: input 150, output 600.
const INPUT_NANO = 150n;
const OUTPUT_NANO = 600n;

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway?.close());

interface Call {
  /** Resolves when the first body bytes arrived. */
  firstBytes: Promise<void>;
  /** Resolves with status and full text when the response ended (rejects if the connection broke). */
  done: Promise<{ status: number; text: string }>;
  finished: () => boolean;
}

function chatCall(url: string, key: string, body: unknown): Call {
  let finished = false;
  let onFirst: () => void = () => {};
  const firstBytes = new Promise<void>((resolve) => { onFirst = resolve; });
  const done = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(`${url}/v1/chat/completions`, {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => { text += part; onFirst(); });
      res.on('end', () => { finished = true; resolve({ status: res.statusCode ?? 0, text }); });
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('response aborted')));
    });
    req.on('error', reject);
    req.end(payload);
  });
  done.catch(() => {}).finally(() => { finished = true; });
  return { firstBytes, done, finished: () => finished };
}

/** True when a new TCP connection to the port is refused. */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(false); });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

t.test('SIGTERM drains an in-progress stream and a slow call, refuses new connections, charges both, exits 0', async (t) => {
  const user = 'drainer';
  const { key } = await gateway.user(user, '5');
  const port = Number(new URL(gateway.url).port);
  t.equal(await connectionRefused(port), false, 'the gateway accepts connections before the signal');
  // Real clients (SDKs, load balancers) keep idle keep-alive connections open; the drain must cope with them.
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => keepAlive.destroy());
  const idle = await new Promise<number>((resolve, reject) => {
    http.get(`${gateway.url}/healthz`, { agent: keepAlive }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)); }).on('error', reject);
  });
  t.equal(idle, 200, 'an idle keep-alive connection is open');

  const stream = chatCall(gateway.url, key, { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'drain me [[mock chunks=40 delay_ms=50]]' }] });
  const slow = chatCall(gateway.url, key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'slow one [[mock latency_ms=1200 chunks=5]]' }] });
  await stream.firstBytes;
  await sleep(150); // a few chunks are out; the stream has ~1.8 s to go

  const exited = once(gateway.process, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  gateway.process.kill('SIGTERM');

  // New connections must be refused while the stream is still being served.
  let refusedWhileStreaming = false;
  const until = Date.now() + 1500;
  while (Date.now() < until && !stream.finished()) {
    if (await connectionRefused(port)) {
      refusedWhileStreaming = !stream.finished();
      break;
    }
    await sleep(20);
  }
  t.ok(refusedWhileStreaming, 'new connections are refused once the drain started, while the stream is still in progress');

  const streamed = await stream.done;
  t.equal(streamed.status, 200);
  const events = sseEvents(streamed.text);
  t.equal(events.at(-1), '[DONE]', 'the stream completes with data: [DONE]');
  t.match(streamed.text, /data: \[DONE\]\n\n$/);
  const chunks = events.filter((e): e is Record<string, any> => typeof e === 'object' && e !== null);
  const content = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  t.equal(content.trim().split(/\s+/).length, 40, 'all 40 content chunks arrived');
  const usageChunk = chunks.find((c) => c.usage);
  t.ok(usageChunk, 'the usage chunk arrived');
  t.equal(usageChunk?.usage?.completion_tokens, 40);

  const slowDone = await slow.done;
  t.equal(slowDone.status, 200, 'the slow non-streaming call also completed');
  const slowBody = JSON.parse(slowDone.text) as { usage: { prompt_tokens: number; completion_tokens: number } };
  t.equal(slowBody.usage.completion_tokens, 5);

  const [code, signal] = await exited;
  t.equal(signal, null, 'not killed by a signal');
  t.equal(code, 0, 'the process exits with code 0');
  t.notMatch(gateway.output, /requests unfinished/, 'no request was left unfinished');
  t.notMatch(gateway.output, /"level":"error"/, 'no error was logged during shutdown');

  // After exit: the charges are in Postgres (the process flushed its ledger before exiting).
  const expectedStream = BigInt(usageChunk?.usage?.prompt_tokens ?? 0) * INPUT_NANO + 40n * OUTPUT_NANO;
  const expectedSlow = BigInt(slowBody.usage.prompt_tokens) * INPUT_NANO + 5n * OUTPUT_NANO;
  const rows = await gateway.sql<{ credits_nano: bigint }[]>`
    select credits_nano from transactions where user_id = ${user} and payment_method = 'usage' order by credits_nano`;
  t.equal(rows.length, 2, 'both calls have a usage transaction');
  t.same(rows.map((r) => -r.credits_nano).sort(), [expectedStream, expectedSlow].sort(), 'each charged exactly its usage');
  t.equal(await gateway.ledgerSum(user), 5_000_000_000n - expectedStream - expectedSlow, 'the ledger adds up');
  const redisBalance = await gateway.balanceNano(user);
  t.equal(redisBalance.held, 0n, 'no reservation left held');
  t.equal(redisBalance.credits, 5_000_000_000n - expectedStream - expectedSlow, 'Redis agrees with Postgres');
  t.equal(await gateway.redis.xlen(`${gateway.prefix}{u:${user}}:ledger`), 0, 'no ledger event left in Redis');
});
