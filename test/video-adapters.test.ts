// Pure fixtures for the video vendor adapters (DashScope Wan, Vidu, Ark Seedance, Google Veo), with
// request and answer bodies in the vendors' documented shapes (shared/reference/media-vendor-apis.md
// §1-3; Veo: docs/vendors/google-media.md).
import type { Test } from 'tap';
import t from 'tap';
import type { VendorRefusal, VendorRequest, VendorTarget, VendorTaskState, VideoAdapter } from '../src/providers/video/adapter.js';
import { DASHSCOPE_VIDEO, dashscopeApiBase } from '../src/providers/video/dashscope.js';
import { VIDU_VIDEO } from '../src/providers/video/vidu.js';
import { ARK_VIDEO } from '../src/providers/video/ark.js';
import { MINIMAX_VIDEO } from '../src/providers/video/minimax.js';
import { KLING_VIDEO, klingToken } from '../src/providers/video/kling.js';
import { RUNWAY_VIDEO } from '../src/providers/video/runway.js';
import { LUMA_VIDEO } from '../src/providers/video/luma.js';
import { createHmac } from 'node:crypto';
import { VEO_VIDEO } from '../src/providers/video/veo.js';
import { builtRequest } from '../src/tasks/vendor-exchange.js';
import { VIDEO_ADAPTERS } from '../src/providers/video/index.js';
import { entryOf, isImageToVideo, refusalOf } from '../src/providers/video/wire.js';
import { VIDEO_PROFILES, type VideoJob } from '../src/tasks/video-job.js';

const json = (value: unknown) => JSON.stringify(value);

/** Every part of a request, the body parsed (so key order and whitespace do not matter, but absent keys do). */
function requestParts(request: VendorRequest) {
  return { method: request.method, url: request.url, headers: request.headers, body: request.body === undefined ? undefined : JSON.parse(request.body) as unknown };
}

function isRefusal(t: Test, got: unknown, expected: { retryable: boolean; code: string; httpStatus: number; message?: string }, what: string) {
  const refusal = got as VendorRefusal;
  t.equal(refusal.kind, 'refused', `${what}: a refusal`);
  t.strictSame({ retryable: refusal.retryable, code: refusal.code, httpStatus: refusal.httpStatus }, { retryable: expected.retryable, code: expected.code, httpStatus: expected.httpStatus }, `${what}: ${expected.code}`);
  if (expected.message !== undefined) t.equal(refusal.message, expected.message, `${what}: the vendor's message`);
  t.type(refusal.message, 'string');
  t.ok(refusal.message.length > 0, `${what}: says why`);
}

function isState(t: Test, got: unknown, expected: VendorTaskState, what: string) {
  t.strictSame(got, expected, what);
}

/** The same word in the casings a vendor (or its docs) might use. */
const casings = (word: string) => [...new Set([word, word.toLowerCase(), word.toUpperCase(), word[0]!.toUpperCase() + word.slice(1).toLowerCase()])];

/** Transport-level answers every adapter must read the same way. */
function sharedHttpRules(t: Test, adapter: VideoAdapter, errorBody: (code: string, message: string) => unknown) {
  t.test('HTTP statuses, both steps', async (t) => {
    for (const step of ['submit', 'poll'] as const) {
      const read = (status: number, body: string) => (step === 'submit' ? adapter.submitted(status, body) : adapter.polled(status, body));
      isRefusal(t, read(429, json(errorBody('Throttling', 'Requests rate limit exceeded'))), { retryable: true, code: 'Throttling', httpStatus: 429, message: 'Requests rate limit exceeded' }, `${step} 429`);
      isRefusal(t, read(500, json(errorBody('InternalError', 'internal error'))), { retryable: true, code: 'InternalError', httpStatus: 500 }, `${step} 500`);
      isRefusal(t, read(503, ''), { retryable: true, code: 'http_503', httpStatus: 503 }, `${step} 503, empty body`);
      const html = '<html><body><h1>502 Bad Gateway</h1></body></html>';
      const gateway = read(502, html) as VendorRefusal;
      isRefusal(t, gateway, { retryable: true, code: 'http_502', httpStatus: 502 }, `${step} 502 HTML`);
      t.notMatch(gateway.message, /html|Bad Gateway/i, `${step}: a non-JSON error body is not quoted`);
      isRefusal(t, read(401, json(errorBody('InvalidApiKey', 'Invalid API-key provided.'))), { retryable: false, code: 'InvalidApiKey', httpStatus: 401, message: 'Invalid API-key provided.' }, `${step} 401`);
      isRefusal(t, read(401, 'Unauthorized'), { retryable: false, code: 'http_401', httpStatus: 401 }, `${step} 401 without a code`);
      isRefusal(t, read(403, '{}'), { retryable: false, code: 'http_403', httpStatus: 403 }, `${step} 403 without a code`);
      isRefusal(t, read(422, json(errorBody('InvalidParameter', 'bad duration'))), { retryable: false, code: 'InvalidParameter', httpStatus: 422, message: 'bad duration' }, `${step} 422`);
      isRefusal(t, read(200, 'not json at all'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, `${step} 200 non-JSON`);
      isRefusal(t, read(200, '[1,2]'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, `${step} 200 array`);
      isRefusal(t, read(200, 'null'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, `${step} 200 null`);
      isRefusal(t, read(200, '{}'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, `${step} 200 empty object`);
      const long = read(400, json(errorBody('InvalidParameter', 'x'.repeat(5000)))) as VendorRefusal;
      t.ok(long.message.length <= 500, `${step}: a long vendor message is cut (${long.message.length})`);
    }
    isRefusal(t, adapter.submitted(404, json(errorBody('ModelNotFound', 'no such model'))), { retryable: false, code: 'ModelNotFound', httpStatus: 404, message: 'no such model' }, 'submit 404 keeps the vendor code');
    isRefusal(t, adapter.submitted(400, json(errorBody('InvalidParameter', 'prompt too long'))), { retryable: false, code: 'InvalidParameter', httpStatus: 400, message: 'prompt too long' }, 'submit 400');
    isRefusal(t, adapter.polled(404, json(errorBody('TaskNotExist', 'task does not exist'))), { retryable: false, code: 'task_not_found', httpStatus: 404, message: 'task does not exist' }, 'poll 404');
    isRefusal(t, adapter.polled(404, 'Not Found'), { retryable: false, code: 'task_not_found', httpStatus: 404 }, 'poll 404, not JSON');
  });
}

/** The key goes in the Authorization header and nowhere else. */
function keyOnlyInHeader(t: Test, request: VendorRequest, key: string, scheme: string) {
  t.equal(request.headers.authorization, `${scheme} ${key}`, 'authorization header');
  t.notOk(request.url.includes(key), 'no key in the URL');
  t.notOk((request.body ?? '').includes(key), 'no key in the body');
  const others = Object.entries(request.headers).filter(([name]) => name !== 'authorization');
  t.notOk(others.some(([, value]) => value.includes(key)), 'no key in other headers');
}

// ---------------------------------------------------------------------------------------------------
// DashScope (Wan), R2V-A

const DASHSCOPE: VendorTarget = { baseUrl: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1', apiKey: 'sk-dash-secret' };
const DASHSCOPE_MOCK: VendorTarget = { baseUrl: 'http://127.0.0.1:4010/alibaba/v1', apiKey: 'sk-dash-secret' };

const R2V_A: VideoJob = {
  profile: 'R2V-A', model: 'alibaba/wan2.6-r2v', upstreamModel: 'wan2.6-r2v',
  prompt: 'character1 waves at character2 by the lake', negativePrompt: 'blurry, low quality',
  imageUrls: ['https://img.example/a.png', 'https://img.example/b.png'], videoUrls: ['https://vid.example/c.mp4'],
  duration: 5, size: '1280*720', shotType: 'multi', audio: true, watermark: false, seed: 12345,
};

t.test('DashScope: the native API base from the configured one', async (t) => {
  t.equal(dashscopeApiBase('https://dashscope-intl.aliyuncs.com/compatible-mode/v1'), 'https://dashscope-intl.aliyuncs.com/api/v1');
  t.equal(dashscopeApiBase('https://dashscope.aliyuncs.com/compatible-mode/v1/'), 'https://dashscope.aliyuncs.com/api/v1', 'trailing slash');
  t.equal(dashscopeApiBase('https://dashscope-us.aliyuncs.com/compatible-mode/v1'), 'https://dashscope-us.aliyuncs.com/api/v1');
  t.equal(dashscopeApiBase('https://dashscope-intl.aliyuncs.com/api/v1'), 'https://dashscope-intl.aliyuncs.com/api/v1', 'already native');
  t.equal(dashscopeApiBase('http://127.0.0.1:4010/alibaba/v1'), 'http://127.0.0.1:4010/alibaba/v1', 'the mock: as is');
  t.equal(dashscopeApiBase('https://proxy.example/compatible-mode/v1/extra'), 'https://proxy.example/compatible-mode/v1/extra', 'only a trailing suffix is replaced');
  t.equal(dashscopeApiBase('https://proxy.example/compatible-mode/v2'), 'https://proxy.example/compatible-mode/v2', 'another version: as is');
});

t.test('DashScope: the R2V-A submit request', async (t) => {
  const request = DASHSCOPE_VIDEO.submit(R2V_A, DASHSCOPE);
  t.strictSame(requestParts(request), {
    method: 'POST',
    url: 'https://dashscope-intl.aliyuncs.com/api/v1/services/aigc/video-generation/video-synthesis',
    headers: { authorization: 'Bearer sk-dash-secret', 'x-dashscope-async': 'enable', 'content-type': 'application/json' },
    body: {
      model: 'wan2.6-r2v',
      input: {
        prompt: 'character1 waves at character2 by the lake', negative_prompt: 'blurry, low quality',
        reference_urls: ['https://img.example/a.png', 'https://img.example/b.png', 'https://vid.example/c.mp4'],
      },
      parameters: { size: '1280*720', duration: 5, shot_type: 'multi', audio: true, watermark: false, seed: 12345 },
    },
  });
  keyOnlyInHeader(t, request, DASHSCOPE.apiKey, 'Bearer');

  const plain: VideoJob = { ...R2V_A, negativePrompt: undefined, seed: undefined, imageUrls: [], videoUrls: ['https://vid.example/only.mp4'], size: '1920*1080', shotType: 'single', audio: false, duration: 10 };
  t.strictSame(requestParts(DASHSCOPE_VIDEO.submit(plain, DASHSCOPE_MOCK)), {
    method: 'POST',
    url: 'http://127.0.0.1:4010/alibaba/v1/services/aigc/video-generation/video-synthesis',
    headers: { authorization: 'Bearer sk-dash-secret', 'x-dashscope-async': 'enable', 'content-type': 'application/json' },
    body: {
      model: 'wan2.6-r2v',
      input: { prompt: 'character1 waves at character2 by the lake', reference_urls: ['https://vid.example/only.mp4'] },
      parameters: { size: '1920*1080', duration: 10, shot_type: 'single', audio: false, watermark: false },
    },
  }, 'no negative_prompt or seed when the job has none; the mock base as is');
});

t.test('DashScope: submit answers', async (t) => {
  t.strictSame(DASHSCOPE_VIDEO.submitted(200, json({ output: { task_status: 'PENDING', task_id: '0385dc79-5ff8-4d82-bcb6-xxxxxx' }, request_id: '4909100c-7b5a' })),
    { kind: 'submitted', upstreamId: '0385dc79-5ff8-4d82-bcb6-xxxxxx' });
  isRefusal(t, DASHSCOPE_VIDEO.submitted(400, json({ request_id: 'r1', code: 'InvalidParameter', message: 'The size is not supported.' })),
    { retryable: false, code: 'InvalidParameter', httpStatus: 400, message: 'The size is not supported.' }, 'flat 400');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(401, json({ request_id: 'r2', code: 'InvalidApiKey', message: 'Invalid API-key provided.' })),
    { retryable: false, code: 'InvalidApiKey', httpStatus: 401 }, 'flat 401');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(403, json({ request_id: 'r3', code: 'AccessDenied', message: 'current user api does not support synchronous calls' })),
    { retryable: false, code: 'AccessDenied', httpStatus: 403 }, 'flat 403');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(429, json({ request_id: 'r4', code: 'Throttling.RateQuota', message: 'Requests rate limit exceeded' })),
    { retryable: true, code: 'Throttling.RateQuota', httpStatus: 429 }, '429');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(200, json({ output: { task_status: 'PENDING' }, request_id: 'r5' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no task_id');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(200, json({ output: { task_id: '' } })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'empty task_id');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(200, json({ task_id: 'top-level' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'task_id outside output');
  isRefusal(t, DASHSCOPE_VIDEO.submitted(200, '{"output": {"task_id": "abc"'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'truncated JSON');
});

t.test('DashScope: poll and cancel requests', async (t) => {
  t.strictSame(requestParts(DASHSCOPE_VIDEO.poll('0385dc79-5ff8', DASHSCOPE)), {
    method: 'GET', url: 'https://dashscope-intl.aliyuncs.com/api/v1/tasks/0385dc79-5ff8', headers: { authorization: 'Bearer sk-dash-secret' }, body: undefined,
  });
  t.equal(DASHSCOPE_VIDEO.poll('0385dc79', DASHSCOPE_MOCK).url, 'http://127.0.0.1:4010/alibaba/v1/tasks/0385dc79');
  t.equal(DASHSCOPE_VIDEO.poll('../a?b', DASHSCOPE).url, 'https://dashscope-intl.aliyuncs.com/api/v1/tasks/..%2Fa%3Fb', 'the id cannot change the path');
  t.strictSame(requestParts(DASHSCOPE_VIDEO.cancel('0385dc79', DASHSCOPE)), {
    method: 'POST', url: 'https://dashscope-intl.aliyuncs.com/api/v1/tasks/0385dc79/cancel', headers: { authorization: 'Bearer sk-dash-secret' }, body: undefined,
  });
});

t.test('DashScope: poll answers', async (t) => {
  const task = (output: Record<string, unknown>, usage?: Record<string, unknown>) =>
    json({ request_id: 'r', output: { task_id: 't1', submit_time: '2025-07-27 21:05:15.212', ...output }, ...(usage ? { usage } : {}) });
  const url = 'https://dashscope-result-sg.oss-ap-southeast-1.aliyuncs.com/t1.mp4?Expires=1&Signature=x';

  for (const status of [...casings('PENDING'), ...casings('RUNNING')]) {
    isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: status })), { kind: 'running', status }, `${status}: running`);
  }
  for (const status of casings('SUCCEEDED')) {
    isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: status, video_url: url }, { video_duration: 5, video_count: 1, SR: 720 })),
      { kind: 'succeeded', status, resultUrl: url, seconds: 5 }, `${status}: succeeded`);
  }
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED', video_url: url }, { duration: 10, output_video_duration: 4, input_video_duration: 6, SR: 1080 })),
    { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: url, seconds: 4 }, 'r2v usage: the output duration, not the total');
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED', video_url: url }, { duration: 7 })),
    { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: url, seconds: 7 }, 'usage.duration alone');
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED', video_url: url }, { video_duration: '6' })),
    { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: url, seconds: 6 }, 'numeric string');
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED', video_url: url })), { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: url }, 'no usage: no seconds');
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED', video_url: url }, { video_duration: 0 })), { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: url }, 'zero seconds ignored');
  isRefusal(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'SUCCEEDED' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'succeeded without a URL');

  for (const status of casings('FAILED')) {
    isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: status, code: 'DataInspectionFailed', message: 'Input data may contain inappropriate content.' })),
      { kind: 'failed', status, code: 'DataInspectionFailed', message: 'Input data may contain inappropriate content.' }, `${status}: flat code and message`);
  }
  const bare = DASHSCOPE_VIDEO.polled(200, task({ task_status: 'FAILED' })) as VendorTaskState & { kind: 'failed' };
  t.equal(bare.kind, 'failed');
  t.equal(bare.code, 'upstream_failed', 'FAILED without a code');
  for (const status of casings('CANCELED')) {
    const cancelled = DASHSCOPE_VIDEO.polled(200, task({ task_status: status })) as VendorTaskState & { kind: 'failed' };
    t.strictSame([cancelled.kind, cancelled.status, cancelled.code], ['failed', status, 'cancelled'], `${status}: cancelled`);
  }
  isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: 'CANCELED', code: 'UserCanceled', message: 'by user' })),
    { kind: 'failed', status: 'CANCELED', code: 'UserCanceled', message: 'by user' }, 'CANCELED with a code keeps it');
  for (const status of casings('UNKNOWN')) {
    const gone = DASHSCOPE_VIDEO.polled(200, task({ task_status: status })) as VendorTaskState & { kind: 'failed' };
    t.strictSame([gone.kind, gone.status, gone.code], ['failed', status, 'task_not_found'], `${status}: the vendor forgot the task`);
  }
  for (const status of ['SUSPENDED', 'Scheduled', 'paused']) {
    isState(t, DASHSCOPE_VIDEO.polled(200, task({ task_status: status })), { kind: 'unknown', status }, `${status}: unknown`);
  }
  isRefusal(t, DASHSCOPE_VIDEO.polled(200, json({ request_id: 'r', output: { task_id: 't1' } })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no task_status');
  isRefusal(t, DASHSCOPE_VIDEO.polled(200, json({ request_id: 'r', task_status: 'SUCCEEDED' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'status outside output');
  isRefusal(t, DASHSCOPE_VIDEO.polled(200, json({ output: { task_status: 5 } })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'status not a string');
});

t.test('DashScope: shared HTTP rules', async (t) => sharedHttpRules(t, DASHSCOPE_VIDEO, (code, message) => ({ request_id: 'r', code, message })));

// ---------------------------------------------------------------------------------------------------
// Vidu: R2V-C (subjects), R2V-D (images), I2V-A (img2video)

const VIDU: VendorTarget = { baseUrl: 'https://api.vidu.com', apiKey: 'vda_secret_key' };
const VIDU_MOCK: VendorTarget = { baseUrl: 'http://127.0.0.1:4010/shengshu/v1', apiKey: 'vda_secret_key' };
const VIDU_HEADERS = { authorization: 'Token vda_secret_key', 'content-type': 'application/json' };

const R2V_C: VideoJob = {
  profile: 'R2V-C', model: 'shengshu/viduq2-r2v', upstreamModel: 'viduq2', prompt: '@1 and @2 eat hotpot together',
  imageUrls: ['https://img.example/santa.png', 'https://img.example/bear.png'], videoUrls: [],
  duration: 8, resolution: '1080p', aspectRatio: '9:16', audio: true, movementAmplitude: 'high', bgm: false, seed: 7,
};
const R2V_D: VideoJob = {
  profile: 'R2V-D', model: 'shengshu/viduq1-r2v', upstreamModel: 'viduq1', prompt: '@1 hugs @2 by the lake',
  imageUrls: ['https://img.example/1.png', 'https://img.example/2.png', 'https://img.example/3.png'], videoUrls: [],
  duration: 5, resolution: '1080p', aspectRatio: '16:9', movementAmplitude: 'large', bgm: true, seed: 0,
};
const I2V_A: VideoJob = {
  profile: 'I2V-A', model: 'shengshu/viduq3-pro-i2v', upstreamModel: 'viduq3-pro',
  imageUrls: ['https://img.example/start.png'], videoUrls: [], duration: 16, resolution: '540p', movementAmplitude: 'auto', seed: 3,
};

t.test('Vidu: R2V-C takes the subjects form', async (t) => {
  const request = VIDU_VIDEO.submit(R2V_C, VIDU, 'https://gw.example/v1/hooks/vidu/t1');
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://api.vidu.com/ent/v2/reference2video', headers: VIDU_HEADERS,
    body: {
      model: 'viduq2', prompt: '@1 and @2 eat hotpot together', duration: 8, resolution: '1080p', movement_amplitude: 'large', seed: 7,
      callback_url: 'https://gw.example/v1/hooks/vidu/t1',
      subjects: [{ id: '1', images: ['https://img.example/santa.png'] }, { id: '2', images: ['https://img.example/bear.png'] }],
      audio: true, aspect_ratio: '9:16', bgm: false,
    },
  });
  keyOnlyInHeader(t, request, VIDU.apiKey, 'Token');

  // Silent R2V-C is still the subjects form (its profile); no callback key without a callback URL.
  const silent = requestParts(VIDU_VIDEO.submit({ ...R2V_C, audio: false, movementAmplitude: 'small', seed: undefined }, VIDU_MOCK));
  t.strictSame(silent, {
    method: 'POST', url: 'http://127.0.0.1:4010/shengshu/v1/ent/v2/reference2video', headers: VIDU_HEADERS,
    body: {
      model: 'viduq2', prompt: '@1 and @2 eat hotpot together', duration: 8, resolution: '1080p', movement_amplitude: 'small',
      subjects: [{ id: '1', images: ['https://img.example/santa.png'] }, { id: '2', images: ['https://img.example/bear.png'] }],
      audio: false, aspect_ratio: '9:16', bgm: false,
    },
  });
  const renamed = JSON.parse(VIDU_VIDEO.submit({ ...R2V_C, upstreamModel: 'viduq1' }, VIDU).body!) as Record<string, unknown>;
  t.ok('subjects' in renamed && !('images' in renamed), 'the form follows the job, not the model name');
});

t.test('Vidu: R2V-D takes the images form', async (t) => {
  t.strictSame(requestParts(VIDU_VIDEO.submit(R2V_D, VIDU)), {
    method: 'POST', url: 'https://api.vidu.com/ent/v2/reference2video', headers: VIDU_HEADERS,
    body: {
      model: 'viduq1', prompt: '@1 hugs @2 by the lake', duration: 5, resolution: '1080p', movement_amplitude: 'large', seed: 0,
      images: ['https://img.example/1.png', 'https://img.example/2.png', 'https://img.example/3.png'], aspect_ratio: '16:9', bgm: true,
    },
  });
  const renamed = JSON.parse(VIDU_VIDEO.submit({ ...R2V_D, upstreamModel: 'viduq2' }, VIDU).body!) as Record<string, unknown>;
  t.ok('images' in renamed && !('subjects' in renamed) && !('audio' in renamed), 'images form whatever the model is named');
  const voiced = JSON.parse(VIDU_VIDEO.submit({ ...R2V_D, audio: true }, VIDU).body!) as Record<string, unknown>;
  t.strictSame([voiced.subjects, voiced.audio, 'images' in voiced], [[
    { id: '1', images: ['https://img.example/1.png'] }, { id: '2', images: ['https://img.example/2.png'] }, { id: '3', images: ['https://img.example/3.png'] },
  ], true, false], 'a job asking for audio takes the subjects form, the one that carries sound');
});

t.test('Vidu: I2V-A takes img2video with native audio', async (t) => {
  t.strictSame(requestParts(VIDU_VIDEO.submit(I2V_A, VIDU)), {
    method: 'POST', url: 'https://api.vidu.com/ent/v2/img2video', headers: VIDU_HEADERS,
    body: { model: 'viduq3-pro', duration: 16, resolution: '540p', movement_amplitude: 'auto', seed: 3, images: ['https://img.example/start.png'], audio: true },
  }, 'no prompt key when the job has none; audio on');
  t.strictSame(requestParts(VIDU_VIDEO.submit({ ...I2V_A, prompt: 'The cat turns its head', movementAmplitude: 'high', duration: 5, resolution: '720p' }, VIDU_MOCK, 'https://gw.example/hook')), {
    method: 'POST', url: 'http://127.0.0.1:4010/shengshu/v1/ent/v2/img2video', headers: VIDU_HEADERS,
    body: {
      model: 'viduq3-pro', prompt: 'The cat turns its head', duration: 5, resolution: '720p', movement_amplitude: 'large', seed: 3,
      callback_url: 'https://gw.example/hook', images: ['https://img.example/start.png'], audio: true,
    },
  }, 'prompt, callback; the spec\'s `high` in Vidu\'s spelling');
  const body = JSON.parse(VIDU_VIDEO.submit({ ...I2V_A, movementAmplitude: 'constructor' }, VIDU).body!) as Record<string, unknown>;
  t.equal(body.movement_amplitude, 'constructor', 'an unmapped amplitude passes as it is (never an Object method)');
});

t.test('Vidu: submit answers', async (t) => {
  const echo = { state: 'created', model: 'viduq2', images: ['https://img.example/1.png'], prompt: 'p', duration: 5, seed: 123, aspect_ratio: '16:9', resolution: '720p', movement_amplitude: 'auto', bgm: false, payload: '', off_peak: false, credits: 10, watermark: false, created_at: '2025-01-01T15:41:31.968916Z' };
  t.strictSame(VIDU_VIDEO.submitted(200, json({ task_id: '947408163915751424', ...echo })), { kind: 'submitted', upstreamId: '947408163915751424' });
  t.strictSame(VIDU_VIDEO.submitted(200, '{"task_id": 947408163915751424, "state": "created"}'), { kind: 'submitted', upstreamId: '947408163915751424' },
    'an 18-digit numeric id keeps every digit');
  t.strictSame(VIDU_VIDEO.submitted(200, '{"payload": "{\\"task_id\\": 1}", "task_id": 12345}'), { kind: 'submitted', upstreamId: '12345' }, 'a small numeric id');
  isRefusal(t, VIDU_VIDEO.submitted(200, json({ task_id: true })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'a boolean id');
  isRefusal(t, VIDU_VIDEO.submitted(200, json({ task_id: '' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'an empty id');
  isRefusal(t, VIDU_VIDEO.submitted(200, json({ task_id: -4 })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'a negative id');
  isRefusal(t, VIDU_VIDEO.submitted(200, json(echo)), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no id');
  // Error bodies: the documented sample names the code in `reason`; other spellings are read too.
  isRefusal(t, VIDU_VIDEO.submitted(400, json({ code: 400, reason: 'FieldInvalid', message: 'invalid field: duration', metadata: { trace_id: '04e5c2fe' } })),
    { retryable: false, code: 'FieldInvalid', httpStatus: 400, message: 'invalid field: duration' }, 'reason form');
  isRefusal(t, VIDU_VIDEO.submitted(400, json({ err_code: 'CreditInsufficient', message: 'insufficient credits' })),
    { retryable: false, code: 'CreditInsufficient', httpStatus: 400, message: 'insufficient credits' }, 'err_code form');
  isRefusal(t, VIDU_VIDEO.submitted(400, json({ code: 'AuditSubmitIllegal', message: 'submit is illegal' })),
    { retryable: false, code: 'AuditSubmitIllegal', httpStatus: 400 }, 'string code form');
  isRefusal(t, VIDU_VIDEO.submitted(401, json({ code: 401, message: 'unauthorized' })), { retryable: false, code: 'http_401', httpStatus: 401, message: 'unauthorized' }, 'a numeric code is only the status');
  isRefusal(t, VIDU_VIDEO.submitted(429, json({ code: 429, reason: 'QuotaExceeded', message: 'quota exceeded' })), { retryable: true, code: 'QuotaExceeded', httpStatus: 429 }, '429 concurrency');
  isRefusal(t, VIDU_VIDEO.submitted(499, json({ code: 499, reason: 'Canceled', message: 'request canceled by client' })), { retryable: true, code: 'Canceled', httpStatus: 499 }, '499: try again');
  isRefusal(t, VIDU_VIDEO.submitted(409, json({ code: 409, reason: 'Conflict', message: 'resource conflict' })), { retryable: false, code: 'Conflict', httpStatus: 409 }, '409');
});

t.test('Vidu: poll and cancel requests', async (t) => {
  t.strictSame(requestParts(VIDU_VIDEO.poll('947408163915751424', VIDU)), {
    method: 'GET', url: 'https://api.vidu.com/ent/v2/tasks/947408163915751424/creations', headers: { authorization: 'Token vda_secret_key' }, body: undefined,
  });
  t.equal(VIDU_VIDEO.poll('9474', VIDU_MOCK).url, 'http://127.0.0.1:4010/shengshu/v1/ent/v2/tasks/9474/creations');
  t.equal(VIDU_VIDEO.poll('a/b', VIDU).url, 'https://api.vidu.com/ent/v2/tasks/a%2Fb/creations');
  t.strictSame(requestParts(VIDU_VIDEO.cancel('947408163915751424', VIDU)), {
    method: 'POST', url: 'https://api.vidu.com/ent/v2/tasks/947408163915751424/cancel', headers: VIDU_HEADERS, body: { id: '947408163915751424' },
  });
});

t.test('Vidu: poll answers', async (t) => {
  const url = 'https://vidu-results.example/947408163915751424.mp4?sig=x';
  const task = (fields: Record<string, unknown>) => json({ id: '947408163915751424', err_code: '', credits: 4, payload: '', bgm: false, off_peak: false, creations: [], ...fields });
  for (const status of [...casings('created'), ...casings('queueing'), ...casings('processing')]) {
    isState(t, VIDU_VIDEO.polled(200, task({ state: status })), { kind: 'running', status }, `${status}: running`);
  }
  for (const status of casings('success')) {
    isState(t, VIDU_VIDEO.polled(200, task({ state: status, creations: [{ id: 'c1', url, cover_url: 'https://vidu-results.example/c.jpg', watermarked_url: 'https://vidu-results.example/w.mp4' }] })),
      { kind: 'succeeded', status, resultUrl: url }, `${status}: the first creation's url`);
  }
  isRefusal(t, VIDU_VIDEO.polled(200, task({ state: 'success', creations: [] })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'success without creations');
  isRefusal(t, VIDU_VIDEO.polled(200, task({ state: 'success', creations: [{ id: 'c1', cover_url: 'https://x/c.jpg' }] })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'a creation without url');
  isState(t, VIDU_VIDEO.polled(200, task({ status: 'success', creations: [{ url }] })), { kind: 'succeeded', status: 'success', resultUrl: url }, 'the callback spelling `status`');

  for (const status of casings('failed')) {
    isState(t, VIDU_VIDEO.polled(200, task({ state: status, err_code: 'AuditSubmitIllegal' })),
      { kind: 'failed', status, code: 'AuditSubmitIllegal', message: 'The input did not pass the vendor\'s content review.' }, `${status}: a known code`);
  }
  isState(t, VIDU_VIDEO.polled(200, task({ state: 'failed', err_code: 'CreationPolicyViolation' })),
    { kind: 'failed', status: 'failed', code: 'CreationPolicyViolation', message: 'The generated video did not pass the vendor\'s content review.' }, 'output moderation');
  isState(t, VIDU_VIDEO.polled(200, task({ state: 'failed', err_code: 'UserCancelled' })),
    { kind: 'failed', status: 'failed', code: 'UserCancelled', message: 'The task was cancelled at the vendor.' }, 'cancelled');
  isState(t, VIDU_VIDEO.polled(200, task({ state: 'failed', err_code: 'BrandNewCode' })), { kind: 'failed', status: 'failed', code: 'BrandNewCode', message: 'BrandNewCode' }, 'an unknown code is its own message');
  isState(t, VIDU_VIDEO.polled(200, task({ state: 'failed', err_code: 'toString' })), { kind: 'failed', status: 'failed', code: 'toString', message: 'toString' }, 'an Object method name is just a code');
  const bare = VIDU_VIDEO.polled(200, task({ state: 'failed', err_code: '' })) as VendorTaskState & { kind: 'failed' };
  t.strictSame([bare.kind, bare.code], ['failed', 'upstream_failed'], 'failed with an empty err_code');

  for (const status of ['scheduled', 'Canceling', 'succeed']) {
    isState(t, VIDU_VIDEO.polled(200, task({ state: status })), { kind: 'unknown', status }, `${status}: unknown`);
  }
  isRefusal(t, VIDU_VIDEO.polled(200, task({})), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no state');
  isRefusal(t, VIDU_VIDEO.polled(404, json({ code: 404, reason: 'TaskNotFound', message: 'task not found' })),
    { retryable: false, code: 'task_not_found', httpStatus: 404, message: 'task not found' }, '404 TaskNotFound');
});

t.test('Vidu: shared HTTP rules', async (t) => sharedHttpRules(t, VIDU_VIDEO, (code, message) => ({ code: 0, reason: code, message, metadata: { trace_id: 't' } })));

// ---------------------------------------------------------------------------------------------------
// Ark / ModelArk (Seedance): I2V-B (first frame), R2V-B (reference image)

const ARK: VendorTarget = { baseUrl: 'https://ark.ap-southeast.bytepluses.com/api/v3', apiKey: 'ark-secret-key' };
const ARK_MOCK: VendorTarget = { baseUrl: 'http://127.0.0.1:4010/bytedance/v1', apiKey: 'ark-secret-key' };
const ARK_HEADERS = { authorization: 'Bearer ark-secret-key', 'content-type': 'application/json' };

const I2V_B: VideoJob = {
  profile: 'I2V-B', model: 'bytedance/seedance-1.0-pro-fast', upstreamModel: 'seedance-1-0-pro-fast-251015', prompt: 'A detective enters a dim room',
  imageUrls: ['https://img.example/frame.png'], videoUrls: [], duration: 5, resolution: '720p', aspectRatio: '21:9', seed: 11,
};
const R2V_B: VideoJob = {
  profile: 'R2V-B', model: 'bytedance/seedance-1.0-lite-r2v', upstreamModel: 'seedance-1-0-lite-i2v-250428', prompt: 'The girl in the picture dances in the rain',
  imageUrls: ['https://img.example/girl.png'], videoUrls: [], duration: 10, resolution: '2K', aspectRatio: 'adaptive',
};

t.test('Ark: I2V-B puts the image as the first frame', async (t) => {
  const request = ARK_VIDEO.submit(I2V_B, ARK);
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks', headers: ARK_HEADERS,
    body: {
      model: 'seedance-1-0-pro-fast-251015',
      content: [
        { type: 'text', text: 'A detective enters a dim room' },
        { type: 'image_url', image_url: { url: 'https://img.example/frame.png' }, role: 'first_frame' },
      ],
      ratio: '21:9', duration: 5, resolution: '720p', seed: 11,
    },
  }, 'settings as top-level fields, the text untouched (no --flags)');
  keyOnlyInHeader(t, request, ARK.apiKey, 'Bearer');
  const hooked = requestParts(ARK_VIDEO.submit({ ...I2V_B, watermark: true, seed: undefined }, ARK_MOCK, 'https://gw.example/hooks/ark/t1'));
  t.equal(hooked.url, 'http://127.0.0.1:4010/bytedance/v1/contents/generations/tasks', 'the mock base as is');
  t.strictSame(hooked.body, {
    model: 'seedance-1-0-pro-fast-251015',
    content: [
      { type: 'text', text: 'A detective enters a dim room' },
      { type: 'image_url', image_url: { url: 'https://img.example/frame.png' }, role: 'first_frame' },
    ],
    ratio: '21:9', duration: 5, resolution: '720p', watermark: true, callback_url: 'https://gw.example/hooks/ark/t1',
  }, 'callback and watermark; no seed');
  const renamed = JSON.parse(ARK_VIDEO.submit({ ...I2V_B, upstreamModel: 'seedance-1-0-lite-i2v-250428' }, ARK).body!) as { content: { role?: string }[] };
  t.equal(renamed.content[1]?.role, 'first_frame', 'the role follows the profile, not the model name');
});

t.test('Ark: R2V-B puts the image as a reference', async (t) => {
  t.strictSame(requestParts(ARK_VIDEO.submit(R2V_B, ARK)), {
    method: 'POST', url: 'https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks', headers: ARK_HEADERS,
    body: {
      model: 'seedance-1-0-lite-i2v-250428',
      content: [
        { type: 'text', text: 'The girl in the picture dances in the rain' },
        { type: 'image_url', image_url: { url: 'https://img.example/girl.png' }, role: 'reference_image' },
      ],
      ratio: 'adaptive', duration: 10, resolution: '2k',
    },
  }, '2K lower-cased, duration a number');
  const renamed = JSON.parse(ARK_VIDEO.submit({ ...R2V_B, upstreamModel: 'seedance-1-0-pro-fast-251015' }, ARK).body!) as { content: { role?: string }[] };
  t.equal(renamed.content[1]?.role, 'reference_image', 'reference whatever the model is named');
  const textless = JSON.parse(ARK_VIDEO.submit({ ...R2V_B, prompt: undefined }, ARK).body!) as { content: { type: string }[] };
  t.strictSame(textless.content.map((item) => item.type), ['image_url'], 'no empty text item without a prompt');
});

t.test('Ark: Seedance schemas: first and last frames, reference videos, camera_fixed and generate_audio', async (t) => {
  const twoFrames = { ...R2V_B, profile: 'SEEDANCE-1.5-PRO', upstreamModel: 'seedance-1-5-pro-251215', imageUrls: ['https://img.example/a.png', 'https://img.example/b.png'], audio: false, cameraFixed: true } as const;
  const body = JSON.parse(ARK_VIDEO.submit(twoFrames, ARK).body!) as Record<string, any>;
  t.strictSame(body.content.slice(1).map((item: any) => item.role), ['first_frame', 'last_frame'], 'the first image opens the clip, the second closes it');
  t.equal(body.generate_audio, false, 'the sound switch as generate_audio');
  t.equal(body.camera_fixed, true);
  const omni = { ...R2V_B, profile: 'SEEDANCE-2.0', upstreamModel: 'dreamina-seedance-2-0-260128', videoUrls: ['https://img.example/motion.mp4'] } as const;
  const omniBody = JSON.parse(ARK_VIDEO.submit(omni, ARK).body!) as Record<string, any>;
  t.strictSame(omniBody.content.slice(1), [
    { type: 'image_url', image_url: { url: 'https://img.example/girl.png' }, role: 'reference_image' },
    { type: 'video_url', video_url: { url: 'https://img.example/motion.mp4' }, role: 'reference_video' },
  ], 'reference images, then reference videos');
  t.notOk('generate_audio' in JSON.parse(ARK_VIDEO.submit(R2V_B, ARK).body!), 'no sound switch where the job has none');
});

t.test('Ark: submit answers', async (t) => {
  t.strictSame(ARK_VIDEO.submitted(200, json({ id: 'cgt-20250331175019-68d9t' })), { kind: 'submitted', upstreamId: 'cgt-20250331175019-68d9t' });
  isRefusal(t, ARK_VIDEO.submitted(400, json({ error: { code: 'InvalidParameter', message: 'The parameter `ratio` specified in the request is not valid. Request ID: 0217', type: 'BadRequest' } })),
    { retryable: false, code: 'InvalidParameter', httpStatus: 400, message: 'The parameter `ratio` specified in the request is not valid. Request ID: 0217' }, 'envelope 400');
  isRefusal(t, ARK_VIDEO.submitted(400, json({ error: { code: 'InputImageSensitiveContentDetected.PrivacyInformation', message: 'The input image may contain real people.', type: 'BadRequest' } })),
    { retryable: false, code: 'InputImageSensitiveContentDetected.PrivacyInformation', httpStatus: 400 }, 'moderation at submit');
  isRefusal(t, ARK_VIDEO.submitted(401, json({ error: { code: 'AuthenticationError', message: 'The API key in the request is missing or invalid.', type: 'Unauthorized' } })),
    { retryable: false, code: 'AuthenticationError', httpStatus: 401 }, 'envelope 401');
  isRefusal(t, ARK_VIDEO.submitted(429, json({ error: { code: 'RateLimitExceeded', message: 'Too many requests', type: 'TooManyRequests' } })),
    { retryable: true, code: 'RateLimitExceeded', httpStatus: 429 }, 'envelope 429');
  isRefusal(t, ARK_VIDEO.submitted(500, json({ error: { code: 'InternalServiceError', message: 'internal', type: 'InternalServerError' } })),
    { retryable: true, code: 'InternalServiceError', httpStatus: 500 }, 'envelope 500');
  isRefusal(t, ARK_VIDEO.submitted(200, json({ id: '' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'empty id');
  isRefusal(t, ARK_VIDEO.submitted(200, json({ task_id: 'cgt-1' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'id under another name');
});

t.test('Ark: poll and cancel requests', async (t) => {
  t.strictSame(requestParts(ARK_VIDEO.poll('cgt-20250331175019-68d9t', ARK)), {
    method: 'GET', url: 'https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks/cgt-20250331175019-68d9t', headers: { authorization: 'Bearer ark-secret-key' }, body: undefined,
  });
  t.equal(ARK_VIDEO.poll('cgt-1', ARK_MOCK).url, 'http://127.0.0.1:4010/bytedance/v1/contents/generations/tasks/cgt-1');
  t.strictSame(requestParts(ARK_VIDEO.cancel('cgt-1', ARK)), {
    method: 'DELETE', url: 'https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks/cgt-1', headers: { authorization: 'Bearer ark-secret-key' }, body: undefined,
  });
});

t.test('Ark: poll answers', async (t) => {
  const url = 'https://ark-content-generation-ap-southeast-1.tos-ap-southeast-1.bytepluses.com/cgt-1.mp4?X-Tos-Signature=x';
  const task = (fields: Record<string, unknown>) => json({
    id: 'cgt-1', model: 'seedance-1-0-pro-fast-251015', error: null, seed: 10, resolution: '720p', ratio: '16:9', framespersecond: 24,
    usage: { completion_tokens: 108900, total_tokens: 108900 }, created_at: 1743414619, updated_at: 1743414673, ...fields,
  });
  for (const status of [...casings('queued'), ...casings('running')]) {
    isState(t, ARK_VIDEO.polled(200, task({ status })), { kind: 'running', status }, `${status}: running`);
  }
  for (const status of casings('succeeded')) {
    isState(t, ARK_VIDEO.polled(200, task({ status, content: { video_url: url }, duration: 5 })), { kind: 'succeeded', status, resultUrl: url, seconds: 5 }, `${status}: succeeded`);
  }
  isState(t, ARK_VIDEO.polled(200, task({ status: 'succeeded', content: { video_url: url, last_frame_url: 'https://x/last.png' } })),
    { kind: 'succeeded', status: 'succeeded', resultUrl: url }, 'no duration: no seconds');
  isRefusal(t, ARK_VIDEO.polled(200, task({ status: 'succeeded', content: {} })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'succeeded without a URL');
  isRefusal(t, ARK_VIDEO.polled(200, task({ status: 'succeeded', video_url: url })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'URL outside content');

  for (const status of casings('failed')) {
    isState(t, ARK_VIDEO.polled(200, task({ status, error: { code: 'OutputVideoSensitiveContentDetected', message: 'The output video may contain sensitive information.' } })),
      { kind: 'failed', status, code: 'OutputVideoSensitiveContentDetected', message: 'The output video may contain sensitive information.' }, `${status}: error code and message`);
  }
  const bare = ARK_VIDEO.polled(200, task({ status: 'failed' })) as VendorTaskState & { kind: 'failed' };
  t.strictSame([bare.kind, bare.code], ['failed', 'upstream_failed'], 'failed with error null');
  for (const status of casings('expired')) {
    const expired = ARK_VIDEO.polled(200, task({ status })) as VendorTaskState & { kind: 'failed' };
    t.strictSame([expired.kind, expired.status, expired.code], ['failed', status, 'expired'], `${status}: expired`);
  }
  for (const status of [...casings('cancelled'), 'canceled']) {
    const cancelled = ARK_VIDEO.polled(200, task({ status })) as VendorTaskState & { kind: 'failed' };
    t.strictSame([cancelled.kind, cancelled.status, cancelled.code], ['failed', status, 'cancelled'], `${status}: cancelled`);
  }
  isState(t, ARK_VIDEO.polled(200, task({ status: 'expired', error: { code: 'ExecutionExpired', message: 'ran past execution_expires_after' } })),
    { kind: 'failed', status: 'expired', code: 'ExecutionExpired', message: 'ran past execution_expires_after' }, 'expired with an error keeps it');
  for (const status of ['paused', 'Deleted', 'succeed']) {
    isState(t, ARK_VIDEO.polled(200, task({ status })), { kind: 'unknown', status }, `${status}: unknown`);
  }
  isRefusal(t, ARK_VIDEO.polled(200, task({ status: '' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'empty status');
  isRefusal(t, ARK_VIDEO.polled(404, json({ error: { code: 'ResourceNotFound', message: 'The specified task is not found.', type: 'NotFound' } })),
    { retryable: false, code: 'task_not_found', httpStatus: 404, message: 'The specified task is not found.' }, '404');
});

t.test('Ark: shared HTTP rules', async (t) => sharedHttpRules(t, ARK_VIDEO, (code, message) => ({ error: { code, message, type: 'BadRequest' } })));

// ---------------------------------------------------------------------------------------------------
// MiniMax Hailuo (docs/vendors/minimax-hailuo.md)

const MINIMAX: VendorTarget = { baseUrl: 'https://api.minimax.io/v1', apiKey: 'mm-test-secret' };
const HAILUO: VideoJob = {
  profile: 'HAILUO', model: 'minimax/hailuo-2.3', upstreamModel: 'MiniMax-Hailuo-2.3', prompt: 'a lighthouse at dawn',
  imageUrls: ['https://img.example/frame.png'], videoUrls: [], duration: 10, resolution: '768P', promptOptimizer: false,
};

t.test('MiniMax Hailuo: the submit request, with and without a first frame', async (t) => {
  const request = (MINIMAX_VIDEO as VideoAdapter).submit(HAILUO, MINIMAX, 'https://gw.example/hooks/vendor-task/x');
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://api.minimax.io/v1/video_generation',
    headers: { authorization: 'Bearer mm-test-secret', 'content-type': 'application/json' },
    body: { model: 'MiniMax-Hailuo-2.3', prompt: 'a lighthouse at dawn', first_frame_image: 'https://img.example/frame.png', duration: 10, resolution: '768P', prompt_optimizer: false },
  }, 'no callback_url: MiniMax wants a challenge answered first, so the task is polled');
  keyOnlyInHeader(t, request, MINIMAX.apiKey, 'Bearer');
  t.strictSame(requestParts(MINIMAX_VIDEO.submit({ ...HAILUO, imageUrls: [], duration: 6, promptOptimizer: true }, MINIMAX)).body,
    { model: 'MiniMax-Hailuo-2.3', prompt: 'a lighthouse at dawn', duration: 6, resolution: '768P', prompt_optimizer: true }, 'text-to-video: no first_frame_image');
});

t.test('MiniMax Hailuo: answers, statuses, failures, the file step', async (t) => {
  t.strictSame(MINIMAX_VIDEO.submitted(200, '{"task_id":"106916112212032","base_resp":{"status_code":0,"status_msg":"success"}}'), { kind: 'submitted', upstreamId: '106916112212032' });
  t.strictSame(MINIMAX_VIDEO.submitted(200, '{"task_id":106916112212032123,"base_resp":{"status_code":0,"status_msg":"success"}}'), { kind: 'submitted', upstreamId: '106916112212032123' }, 'an int64 id digit for digit');
  isRefusal(t, MINIMAX_VIDEO.submitted(200, json({ base_resp: { status_code: 1004, status_msg: 'login fail' } })), { retryable: false, code: 'minimax_1004', httpStatus: 200, message: 'login fail' }, 'auth in base_resp');
  isRefusal(t, MINIMAX_VIDEO.submitted(200, json({ base_resp: { status_code: 1002, status_msg: 'rate limit' } })), { retryable: true, code: 'minimax_1002', httpStatus: 200 }, 'rate limit retries');
  isRefusal(t, MINIMAX_VIDEO.submitted(200, json({ base_resp: { status_code: 1026, status_msg: 'input sensitive' } })), { retryable: false, code: 'minimax_1026', httpStatus: 200 }, 'input review');
  isRefusal(t, MINIMAX_VIDEO.submitted(400, json({ base_resp: { status_code: 2013, status_msg: 'invalid params' } })), { retryable: false, code: 'minimax_2013', httpStatus: 400 }, 'an error status carries the same code');
  isRefusal(t, MINIMAX_VIDEO.submitted(200, json({ base_resp: { status_code: 0, status_msg: 'success' } })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no task id');
  t.strictSame(requestParts(MINIMAX_VIDEO.poll('106916112212032', MINIMAX)), {
    method: 'GET', url: 'https://api.minimax.io/v1/query/video_generation?task_id=106916112212032', headers: { authorization: 'Bearer mm-test-secret' }, body: undefined,
  });
  const ok = { status_code: 0, status_msg: 'success' };
  for (const status of ['Preparing', 'Queueing', 'Processing', 'processing']) {
    isState(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status, base_resp: ok })), { kind: 'running', status }, status);
  }
  t.strictSame(MINIMAX_VIDEO.polled(200, '{"task_id":"1","status":"Success","file_id":205258526306433123,"video_width":1366,"video_height":768,"base_resp":{"status_code":0,"status_msg":"success"}}', MINIMAX), {
    kind: 'retrieve', status: 'Success',
    request: { method: 'GET', url: 'https://api.minimax.io/v1/files/retrieve?file_id=205258526306433123', headers: { authorization: 'Bearer mm-test-secret' } },
  }, 'success asks where the file is, its id digit for digit');
  isRefusal(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status: 'Success', base_resp: ok }), MINIMAX), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'success without a file id');
  isState(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status: 'Fail', base_resp: { status_code: 1027, status_msg: 'output sensitive' } })),
    { kind: 'failed', status: 'Fail', code: 'minimax_1027', message: 'The generated video did not pass the vendor\'s content review.' }, 'Fail with the reason in base_resp');
  isState(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status: 'Fail', base_resp: { status_code: 1234, status_msg: 'something else' } })),
    { kind: 'failed', status: 'Fail', code: 'minimax_1234', message: 'something else' }, 'an unlisted code keeps the vendor message');
  isState(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status: 'Fail', base_resp: ok })),
    { kind: 'failed', status: 'Fail', code: 'upstream_failed', message: 'The vendor reported the task failed without a reason.' }, 'Fail without a reason');
  isState(t, MINIMAX_VIDEO.polled(200, json({ task_id: '1', status: 'Paused', base_resp: ok })), { kind: 'unknown', status: 'Paused' }, 'a new status is polled again');
  isRefusal(t, MINIMAX_VIDEO.polled(200, json({ base_resp: { status_code: 1004, status_msg: 'login fail' } })), { retryable: false, code: 'minimax_1004', httpStatus: 200 }, 'a poll refused in base_resp');
  t.strictSame(MINIMAX_VIDEO.retrieved(200, json({ file: { file_id: 1, download_url: 'https://cdn.minimax.example/v.mp4' }, base_resp: ok }), 'Success'),
    { kind: 'succeeded', status: 'Success', resultUrl: 'https://cdn.minimax.example/v.mp4' });
  isRefusal(t, MINIMAX_VIDEO.retrieved(200, json({ file: { file_id: 1 }, base_resp: ok }), 'Success'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'a file without a URL');
});

// ---------------------------------------------------------------------------------------------------
// Kuaishou Kling (docs/vendors/kling.md)

/** The header and claims of an HS256 JWT whose signature `secret` made, else undefined. */
function verifyHs256(token: string, secret: string) {
  const [header, claims, signature] = token.split('.');
  if (createHmac('sha256', secret).update(`${header}.${claims}`).digest('base64url') !== signature) return undefined;
  const part = (text: string) => JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
  return { header: part(header!), claims: part(claims!) };
}

const KLING: VendorTarget = { baseUrl: 'https://api-singapore.klingai.com/v1', apiKey: 'ak-test-access:sk-test-secret' };
const KLING_T2V: VideoJob = {
  profile: 'KLING', model: 'kuaishou/kling-v3', upstreamModel: 'kling-v3', prompt: 'a red kite over dunes', negativePrompt: 'blur',
  imageUrls: [], videoUrls: [], duration: 7, mode: 'pro', aspectRatio: '9:16', audio: true,
};

t.test('Kling: the access token is an HS256 JWT of the access key, signed with the secret key', async (t) => {
  const token = klingToken(KLING.apiKey, 1_800_000_000);
  t.strictSame(verifyHs256(token, 'sk-test-secret'), { header: { alg: 'HS256', typ: 'JWT' }, claims: { iss: 'ak-test-access', exp: 1_800_001_800, nbf: 1_799_999_995 } });
  t.equal(verifyHs256(token, 'ak-test-access'), undefined, 'not signed with the access key');
  t.notOk(token.includes('sk-test-secret'), 'the secret key is not in the token');
  const request = KLING_VIDEO.submit(KLING_T2V, KLING);
  const bearer = request.headers.authorization!.replace(/^Bearer /, '');
  t.ok(verifyHs256(bearer, 'sk-test-secret'), 'each request carries a fresh signed token');
  t.notOk(JSON.stringify(request).includes('sk-test-secret'), 'the secret key goes nowhere');
});

t.test('Kling: text2video and image2video submits; the task id keeps its path', async (t) => {
  const request = (KLING_VIDEO as VideoAdapter).submit(KLING_T2V, KLING, 'https://gw.example/hooks/vendor-task/1?token=x');
  t.strictSame({ ...requestParts(request), headers: { ...request.headers, authorization: 'Bearer …' } }, {
    method: 'POST', url: 'https://api-singapore.klingai.com/v1/videos/text2video', headers: { authorization: 'Bearer …', 'content-type': 'application/json' },
    body: {
      model_name: 'kling-v3', prompt: 'a red kite over dunes', negative_prompt: 'blur', mode: 'pro', duration: '7', aspect_ratio: '9:16', sound: 'on',
      callback_url: 'https://gw.example/hooks/vendor-task/1?token=x',
    },
  }, 'duration as a string, sound on/off, the hint address as callback_url');
  const i2v: VideoJob = { ...KLING_T2V, prompt: undefined, negativePrompt: undefined, aspectRatio: undefined, audio: false, mode: 'std', duration: 5, imageUrls: ['data:image/png;base64,iVBORw0KGgo='] };
  const sent = requestParts(KLING_VIDEO.submit(i2v, KLING));
  t.equal(sent.url, 'https://api-singapore.klingai.com/v1/videos/image2video');
  t.strictSame(sent.body, { model_name: 'kling-v3', image: 'iVBORw0KGgo=', mode: 'std', duration: '5', sound: 'off' }, 'an inline image goes as bare base64');
  t.equal((requestParts(KLING_VIDEO.submit({ ...i2v, imageUrls: ['https://img.example/f.png'] }, KLING)).body as { image: string }).image, 'https://img.example/f.png', 'a URL as is');

  const answer = json({ code: 0, message: 'SUCCEED', request_id: 'r', data: { task_id: '867283741759111202', task_status: 'submitted' } });
  t.strictSame(KLING_VIDEO.submitted(200, answer, KLING_T2V), { kind: 'submitted', upstreamId: 'text2video:867283741759111202' });
  t.strictSame(KLING_VIDEO.submitted(200, answer, i2v), { kind: 'submitted', upstreamId: 'image2video:867283741759111202' });
  t.strictSame(KLING_VIDEO.submitted(200, '{"code":0,"data":{"task_id":867283741759111202}}', KLING_T2V), { kind: 'submitted', upstreamId: 'text2video:867283741759111202' }, 'a numeric id digit for digit');
  t.equal(KLING_VIDEO.poll('image2video:867283741759111202', KLING).url, 'https://api-singapore.klingai.com/v1/videos/image2video/867283741759111202', 'polled where it was made');
  t.equal(KLING_VIDEO.poll('text2video:8', KLING).url, 'https://api-singapore.klingai.com/v1/videos/text2video/8');
  t.match(KLING_VIDEO.poll('text2video:8', KLING).headers.authorization, /^Bearer ey/);
});

t.test('Kling: envelope codes, statuses, results, failures', async (t) => {
  isRefusal(t, KLING_VIDEO.submitted(401, json({ code: 1004, message: 'token expired', request_id: 'r' })), { retryable: false, code: 'kling_1004', httpStatus: 401, message: 'token expired' }, 'auth');
  isRefusal(t, KLING_VIDEO.submitted(429, json({ code: 1102, message: 'resource pack exhausted', request_id: 'r' })), { retryable: false, code: 'kling_1102', httpStatus: 429 }, 'no funds: final despite 429');
  isRefusal(t, KLING_VIDEO.submitted(429, json({ code: 1303, message: 'parallel task over resource pack limit', request_id: 'r' })), { retryable: true, code: 'kling_1303', httpStatus: 429 }, 'concurrency: later');
  isRefusal(t, KLING_VIDEO.submitted(400, json({ code: 1201, message: 'duration invalid', request_id: 'r' })), { retryable: false, code: 'kling_1201', httpStatus: 400 }, 'parameters');
  isRefusal(t, KLING_VIDEO.submitted(400, json({ code: 1301, message: 'prompt violates policy', request_id: 'r' })), { retryable: false, code: 'kling_1301', httpStatus: 400 }, 'content policy');
  isRefusal(t, KLING_VIDEO.submitted(200, json({ code: 1302, message: 'rate limited', request_id: 'r' })), { retryable: true, code: 'kling_1302', httpStatus: 200 }, 'a code with HTTP 200');
  isRefusal(t, KLING_VIDEO.submitted(200, json({ code: 1200, message: 'bad request', request_id: 'r' })), { retryable: false, code: 'kling_1200', httpStatus: 200 }, 'a final code with HTTP 200');
  isRefusal(t, KLING_VIDEO.submitted(500, json({ code: 5000, message: 'server error', request_id: 'r' })), { retryable: true, code: 'kling_5000', httpStatus: 500 }, 'server');
  isRefusal(t, KLING_VIDEO.submitted(502, '<html>bad gateway</html>'), { retryable: true, code: 'http_502', httpStatus: 502 }, 'not JSON');
  isRefusal(t, KLING_VIDEO.submitted(200, json({ code: 0, message: 'SUCCEED' })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no data');
  isRefusal(t, KLING_VIDEO.submitted(200, json({ code: 0, data: {} })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no task id');
  isRefusal(t, KLING_VIDEO.polled(404, json({ code: 1203, message: 'task not found' })), { retryable: false, code: 'task_not_found', httpStatus: 404 }, 'poll 404');
  const data = (extra: object) => json({ code: 0, message: 'SUCCEED', request_id: 'r', data: { task_id: '8', ...extra } });
  for (const status of ['submitted', 'processing', 'PROCESSING']) isState(t, KLING_VIDEO.polled(200, data({ task_status: status })), { kind: 'running', status }, status);
  isState(t, KLING_VIDEO.polled(200, data({ task_status: 'succeed', task_result: { videos: [{ id: 'v', url: 'https://cdn.klingai.example/v.mp4', duration: '5.1' }] } })),
    { kind: 'succeeded', status: 'succeed', resultUrl: 'https://cdn.klingai.example/v.mp4', seconds: 5.1 }, 'succeed (sic), with the seconds made');
  isRefusal(t, KLING_VIDEO.polled(200, data({ task_status: 'succeed', task_result: { videos: [] } })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'succeed without a video');
  isState(t, KLING_VIDEO.polled(200, data({ task_status: 'failed', task_status_msg: 'Failure to pass the risk control system' })),
    { kind: 'failed', status: 'failed', code: 'upstream_failed', message: 'Failure to pass the risk control system' }, 'failed, with its reason');
  isState(t, KLING_VIDEO.polled(200, data({ task_status: 'failed' })), { kind: 'failed', status: 'failed', code: 'upstream_failed', message: 'The vendor reported the task failed without a reason.' }, 'failed without a reason');
  isState(t, KLING_VIDEO.polled(200, data({ task_status: 'paused' })), { kind: 'unknown', status: 'paused' }, 'a new status');
  isRefusal(t, KLING_VIDEO.polled(200, data({})), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no status');
});

// ---------------------------------------------------------------------------------------------------
// Runway (docs/vendors/runway.md)

const RUNWAY: VendorTarget = { baseUrl: 'https://api.dev.runwayml.com/v1', apiKey: 'key_test_runway' };
const RUNWAY_I2V: VideoJob = {
  profile: 'RUNWAY-I2V', model: 'runway/gen4-turbo', upstreamModel: 'gen4_turbo', prompt: 'the kite rises', imageUrls: ['https://img.example/f.png'], videoUrls: [],
  duration: 10, aspectRatio: '21:9', seed: 7,
};

t.test('Runway: the image_to_video request, versioned; poll and cancel', async (t) => {
  const request = RUNWAY_VIDEO.submit(RUNWAY_I2V, RUNWAY);
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://api.dev.runwayml.com/v1/image_to_video',
    headers: { authorization: 'Bearer key_test_runway', 'x-runway-version': '2024-11-06', 'content-type': 'application/json' },
    body: { model: 'gen4_turbo', promptImage: 'https://img.example/f.png', promptText: 'the kite rises', ratio: '1584:672', duration: 10, seed: 7 },
  });
  keyOnlyInHeader(t, request, RUNWAY.apiKey, 'Bearer');
  const ratios = ['16:9', '9:16', '4:3', '3:4', '1:1'].map((aspectRatio) => (requestParts(RUNWAY_VIDEO.submit({ ...RUNWAY_I2V, aspectRatio }, RUNWAY)).body as { ratio: string }).ratio);
  t.strictSame(ratios, ['1280:720', '720:1280', '1104:832', '832:1104', '960:960'], 'each aspect ratio as its output size');
  t.strictSame(requestParts(RUNWAY_VIDEO.poll('abc-1', RUNWAY)), { method: 'GET', url: 'https://api.dev.runwayml.com/v1/tasks/abc-1', headers: { authorization: 'Bearer key_test_runway', 'x-runway-version': '2024-11-06' }, body: undefined });
  t.strictSame(requestParts(RUNWAY_VIDEO.cancel('abc-1', RUNWAY)), { method: 'DELETE', url: 'https://api.dev.runwayml.com/v1/tasks/abc-1', headers: { authorization: 'Bearer key_test_runway', 'x-runway-version': '2024-11-06' }, body: undefined });
});

t.test('Runway: the video_to_video request (Aleph): the video, the prompt, the ratio, no duration', async (t) => {
  const aleph: VideoJob = {
    profile: 'RUNWAY-V2V', model: 'runway/gen4-aleph', upstreamModel: 'gen4_aleph', prompt: 'make it winter', imageUrls: [], videoUrls: ['https://media.example/in.mp4'],
    duration: 4, aspectRatio: '9:16', seed: 11,
  };
  const request = RUNWAY_VIDEO.submit(aleph, RUNWAY);
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://api.dev.runwayml.com/v1/video_to_video',
    headers: { authorization: 'Bearer key_test_runway', 'x-runway-version': '2024-11-06', 'content-type': 'application/json' },
    body: { model: 'gen4_aleph', videoUri: 'https://media.example/in.mp4', promptText: 'make it winter', ratio: '720:1280', seed: 11 },
  });
  keyOnlyInHeader(t, request, RUNWAY.apiKey, 'Bearer');
});

t.test('Runway: answers, statuses, failures', async (t) => {
  t.strictSame(RUNWAY_VIDEO.submitted(200, json({ id: '17f20503-6c24-4c16-946b-35dbbce2af2f' })), { kind: 'submitted', upstreamId: '17f20503-6c24-4c16-946b-35dbbce2af2f' });
  isRefusal(t, RUNWAY_VIDEO.submitted(400, json({ error: 'Validation of body failed', issues: [{ path: ['ratio'], message: 'Invalid enum value' }] })), { retryable: false, code: 'http_400', httpStatus: 400, message: 'Validation of body failed' }, 'validation');
  isRefusal(t, RUNWAY_VIDEO.submitted(429, json({ error: 'You have exceeded the rate limit.' })), { retryable: true, code: 'http_429', httpStatus: 429 }, 'rate limit');
  isRefusal(t, RUNWAY_VIDEO.submitted(200, '{}'), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'no id');
  for (const status of ['PENDING', 'THROTTLED', 'RUNNING']) isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status })), { kind: 'running', status }, status);
  isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'SUCCEEDED', output: ['https://dnznrvs05pmza.cloudfront.net/v.mp4?_jwt=x'] })),
    { kind: 'succeeded', status: 'SUCCEEDED', resultUrl: 'https://dnznrvs05pmza.cloudfront.net/v.mp4?_jwt=x' }, 'output[0] is the result');
  isRefusal(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'SUCCEEDED', output: [] })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'success without output');
  isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'FAILED', failure: 'Your input image was flagged.', failureCode: 'SAFETY.INPUT.IMAGE' })),
    { kind: 'failed', status: 'FAILED', code: 'SAFETY.INPUT.IMAGE', message: 'Your input image was flagged.' }, 'failure with its code');
  isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'FAILED' })), { kind: 'failed', status: 'FAILED', code: 'upstream_failed', message: 'The vendor reported the task failed without a reason.' }, 'failure without a reason');
  isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'CANCELLED' })), { kind: 'failed', status: 'CANCELLED', code: 'cancelled', message: 'The task was cancelled at the vendor.' }, 'cancelled');
  isState(t, RUNWAY_VIDEO.polled(200, json({ id: '1', status: 'ARCHIVED' })), { kind: 'unknown', status: 'ARCHIVED' }, 'a new status');
});

t.test('Runway: shared HTTP rules', async (t) => sharedHttpRules(t, RUNWAY_VIDEO, (code, message) => ({ error: message, code })));

// ---------------------------------------------------------------------------------------------------
// Luma Agents API (docs/vendors/luma.md)

const LUMA: VendorTarget = { baseUrl: 'https://agents.lumalabs.ai/v1', apiKey: 'luma-api-test-key' };
const LUMA_RAY: VideoJob = {
  profile: 'LUMA-RAY', model: 'luma/ray-3.2', upstreamModel: 'ray-3.2', prompt: 'a glacier calves', imageUrls: [], videoUrls: [],
  duration: 10, resolution: '1080p', aspectRatio: '21:9', dynamicRange: 'sdr',
};

t.test('Luma: the video generation request, text and first frame', async (t) => {
  const request = LUMA_VIDEO.submit(LUMA_RAY, LUMA);
  t.strictSame(requestParts(request), {
    method: 'POST', url: 'https://agents.lumalabs.ai/v1/generations', headers: { authorization: 'Bearer luma-api-test-key', 'content-type': 'application/json' },
    body: { model: 'ray-3.2', type: 'video', prompt: 'a glacier calves', aspect_ratio: '21:9', video: { resolution: '1080p', duration: '10s', hdr: false } },
  });
  keyOnlyInHeader(t, request, LUMA.apiKey, 'Bearer');
  const frame = (url: string) => (requestParts(LUMA_VIDEO.submit({ ...LUMA_RAY, duration: 5, dynamicRange: 'hdr', imageUrls: [url] }, LUMA)).body as { video: unknown }).video;
  t.strictSame(frame('https://img.example/f.png'), { resolution: '1080p', duration: '5s', hdr: true, start_frame: { url: 'https://img.example/f.png' } }, 'a URL first frame');
  t.strictSame(frame('data:image/webp;base64,UklGRg=='), { resolution: '1080p', duration: '5s', hdr: true, start_frame: { data: 'UklGRg==', media_type: 'image/webp' } }, 'an inline one, with its type');
  t.strictSame(requestParts(LUMA_VIDEO.poll('182bd5e5-6e1a', LUMA)), { method: 'GET', url: 'https://agents.lumalabs.ai/v1/generations/182bd5e5-6e1a', headers: { authorization: 'Bearer luma-api-test-key' }, body: undefined });
});

t.test('Luma: answers, states, failures', async (t) => {
  t.strictSame(LUMA_VIDEO.submitted(200, json({ id: '182bd5e5-6e1a', state: 'queued', type: 'video', model: 'ray-3.2', created_at: '2026-11-27T00:00:00Z' })), { kind: 'submitted', upstreamId: '182bd5e5-6e1a' });
  isRefusal(t, LUMA_VIDEO.submitted(422, json({ detail: [{ loc: ['body', 'video', 'duration'], msg: "Input should be '5s' or '10s'", type: 'enum' }] })), { retryable: false, code: 'http_422', httpStatus: 422, message: "Input should be '5s' or '10s'" }, 'a field error');
  isRefusal(t, LUMA_VIDEO.submitted(400, json({ detail: 'HDR access is required' })), { retryable: false, code: 'http_400', httpStatus: 400, message: 'HDR access is required' }, 'a refusal');
  for (const state of ['queued', 'processing']) isState(t, LUMA_VIDEO.polled(200, json({ id: '1', state })), { kind: 'running', status: state }, state);
  isState(t, LUMA_VIDEO.polled(200, json({ id: '1', state: 'completed', output: [{ type: 'image', url: 'https://cdn.luma.example/thumb.jpg' }, { type: 'video', url: 'https://cdn.luma.example/v.mp4' }] })),
    { kind: 'succeeded', status: 'completed', resultUrl: 'https://cdn.luma.example/v.mp4' }, 'the video among the outputs');
  isRefusal(t, LUMA_VIDEO.polled(200, json({ id: '1', state: 'completed', output: [] })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'completed without output');
  isState(t, LUMA_VIDEO.polled(200, json({ id: '1', state: 'failed', failure_code: 'content_moderated', failure_reason: 'The prompt was moderated.' })),
    { kind: 'failed', status: 'failed', code: 'content_moderated', message: 'The prompt was moderated.' }, 'a failure with its code');
  isState(t, LUMA_VIDEO.polled(200, json({ id: '1', state: 'failed' })), { kind: 'failed', status: 'failed', code: 'upstream_failed', message: 'The vendor reported the task failed without a reason.' }, 'without a reason');
  isState(t, LUMA_VIDEO.polled(200, json({ id: '1', state: 'paused' })), { kind: 'unknown', status: 'paused' }, 'a new state');
});

t.test('Luma: shared HTTP rules', async (t) => sharedHttpRules(t, LUMA_VIDEO, (code, message) => ({ error: { code, message } })));

// ---------------------------------------------------------------------------------------------------
// The table, and the shared rules' own edges

t.test('VIDEO_ADAPTERS: one frozen adapter per family', async (t) => {
  t.strictSame(Object.keys(VIDEO_ADAPTERS).sort(), ['dashscope', 'gemini-video', 'kling', 'luma', 'minimax-video', 'modelark', 'runway', 'vidu']);
  t.equal(VIDEO_ADAPTERS['minimax-video'], MINIMAX_VIDEO);
  t.equal(VIDEO_ADAPTERS.kling, KLING_VIDEO);
  t.equal(VIDEO_ADAPTERS.runway, RUNWAY_VIDEO);
  t.equal(VIDEO_ADAPTERS.luma, LUMA_VIDEO);
  t.equal(VIDEO_ADAPTERS.dashscope, DASHSCOPE_VIDEO);
  t.equal(VIDEO_ADAPTERS.vidu, VIDU_VIDEO);
  t.equal(VIDEO_ADAPTERS.modelark, ARK_VIDEO);
  t.equal(VIDEO_ADAPTERS['gemini-video'], VEO_VIDEO);
  for (const [family, adapter] of Object.entries(VIDEO_ADAPTERS)) {
    t.equal(adapter.family, family, `${family}: keyed by its own family`);
    // Google (Veo), MiniMax, Kling and Luma's Agents API document no cancel for video tasks.
    const cancels = !['gemini-video', 'minimax-video', 'kling', 'luma'].includes(family);
    t.type(adapter.cancel, cancels ? 'function' : 'undefined', `${family}: ${cancels ? 'has a' : 'has no'} cancel`);
    t.ok(Object.isFrozen(adapter), `${family}: frozen`);
  }
  t.ok(Object.isFrozen(VIDEO_ADAPTERS), 'the table is frozen');
  t.equal(VIDEO_ADAPTERS['openai-videos'], undefined, 'an unserved family');
  t.equal(VIDEO_ADAPTERS.constructor, undefined, 'an Object method name is no family');
  t.equal(VIDEO_ADAPTERS.toString, undefined);
});

t.test('wire: profile task shapes, table lookups, status classes', async (t) => {
  const imageToVideo = VIDEO_PROFILES.filter((profile) => isImageToVideo({ ...I2V_A, profile }));
  t.strictSame(imageToVideo, ['I2V-A', 'I2V-B'], 'only the I2V profiles use the image as the first frame');
  for (const profile of ['HAILUO', 'KLING', 'RUNWAY-I2V', 'LUMA-RAY'] as const) t.ok(isImageToVideo({ ...I2V_A, profile }), `${profile}: its image is the first frame`);
  t.equal(entryOf({ a: 1 }, 'a'), 1);
  t.equal(entryOf({ a: 1 }, 'hasOwnProperty'), undefined, 'inherited names are not entries');
  const read = () => ({ code: 'C', message: 'm' });
  t.strictSame([408, 429, 499, 500, 504, 302].map((status) => refusalOf('submit', status, '{}', read).retryable), [true, true, true, true, true, true], 'transient statuses');
  t.strictSame([400, 401, 403, 404, 409, 413, 422].map((status) => refusalOf('submit', status, '{}', read).retryable), [false, false, false, false, false, false, false], 'final statuses');
  t.equal(refusalOf('poll', 404, '{}', read).code, 'task_not_found');
  t.equal(refusalOf('submit', 404, '{}', read).code, 'C');
});

// ---------------------------------------------------------------------------------------------------
// Google Veo (Gemini API long-running operations)

const GEMINI: VendorTarget = { baseUrl: 'https://generativelanguage.googleapis.com/v1beta', apiKey: 'test-gemini-key' };
const VEO_JOB: VideoJob = {
  profile: 'VEO', model: 'google/veo-3.1', upstreamModel: 'veo-3.1-generate-preview', prompt: 'a fox', negativePrompt: 'rain',
  imageUrls: [], videoUrls: [], duration: 8, resolution: '1080p', aspectRatio: '9:16', seed: 3,
};
const OPERATION = 'models/veo-3.1-generate-preview/operations/abc123';

t.test('Veo: submit, operation name, polls, failures, the result download', async (t) => {
  t.strictSame(requestParts(VEO_VIDEO.submit(VEO_JOB, GEMINI)), {
    method: 'POST', url: 'https://generativelanguage.googleapis.com/v1beta/models/veo-3.1-generate-preview:predictLongRunning',
    headers: { 'x-goog-api-key': 'test-gemini-key', 'content-type': 'application/json' },
    body: { instances: [{ prompt: 'a fox' }], parameters: { aspectRatio: '9:16', durationSeconds: 8, resolution: '1080p', negativePrompt: 'rain', seed: 3 } },
  });
  t.strictSame(VEO_VIDEO.submitted(200, json({ name: OPERATION })), { kind: 'submitted', upstreamId: OPERATION });
  for (const name of ['models/x/operations/../../../admin', '../x', 'operations', 'models/x/operations/a b', 'https://evil.example/x']) {
    isRefusal(t, VEO_VIDEO.submitted(200, json({ name })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, `operation name ${name}: not a name`);
  }
  isRefusal(t, VEO_VIDEO.submitted(400, json({ error: { code: 400, message: 'bad ratio', status: 'INVALID_ARGUMENT' } })),
    { retryable: false, code: 'INVALID_ARGUMENT', httpStatus: 400, message: 'bad ratio' }, 'a refused submit');
  isRefusal(t, VEO_VIDEO.submitted(429, json({ error: { code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED' } })),
    { retryable: true, code: 'RESOURCE_EXHAUSTED', httpStatus: 429 }, 'a rate limit');
  t.strictSame(requestParts(VEO_VIDEO.poll(OPERATION, GEMINI)), {
    method: 'GET', url: `https://generativelanguage.googleapis.com/v1beta/${OPERATION}`, headers: { 'x-goog-api-key': 'test-gemini-key' }, body: undefined,
  });
  isState(t, VEO_VIDEO.polled(200, json({ name: OPERATION })), { kind: 'running', status: 'RUNNING' }, 'not done');
  isState(t, VEO_VIDEO.polled(200, json({ name: OPERATION, done: false })), { kind: 'running', status: 'RUNNING' }, 'done: false');
  const uri = 'https://generativelanguage.googleapis.com/v1beta/files/xyz:download?alt=media';
  isState(t, VEO_VIDEO.polled(200, json({ name: OPERATION, done: true, response: { generateVideoResponse: { generatedSamples: [{ video: { uri } }] } } })),
    { kind: 'succeeded', status: 'DONE', resultUrl: uri }, 'done with a sample');
  isState(t, VEO_VIDEO.polled(200, json({ done: true, error: { code: 13, message: 'internal' } })), { kind: 'failed', status: 'FAILED', code: '13', message: 'internal' }, 'an operation error');
  isState(t, VEO_VIDEO.polled(200, json({ done: true, response: { generateVideoResponse: { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['unsafe'] } } })),
    { kind: 'failed', status: 'DONE', code: 'content_filtered', message: "The vendor's safety filters withheld the video: unsafe" }, 'filtered');
  isRefusal(t, VEO_VIDEO.polled(200, json({ done: true, response: {} })), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'done without a sample');
  isRefusal(t, VEO_VIDEO.polled(404, json({ error: { code: 404, message: 'gone', status: 'NOT_FOUND' } })), { retryable: false, code: 'task_not_found', httpStatus: 404 }, 'an unknown operation');
  t.strictSame(VEO_VIDEO.resultHeaders(uri, GEMINI), { 'x-goog-api-key': 'test-gemini-key' }, 'the key for a file of the API');
  t.equal(VEO_VIDEO.resultHeaders('https://storage.googleapis.com/x.mp4', GEMINI), undefined, 'never for another origin');
  t.equal(VEO_VIDEO.resultHeaders('not a url', GEMINI), undefined);
});

const VERTEX: VendorTarget = { baseUrl: 'https://us-central1-aiplatform.googleapis.com', apiKey: 'ya29.token', cloud: { kind: 'vertex', projectId: 'p1', region: 'us-central1' }, guarded: true };
const VERTEX_MODEL = 'projects/p1/locations/us-central1/publishers/google/models/veo-3.1-generate-001';
const VERTEX_OPERATION = `${VERTEX_MODEL}/operations/0f1e2d`;

t.test('Veo on Vertex AI: the publisher model with the access token, fetchPredictOperation, the video inline', async (t) => {
  const job = { ...VEO_JOB, upstreamModel: 'veo-3.1-generate-001' };
  const frame = { base64: 'iVBORw0KGgo=', mimeType: 'image/png' };
  const submit = VEO_VIDEO.submit(job, VERTEX, undefined, [frame]);
  t.strictSame(requestParts(submit), {
    method: 'POST', url: `https://us-central1-aiplatform.googleapis.com/v1/${VERTEX_MODEL}:predictLongRunning`,
    headers: { authorization: 'Bearer ya29.token', 'content-type': 'application/json' },
    body: { instances: [{ prompt: 'a fox', image: { bytesBase64Encoded: 'iVBORw0KGgo=', mimeType: 'image/png' } }], parameters: { aspectRatio: '9:16', durationSeconds: 8, resolution: '1080p', negativePrompt: 'rain', seed: 3 } },
  }, 'the Gemini API\'s body, the first frame as bytes');
  t.equal(submit.guarded, true, 'an endpoint from the region goes through the URL guard');
  isRefusal(t, builtRequest(() => VEO_VIDEO.submit(job, { ...VERTEX, apiKey: '' })), { retryable: true, code: 'upstream_unavailable', httpStatus: 503 }, 'no access token yet');
  t.strictSame(VEO_VIDEO.submitted(200, json({ name: VERTEX_OPERATION })), { kind: 'submitted', upstreamId: VERTEX_OPERATION });
  t.strictSame(requestParts(VEO_VIDEO.poll(VERTEX_OPERATION, VERTEX)), {
    method: 'POST', url: `https://us-central1-aiplatform.googleapis.com/v1/${VERTEX_MODEL}:fetchPredictOperation`,
    headers: { authorization: 'Bearer ya29.token', 'content-type': 'application/json' }, body: { operationName: VERTEX_OPERATION },
  }, 'polled on the model the operation runs under');
  const done = (response: unknown) => VEO_VIDEO.polled(200, json({ name: VERTEX_OPERATION, done: true, response }));
  isState(t, VEO_VIDEO.polled(200, json({ name: VERTEX_OPERATION })), { kind: 'running', status: 'RUNNING' }, 'not done');
  isState(t, done({ raiMediaFilteredCount: 0, videos: [{ bytesBase64Encoded: 'AAAAGGZ0eXA=', mimeType: 'video/mp4' }] }), { kind: 'inline', status: 'DONE', base64: 'AAAAGGZ0eXA=' }, 'the video itself');
  t.match(done({ videos: [{ gcsUri: 'gs://bucket/x.mp4', mimeType: 'video/mp4' }] }), { kind: 'failed', code: 'result_unavailable' }, 'a Cloud Storage result is not read');
  t.match(done({ raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['unsafe'] }), { kind: 'failed', code: 'content_filtered', message: /unsafe/ }, 'filtered');
  isRefusal(t, done({ videos: [] }), { retryable: true, code: 'invalid_response', httpStatus: 200 }, 'done without a video');
  t.equal(VEO_VIDEO.resultHeaders('https://us-central1-aiplatform.googleapis.com/x', VERTEX), undefined, 'no key for any download');
  t.strictSame(VEO_VIDEO.inlineImages(job), [], 'text-to-video: no image to read');
  t.strictSame(VEO_VIDEO.inlineImages({ ...job, imageUrls: ['https://example.com/a.png'] }), ['https://example.com/a.png'], 'the first frame read for the submit');
});
