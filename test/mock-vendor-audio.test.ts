// The mock vendor's audio APIs over real HTTP: OpenAI speech, ElevenLabs text-to-speech and music,
// MiniMax async speech (submit → Processing → Success → retrieve → download) and music, Stability's
// Stable Audio (multipart/form-data in, the file or base64 JSON out). Every success
// is real audio of the expected length (audioInfo); every refusal is in the vendor's own shape.
import t, { type Test } from 'tap';
import { startMockVendor, type MockVendor } from '../src/mock-vendor/server.js';
import { AudioVendors } from '../src/mock-vendor/audio.js';
import { audioInfo } from '../src/media/audio-duration.js';
import { eventually } from './helpers/http-tools.js';

const JOB_MS = 300;
let mock: MockVendor;
t.before(async () => { mock = await startMockVendor({ port: 0, audioJobMs: JOB_MS }); });
t.teardown(() => mock.close());

interface Answer { status: number; type: string; bytes: Buffer; body: any; headers: Headers }

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const url = path.startsWith('http') ? path : `${mock.url}${path}`;
  const response = await fetch(url, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const bytes = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, type, bytes, body: type.startsWith('application/json') ? JSON.parse(bytes.toString()) : undefined, headers: response.headers };
}

const near = (t: Test, bytes: Buffer, format: 'mp3' | 'wav', seconds: number, what: string) => {
  const info = audioInfo(bytes);
  t.equal(info?.format, format, `${what}: ${format}`);
  t.ok(info !== undefined && Math.abs(info.seconds - seconds) <= 0.05, `${what}: ${info?.seconds} s ≈ ${seconds} s`);
};

const OAI = { authorization: 'Bearer sk-test' };
const SPEECH = '/openai/v1/audio/speech';
const XI = { 'xi-api-key': 'xi-test' };
const VOICE = '21m00Tcm4TlvDq8ikWAM';
const TTS = `/elevenlabs/v1/text-to-speech/${VOICE}`;
const MUSIC = '/elevenlabs/v1/music';
const MM = { authorization: 'Bearer mm-test' };
const SUBMIT = '/minimax/v1/t2a_async_v2';
const QUERY = '/minimax/v1/query/t2a_async_query_v2?task_id=';
const RETRIEVE = '/minimax/v1/files/retrieve?file_id=';
const MM_MUSIC = '/minimax/v1/music_generation';
const mmSpeech = (text: string, extra: Record<string, unknown> = {}) => ({ model: 'speech-2.6-hd', text, voice_setting: { voice_id: 'English_expressive_narrator' }, audio_setting: { format: 'mp3' }, ...extra });

t.test('the mock exposes its audio vendors', async (t) => {
  t.ok(mock.audio instanceof AudioVendors);
  t.equal(mock.audio.url, mock.url);
});

t.test('OpenAI speech: mp3 by default, wav on request, length from the text, speed and audio_ms', async (t) => {
  const mp3 = await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'Hello there, world!', voice: 'alloy' });
  t.equal(mp3.status, 200);
  t.equal(mp3.type, 'audio/mpeg');
  near(t, mp3.bytes, 'mp3', 19 * 0.06, 'mp3 of 19 characters');
  const wav = await call('POST', SPEECH, OAI, { model: 'gpt-4o-mini-tts', input: 'x'.repeat(100), voice: 'marin', response_format: 'wav', speed: 2, instructions: 'Cheerful.' });
  t.equal(wav.type, 'audio/wav');
  near(t, wav.bytes, 'wav', 3, '100 characters at speed 2');
  const short = await call('POST', SPEECH, OAI, { model: 'tts-1-hd', input: 'Hi', voice: { id: 'voice_abc' }, response_format: 'wav' });
  near(t, short.bytes, 'wav', 0.5, 'at least 500 ms; a custom voice object');
  const steered = await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'Hi [[mock audio_ms=4321]]', voice: 'nova', response_format: 'wav', speed: 0.5 });
  near(t, steered.bytes, 'wav', 4.321, 'audio_ms wins over speed');
  const directiveFree = await call('POST', SPEECH, OAI, { model: 'tts-1', input: `${'y'.repeat(50)} [[mock latency_ms=0]]`, voice: 'nova', response_format: 'wav' });
  near(t, directiveFree.bytes, 'wav', 51 * 0.06, 'directives do not count as characters (the space does)');
});

t.test('OpenAI speech: auth and validation errors name the param', async (t) => {
  const noKey = await call('POST', SPEECH, {}, { model: 'tts-1', input: 'x', voice: 'alloy' });
  t.equal(noKey.status, 401);
  t.same(Object.keys(noKey.body.error).sort(), ['code', 'message', 'param', 'type']);
  t.match(noKey.body, { error: { type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
  const bad = async (body: Record<string, unknown>, param: string) => {
    const answer = await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x', voice: 'alloy', ...body });
    t.equal(answer.status, 400, `${JSON.stringify(body)} → 400`);
    t.match(answer.body, { error: { type: 'invalid_request_error', param } }, `names ${param}`);
  };
  await bad({ model: 'tts-2' }, 'model');
  await bad({ model: undefined }, 'model');
  await bad({ input: undefined }, 'input');
  await bad({ input: '' }, 'input');
  await bad({ input: 'x'.repeat(4097) }, 'input');
  await bad({ voice: 'bob' }, 'voice');
  await bad({ response_format: 'opus' }, 'response_format');
  await bad({ response_format: 'ogg' }, 'response_format');
  await bad({ speed: 0.2 }, 'speed');
  await bad({ speed: 4.5 }, 'speed');
  await bad({ instructions: 'Whisper.' }, 'instructions');
  await bad({ model: 'tts-1-hd', instructions: 'Whisper.' }, 'instructions');
  t.equal((await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x'.repeat(4096), voice: 'alloy', response_format: 'wav' })).status, 200, '4096 characters are fine');
  t.equal((await call('GET', SPEECH, OAI)).status, 404);
});

t.test('OpenAI speech: fail, latency_ms and not_audio directives', async (t) => {
  const limited = await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x [[mock fail=429]]', voice: 'alloy' });
  t.match(limited, { status: 429, body: { error: { code: 'rate_limit_exceeded' } } });
  t.equal(limited.headers.get('retry-after'), '1');
  t.match(await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x [[mock fail=503]]', voice: 'alloy' }), { status: 503, body: { error: { type: 'server_error' } } });
  const started = Date.now();
  t.equal((await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x [[mock latency_ms=200]]', voice: 'alloy' })).status, 200);
  t.ok(Date.now() - started >= 190, 'latency_ms delays the answer');
  const html = await call('POST', SPEECH, OAI, { model: 'tts-1', input: 'x [[mock not_audio]]', voice: 'alloy' });
  t.equal(html.status, 200);
  t.equal(html.type, 'audio/mpeg');
  t.match(html.bytes.toString(), /<html>/);
  t.equal(audioInfo(html.bytes), undefined);
});

t.test('ElevenLabs TTS: mp3 by default and for any mp3_<rate>_<kbps>, wav for wav_<rate>', async (t) => {
  const plain = await call('POST', TTS, XI, { text: 'Twenty characters!!!', model_id: 'eleven_multilingual_v2' });
  t.equal(plain.status, 200);
  t.equal(plain.type, 'audio/mpeg');
  t.equal(plain.headers.get('x-character-count'), '20');
  near(t, plain.bytes, 'mp3', 1.2, 'no output_format');
  near(t, (await call('POST', `${TTS}?output_format=mp3_22050_32`, XI, { text: 'x [[mock audio_ms=2000]]', model_id: 'eleven_flash_v2_5' })).bytes, 'mp3', 2, 'mp3_22050_32');
  const wav = await call('POST', `/elevenlabs/v1/text-to-speech/AbCdEfGhIjKlMnOpQrSt?output_format=wav_44100`, XI,
    { text: 'z'.repeat(30), model_id: 'eleven_v3', voice_settings: { stability: 0.5, speed: 1.2 }, seed: 7, language_code: 'en' });
  t.equal(wav.type, 'audio/wav');
  near(t, wav.bytes, 'wav', 1.5, '30 characters at speed 1.2, a cloned-voice id');
});

t.test('ElevenLabs TTS: refusals in the detail shapes', async (t) => {
  const body = { text: 'hello', model_id: 'eleven_v3' };
  t.same((await call('POST', TTS, {}, body)).body, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
  t.equal((await call('POST', TTS, {}, body)).status, 401);
  const format = await call('POST', `${TTS}?output_format=pcm_16000`, XI, body);
  t.match(format, { status: 422, body: { detail: { status: 'invalid_output_format', message: String } } });
  t.match(await call('POST', TTS, XI, { ...body, model_id: 'eleven_v9' }), { status: 400, body: { detail: { status: 'model_not_found' } } });
  t.match(await call('POST', '/elevenlabs/v1/text-to-speech/rachel', XI, body), { status: 404, body: { detail: { status: 'voice_not_found' } } });
  const missing = { detail: [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }] };
  for (const text of [undefined, '']) {
    const answer = await call('POST', TTS, XI, { model_id: 'eleven_v3', text });
    t.equal(answer.status, 422);
    t.same(answer.body, missing, `text ${JSON.stringify(text)}`);
  }
  const busy = await call('POST', TTS, XI, { ...body, text: 'x [[mock fail=429]]' });
  t.match(busy, { status: 429, body: { detail: { status: 'too_many_concurrent_requests' } } });
  t.match(await call('POST', TTS, XI, { ...body, text: 'x [[mock fail=500]]' }), { status: 500, body: { detail: { status: String } } });
  const html = await call('POST', TTS, XI, { ...body, text: 'x [[mock not_audio=1]]' });
  t.equal(html.type, 'audio/mpeg');
  t.equal(audioInfo(html.bytes), undefined, 'not_audio: HTML bytes');
});

t.test('ElevenLabs music: the requested length, its limits, bad_prompt', async (t) => {
  const song = await call('POST', `${MUSIC}?output_format=mp3_44100_128`, XI, { prompt: 'calm lo-fi piano', music_length_ms: 10_000, model_id: 'music_v1' });
  t.equal(song.status, 200);
  t.equal(song.type, 'audio/mpeg');
  near(t, song.bytes, 'mp3', 10, 'music_length_ms 10000');
  near(t, (await call('POST', MUSIC, XI, { prompt: 'ambient', force_instrumental: true })).bytes, 'mp3', 30, 'default 30 s');
  near(t, (await call('POST', `${MUSIC}?output_format=wav_48000`, XI, { prompt: 'ambient [[mock audio_ms=3500]]', music_length_ms: 60_000 })).bytes, 'wav', 3.5, 'audio_ms overrides');
  for (const length of [2999, 600_001, 'long']) {
    const answer = await call('POST', MUSIC, XI, { prompt: 'x', music_length_ms: length });
    t.equal(answer.status, 422, `music_length_ms ${length}`);
    t.match(answer.body, { detail: [{ loc: ['body', 'music_length_ms'] }] });
  }
  const copied = await call('POST', MUSIC, XI, { prompt: 'the copyrighted hit song, exactly', music_length_ms: 5000 });
  t.match(copied, { status: 400, body: { detail: { status: 'bad_prompt', message: String, data: { prompt_suggestion: String } } } });
  t.match(await call('POST', MUSIC, XI, { prompt: 'x', model_id: 'music_v9' }), { status: 400, body: { detail: { status: 'model_not_found' } } });
  t.match(await call('POST', MUSIC, XI, { music_length_ms: 5000 }), { status: 422, body: { detail: [{ loc: ['body', 'prompt'], type: 'value_error.missing' }] } });
  t.equal((await call('POST', MUSIC, {}, { prompt: 'x' })).status, 401);
  t.equal((await call('GET', MUSIC, XI)).status, 405);
});

const poll = async (taskId: number, until: string) => {
  const seen: string[] = [];
  const done = await eventually(async () => {
    const answer = await call('GET', `${QUERY}${taskId}`, MM);
    seen.push(answer.body.status);
    return answer.body.status === until;
  }, 5000, 20);
  return { done, seen };
};

t.test('MiniMax async speech: submit → Processing → Success → retrieve → download', async (t) => {
  const submitted = await call('POST', SUBMIT, MM, mmSpeech('Eighteen characters [[mock job_ms=150]]'));
  t.equal(submitted.status, 200);
  const { task_id: taskId, file_id: fileId } = submitted.body;
  t.match(submitted.body, { task_token: String, usage_characters: Number, base_resp: { status_code: 0, status_msg: 'success' } });
  for (const id of [taskId, fileId]) t.ok(Number.isSafeInteger(id) && id >= 1e13 && id <= 9e15, `id ${id} is a JSON number in range`);
  const first = await call('GET', `${QUERY}${taskId}`, MM);
  t.same(first.body, { task_id: taskId, status: 'Processing', file_id: fileId, base_resp: { status_code: 0, status_msg: 'success' } });
  t.match((await call('GET', `${RETRIEVE}${fileId}`, MM)).body, { base_resp: { status_code: 2013 } }, 'no file before success');
  t.ok((await poll(taskId, 'Success')).done);
  const retrieved = await call('GET', `${RETRIEVE}${fileId}`, MM);
  t.match(retrieved.body, { file: { file_id: fileId, bytes: Number, created_at: Number, filename: 'output.mp3', purpose: 't2a_async', download_url: String }, base_resp: { status_code: 0 } });
  t.ok(Math.abs(retrieved.body.file.created_at - Date.now() / 1000) < 5, 'created_at in unix seconds');
  t.ok(retrieved.body.file.download_url.startsWith(`${mock.url}/__mock/audio/`));
  const audio = await call('GET', retrieved.body.file.download_url, {});
  t.equal(audio.type, 'audio/mpeg');
  t.equal(audio.bytes.length, retrieved.body.file.bytes);
  near(t, audio.bytes, 'mp3', 19 * 0.06, 'the text without its directive');
  t.same((await call('GET', retrieved.body.file.download_url, {})).bytes, audio.bytes, 'the same bytes each download');
});

t.test('MiniMax async speech: default job time, wav and speed, task_fail, broken_url, expiry', async (t) => {
  const started = Date.now();
  const plain = (await call('POST', SUBMIT, MM, mmSpeech('x'.repeat(60), { voice_setting: { voice_id: 'v', speed: 2 }, audio_setting: { format: 'wav', sample_rate: 32000, channel: 1 } }))).body;
  const { done, seen } = await poll(plain.task_id, 'Success');
  t.ok(done && seen.includes('Processing'));
  t.ok(Date.now() - started >= JOB_MS - 20, `Processing for the audioJobMs default (${JOB_MS} ms)`);
  const file = (await call('GET', `${RETRIEVE}${plain.file_id}`, MM)).body.file;
  t.equal(file.filename, 'output.wav');
  const wav = await call('GET', file.download_url, {});
  t.equal(wav.type, 'audio/wav');
  near(t, wav.bytes, 'wav', 1.8, '60 characters at speed 2');

  const failing = (await call('POST', SUBMIT, MM, mmSpeech('x [[mock job_ms=50 task_fail]]'))).body;
  t.ok((await poll(failing.task_id, 'Failed')).done, 'task_fail ends Failed');
  t.match((await call('GET', `${RETRIEVE}${failing.file_id}`, MM)).body, { base_resp: { status_code: 2013 } });

  const broken = (await call('POST', SUBMIT, MM, mmSpeech('x [[mock job_ms=50 broken_url]]'))).body;
  await poll(broken.task_id, 'Success');
  const brokenFile = (await call('GET', `${RETRIEVE}${broken.file_id}`, MM)).body.file;
  t.equal((await call('GET', brokenFile.download_url, {})).status, 404, 'broken_url 404s');

  const brief = (await call('POST', SUBMIT, MM, mmSpeech('x [[mock job_ms=50 url_ttl_ms=300]]'))).body;
  await poll(brief.task_id, 'Success');
  const briefUrl = (await call('GET', `${RETRIEVE}${brief.file_id}`, MM)).body.file.download_url;
  t.equal((await call('GET', briefUrl, {})).status, 200, 'served before the URL expires');
  t.ok((await poll(brief.task_id, 'Expired')).done, 'then the task reports Expired');
  t.equal((await call('GET', briefUrl, {})).status, 404, 'and the URL 404s');
});

t.test('MiniMax async speech: auth, params, unknown ids, failure directives', async (t) => {
  t.same((await call('POST', SUBMIT, {}, mmSpeech('x'))).body.base_resp, { status_code: 1004, status_msg: 'authentication failed' });
  t.equal((await call('POST', SUBMIT, {}, mmSpeech('x'))).status, 200, 'auth failure is HTTP 200');
  t.equal((await call('GET', `${QUERY}1`, {})).body.base_resp.status_code, 1004);
  for (const body of [mmSpeech('x', { model: 'speech-9' }), mmSpeech(''), mmSpeech('x', { voice_setting: {} }), mmSpeech('x', { voice_setting: { voice_id: 'v', speed: 3 } }), mmSpeech('x', { audio_setting: { format: 'flac' } }), mmSpeech('x', { audio_setting: { sample_rate: 12345 } })]) {
    const answer = await call('POST', SUBMIT, MM, body);
    t.equal(answer.status, 200);
    t.equal(answer.body.base_resp.status_code, 2013);
    t.match(answer.body.base_resp.status_msg, /^invalid params, /);
  }
  t.equal((await call('GET', `${QUERY}12345678901234`, MM)).body.base_resp.status_code, 2013, 'unknown task');
  t.equal((await call('GET', `${RETRIEVE}12345678901234`, MM)).body.base_resp.status_code, 2013, 'unknown file');
  const limited = await call('POST', SUBMIT, MM, mmSpeech('x [[mock fail=429]]'));
  t.same([limited.status, limited.body.base_resp], [200, { status_code: 1002, status_msg: 'rate limit exceeded(RPM)' }]);
  const down = await call('POST', SUBMIT, MM, mmSpeech('x [[mock fail=502]]'));
  t.equal(down.status, 502);
  t.equal(down.body.base_resp.status_code, 1000);
  const broke = await call('POST', SUBMIT, MM, mmSpeech('x [[mock base_fail=1008]]'));
  t.same([broke.status, broke.body.base_resp.status_code], [200, 1008]);
});

t.test('MiniMax music: hex by default, or a URL; lyrics unless instrumental', async (t) => {
  const hex = await call('POST', MM_MUSIC, MM, { model: 'music-2.6', prompt: 'indie folk', lyrics: '[Verse]\nla la la' });
  t.equal(hex.status, 200);
  t.match(hex.body, { data: { audio: /^[0-9a-f]+$/, status: 2 }, extra_info: { music_duration: Number, music_sample_rate: Number, music_channel: 1, bitrate: Number, music_size: Number }, trace_id: String, base_resp: { status_code: 0, status_msg: 'success' } });
  const bytes = Buffer.from(hex.body.data.audio, 'hex');
  near(t, bytes, 'mp3', 30, 'default 30 s');
  t.equal(hex.body.extra_info.music_size, bytes.length);
  t.ok(Math.abs(hex.body.extra_info.music_duration - 30_000) <= 50);

  const url = await call('POST', MM_MUSIC, MM, { model: 'music-2.5', prompt: 'drone [[mock audio_ms=5000]]', is_instrumental: true, output_format: 'url', audio_setting: { sample_rate: 44100, bitrate: 256000, format: 'wav' } });
  const file = await call('GET', url.body.data.audio, {});
  t.equal(file.type, 'audio/wav');
  near(t, file.bytes, 'wav', 5, 'instrumental, by URL, audio_ms');
  t.equal(url.body.extra_info.music_duration, 5000);

  const broken = await call('POST', MM_MUSIC, MM, { model: 'music-2.5', prompt: 'x [[mock broken_url]]', is_instrumental: true, output_format: 'url' });
  t.equal((await call('GET', broken.body.data.audio, {})).status, 404);
  const html = await call('POST', MM_MUSIC, MM, { model: 'music-2.5', prompt: 'x [[mock not_audio]]', is_instrumental: true });
  t.equal(audioInfo(Buffer.from(html.body.data.audio, 'hex')), undefined, 'not_audio: HTML in the hex');

  for (const body of [{ model: 'music-2.6', prompt: 'x' }, { model: 'music-2.6', prompt: 'x', is_instrumental: false, lyrics: ' ' }, { model: 'music-0', prompt: 'x', is_instrumental: true }, { model: 'music-2.6', prompt: 'x', is_instrumental: true, output_format: 'base64' }]) {
    const answer = await call('POST', MM_MUSIC, MM, body);
    t.same([answer.status, answer.body.base_resp.status_code], [200, 2013], JSON.stringify(body));
  }
  t.equal((await call('POST', MM_MUSIC, {}, { model: 'music-2.6', prompt: 'x', is_instrumental: true })).body.base_resp.status_code, 1004);
  t.same((await call('POST', MM_MUSIC, MM, { model: 'music-2.6', prompt: 'x [[mock fail=429]]', is_instrumental: true })).body.base_resp.status_code, 1002);
  const started = Date.now();
  await call('POST', MM_MUSIC, MM, { model: 'music-2.6', prompt: 'x [[mock latency_ms=200 audio_ms=3000]]', is_instrumental: true });
  t.ok(Date.now() - started >= 190, 'latency_ms');
});

const STABLE_AUDIO = '/stability/v1/audio/stable-audio-2/text-to-audio';

/** A Stable Audio call: the fields as multipart/form-data (fetch writes the boundary). */
async function stableAudio(fields: Record<string, string>, headers: Record<string, string> = { authorization: 'Bearer sk-stability', accept: 'audio/*' }): Promise<Answer> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await fetch(`${mock.url}${STABLE_AUDIO}`, { method: 'POST', headers, body: form });
  const bytes = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  return { status: response.status, type, bytes, body: type.startsWith('application/json') ? JSON.parse(bytes.toString()) : undefined, headers: response.headers };
}

t.test('Stable Audio: the file of the asked length, mp3 or wav; base64 JSON for application/json; the fields recorded', async (t) => {
  const mp3 = await stableAudio({ prompt: 'rain on leaves', model: 'stable-audio-2.5', duration: '4' });
  t.equal(mp3.status, 200);
  t.equal(mp3.type, 'audio/mpeg');
  t.equal(mp3.headers.get('finish-reason'), 'SUCCESS');
  near(t, mp3.bytes, 'mp3', 4, 'duration 4');
  const record = mock.requests().findLast((r) => r.path === STABLE_AUDIO);
  t.same(record?.body, { prompt: 'rain on leaves', model: 'stable-audio-2.5', duration: '4' }, 'the form fields as received');
  const wav = await stableAudio({ prompt: 'a gong [[mock audio_ms=1250]]', model: 'stable-audio-2.5', output_format: 'wav', steps: '8', cfg_scale: '2.5', seed: '7' });
  t.equal(wav.type, 'audio/wav');
  near(t, wav.bytes, 'wav', 1.25, 'audio_ms wins');
  near(t, (await stableAudio({ prompt: 'drone', model: 'stable-audio-2.5' })).bytes, 'mp3', 190, 'no duration: 190 s');
  const json = await stableAudio({ prompt: 'bells', model: 'stable-audio-2.5', duration: '2' }, { authorization: 'Bearer sk-stability', accept: 'application/json' });
  t.match(json.body, { finish_reason: 'SUCCESS', seed: Number, audio: String });
  near(t, Buffer.from(json.body.audio, 'base64'), 'mp3', 2, 'base64 in JSON');
});

t.test('Stable Audio: refusals in its {id, name, errors} shape', async (t) => {
  const refused = async (fields: Record<string, string>, status: number, name: string, error: RegExp, headers?: Record<string, string>) => {
    const answer = await stableAudio(fields, headers);
    t.equal(answer.status, status, `${JSON.stringify(fields)}: ${status}`);
    t.match(answer.body, { id: /^[0-9a-f]{32}$/, name, errors: [error] }, `${JSON.stringify(fields)}: ${name}`);
  };
  await refused({ prompt: 'x' }, 401, 'unauthorized', /authorization/, { accept: 'audio/*' });
  await refused({ model: 'stable-audio-2.5' }, 400, 'bad_request', /^prompt: /);
  await refused({ prompt: 'x'.repeat(10_001) }, 400, 'bad_request', /^prompt: /);
  for (const duration of ['0', '191', '12.5', 'long']) await refused({ prompt: 'x', duration }, 400, 'bad_request', /^duration: /);
  await refused({ prompt: 'x', model: 'stable-audio-9' }, 400, 'bad_request', /^model: /);
  await refused({ prompt: 'x', model: 'stable-audio-2.5', steps: '50' }, 400, 'bad_request', /^steps: /);
  await refused({ prompt: 'x', cfg_scale: '30' }, 400, 'bad_request', /^cfg_scale: /);
  await refused({ prompt: 'x', output_format: 'ogg' }, 400, 'bad_request', /^output_format: /);
  await refused({ prompt: 'x' }, 400, 'bad_request', /^accept: /, { authorization: 'Bearer k', accept: 'image/*' });
  await refused({ prompt: 'a song [[mock fail=403]]' }, 403, 'content_moderation', /content moderation/);
  await refused({ prompt: 'x [[mock fail=429]]' }, 429, 'rate_limit_exceeded', /rate limit/);
  await refused({ prompt: 'x [[mock fail=500]]' }, 500, 'internal_error', /server error/);
  const json = await fetch(`${mock.url}${STABLE_AUDIO}`, { method: 'POST', headers: { authorization: 'Bearer k', 'content-type': 'application/json' }, body: '{"prompt":"x"}' });
  t.match({ status: json.status, body: await json.json() }, { status: 400, body: { name: 'bad_request', errors: [/multipart\/form-data/] } }, 'JSON is not taken');
});

t.test('audio files: unknown names 404', async (t) => {
  t.equal((await call('GET', '/__mock/audio/nope.mp3', {})).status, 404);
});
