// Speech and music as async tasks, end to end over real HTTP: the official OpenAI client submits a
// task of each served audio model and polls it to success through the mock vendor's OpenAI,
// ElevenLabs, MiniMax and Stability APIs; the audio is downloaded from the media host and timed from
// its bytes; one charge at the catalog price (per character, per measured second, per request, by tokens);
// failures release; every model's accepted and refused bodies; the form Stable Audio is sent.
import t from 'tap';
import OpenAI from 'openai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countTokens } from 'gpt-tokenizer';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';
import { ledgerCleanOnceTasksEnd } from './helpers/task-checks.js';
import { audioInfo } from '../src/media/audio-duration.js';

let gateway: Gateway;
let mediaDir: string;
let users = 0;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'audio-test-'));
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_LEASE_MS: '1500',
    },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

async function newUser(usd = '10'): Promise<{ user: string; key: string }> {
  const user = `audio-user-${++users}`;
  return { user, ...(await fastUser(gateway, user, usd)) };
}

interface Task {
  id: string; object: string; status: string; model: string; created: number;
  data?: { url: string; format: string; duration_seconds: number; expires_at: number; expired: boolean }[];
  error?: { code: string; message: string };
}

const PATHS = { speech: 'audio/speech', music: 'audio/generations' } as const;

async function finished(key: string, path: string, id: string, timeoutMs = 15_000): Promise<Task> {
  let last: Task | undefined;
  const ok = await eventually(async () => {
    const response = await fetch(`${gateway.v1}/${path}/${id}`, { headers: { authorization: `Bearer ${key}` } });
    last = await response.json() as Task;
    return last.status !== 'pending';
  }, timeoutMs, 30);
  if (!ok) throw new Error(`task ${id} still pending: ${JSON.stringify(last)}`);
  return last!;
}

async function usageOf(user: string) {
  return gateway.sql<{ id: string; credits_nano: bigint }[]>`select id, credits_nano from transactions where user_id = ${user} and payment_method = 'usage'`;
}

const chars = (text: string) => [...text].length;

/**
 * Each served model: its body, the seconds the mock makes, and its price from what was delivered
 * (nano-USD). latency_ms keeps each task running while the test reads its hold (a fast vendor's task
 * could end before that read).
 */
const MODELS = [
  {
    model: 'openai/tts-1-hd', kind: 'speech', vendor: '/openai/v1/audio/speech', format: 'wav',
    body: { input: 'Hello from the gateway. [[mock latency_ms=500 audio_ms=1500]]', voice: 'alloy', response_format: 'wav' },
    price: (body: { input: string }) => BigInt(chars(body.input)) * 30_000n,
  },
  {
    model: 'openai/gpt-4o-mini-tts', kind: 'speech', vendor: '/openai/v1/audio/speech', format: 'mp3',
    body: { input: 'Speak softly. [[mock latency_ms=500 audio_ms=2000]]', voice: 'marin', instructions: 'Whisper.' },
    // Input tokens (text and instructions) at 0.60 per 1M; 20 audio tokens a second of speech at 12.00 per 1M.
    price: (body: { input: string; instructions: string }, seconds: number) =>
      BigInt(countTokens(body.input) + countTokens(body.instructions)) * 600n + BigInt(Math.ceil(seconds * 20)) * 12_000n,
  },
  {
    model: 'elevenlabs/eleven-v3', kind: 'speech', vendor: '/elevenlabs/v1/text-to-speech/', format: 'mp3',
    body: { input: 'An expressive line. [[mock latency_ms=500 audio_ms=1200]]', voice: 'JBFqnCBsd6RMkjVDRZzb' },
    price: (body: { input: string }) => BigInt(chars(body.input)) * 100_000n,
  },
  {
    model: 'elevenlabs/eleven-flash-v2.5', kind: 'speech', vendor: '/elevenlabs/v1/text-to-speech/', format: 'mp3',
    body: { input: 'Fast. [[mock latency_ms=500 audio_ms=800]]' },
    price: (body: { input: string }) => BigInt(chars(body.input)) * 50_000n,
  },
  {
    model: 'minimax/speech-2.6-hd', kind: 'speech', vendor: '/minimax/v1/t2a_async_v2', format: 'mp3',
    body: { input: 'A long chapter, read aloud. [[mock latency_ms=500 audio_ms=2500 job_ms=150]]', voice: 'English_expressive_narrator' },
    price: (body: { input: string }) => BigInt(chars(body.input)) * 100_000n,
  },
  {
    model: 'elevenlabs/eleven-music', kind: 'music', vendor: '/elevenlabs/v1/music', format: 'mp3',
    body: { prompt: 'A calm piano piece [[mock latency_ms=500 audio_ms=6000]]', duration: 10, instrumental: true },
    // 0.005 a second of the measured length, at most the 10 seconds asked for.
    price: (_body: unknown, seconds: number) => BigInt(Math.round(Math.min(seconds, 10) * 1000)) * 5_000n,
  },
  {
    model: 'minimax/music-2.5', kind: 'music', vendor: '/minimax/v1/music_generation', format: 'wav',
    body: { prompt: 'Indie folk, warm [[mock latency_ms=500 audio_ms=4000]]', lyrics: '[Verse]\nWalking home', format: 'wav' },
    price: () => 150_000_000n,
  },
  {
    model: 'stability/stable-audio-2.5', kind: 'music', vendor: '/stability/v1/audio/stable-audio-2/text-to-audio', format: 'wav',
    body: { prompt: 'Rain on a tin roof [[mock latency_ms=500 audio_ms=3000]]', duration: 20, format: 'wav' },
    // 20 credits a generation, whatever its length.
    price: () => 200_000_000n,
  },
] as const;

t.test('each audio model: the OpenAI client submits, polls to success, downloads audio of the measured length; one charge at the catalog price', async (t) => {
  for (const c of MODELS) {
    await t.test(c.model, async (t) => {
      const { user, key } = await newUser();
      const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
      const path = PATHS[c.kind];
      let submitted: Task;
      if (c.kind === 'speech' && c.model.startsWith('openai/')) {
        // The SDK's own speech method: the answer is the task (JSON), not the audio.
        const response = await client.audio.speech.create({ model: c.model, ...c.body } as never);
        submitted = await response.json() as Task;
      } else {
        submitted = await client.post(`/${path}`, { body: { model: c.model, ...c.body } }) as Task;
      }
      t.match(submitted, { object: c.kind === 'speech' ? 'audio.speech' : 'audio.generation', status: 'pending', model: c.model }, 'answered at once, pending');
      t.match(submitted.id, /^[0-9a-f-]{36}$/);
      t.ok((await gateway.balanceNano(user)).held > 0n, 'the price is held while it runs');

      let task = submitted;
      for (let i = 0; i < 500 && task.status === 'pending'; i++) {
        await new Promise((r) => setTimeout(r, 30));
        task = await client.get(`/${path}/${submitted.id}`) as Task;
      }
      t.equal(task.status, 'success', JSON.stringify(task));
      const [entry] = task.data ?? [];
      t.ok(entry?.url.startsWith(`${gateway.url}/media/`), 'the audio is on the media host');
      t.equal(entry?.format, c.format);
      t.notOk(JSON.stringify(task).includes(gateway.mock.url), 'no vendor address in the task');
      const bytes = Buffer.from(await (await fetch(entry!.url)).arrayBuffer());
      const info = audioInfo(bytes);
      t.equal(info?.format, c.format, 'the stored file parses');
      const asked = Number(/audio_ms=(\d+)/.exec(JSON.stringify(c.body))![1]) / 1000;
      t.ok(Math.abs(info!.seconds - asked) <= 0.04, `about ${asked} s long (${info!.seconds})`);
      t.equal(entry?.duration_seconds, info!.seconds, 'the record shows the measured duration');
      t.ok(gateway.mock.requests().some((r) => r.path.startsWith(c.vendor)), `the vendor was called at ${c.vendor}`);

      await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
      const usage = await usageOf(user);
      t.equal(usage.length, 1, 'one usage transaction');
      t.equal(usage[0]!.id, submitted.id, 'the transaction id is the task id');
      t.equal(usage[0]!.credits_nano, -c.price(c.body as never, info!.seconds), 'charged the catalog price of what was delivered');
      t.equal((await gateway.balanceNano(user)).credits, 10_000_000_000n + usage[0]!.credits_nano, 'credits moved by the charge only');
    });
  }
});

t.test("the SDK's speech call with its defaults, and a list of the caller's tasks", async (t) => {
  const { key } = await newUser();
  const client = new OpenAI({ apiKey: key, baseURL: gateway.v1 });
  const first = await (await client.audio.speech.create({ model: 'openai/tts-1-hd', voice: 'nova', input: 'one' })).json() as Task;
  const second = await (await client.audio.speech.create({ model: 'openai/tts-1-hd', voice: 'nova', input: 'two' })).json() as Task;
  const done = await finished(key, PATHS.speech, first.id);
  t.equal(done.data?.[0]?.format, 'mp3', 'mp3 by default');
  const list = await client.get('/audio/speech') as { object: string; data: Task[]; total: number };
  t.equal(list.object, 'list');
  t.same(list.data.map((task) => task.id), [second.id, first.id], 'newest first');
  const music = await client.get('/audio/generations') as { data: Task[] };
  t.same(music.data, [], 'speech tasks are not music tasks');
});

t.test('vendor failures fail the task and release its hold (each adapter)', async (t) => {
  const cases = [
    { name: 'OpenAI 400', path: PATHS.speech, body: { model: 'openai/tts-1-hd', voice: 'alloy', input: 'x [[mock fail=400]]' }, code: /./ },
    { name: 'ElevenLabs 400 bad_prompt', path: PATHS.music, body: { model: 'elevenlabs/eleven-music', prompt: 'a copyrighted song' }, code: /bad_prompt/ },
    { name: 'MiniMax task Failed', path: PATHS.speech, body: { model: 'minimax/speech-2.6-hd', input: 'x [[mock job_ms=50 task_fail=1]]' }, code: /upstream_failed/ },
    { name: 'MiniMax base_resp 1004', path: PATHS.speech, body: { model: 'minimax/speech-2.6-hd', input: 'x [[mock base_fail=1004]]' }, code: /minimax_1004/ },
    { name: 'MiniMax music base_resp 2013', path: PATHS.music, body: { model: 'minimax/music-2.5', prompt: 'x [[mock base_fail=2013]]', instrumental: true }, code: /minimax_2013/ },
    { name: 'a result URL that 404s', path: PATHS.speech, body: { model: 'minimax/speech-2.6-hd', input: 'x [[mock job_ms=30 broken_url=1]]' }, code: /result_unavailable/ },
    { name: 'bytes that are not audio', path: PATHS.speech, body: { model: 'elevenlabs/eleven-v3', input: 'x [[mock not_audio=1]]' }, code: /./ },
    { name: 'Stability 403 content_moderation', path: PATHS.music, body: { model: 'stability/stable-audio-2.5', prompt: 'x [[mock fail=403]]' }, code: /^content_policy_violation$/ },
    { name: 'Stability 400 bad_request', path: PATHS.music, body: { model: 'stability/stable-audio-2.5', prompt: 'x [[mock fail=400]]' }, code: /^bad_request$/ },
  ];
  for (const c of cases) {
    const { user, key } = await newUser();
    const submitted = await postJson(`${gateway.v1}/${c.path}`, key, c.body);
    t.equal(submitted.status, 200, `${c.name}: accepted`);
    const task = await finished(key, c.path, submitted.body.id);
    t.equal(task.status, 'failed', `${c.name}: failed`);
    t.match(task.error?.code, c.code, `${c.name}: ${task.error?.code}`);
    t.notOk('data' in task, `${c.name}: no data`);
    await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
    t.same(await usageOf(user), [], `${c.name}: nothing charged`);
    t.equal((await gateway.balanceNano(user)).credits, 10_000_000_000n, `${c.name}: credits as before`);
  }
});

t.test('Stable Audio: the form Stability receives, one exchange answering the file, charged 0.20', async (t) => {
  const { user, key } = await newUser();
  const prompt = 'Füße on gravel, then a bell: "ding" [[mock audio_ms=1500]]';
  const submitted = await postJson(`${gateway.v1}/${PATHS.music}`, key, { model: 'stability/stable-audio-2.5', prompt, duration: 7 });
  t.equal(submitted.status, 200, JSON.stringify(submitted.body));
  const task = await finished(key, PATHS.music, submitted.body.id);
  t.equal(task.status, 'success', JSON.stringify(task));
  t.equal(task.data?.[0]?.format, 'mp3', 'mp3 by default');
  const calls = gateway.mock.requests().filter((r) => r.path === '/stability/v1/audio/stable-audio-2/text-to-audio' && JSON.stringify(r.body ?? null).includes('gravel'));
  t.equal(calls.length, 1, 'one call to Stability');
  t.same(calls[0]!.body, { prompt, model: 'stable-audio-2.5', duration: '7', output_format: 'mp3' }, 'multipart fields as Stability takes them, the prompt byte for byte');
  t.equal(calls[0]!.authorization, 'Bearer test-stability-key', 'the platform key as a Bearer token');
  await eventually(async () => (await gateway.balanceNano(user)).held === 0n);
  t.same((await usageOf(user)).map((row) => row.credits_nano), [-200_000_000n], 'charged exactly 0.20');

  const defaulted = await postJson(`${gateway.v1}/${PATHS.music}`, key, { model: 'stability/stable-audio-2.5', prompt: 'surf [[mock audio_ms=500]]' });
  t.equal((await finished(key, PATHS.music, defaulted.body.id)).status, 'success');
  const sent = gateway.mock.requests().find((r) => JSON.stringify(r.body ?? null).includes('surf'));
  t.match(sent?.body, { duration: '190' }, "no duration: Stability's default, 190 s, asked for in so many words");
});

t.test('Stable Audio: a vendor 5xx is retried until the task deadline, then the task fails and its hold is released', async (t) => {
  const short = await startGateway({ mock: gateway.mock, env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', TASK_TIMEOUT_MS: '1000', TASK_RETRY_MS: '50', TASK_TIMER_TICK_MS: '20' } });
  t.teardown(() => short.close());
  const { key } = await fastUser(short, 'stability-5xx', '10');
  const submitted = await postJson(`${short.v1}/${PATHS.music}`, key, { model: 'stability/stable-audio-2.5', prompt: 'x [[mock fail=503]] storm' });
  t.equal(submitted.status, 200);
  let task: Task | undefined;
  await eventually(async () => {
    task = await (await fetch(`${short.v1}/${PATHS.music}/${submitted.body.id}`, { headers: { authorization: `Bearer ${key}` } })).json() as Task;
    return task.status !== 'pending';
  }, 15_000, 50);
  t.match(task, { status: 'failed', error: { code: 'upstream_timeout' } }, JSON.stringify(task));
  const tries = gateway.mock.requests().filter((r) => JSON.stringify(r.body ?? null).includes('storm')).length;
  t.ok(tries >= 2, `tried again before failing (${tries} calls)`);
  await eventually(async () => (await short.balanceNano('stability-5xx')).held === 0n);
  t.equal((await short.balanceNano('stability-5xx')).credits, 10_000_000_000n, 'nothing charged');
});

t.test('a transient vendor failure is retried, not a failed task', async (t) => {
  const { key } = await newUser();
  const submitted = await postJson(`${gateway.v1}/${PATHS.speech}`, key, { model: 'minimax/speech-2.6-hd', input: 'x [[mock base_fail=1002 fail_times=2]]' });
  t.equal(submitted.status, 200);
  t.equal((await finished(key, PATHS.speech, submitted.body.id)).status, 'success');
});

t.test('each model validates its body from its catalog capabilities: 400 naming the field', async (t) => {
  const { user, key } = await newUser();
  const speech = (body: object) => postJson(`${gateway.v1}/${PATHS.speech}`, key, body);
  const music = (body: object) => postJson(`${gateway.v1}/${PATHS.music}`, key, body);
  const refused: [string, Promise<{ status: number; body: any }>, number, string | null][] = [
    ['no voice (OpenAI needs one)', speech({ model: 'openai/tts-1-hd', input: 'x' }), 400, 'voice'],
    ['a voice tts-1-hd does not have', speech({ model: 'openai/tts-1-hd', input: 'x', voice: 'marin' }), 400, 'voice'],
    ['opus (not stored here)', speech({ model: 'openai/gpt-4o-mini-tts', input: 'x', voice: 'alloy', response_format: 'opus' }), 400, 'response_format'],
    ['instructions on tts-1-hd', speech({ model: 'openai/tts-1-hd', input: 'x', voice: 'alloy', instructions: 'calm' }), 400, 'instructions'],
    ['input past 4096 characters', speech({ model: 'openai/tts-1-hd', input: 'é'.repeat(4097), voice: 'alloy' }), 400, 'input'],
    ['empty input', speech({ model: 'openai/tts-1-hd', input: '', voice: 'alloy' }), 400, 'input'],
    ['speed 5', speech({ model: 'openai/tts-1-hd', input: 'x', voice: 'alloy', speed: 5 }), 400, 'speed'],
    ['speed 1.5 on ElevenLabs (0.7 to 1.2)', speech({ model: 'elevenlabs/eleven-v3', input: 'x', speed: 1.5 }), 400, 'speed'],
    ['a voice id ElevenLabs cannot have', speech({ model: 'elevenlabs/eleven-v3', input: 'x', voice: '../etc/passwd' }), 400, 'voice'],
    ['wav on ElevenLabs', speech({ model: 'elevenlabs/eleven-v3', input: 'x', response_format: 'wav' }), 400, 'response_format'],
    ['eleven-v3 input past 5000', speech({ model: 'elevenlabs/eleven-v3', input: 'x'.repeat(5001) }), 400, 'input'],
    ['stream_format sse', speech({ model: 'openai/gpt-4o-mini-tts', input: 'x', voice: 'alloy', stream_format: 'sse' }), 400, 'stream_format'],
    ['an unknown field', speech({ model: 'openai/tts-1-hd', input: 'x', voice: 'alloy', pitch: 2 }), 400, 'pitch'],
    ['a music model on the speech endpoint', speech({ model: 'elevenlabs/eleven-music', input: 'x' }), 400, 'model'],
    ['a speech model on the music endpoint', music({ model: 'openai/tts-1-hd', prompt: 'x' }), 400, 'model'],
    ['a video model', speech({ model: 'alibaba/wan2.6-r2v', input: 'x' }), 400, 'model'],
    ['an unknown model', speech({ model: 'nobody/nothing', input: 'x' }), 404, 'model'],
    ['a model removed from the catalog (Suno: no official API)', music({ model: 'suno/suno-v5.5', prompt: 'x' }), 404, 'model'],
    ['Stable Audio: a prompt past 10,000 characters', music({ model: 'stability/stable-audio-2.5', prompt: 'x'.repeat(10_001) }), 400, 'prompt'],
    ['Stable Audio: duration 0 (1 to 190)', music({ model: 'stability/stable-audio-2.5', prompt: 'x', duration: 0 }), 400, 'duration'],
    ['Stable Audio: duration 191', music({ model: 'stability/stable-audio-2.5', prompt: 'x', duration: 191 }), 400, 'duration'],
    ['Stable Audio: duration 12.5 (whole seconds only)', music({ model: 'stability/stable-audio-2.5', prompt: 'x', duration: 12.5 }), 400, 'duration'],
    ['Stable Audio: format ogg', music({ model: 'stability/stable-audio-2.5', prompt: 'x', format: 'ogg' }), 400, 'format'],
    ['Stable Audio: lyrics', music({ model: 'stability/stable-audio-2.5', prompt: 'x', lyrics: 'la' }), 400, 'lyrics'],
    ['Stable Audio: instrumental', music({ model: 'stability/stable-audio-2.5', prompt: 'x', instrumental: true }), 400, 'instrumental'],
    ['Stable Audio: a vendor field the gateway does not take', music({ model: 'stability/stable-audio-2.5', prompt: 'x', cfg_scale: 7 }), 400, 'cfg_scale'],
    ['Stable Audio: speech', speech({ model: 'stability/stable-audio-2.5', input: 'x' }), 400, 'model'],
    ['lyrics on Eleven Music', music({ model: 'elevenlabs/eleven-music', prompt: 'x', lyrics: 'la la' }), 400, 'lyrics'],
    ['duration 2 (3 to 600)', music({ model: 'elevenlabs/eleven-music', prompt: 'x', duration: 2 }), 400, 'duration'],
    ['duration as a string', music({ model: 'elevenlabs/eleven-music', prompt: 'x', duration: '10' }), 400, 'duration'],
    ['duration on MiniMax music (it picks the length)', music({ model: 'minimax/music-2.5', prompt: 'x', lyrics: 'la', duration: 30 }), 400, 'duration'],
    ['no lyrics for a MiniMax song', music({ model: 'minimax/music-2.5', prompt: 'x' }), 400, 'lyrics'],
    ['lyrics and instrumental', music({ model: 'minimax/music-2.5', prompt: 'x', lyrics: 'la', instrumental: true }), 400, 'lyrics'],
    ['no prompt', music({ model: 'elevenlabs/eleven-music' }), 400, 'prompt'],
    ['a private callback_url', speech({ model: 'openai/tts-1-hd', input: 'x', voice: 'alloy', callback_url: 'https://10.0.0.1/hook' }), 400, 'callback_url'],
  ];
  for (const [name, pending, status, param] of refused) {
    const response = await pending;
    t.equal(response.status, status, `${name}: ${status} ${JSON.stringify(response.body)}`);
    t.equal(response.body.error?.param ?? null, param, `${name}: names ${param}`);
    t.type(response.body.error?.message, 'string', `${name}: a message`);
  }
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0, 'no refused body made a task');
  t.equal((await gateway.balanceNano(user)).held, 0n, 'nor held anything');

  const accepted: [string, object, 'speech' | 'music'][] = [
    ['null fields count as not sent', { model: 'openai/tts-1-hd', input: 'x', voice: 'alloy', speed: null, instructions: null }, 'speech'],
    ['speed at its bounds', { model: 'openai/gpt-4o-mini-tts', input: 'x', voice: 'cedar', speed: 0.25 }, 'speech'],
    ['ElevenLabs default voice, speed 1.2', { model: 'elevenlabs/eleven-flash-v2.5', input: 'x', speed: 1.2 }, 'speech'],
    ['stream_format audio', { model: 'openai/gpt-4o-mini-tts', input: 'x', voice: 'alloy', stream_format: 'audio' }, 'speech'],
    ['an instrumental with no lyrics', { model: 'minimax/music-2.5', prompt: 'lofi beat', instrumental: true }, 'music'],
    ['duration with milliseconds', { model: 'elevenlabs/eleven-music', prompt: 'x', duration: 3.5 }, 'music'],
    ['Stable Audio at its bounds', { model: 'stability/stable-audio-2.5', prompt: 'x'.repeat(10_000), duration: 190, format: 'wav' }, 'music'],
    ['Stable Audio, 1 s', { model: 'stability/stable-audio-2.5', prompt: 'x', duration: 1 }, 'music'],
  ];
  for (const [name, body, kind] of accepted) {
    const response = await (kind === 'speech' ? speech : music)(body);
    t.equal(response.status, 200, `${name}: ${JSON.stringify(response.body)}`);
  }
});

t.test('402 when the price exceeds available; nothing is created or held', async (t) => {
  const { user, key } = await newUser('0.10');
  const refused = await postJson(`${gateway.v1}/${PATHS.music}`, key, { model: 'minimax/music-2.5', prompt: 'x', instrumental: true });
  t.equal(refused.status, 402);
  t.equal(refused.body.error.code, 'insufficient_credits');
  const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where user_id = ${user}`;
  t.equal(row!.n, 0);
  t.equal((await gateway.balanceNano(user)).held, 0n);
});

t.test("a task is its owner's only", async (t) => {
  const owner = await newUser();
  const other = await newUser();
  const submitted = await postJson(`${gateway.v1}/${PATHS.speech}`, owner.key, { model: 'openai/tts-1-hd', input: 'x', voice: 'alloy' });
  const seen = await fetch(`${gateway.v1}/${PATHS.speech}/${submitted.body.id}`, { headers: { authorization: `Bearer ${other.key}` } });
  t.equal(seen.status, 404);
  const cancel = await fetch(`${gateway.v1}/${PATHS.speech}/${submitted.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${other.key}` } });
  t.equal(cancel.status, 404, 'nor may another user cancel it');
  const wrongKind = await fetch(`${gateway.v1}/${PATHS.music}/${submitted.body.id}`, { headers: { authorization: `Bearer ${owner.key}` } });
  t.equal(wrongKind.status, 404, 'a speech task is not found among music tasks');
  t.equal((await fetch(`${gateway.v1}/${PATHS.speech}/not-a-uuid`, { headers: { authorization: `Bearer ${owner.key}` } })).status, 404);
});

t.test('once every task has ended, the ledger check passes', (t) => ledgerCleanOnceTasksEnd(t, gateway));
