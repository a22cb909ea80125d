// The six video profiles of the spec, table-driven: each profile's accepted values (enum members,
// range ends), its rejected ones (a 400 naming the field and what it may be), the defaults it fills
// in, and what each reserves at its price line.
import t from 'tap';
import { parseVideoRequest } from '../src/http/schemas/videos.js';
import { ApiError } from '../src/http/errors.js';
import { priceSheetFromSeed } from '../src/billing/price-sheet.js';
import { quote } from '../src/billing/media-pricing.js';
import { VIDEO_MODELS } from '../src/catalog/seed/video.js';
import { videoCallOf } from '../src/tasks/video-job.js';
import type { MediaModel } from '../src/catalog/model.js';

const modelOf = (id: string): MediaModel => {
  const seed = VIDEO_MODELS.find((m) => m.id === id)!;
  return { id: seed.id, name: seed.name, provider: seed.provider, modality: 'video', family: seed.family, upstreamVendor: seed.upstreamVendor, upstreamModel: seed.upstreamModel, capabilities: seed.capabilities, sheet: priceSheetFromSeed(seed) };
};

const IMG = 'https://example.com/a.png';
const DATA = 'data:image/png;base64,iVBORw0KGgo=';
const MODELS = {
  'R2V-A': 'alibaba/wan2.6-r2v', 'R2V-B': 'bytedance/seedance-1.0-lite-r2v-2k', 'R2V-C': 'shengshu/viduq2-r2v',
  'R2V-D': 'shengshu/viduq1-r2v', 'I2V-A': 'shengshu/viduq3-pro-i2v', 'I2V-B': 'bytedance/seedance-1.0-pro-fast',
} as const;
type Profile = keyof typeof MODELS;
/** The least valid request of each profile. */
const BASE: Record<Profile, Record<string, unknown>> = {
  'R2V-A': { prompt: 'p', image_urls: [IMG] },
  'R2V-B': { prompt: 'p', image_urls: [IMG] },
  'R2V-C': { prompt: 'p', image_urls: [IMG] },
  'R2V-D': { prompt: 'p', image_urls: [IMG] },
  'I2V-A': { image_urls: [DATA] },
  'I2V-B': { prompt: 'p', image_urls: [IMG] },
};
const parse = (profile: Profile, extra: Record<string, unknown>) => parseVideoRequest({ model: MODELS[profile], ...BASE[profile], ...extra }, modelOf(MODELS[profile]));
const long = (n: number) => 'x'.repeat(n);

t.test('defaults of each profile', (t) => {
  t.match(parse('R2V-A', {}), { profile: 'R2V-A', size: '1920*1080', duration: 5, shotType: 'single', audio: true, watermark: false, videoUrls: [] });
  t.match(parse('R2V-B', {}), { duration: 6, resolution: '2K', aspectRatio: '16:9' });
  t.match(parse('R2V-C', {}), { duration: 5, resolution: '720p', aspectRatio: '16:9', audio: false, movementAmplitude: 'auto', bgm: false });
  t.match(parse('R2V-D', {}), { duration: 5, resolution: '1080p', aspectRatio: '16:9', movementAmplitude: 'auto', bgm: false });
  t.match(parse('I2V-A', {}), { duration: 5, resolution: '720p', movementAmplitude: 'auto' });
  t.equal(parse('I2V-A', {}).prompt, undefined, 'I2V-A needs no prompt');
  t.match(parse('I2V-B', {}), { duration: 5, resolution: '720p', aspectRatio: '16:9' });
  t.match(parse('I2V-B', {}), { model: MODELS['I2V-B'], upstreamModel: 'seedance-1-0-pro-fast-251015' });
  t.end();
});

const ACCEPTED: [Profile, Record<string, unknown>][] = [
  ...['1920*1080', '1080*1920', '1440*1440', '1632*1248', '1248*1632', '1280*720', '720*1280', '960*960', '1088*832', '832*1088'].map((size): [Profile, Record<string, unknown>] => ['R2V-A', { size }]),
  ['R2V-A', { duration: 2 }], ['R2V-A', { duration: 10 }], ['R2V-A', { shot_type: 'multi' }], ['R2V-A', { audio: false }],
  ['R2V-A', { prompt: long(1500), negative_prompt: long(500) }], ['R2V-A', { image_urls: [IMG, IMG, IMG, IMG, IMG], video_urls: ['https://e.com/1.mp4', 'https://e.com/2.mp4', 'https://e.com/3.mp4'] }],
  ['R2V-A', { image_urls: [], video_urls: ['https://e.com/1.mp4'] }], ['R2V-A', { seed: 0 }], ['R2V-A', { seed: 2147483647 }], ['R2V-A', { watermark: true }],
  ['R2V-B', { duration: '10' }], ['R2V-B', { duration: 6 }], ['R2V-B', { ratio: '21:9' }], ['R2V-B', { aspect_ratio: 'adaptive' }],
  ['R2V-B', { ratio: '4:3', aspect_ratio: '4:3' }], ['R2V-B', { prompt: long(7000) }], ['R2V-B', { image_urls: [DATA] }],
  ['R2V-C', { duration: 1 }], ['R2V-C', { duration: 10 }], ['R2V-C', { resolution: '540p' }], ['R2V-C', { resolution: '1080p' }],
  ['R2V-C', { aspect_ratio: '9:16' }], ['R2V-C', { aspect_ratio: '1:1' }], ['R2V-C', { audio: true }], ['R2V-C', { movement_amplitude: 'high' }],
  ['R2V-C', { bgm: true }], ['R2V-C', { image_urls: Array(7).fill(DATA), prompt: '@1 and @7' }], ['R2V-C', { prompt: long(2000) }],
  ['R2V-D', { movement_amplitude: 'large' }], ['R2V-D', { duration: 5, resolution: '1080p' }], ['R2V-D', { prompt: long(1500) }], ['R2V-D', { image_urls: Array(7).fill(IMG) }],
  ['I2V-A', { duration: 1 }], ['I2V-A', { duration: 16 }], ['I2V-A', { resolution: '1080p' }], ['I2V-A', { image_urls: [IMG], prompt: long(2000) }],
  ['I2V-B', { duration: 3 }], ['I2V-B', { duration: 12 }], ['I2V-B', { ratio: '21:9' }], ['I2V-B', { ratio: '3:4' }], ['I2V-B', { prompt: long(5000) }],
  ['I2V-B', { callback_url: 'https://hooks.example.com/x' }],
];

t.test('accepted values', (t) => {
  for (const [profile, extra] of ACCEPTED) {
    try {
      parse(profile, extra);
      t.pass(`${profile} ${JSON.stringify(extra).slice(0, 80)}`);
    } catch (error) {
      t.fail(`${profile} ${JSON.stringify(extra).slice(0, 80)}: ${(error as Error).message}`);
    }
  }
  t.end();
});

/** profile, fields, the param the 400 names, text the message must contain. */
const REJECTED: [Profile, Record<string, unknown>, string, RegExp][] = [
  ['R2V-A', { size: '1920x1080' }, 'size', /'1920\*1080'.*'832\*1088'/],
  ['R2V-A', { duration: 1 }, 'duration', /2 to 10/], ['R2V-A', { duration: 11 }, 'duration', /2 to 10/], ['R2V-A', { duration: 5.5 }, 'duration', /whole number/],
  ['R2V-A', { duration: '5' }, 'duration', /whole number/],
  ['R2V-A', { prompt: long(1501) }, 'prompt', /1500/], ['R2V-A', { negative_prompt: long(501) }, 'negative_prompt', /500/],
  ['R2V-A', { image_urls: Array(6).fill(IMG) }, 'image_urls', /0 to 5/], ['R2V-A', { video_urls: Array(4).fill('https://e.com/v.mp4') }, 'video_urls', /0 to 3/],
  ['R2V-A', { image_urls: [] }, 'image_urls', /at least one reference/], ['R2V-A', { image_urls: [DATA] }, 'image_urls[0]', /https/],
  ['R2V-A', { shot_type: 'several' }, 'shot_type', /'single', 'multi'/], ['R2V-A', { seed: -1 }, 'seed', /0 to 2147483647/],
  ['R2V-A', { seed: 2147483648 }, 'seed', /2147483647/], ['R2V-A', { seed: 1e300 }, 'seed', /2147483647/], ['R2V-A', { seed: 1.5 }, 'seed', /whole number/],
  ['R2V-A', { audio: 'yes' }, 'audio', /true or false/], ['R2V-A', { prompt: undefined }, 'prompt', /Missing required parameter 'prompt'/],
  ['R2V-B', { duration: '8' }, 'duration', /'6', '10'/], ['R2V-B', { duration: 5 }, 'duration', /'6', '10'/],
  ['R2V-B', { resolution: '1080p' }, 'resolution', /'2K'/], ['R2V-B', { ratio: '2:1' }, 'ratio', /'adaptive'/],
  ['R2V-B', { ratio: '16:9', aspect_ratio: '9:16' }, 'ratio', /contradicts/], ['R2V-B', { image_urls: [IMG, IMG] }, 'image_urls', /exactly 1/],
  ['R2V-B', { prompt: long(7001) }, 'prompt', /7000/],
  ['R2V-C', { duration: 0 }, 'duration', /1 to 10/], ['R2V-C', { duration: 11 }, 'duration', /1 to 10/], ['R2V-C', { resolution: '4k' }, 'resolution', /'540p', '720p', '1080p'/],
  ['R2V-C', { aspect_ratio: '4:3' }, 'aspect_ratio', /'16:9', '9:16', '1:1'/], ['R2V-C', { movement_amplitude: 'large' }, 'movement_amplitude', /'high'/],
  ['R2V-C', { image_urls: Array(8).fill(IMG) }, 'image_urls', /1 to 7/], ['R2V-C', { image_urls: [] }, 'image_urls', /1 to 7/],
  ['R2V-C', { prompt: '@1 and @2' }, 'prompt', /@2/], ['R2V-C', { prompt: long(2001) }, 'prompt', /2000/],
  ['R2V-C', { image_urls: [''] }, 'image_urls[0]', /empty/],
  ['R2V-C', { image_urls: ['ftp://x/a.png'] }, 'image_urls[0]', /https/],
  ['R2V-D', { duration: 10 }, 'duration', /5/], ['R2V-D', { resolution: '720p' }, 'resolution', /1080p/], ['R2V-D', { movement_amplitude: 'high' }, 'movement_amplitude', /'large'/],
  ['R2V-D', { prompt: long(1501) }, 'prompt', /1500/], ['R2V-D', { image_urls: Array(8).fill(IMG) }, 'image_urls', /1 to 7/],
  ['I2V-A', { duration: 0 }, 'duration', /1 to 16/], ['I2V-A', { duration: 17 }, 'duration', /1 to 16/], ['I2V-A', { image_urls: [IMG, IMG] }, 'image_urls', /exactly 1/],
  ['I2V-A', { prompt: long(2001) }, 'prompt', /2000/], ['I2V-A', { movement_amplitude: 'large' }, 'movement_amplitude', /'high'/],
  ['I2V-B', { resolution: '1080p' }, 'resolution', /1080p is not available/], ['I2V-B', { duration: 2 }, 'duration', /3 to 12/], ['I2V-B', { duration: 13 }, 'duration', /3 to 12/],
  ['I2V-B', { ratio: 'adaptive' }, 'ratio', /'21:9'/], ['I2V-B', { image_urls: [DATA] }, 'image_urls[0]', /public https URL/],
  ['I2V-B', { prompt: long(5001) }, 'prompt', /5000/], ['I2V-B', { prompt: undefined }, 'prompt', /Missing required parameter 'prompt'/],
  ['I2V-B', { size: '1280*720' }, 'size', /Unknown parameter/], ['I2V-B', { callback_url: 'javascript:alert(1)' }, 'callback_url', /https/],
];

t.test('rejected values: a 400 that names the field and what it may be', (t) => {
  for (const [profile, extra, param, message] of REJECTED) {
    const body = { ...extra };
    for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
    const name = `${profile} ${JSON.stringify(extra).slice(0, 60)}`;
    try {
      parseVideoRequest({ model: MODELS[profile], ...Object.fromEntries(Object.entries(BASE[profile]).filter(([key]) => !(key in extra))), ...body }, modelOf(MODELS[profile]));
      t.fail(`${name}: accepted`);
    } catch (error) {
      t.ok(error instanceof ApiError && error.status === 400, `${name}: 400`);
      t.equal((error as ApiError).param, param, `${name}: names ${param}`);
      t.match((error as Error).message, message, `${name}: says what it may be`);
    }
  }
  t.end();
});

t.test('a model without a profile is not served by this endpoint', (t) => {
  const sora = modelOf('openai/sora-2');
  t.throws(() => parseVideoRequest({ model: sora.id, prompt: 'x' }, sora), { status: 400, code: 'model_not_supported', param: 'model' });
  t.end();
});

t.test('what each profile reserves at its price line', (t) => {
  const reserved = (profile: Profile, extra: Record<string, unknown> = {}) => quote(modelOf(MODELS[profile]).sheet, videoCallOf(parse(profile, extra))).worstCaseNano;
  t.equal(reserved('R2V-A'), 750_000_000n, 'R2V-A: 1920*1080 for 5 s at 0.15 USD/s');
  t.equal(reserved('R2V-A', { size: '1280*720' }), 500_000_000n, 'R2V-A: 1280*720 for 5 s at 0.10 USD/s');
  t.equal(reserved('R2V-A', { size: '832*1088', duration: 10 }), 1_000_000_000n);
  t.equal(reserved('R2V-B'), 1_296_000_000n, 'R2V-B: 6 s at 0.216 USD/s');
  t.equal(reserved('R2V-B', { duration: '10' }), 2_160_000_000n);
  t.equal(reserved('R2V-C'), 500_000_000n, 'R2V-C: 720p 5 s');
  t.equal(reserved('R2V-C', { audio: true }), 564_000_000n, 'R2V-C: the audio add-on is 0.064');
  t.equal(reserved('R2V-C', { resolution: '1080p', duration: 10 }), 2_000_000_000n);
  t.equal(reserved('R2V-D'), 340_000_000n, 'R2V-D: flat 0.34 charged');
  t.equal(quote(modelOf(MODELS['R2V-D']).sheet, videoCallOf(parse('R2V-D', {}))).listNano, 400_000_000n, 'R2V-D: 0.40 list');
  t.equal(reserved('I2V-A', { duration: 4 }), 600_000_000n, 'I2V-A: 720p at 0.15 USD/s');
  t.equal(reserved('I2V-A', { resolution: '540p', duration: 16 }), 1_120_000_000n);
  t.equal(reserved('I2V-B'), 75_000_000n, 'I2V-B: 5 s at 0.015 USD/s');
  t.equal(reserved('I2V-B', { duration: 12 }), 180_000_000n);
  t.end();
});
