// The audio adapters as pure functions: the requests they write for each vendor, and what each
// vendor answer means (the audio, a link to it, a vendor task's state, a retryable or final refusal).
import t from 'tap';
import { OPENAI_AUDIO as OPENAI } from '../src/providers/audio/openai.js';
import { ELEVENLABS_AUDIO as ELEVENLABS } from '../src/providers/audio/elevenlabs.js';
import type { AudioAdapter } from '../src/providers/audio/adapter.js';
import { MINIMAX_AUDIO } from '../src/providers/audio/minimax.js';
import { GEMINI_AUDIO, pcmFormatOf } from '../src/providers/audio/gemini.js';
import { STABILITY_AUDIO } from '../src/providers/audio/stability.js';
import { formParts, multipartBoundary } from '../src/media/multipart.js';
import { audioInfo } from '../src/media/audio-duration.js';
import type { SpeechJob, MusicJob } from '../src/tasks/audio-job.js';
import type { VendorTarget } from '../src/providers/video/adapter.js';

const OPENAI_AUDIO: AudioAdapter = OPENAI;
const ELEVENLABS_AUDIO: AudioAdapter = ELEVENLABS;
const target = (vendor: string): VendorTarget => ({ baseUrl: `https://api.example.com/${vendor}/v1/`, apiKey: 'secret' });
const speech = (extra: Partial<SpeechJob> = {}): SpeechJob => ({ task: 'speech', model: 'm', upstreamModel: 'up', input: 'Hello', voice: 'alloy', format: 'mp3', ...extra });
const music = (extra: Partial<MusicJob> = {}): MusicJob => ({ task: 'music', model: 'm', upstreamModel: 'up', prompt: 'piano', format: 'mp3', ...extra });
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

t.test('OpenAI speech: the request, the file, the error envelope', async (t) => {
  const request = OPENAI_AUDIO.generate(speech({ speed: 1.5, instructions: 'calm', format: 'wav' }), target('openai'));
  t.match(request, { method: 'POST', url: 'https://api.example.com/openai/v1/audio/speech', headers: { authorization: 'Bearer secret', 'content-type': 'application/json' } });
  t.same(JSON.parse(request.body!), { model: 'up', input: 'Hello', voice: 'alloy', response_format: 'wav', speed: 1.5, instructions: 'calm' });
  t.same(OPENAI_AUDIO.generated(200, 'audio/mpeg', Buffer.from('ID3…')), { kind: 'bytes', bytes: Buffer.from('ID3…') });
  t.match(OPENAI_AUDIO.generated(400, 'application/json', json({ error: { message: 'bad voice', type: 'invalid_request_error', param: 'voice', code: 'invalid_value' } })),
    { kind: 'refused', retryable: false, code: 'invalid_value', message: 'bad voice', httpStatus: 400 });
  t.match(OPENAI_AUDIO.generated(429, 'application/json', json({ error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } })), { kind: 'refused', retryable: true });
  t.match(OPENAI_AUDIO.generated(503, 'text/html', Buffer.from('<html>')), { kind: 'refused', retryable: true, code: 'http_503' });
  t.notOk(OPENAI_AUDIO.runsAsTask(speech()), 'made in one call');
});

t.test('ElevenLabs: speech and music requests; both error shapes', async (t) => {
  const tts = ELEVENLABS_AUDIO.generate(speech({ voice: 'JBFqnCBsd6RMkjVDRZzb', speed: 0.9 }), target('elevenlabs'));
  t.equal(tts.url, 'https://api.example.com/elevenlabs/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb?output_format=mp3_44100_128');
  t.same(tts.headers, { 'xi-api-key': 'secret', 'content-type': 'application/json' });
  t.same(JSON.parse(tts.body!), { text: 'Hello', model_id: 'up', voice_settings: { speed: 0.9 } });
  t.notOk('voice_settings' in JSON.parse(ELEVENLABS_AUDIO.generate(speech(), target('elevenlabs')).body!), 'no speed: no voice settings');
  t.equal(ELEVENLABS_AUDIO.generate(speech({ voice: 'a/../b' }), target('elevenlabs')).url, 'https://api.example.com/elevenlabs/v1/text-to-speech/a%2F..%2Fb?output_format=mp3_44100_128', 'a voice id cannot change the path');
  const song = ELEVENLABS_AUDIO.generate(music({ duration: 12.5, instrumental: true }), target('elevenlabs'));
  t.equal(song.url, 'https://api.example.com/elevenlabs/v1/music?output_format=mp3_44100_128');
  t.same(JSON.parse(song.body!), { prompt: 'piano', model_id: 'up', music_length_ms: 12_500, force_instrumental: true });
  t.match(ELEVENLABS_AUDIO.generated(400, 'application/json', json({ detail: { status: 'bad_prompt', message: 'names an artist' } })),
    { kind: 'refused', retryable: false, code: 'bad_prompt', message: 'names an artist' });
  t.match(ELEVENLABS_AUDIO.generated(422, 'application/json', json({ detail: [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }] })),
    { kind: 'refused', retryable: false, code: 'validation_error', message: 'body.text: field required' });
  t.match(ELEVENLABS_AUDIO.generated(429, 'application/json', json({ detail: { status: 'too_many_concurrent_requests', message: 'busy' } })), { kind: 'refused', retryable: true });
});

t.test('MiniMax: async speech submitted, polled, its file retrieved; int64 ids kept digit for digit', async (t) => {
  const tasks = MINIMAX_AUDIO.tasks;
  t.ok(MINIMAX_AUDIO.runsAsTask(speech()), 'speech is a vendor task');
  t.notOk(MINIMAX_AUDIO.runsAsTask(music()), 'music is one call');
  const submit = tasks.submit(speech({ voice: 'Wise_Woman', speed: 1.2, format: 'wav' }), target('minimax'));
  t.match(submit, { method: 'POST', url: 'https://api.example.com/minimax/v1/t2a_async_v2', headers: { authorization: 'Bearer secret' } });
  t.match(JSON.parse(submit.body!), { model: 'up', text: 'Hello', voice_setting: { voice_id: 'Wise_Woman', speed: 1.2 }, audio_setting: { format: 'wav' } });

  // 2^53 + 1 would lose its last digit through a double.
  const big = '9007199254740993';
  t.same(tasks.submitted(200, `{"task_id": ${big}, "file_id": 12, "base_resp": {"status_code": 0, "status_msg": "success"}}`), { kind: 'submitted', upstreamId: big });
  t.match(tasks.submitted(200, '{"base_resp": {"status_code": 1004, "status_msg": "authentication failed"}}'), { kind: 'refused', retryable: false, code: 'minimax_1004', message: 'authentication failed' });
  t.match(tasks.submitted(200, '{"base_resp": {"status_code": 1002, "status_msg": "rate limit"}}'), { kind: 'refused', retryable: true, code: 'minimax_1002' });
  t.match(tasks.submitted(200, '{"task_id": 5}'), { kind: 'refused', retryable: true }, 'no base_resp: a garbled answer');
  t.match(tasks.submitted(502, '<html>'), { kind: 'refused', retryable: true, code: 'http_502' });

  t.equal(tasks.poll(big, target('minimax')).url, `https://api.example.com/minimax/v1/query/t2a_async_query_v2?task_id=${big}`);
  const ok = { status_code: 0, status_msg: 'success' };
  t.same(tasks.polled(200, JSON.stringify({ task_id: 1, status: 'Processing', base_resp: ok })), { kind: 'running', status: 'Processing' });
  t.same(tasks.polled(200, `{"task_id": 1, "status": "Success", "file_id": ${big}, "base_resp": {"status_code": 0}}`, target('minimax')), {
    kind: 'retrieve', status: 'Success', request: { method: 'GET', url: `https://api.example.com/minimax/v1/files/retrieve?file_id=${big}`, headers: { authorization: 'Bearer secret' } },
  });
  t.match(tasks.polled(200, JSON.stringify({ status: 'Failed', base_resp: ok })), { kind: 'failed', code: 'upstream_failed' });
  t.match(tasks.polled(200, JSON.stringify({ status: 'Expired', base_resp: ok })), { kind: 'failed', code: 'task_expired' });
  t.same(tasks.polled(200, JSON.stringify({ status: 'Paused', base_resp: ok })), { kind: 'unknown', status: 'Paused' });
  t.match(tasks.polled(200, JSON.stringify({ status: 'constructor', base_resp: ok })), { kind: 'unknown' }, 'a status word is never read as an Object method');
  t.same(tasks.retrieved(200, JSON.stringify({ file: { file_id: 1, download_url: 'https://cdn.example.com/a.mp3' }, base_resp: ok }), 'Success'),
    { kind: 'succeeded', status: 'Success', resultUrl: 'https://cdn.example.com/a.mp3' });
  t.match(tasks.retrieved(200, JSON.stringify({ file: {}, base_resp: ok }), 'Success'), { kind: 'refused', retryable: true });
});

t.test('MiniMax music: one call answering a download URL', async (t) => {
  const request = MINIMAX_AUDIO.generate(music({ lyrics: '[Verse]\nla', format: 'wav' }), target('minimax'));
  t.equal(request.url, 'https://api.example.com/minimax/v1/music_generation');
  t.match(JSON.parse(request.body!), { model: 'up', prompt: 'piano', lyrics: '[Verse]\nla', output_format: 'url', audio_setting: { format: 'wav' } });
  const ok = { status_code: 0, status_msg: 'success' };
  t.same(MINIMAX_AUDIO.generated(200, 'application/json', json({ data: { audio: 'https://cdn.example.com/s.wav', status: 2 }, base_resp: ok })), { kind: 'url', url: 'https://cdn.example.com/s.wav' });
  t.match(MINIMAX_AUDIO.generated(200, 'application/json', json({ data: { audio: '4944330300' }, base_resp: ok })), { kind: 'refused', retryable: true }, 'hex instead of a URL: not taken');
  t.match(MINIMAX_AUDIO.generated(200, 'application/json', json({ base_resp: { status_code: 1026, status_msg: 'sensitive content' } })), { kind: 'refused', retryable: false, code: 'minimax_1026' });
});

t.test('Gemini speech: generateContent with AUDIO output, the PCM answer wrapped as WAV, refusals', async (t) => {
  const gemini: AudioAdapter = GEMINI_AUDIO;
  const request = gemini.generate(speech({ voice: 'Kore', format: 'wav', upstreamModel: 'gemini-2.5-flash-preview-tts' }), target('gemini'));
  t.match(request, { method: 'POST', url: 'https://api.example.com/gemini/v1/models/gemini-2.5-flash-preview-tts:generateContent', headers: { 'x-goog-api-key': 'secret' } });
  t.same(JSON.parse(request.body!), {
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
  });
  // One second of 24 kHz 16-bit mono PCM.
  const pcm = Buffer.alloc(48_000);
  const answer = json({ candidates: [{ content: { parts: [{ inlineData: { mimeType: 'audio/L16;codec=pcm;rate=24000', data: pcm.toString('base64') } }] } }] });
  const made = gemini.generated(200, 'application/json', answer);
  t.equal(made.kind, 'bytes');
  const info = made.kind === 'bytes' ? audioInfo(made.bytes) : undefined;
  t.equal(info?.format, 'wav', 'a WAV the gateway can time');
  t.equal(info?.seconds, 1, 'of the PCM\'s length');
  t.same(pcmFormatOf('audio/L16;codec=pcm;rate=16000'), { sampleRate: 16_000, channels: 1 });
  t.equal(pcmFormatOf('audio/mpeg'), undefined, 'not PCM');
  t.equal(pcmFormatOf('audio/L16;rate=1'), undefined, 'an impossible rate');
  t.match(gemini.generated(200, 'application/json', json({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } })), { kind: 'refused', retryable: false, code: 'content_policy_violation' });
  t.match(gemini.generated(200, 'application/json', json({ candidates: [{ content: { parts: [{ text: 'no audio' }] } }] })), { kind: 'refused', retryable: true, code: 'invalid_response' });
  t.match(gemini.generated(400, 'application/json', json({ error: { code: 400, message: 'bad voice', status: 'INVALID_ARGUMENT' } })),
    { kind: 'refused', retryable: false, code: 'INVALID_ARGUMENT', message: 'bad voice' });
  t.match(gemini.generated(429, 'application/json', json({ error: { code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED' } })), { kind: 'refused', retryable: true });
  t.notOk(gemini.runsAsTask(speech()), 'made in one call');
});

t.test('Gemini music (Lyria): the prompt as the one part; the MP3 part of the answer taken as sent, the lyrics left', async (t) => {
  const gemini: AudioAdapter = GEMINI_AUDIO;
  const request = gemini.generate(music({ upstreamModel: 'lyria-3.5', prompt: 'a folk song about rain' }), target('gemini'));
  t.match(request, { method: 'POST', url: 'https://api.example.com/gemini/v1/models/lyria-3.5:generateContent', headers: { 'x-goog-api-key': 'secret' } });
  t.same(JSON.parse(request.body!), { contents: [{ role: 'user', parts: [{ text: 'a folk song about rain' }] }] });
  const mp3 = Buffer.from('ID3 mock song');
  const answer = json({ candidates: [{ content: { parts: [{ text: '[Verse] rain' }, { inlineData: { mimeType: 'audio/mpeg', data: mp3.toString('base64') } }] } }] });
  t.same(gemini.generated(200, 'application/json', answer), { kind: 'bytes', bytes: mp3 });
  t.match(gemini.generated(200, 'application/json', json({ candidates: [{ content: { parts: [{ text: 'lyrics only' }] } }] })), { kind: 'refused', retryable: true });
});

t.test('Stable Audio: one multipart/form-data POST answering the file; Stability\'s error body', async (t) => {
  const stability: AudioAdapter = STABILITY_AUDIO;
  const prompt = 'Ambient drone, then a "bell"\r\n--gateway- in the text';
  const request = stability.generate(music({ upstreamModel: 'stable-audio-2.5', prompt, duration: 42, format: 'wav' }), target('stability'));
  t.match(request, { method: 'POST', url: 'https://api.example.com/stability/v1/audio/stable-audio-2/text-to-audio', headers: { authorization: 'Bearer secret', accept: 'audio/*' } });
  const boundary = multipartBoundary(request.headers['content-type']!);
  t.ok(boundary && !prompt.includes(boundary), 'a multipart boundary the prompt does not contain');
  const fields = Object.fromEntries(formParts(Buffer.from(request.body!), boundary!).map((part) => [part.name, part.bytes.toString('utf8')]));
  t.same(fields, { prompt, model: 'stable-audio-2.5', duration: '42', output_format: 'wav' }, 'the fields, the prompt byte for byte');
  const plain = stability.generate(music(), target('stability'));
  const noLength = formParts(Buffer.from(plain.body!), multipartBoundary(plain.headers['content-type']!)!);
  t.notOk(noLength.some((part) => part.name === 'duration'), 'no duration: none sent');
  t.throws(() => stability.generate(speech(), target('stability')), /not speech/, 'speech is not its job');
  t.notOk(stability.runsAsTask(music()), 'made in one call');

  t.same(stability.generated(200, 'audio/wav', Buffer.from('RIFF…')), { kind: 'bytes', bytes: Buffer.from('RIFF…') });
  const error = (name: string, ...errors: string[]) => json({ id: 'a1b2', name, errors });
  t.match(stability.generated(403, 'application/json', error('content_moderation', 'Your request was flagged')),
    { kind: 'refused', retryable: false, code: 'content_policy_violation', message: 'Your request was flagged', httpStatus: 403 });
  t.match(stability.generated(400, 'application/json', error('bad_request', 'duration: must be an integer', 'seed: too large')),
    { kind: 'refused', retryable: false, code: 'bad_request', message: 'duration: must be an integer; seed: too large' });
  t.match(stability.generated(413, 'application/json', error('payload_too_large')), { kind: 'refused', retryable: false, code: 'payload_too_large', message: 'The vendor answered HTTP 413.' });
  t.match(stability.generated(422, 'application/json', error('invalid_language', 'English only')), { kind: 'refused', retryable: false, code: 'invalid_language' });
  t.match(stability.generated(429, 'application/json', error('rate_limit_exceeded', 'slow down')), { kind: 'refused', retryable: true });
  t.match(stability.generated(500, 'application/json', error('internal_error', 'oops')), { kind: 'refused', retryable: true, code: 'internal_error' });
  t.match(stability.generated(502, 'text/html', Buffer.from('<html>')), { kind: 'refused', retryable: true, code: 'http_502' });
});
