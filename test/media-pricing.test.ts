import t, { type Test } from 'tap';
import { actualNano, quote, worstCaseNano, PricingError, type PricedCall, type CallOutcome } from '../src/billing/media-pricing.js';
import { priceSheetFromRows, priceSheetFromSeed, type PriceSheet } from '../src/billing/price-sheet.js';
import { worstCaseCostNano, tokenCostNano } from '../src/billing/pricing.js';
import { catalogRows } from '../src/catalog/seed/index.js';
import { IMAGE_MODELS } from '../src/catalog/seed/image.js';
import { VIDEO_MODELS } from '../src/catalog/seed/video.js';
import { AUDIO_MODELS } from '../src/catalog/seed/audio.js';
import type { MediaSeed } from '../src/catalog/seed/types.js';

const MEDIA = [...IMAGE_MODELS, ...VIDEO_MODELS, ...AUDIO_MODELS];
const sheet = (id: string): PriceSheet => {
  const seed = MEDIA.find((m) => m.id === id);
  if (!seed) throw new Error(`no seed ${id}`);
  return priceSheetFromSeed(seed);
};
const usd = (nano: bigint) => Number(nano) / 1e9;

/** Asserts a PricingError naming `field`. */
function refuses(t: Test, fn: () => unknown, field: string, message?: string) {
  try {
    fn();
    t.fail(`${message ?? field}: expected a PricingError`);
  } catch (error) {
    t.ok(error instanceof PricingError, `${message ?? field}: a PricingError`);
    t.equal((error as PricingError).field, field, `${message ?? field}: names ${field} (${(error as Error).message})`);
  }
}

t.test('images: per image by size and quality, n > 1', async (t) => {
  const gpt = sheet('openai/gpt-image-2');
  // 3 portrait high-quality images: 3 x 0.165 = 0.495 USD, the reservation; 2 delivered: 0.33 USD
  const call: PricedCall = { kind: 'image', n: 3, size: '1024x1536', quality: 'high' };
  t.equal(worstCaseNano(gpt, call), 495_000_000n);
  t.equal(actualNano(gpt, call, { kind: 'image', images: 2 }), 330_000_000n);
  t.equal(actualNano(gpt, call, { kind: 'image', images: 3 }), 495_000_000n);
  t.equal(actualNano(gpt, call, { kind: 'image', images: 5 }), 495_000_000n, 'never more images than asked for');
  t.equal(worstCaseNano(gpt, { kind: 'image', n: 10, size: '1024x1024', quality: 'low' }), 60_000_000n, '10 x 0.006');
  // quality left open (the upstream's `auto`): the dearest quality of that size is reserved
  t.equal(worstCaseNano(gpt, { kind: 'image', n: 1, size: '1024x1024' }), 211_000_000n);
  t.equal(worstCaseNano(gpt, { kind: 'image', n: 1 }), 211_000_000n, 'nothing set: the dearest line');
  refuses(t, () => worstCaseNano(gpt, { kind: 'image', n: 1, size: '999x999', quality: 'low' }), 'size');
  refuses(t, () => worstCaseNano(gpt, { kind: 'image', n: 1, size: '1024x1024', quality: 'ultra' }), 'quality');
  refuses(t, () => worstCaseNano(gpt, { kind: 'image', n: 11, size: '1024x1024', quality: 'low' }), 'n', 'n above maxN');
  refuses(t, () => worstCaseNano(gpt, { kind: 'image', n: 0 }), 'n', 'n of 0');
  refuses(t, () => worstCaseNano(gpt, { kind: 'image', n: 1.5 }), 'n', 'fractional n');

  // Nano Banana Pro at 4K with 2 input images: 0.24 + 2 x 0.0011 = 0.2422 USD; resolution case-insensitive
  const banana = sheet('google/gemini-3-pro-image');
  t.equal(worstCaseNano(banana, { kind: 'image', n: 1, resolution: '4K', inputImages: 2 }), 242_200_000n);
  t.equal(worstCaseNano(banana, { kind: 'image', n: 1, resolution: '4k' }), 240_000_000n);
  t.equal(actualNano(banana, { kind: 'image', n: 1, resolution: '1K', inputImages: 2 }, { kind: 'image', images: 0 }), 2_200_000n,
    'input images were sent: charged even if no image came back');
  refuses(t, () => worstCaseNano(banana, { kind: 'image', n: 1, resolution: '8K' }), 'resolution');
  // Luma UNI-1 edit with 3 references: 0.0434 + 2 extra x 0.003 = 0.0494 USD
  t.equal(worstCaseNano(sheet('luma/uni-1'), { kind: 'image', n: 1, mode: 'edit', inputImages: 3 }), 49_400_000n);
  t.equal(worstCaseNano(sheet('black-forest-labs/flux-2-pro'), { kind: 'image', n: 1, mode: 'generate' }), 30_000_000n);
  t.equal(worstCaseNano(sheet('black-forest-labs/flux-2-pro'), { kind: 'image', n: 1 }), 45_000_000n, 'mode open: edit, the dearer');
});

t.test('video: per second by resolution, audio tiers and the audio add-on', async (t) => {
  // Vidu Q2 R2V: 720p at 0.10 per second, audio add-on 0.064 per clip
  const q2 = sheet('shengshu/viduq2-r2v');
  const withAudio: PricedCall = { kind: 'video', seconds: 5, resolution: '720p', audio: true };
  t.equal(worstCaseNano(q2, withAudio), 564_000_000n, '5 x 0.10 + 0.064');
  t.equal(actualNano(q2, withAudio, { kind: 'video', seconds: 3.5 }), 414_000_000n, '3.5 s generated: 0.35 + 0.064');
  t.equal(actualNano(q2, withAudio, { kind: 'video', seconds: 9 }), 564_000_000n, 'never more seconds than asked for');
  t.equal(worstCaseNano(q2, { kind: 'video', seconds: 5, resolution: '720p', audio: false }), 500_000_000n, 'no add-on without audio');
  t.equal(worstCaseNano(q2, { kind: 'video', seconds: 5 }), 500_000_000n, 'the model default resolution (720p), add-on only when asked');
  t.equal(worstCaseNano(q2, { kind: 'video', seconds: 10, resolution: '1080p', audio: true }), 2_064_000_000n, '10 x 0.20 + 0.064');
  refuses(t, () => worstCaseNano(q2, { kind: 'video', seconds: 5, resolution: '540p' }), 'resolution', 'no 540p rate known');
  refuses(t, () => worstCaseNano(q2, { kind: 'video', seconds: 0, resolution: '720p' }), 'seconds');

  // Wan 2.6 R2V Flash prices sound as a tier: 1080p with audio 0.075, 720p silent 0.025 per second
  const flash = sheet('alibaba/wan2.6-r2v-flash');
  t.equal(worstCaseNano(flash, { kind: 'video', seconds: 10, resolution: '1080p', audio: true }), 750_000_000n);
  t.equal(worstCaseNano(flash, { kind: 'video', seconds: 4, resolution: '720p', audio: false }), 100_000_000n);
  t.equal(worstCaseNano(flash, { kind: 'video', seconds: 4, resolution: '720p' }), 200_000_000n, 'audio left open: the dearer (with audio)');
  // Luma Ray 3.2: HDR has no 540p line
  refuses(t, () => worstCaseNano(sheet('luma/ray-3.2'), { kind: 'video', seconds: 5, resolution: '540p', dynamicRange: 'hdr' }), 'resolution');
  t.equal(worstCaseNano(sheet('luma/ray-3.2'), { kind: 'video', seconds: 5, resolution: '540p', dynamicRange: 'sdr' }), 720_000_000n, '5 x 0.144');
});

t.test('video: a size is priced at the resolution its capabilities map it to', async (t) => {
  const wan = sheet('alibaba/wan2.6-r2v');
  t.equal(worstCaseNano(wan, { kind: 'video', seconds: 5, size: '1280*720' }), 500_000_000n, '720p: 5 x 0.10');
  t.equal(worstCaseNano(wan, { kind: 'video', seconds: 10, size: '1440*1440' }), 1_500_000_000n, '1080p: 10 x 0.15');
  t.equal(worstCaseNano(wan, { kind: 'video', seconds: 5 }), 750_000_000n, 'no size: the default size 1920*1080 (1080p)');
  t.equal(worstCaseNano(wan, { kind: 'video', seconds: 5, resolution: '720p' }), 500_000_000n, 'a resolution directly');
  t.equal(worstCaseNano(wan, { kind: 'video', seconds: 5, size: '960*960', resolution: '720p' }), 500_000_000n, 'agreeing size and resolution');
  refuses(t, () => worstCaseNano(wan, { kind: 'video', seconds: 5, size: '640*480' }), 'size', 'a size the model does not have');
  refuses(t, () => worstCaseNano(wan, { kind: 'video', seconds: 5, size: '1280*720', resolution: '1080p' }), 'size', 'a size contradicting the resolution');
  t.equal(actualNano(wan, { kind: 'video', seconds: 10, size: '1280*720' }, { kind: 'video', seconds: 7.25 }), 725_000_000n);
});

t.test('video: a flat-price profile charges its charged price and shows its list price (R2V-D)', async (t) => {
  const q1 = sheet('shengshu/viduq1-r2v');
  const call: PricedCall = { kind: 'video', seconds: 5, resolution: '1080p' };
  t.equal(worstCaseNano(q1, call), 340_000_000n, 'charged 0.34');
  t.equal(quote(q1, call).listNano, 400_000_000n, 'list 0.40');
  t.same(quote(q1, call).terms.map((term) => [term.component, term.tier, term.units]), [['video', 'duration=5,resolution=1080p', 1]]);
  t.equal(actualNano(q1, call, { kind: 'video', seconds: 5 }), 340_000_000n);
  t.equal(actualNano(q1, call, { kind: 'video', seconds: 4.8 }), 340_000_000n, 'a clip is a clip');
  t.equal(worstCaseNano(q1, { kind: 'video', seconds: 5 }), 340_000_000n, 'its only resolution');
  refuses(t, () => worstCaseNano(q1, { kind: 'video', seconds: 8, resolution: '1080p' }), 'seconds', 'a duration it does not price');
  refuses(t, () => worstCaseNano(q1, { kind: 'video', seconds: 5, resolution: '720p' }), 'resolution');
  // MiniMax Hailuo per clip by duration; capabilities say 768P, the tier 768p
  const hailuo = sheet('minimax/hailuo-2.3');
  t.equal(worstCaseNano(hailuo, { kind: 'video', seconds: 6, resolution: '768P' }), 280_000_000n);
  t.equal(worstCaseNano(hailuo, { kind: 'video', seconds: 10 }), 560_000_000n);
  t.equal(quote(sheet('openai/sora-2'), { kind: 'video', seconds: 4 }).listNano, 400_000_000n, 'list equals charged elsewhere');
});

t.test('audio: per character, per second, per request, per token', async (t) => {
  // Eleven v3: 0.10 per 1,000 characters; 1,234 characters = 0.1234 USD
  const v3 = sheet('elevenlabs/eleven-v3');
  t.equal(worstCaseNano(v3, { kind: 'audio', characters: 1234 }), 123_400_000n);
  t.equal(actualNano(v3, { kind: 'audio', characters: 1234 }, { kind: 'audio' }), 123_400_000n, 'all the text, unless told otherwise');
  t.equal(actualNano(v3, { kind: 'audio', characters: 1234 }, { kind: 'audio', characters: 1000 }), 100_000_000n);
  refuses(t, () => worstCaseNano(v3, { kind: 'audio' }), 'characters');
  // TTS-1 HD: 30 USD per 1M characters; 1,000 characters = 0.03 USD
  t.equal(worstCaseNano(sheet('openai/tts-1-hd'), { kind: 'audio', characters: 1000 }), 30_000_000n);
  // Eleven Music: 0.005 per second; 30 s reserved = 0.15, 12.5 s made = 0.0625
  const music = sheet('elevenlabs/eleven-music');
  t.equal(worstCaseNano(music, { kind: 'audio', seconds: 30 }), 150_000_000n);
  t.equal(actualNano(music, { kind: 'audio', seconds: 30 }, { kind: 'audio', seconds: 12.5 }), 62_500_000n);
  refuses(t, () => worstCaseNano(music, { kind: 'audio' }), 'seconds');
  // per request: Lyria 3.5, 0.08 a song, whatever else the call says
  t.equal(worstCaseNano(sheet('google/lyria-3.5'), { kind: 'audio' }), 80_000_000n);
  t.equal(actualNano(sheet('google/lyria-3.5'), { kind: 'audio', seconds: 200 }, { kind: 'audio', seconds: 180 }), 80_000_000n);
  // token-billed speech: 100 input tokens at 0.60/1M and 2,000 audio tokens at 12/1M = 0.00006 + 0.024
  const tts = sheet('openai/gpt-4o-mini-tts');
  t.equal(worstCaseNano(tts, { kind: 'audio', inputTokens: 100, maxOutputTokens: 2000 }), 24_060_000n);
  t.equal(actualNano(tts, { kind: 'audio', inputTokens: 100, maxOutputTokens: 2000 }, { kind: 'audio', outputTokens: 500 }), 6_060_000n);
  refuses(t, () => worstCaseNano(tts, { kind: 'audio', inputTokens: 100 }), 'maxOutputTokens');
});

t.test('rounding: exact sums, once per call; up for the worst case, half up for the actual cost', async (t) => {
  const tiny = (usdPerMillion: bigint) => priceSheetFromRows('test/tiny', {}, [
    { component: 'audio_character', tier: '', nano_usd_per_million: usdPerMillion, list_nano_usd_per_million: null }]);
  // 0.5 nano-USD per character (500,000 nano-USD per million)
  t.equal(worstCaseNano(tiny(500_000n), { kind: 'audio', characters: 1 }), 1n);
  t.equal(actualNano(tiny(500_000n), { kind: 'audio', characters: 1 }, { kind: 'audio' }), 1n, '0.5 rounds half up');
  t.equal(actualNano(tiny(500_000n), { kind: 'audio', characters: 3 }, { kind: 'audio' }), 2n, '1.5 -> 2');
  t.equal(worstCaseNano(tiny(400_000n), { kind: 'audio', characters: 1 }), 1n, '0.4 reserved as 1');
  t.equal(actualNano(tiny(400_000n), { kind: 'audio', characters: 1 }, { kind: 'audio' }), 0n, '0.4 charged as 0');
  t.equal(actualNano(tiny(400_000n), { kind: 'audio', characters: 5 }, { kind: 'audio' }), 2n, 'summed before rounding: 5 x 0.4 = 2');
  // seconds count to the millisecond: 0.001 s of 0.0375 USD/s video = 37,500 nano-USD
  t.equal(actualNano(sheet('alibaba/wan2.6-r2v-flash'), { kind: 'video', seconds: 2, resolution: '1080p', audio: false },
    { kind: 'video', seconds: 0.001 }), 37_500n);
});

t.test('tokens: the same module prices chat calls through the token functions', async (t) => {
  const rows = catalogRows();
  const chat = (id: string) => priceSheetFromRows(id, {}, rows.prices.filter((p) => p.model_id === id));
  const mini = chat('openai/gpt-4o-mini');
  t.equal(worstCaseNano(mini, { kind: 'tokens', maxInputTokens: 1, maxOutputTokens: 0 }), 150n);
  const usage = { promptTokens: 1000, cachedTokens: 200, cacheWriteTokens: 0, completionTokens: 500 };
  t.equal(actualNano(mini, { kind: 'tokens', maxInputTokens: 1000, maxOutputTokens: 500 }, { kind: 'tokens', usage }), 435_000n);
  const pro = chat('google/gemini-2.5-pro');
  t.equal(worstCaseNano(pro, { kind: 'tokens', maxInputTokens: 300_000, maxOutputTokens: 1000 }), 765_000_000n, 'long-context tier kept');
  refuses(t, () => worstCaseNano(sheet('google/lyria-3.5'), { kind: 'tokens', maxInputTokens: 1, maxOutputTokens: 1 }), 'model');
  // the chat sheet's token prices are the ones the chat route reserves with
  const prices = { input: 150_000_000n, cachedInput: 75_000_000n, cacheWrite: 0n, output: 600_000_000n };
  t.equal(worstCaseNano(mini, { kind: 'tokens', maxInputTokens: 777, maxOutputTokens: 333 }), worstCaseCostNano(prices, 777, 333));
  t.equal(tokenCostNano(prices, usage), 435_000n);
});

/** A typical call of each model, built from its capabilities only. */
function defaultCall(seed: MediaSeed): PricedCall {
  if (seed.modality === 'image') return { kind: 'image', n: 1 };
  if (seed.modality === 'audio') return { kind: 'audio', characters: 500, seconds: 30, inputTokens: 200, maxOutputTokens: 4000 };
  const durations = seed.capabilities.durations as { default: number } | number[] | undefined;
  const seconds = durations === undefined ? 5 : Array.isArray(durations) ? durations[0]! : durations.default;
  return { kind: 'video', seconds };
}

/** Outcomes from nothing to more than asked for. */
function outcomes(call: PricedCall): CallOutcome[] {
  const scales = [0, 0.25, 0.5, 0.999, 1, 2];
  switch (call.kind) {
    case 'image': return scales.map((s) => ({ kind: 'image', images: Math.floor(call.n * s) }));
    case 'video': return scales.map((s) => ({ kind: 'video', seconds: call.seconds * s }));
    case 'audio': return [{ kind: 'audio' }, ...scales.map((s) => ({
      kind: 'audio' as const, characters: Math.floor((call.characters ?? 0) * s), seconds: (call.seconds ?? 0) * s,
      inputTokens: Math.floor((call.inputTokens ?? 0) * s), outputTokens: Math.floor((call.maxOutputTokens ?? 0) * s),
    }))];
    case 'tokens': return [];
  }
}

t.test('every seeded media model with a price prices its default call; unpriced ones are inactive', async (t) => {
  for (const seed of MEDIA) {
    if (seed.prices.length === 0) {
      t.equal(seed.isActive, false, `${seed.id} has no price and is not offered`);
      refuses(t, () => worstCaseNano(priceSheetFromSeed(seed), defaultCall(seed)), 'model', seed.id);
      continue;
    }
    const worst = worstCaseNano(priceSheetFromSeed(seed), defaultCall(seed));
    t.ok(worst > 0n, `${seed.id}: ${usd(worst)} USD`);
  }
});

t.test('the worst case bounds the actual cost across a grid of calls and outcomes', async (t) => {
  let checked = 0;
  for (const seed of MEDIA.filter((m) => m.prices.length > 0)) {
    const prices = priceSheetFromSeed(seed);
    const base = defaultCall(seed);
    const calls: PricedCall[] = base.kind === 'image'
      ? [1, 2, 3].filter((n) => n <= (seed.capabilities.maxN as number)).map((n) => ({ ...base, n, inputImages: n - 1 }))
      : base.kind === 'video'
        ? [base, { ...base, audio: true }, { ...base, audio: false }, { ...base, seconds: base.seconds + 0.5 }]
        : base.kind === 'audio' ? [base, { ...base, characters: 1, seconds: 0.3333 }] : [base];
    for (const call of calls) {
      let worst: bigint;
      try {
        worst = worstCaseNano(prices, call);
      } catch (error) {
        // only a per-clip model refuses a length it does not price
        t.ok(error instanceof PricingError && error.field === 'seconds', `${seed.id} ${JSON.stringify(call)}: refused, naming seconds`);
        continue;
      }
      t.equal(quote(prices, call).worstCaseNano, worst);
      t.ok(quote(prices, call).listNano >= worst, `${seed.id}: list price not below the charged one`);
      for (const outcome of outcomes(call)) {
        const actual = actualNano(prices, call, outcome as never);
        if (actual > worst || actual < 0n) t.fail(`${seed.id} ${JSON.stringify(call)} ${JSON.stringify(outcome)}: ${actual} > ${worst}`);
        checked++;
      }
    }
  }
  t.ok(checked > 300, `${checked} call and outcome pairs checked`);
});

t.test('a sheet from stored rows equals the sheet from the seed', async (t) => {
  const rows = catalogRows();
  for (const seed of MEDIA) {
    const stored = priceSheetFromRows(seed.id, seed.capabilities, rows.prices.filter((p) => p.model_id === seed.id));
    t.same(stored, priceSheetFromSeed(seed), seed.id);
  }
});
