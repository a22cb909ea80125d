/**
 * Prices every kind of call from its model's price sheet: tokens, images, video, audio. Pure.
 *
 * `worstCaseNano` is what the reservation holds before the call; `actualNano` is what settlement
 * charges from what actually happened. Each term is units x nano-USD per million units, summed exactly
 * (units counted in thousandths, so seconds may be fractional to the millisecond) and rounded once per
 * call: up for the worst case, half up for the actual cost. The actual cost counts at most the units of
 * the request at the request's tier, so it is never above the worst case.
 */
import { tokenCostNano, worstCaseCostNano, type TokenUsage } from './pricing.js';
import { tokenPricesOf, type PriceSheet, type SheetLine } from './price-sheet.js';

/** A call that cannot be priced: unknown tier, missing or bad quantity. The HTTP layer answers 400 naming `field`. */
export class PricingError extends Error {
  override readonly name = 'PricingError';
  /** The call field at fault (`size`, `quality`, `resolution`, `seconds`, `n`, `characters`, …), or `model` when it has no price of that kind. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.field = field;
  }
}

/** `n` images; `size`/`quality`/`resolution`/`mode` pick the tier; `inputImages` are the images sent (edits, references). */
export interface ImageCall {
  readonly kind: 'image';
  readonly n: number;
  readonly size?: string;
  readonly quality?: string;
  readonly resolution?: string;
  readonly mode?: 'generate' | 'edit';
  readonly inputImages?: number;
}

/**
 * A clip of `seconds`; `resolution`, or a `size` that the model's `capabilities.sizes` map turns into one
 * (or that is itself the tier when the sizes are a list); `audio` chooses an audio tier or adds the
 * `audio` add-on; `dynamicRange` (`sdr`/`hdr`) and `mode` pick a tier where priced so.
 */
export interface VideoCall {
  readonly kind: 'video';
  readonly seconds: number;
  readonly resolution?: string;
  readonly size?: string;
  readonly audio?: boolean;
  readonly dynamicRange?: string;
  /** The vendor's quality mode (Kling `std`/`pro`), a price tier where priced so. */
  readonly mode?: string;
}

/**
 * Speech or music: `characters` of input text (per-character models), `seconds` of output at most
 * (per-second models), `inputTokens` and `maxOutputTokens` (token-billed speech). A per-request model
 * needs none of them.
 */
export interface AudioCall {
  readonly kind: 'audio';
  readonly characters?: number;
  readonly seconds?: number;
  readonly inputTokens?: number;
  readonly maxOutputTokens?: number;
}

/** A token-billed call (chat) within its bounds: every input token at the dearest input rate, the full output allowance. */
export interface TokenCall {
  readonly kind: 'tokens';
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number;
}

export type PricedCall = ImageCall | VideoCall | AudioCall | TokenCall;

/** Images delivered. */
export interface ImageOutcome { readonly kind: 'image'; readonly images: number }
/** Seconds generated (a per-clip price charges the clip whatever its length). */
export interface VideoOutcome { readonly kind: 'video'; readonly seconds: number }
/** What was synthesized; a missing figure is the request's own (e.g. all the characters sent). */
export interface AudioOutcome {
  readonly kind: 'audio';
  readonly characters?: number;
  readonly seconds?: number;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}
/** The upstream's token usage. */
export interface TokenOutcome { readonly kind: 'tokens'; readonly usage: TokenUsage }

export type CallOutcome = ImageOutcome | VideoOutcome | AudioOutcome | TokenOutcome;
export type OutcomeOf<C extends PricedCall> = Extract<CallOutcome, { kind: C['kind'] }>;

/** One priced term of a media call: the line that applies and the request's units (at most). */
export interface QuoteTerm {
  readonly component: string;
  readonly tier: string;
  /** Units of the request (images, seconds, characters, clips, requests, tokens). */
  readonly units: number;
  readonly nanoPerMillion: bigint;
  readonly listNanoPerMillion: bigint | null;
}

export interface Quote {
  /** The reservation. */
  readonly worstCaseNano: bigint;
  /** The same call at the vendor's list prices (differs only for a flat-price profile): for display. */
  readonly listNano: bigint;
  /** Empty for a token call (see `tokenCostNano`). */
  readonly terms: readonly QuoteTerm[];
}

const MILLI = 1000n;
/** Units are counted in thousandths and prices are per million units. */
const DIVISOR = 1_000_000_000n;

interface Term {
  readonly line: SheetLine;
  /** Thousandths of a unit the request may use. */
  readonly bound: bigint;
  /** Thousandths of a unit actually used, or undefined for "the bound" (a clip, a request, input images). */
  readonly used: (outcome: CallOutcome) => number | undefined;
  readonly field: string;
}

/** The reservation for `call`. Throws `PricingError` for a call the sheet cannot price. */
export function worstCaseNano(sheet: PriceSheet, call: PricedCall): bigint {
  return quote(sheet, call).worstCaseNano;
}

/** The worst case, the list-price equivalent and the terms of `call`. */
export function quote(sheet: PriceSheet, call: PricedCall): Quote {
  if (call.kind === 'tokens') {
    const worst = worstCaseCostNano(tokenPrices(sheet), whole(call.maxInputTokens, 'maxInputTokens'), whole(call.maxOutputTokens, 'maxOutputTokens'));
    return { worstCaseNano: worst, listNano: worst, terms: [] };
  }
  const terms = plan(sheet, call);
  const sum = (price: (line: SheetLine) => bigint) => terms.reduce((total, term) => total + term.bound * price(term.line), 0n);
  return {
    worstCaseNano: divideUp(sum((line) => line.nanoPerMillion)),
    listNano: divideUp(sum((line) => line.listNanoPerMillion ?? line.nanoPerMillion)),
    terms: terms.map((term) => ({
      component: term.line.component, tier: term.line.tier, units: Number(term.bound) / 1000,
      nanoPerMillion: term.line.nanoPerMillion, listNanoPerMillion: term.line.listNanoPerMillion,
    })),
  };
}

/**
 * The cost of `call` given what happened: each term's units as reported (never more than the request's),
 * at the request's tier, rounded half up once. Never above `worstCaseNano` of the same call.
 */
export function actualNano<C extends PricedCall>(sheet: PriceSheet, call: C, outcome: OutcomeOf<C>): bigint {
  if (outcome.kind !== call.kind) throw new PricingError('kind', `a ${outcome.kind} outcome for a ${call.kind} call`);
  if (call.kind === 'tokens') {
    const prices = tokenPrices(sheet);
    const worst = worstCaseCostNano(prices, whole(call.maxInputTokens, 'maxInputTokens'), whole(call.maxOutputTokens, 'maxOutputTokens'));
    const cost = tokenCostNano(prices, (outcome as TokenOutcome).usage);
    return cost < worst ? cost : worst;
  }
  const total = plan(sheet, call).reduce((sum, term) => {
    const reported = term.used(outcome);
    const used = reported === undefined ? term.bound : milli(reported, term.field);
    return sum + (used < term.bound ? used : term.bound) * term.line.nanoPerMillion;
  }, 0n);
  return (total * 2n + DIVISOR) / (DIVISOR * 2n);
}

function divideUp(total: bigint): bigint {
  return (total + DIVISOR - 1n) / DIVISOR;
}

function whole(value: number | undefined, field: string): number {
  if (value === undefined || !Number.isSafeInteger(value) || value < 0) throw new PricingError(field, `${field} must be a whole number, 0 or more`);
  return value;
}

/** A non-negative quantity in thousandths of a unit (seconds to the millisecond). */
function milli(value: number | undefined, field: string): bigint {
  if (value === undefined || !Number.isFinite(value) || value < 0) throw new PricingError(field, `${field} must be a number, 0 or more`);
  return BigInt(Math.round(value * 1000));
}

function tokenPrices(sheet: PriceSheet) {
  const has = (component: string) => sheet.lines.some((line) => line.component === component);
  if (!has('input_token') || !(has('output_token') || has('audio_output_token'))) {
    throw new PricingError('model', `${sheet.modelId} has no token prices`);
  }
  return tokenPricesOf(sheet);
}

// ---- tiers ----

type Params = Record<string, { value: string; field: string }>;

function conditionsOf(tier: string): [string, string][] {
  return tier === '' ? [] : tier.split(',').map((pair) => pair.split('=') as [string, string]);
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const fits = (line: SheetLine, params: Params) => conditionsOf(line.tier).every(([key, value]) => params[key] === undefined || same(params[key].value, value));
const dearer = (a: SheetLine, b: SheetLine) => (b.nanoPerMillion > a.nanoPerMillion ? 1 : b.nanoPerMillion < a.nanoPerMillion ? -1 : 0);

const linesOf = (sheet: PriceSheet, component: string) =>
  sheet.lines.filter((line) => line.component === component && !line.tier.startsWith('prompt>'));

/**
 * The line of `component` for the call's parameters. A line fits when none of its conditions contradicts
 * a parameter (values compared case-insensitively: `768P` is `768p`). When every condition of every fitting
 * line is set by the call, the most specific one applies, so a line with fewer conditions (down to the
 * base tier `''`) is the fallback; when a fitting line depends on a parameter the call left open, the
 * dearest fitting line applies (the reservation must cover whatever the upstream picks). No fitting line:
 * `PricingError` naming the parameter that rules the last candidates out.
 */
function lineFor(sheet: PriceSheet, component: string, params: Params): SheetLine {
  const lines = linesOf(sheet, component);
  if (lines.length === 0) throw new PricingError('model', `${sheet.modelId} has no ${component} price`);
  const fitting = lines.filter((line) => fits(line, params));
  if (fitting.length === 0) {
    let candidates = lines;
    for (const key of Object.keys(params).sort()) {
      const next = candidates.filter((line) => fits(line, { [key]: params[key]! }));
      if (next.length === 0) {
        const priced = [...new Set(candidates.flatMap((line) => conditionsOf(line.tier).filter(([k]) => k === key).map(([, v]) => v)))];
        throw new PricingError(params[key]!.field,
          `${sheet.modelId} has no ${component} price for ${key} ${params[key]!.value}${priced.length ? ` (priced: ${priced.join(', ')})` : ''}`);
      }
      candidates = next;
    }
    throw new PricingError('model', `${sheet.modelId} has no ${component} price for this call`);
  }
  const open = fitting.some((line) => conditionsOf(line.tier).some(([key]) => params[key] === undefined));
  if (open) return [...fitting].sort(dearer)[0]!;
  return [...fitting].sort((a, b) => conditionsOf(b.tier).length - conditionsOf(a.tier).length || dearer(a, b))[0]!;
}

function set(params: Params, key: string, value: string | undefined, field: string): void {
  if (value !== undefined) params[key] = { value, field };
}

const stringCapability = (sheet: PriceSheet, name: string) => {
  const value = sheet.capabilities[name];
  return typeof value === 'string' ? value : undefined;
};

// ---- plans: the terms of each kind of call ----

function plan(sheet: PriceSheet, call: ImageCall | VideoCall | AudioCall): Term[] {
  switch (call.kind) {
    case 'image': return imagePlan(sheet, call);
    case 'video': return videoPlan(sheet, call);
    case 'audio': return audioPlan(sheet, call);
  }
}

function imagePlan(sheet: PriceSheet, call: ImageCall): Term[] {
  const n = whole(call.n, 'n');
  const maxN = sheet.capabilities.maxN;
  if (n < 1 || (typeof maxN === 'number' && n > maxN)) throw new PricingError('n', `n must be between 1 and ${typeof maxN === 'number' ? maxN : 'the model maximum'}`);
  const params: Params = {};
  set(params, 'size', call.size ?? stringCapability(sheet, 'defaultSize'), 'size');
  set(params, 'quality', call.quality ?? stringCapability(sheet, 'defaultQuality'), 'quality');
  set(params, 'resolution', call.resolution ?? stringCapability(sheet, 'defaultResolution'), 'resolution');
  set(params, 'mode', call.mode, 'mode');
  const terms: Term[] = [{
    line: lineFor(sheet, 'image', params), bound: BigInt(n) * MILLI, field: 'images',
    used: (outcome) => (outcome as ImageOutcome).images,
  }];
  const inputs = whole(call.inputImages ?? 0, 'inputImages');
  // `input_image`: every image sent; `reference_image`: every reference beyond the first (the base price includes one).
  for (const [component, units] of [['input_image', inputs], ['reference_image', Math.max(0, inputs - 1)]] as const) {
    if (units > 0 && linesOf(sheet, component).length > 0) {
      terms.push({ line: lineFor(sheet, component, params), bound: BigInt(units) * MILLI, field: 'inputImages', used: () => undefined });
    }
  }
  return terms;
}

/** The resolution tier of a video call: its `resolution`, or its `size` through a `sizes` map, or the model's default. */
function videoParams(sheet: PriceSheet, call: VideoCall): Params {
  const params: Params = {};
  const sizes = sheet.capabilities.sizes;
  const sizeMap = sizes !== null && typeof sizes === 'object' && !Array.isArray(sizes) ? sizes as Record<string, unknown> : undefined;
  const size = call.size ?? (call.resolution === undefined ? stringCapability(sheet, 'defaultSize') : undefined);
  if (size !== undefined && sizeMap) {
    const mapped = sizeMap[size];
    if (typeof mapped !== 'string') throw new PricingError('size', `${sheet.modelId} has no size ${size} (sizes: ${Object.keys(sizeMap).join(', ')})`);
    if (call.resolution !== undefined && !same(call.resolution, mapped)) {
      throw new PricingError('size', `size ${size} is ${mapped}, not the resolution ${call.resolution} asked for`);
    }
    set(params, 'resolution', mapped, 'size');
  } else {
    set(params, 'size', size, 'size');
    set(params, 'resolution', call.resolution ?? stringCapability(sheet, 'defaultResolution'), 'resolution');
  }
  if (call.audio !== undefined) set(params, 'audio', String(call.audio), 'audio');
  set(params, 'dynamic_range', call.dynamicRange, 'dynamicRange');
  set(params, 'mode', call.mode, 'mode');
  return params;
}

function videoPlan(sheet: PriceSheet, call: VideoCall): Term[] {
  const seconds = milli(call.seconds, 'seconds');
  if (seconds === 0n) throw new PricingError('seconds', 'seconds must be more than 0');
  const params = videoParams(sheet, call);
  const clip = (component: string, clipParams: Params): Term =>
    ({ line: lineFor(sheet, component, clipParams), bound: MILLI, field: 'seconds', used: () => undefined });
  const terms: Term[] = [];
  if (linesOf(sheet, 'video_second').length > 0) {
    terms.push({ line: lineFor(sheet, 'video_second', params), bound: seconds, field: 'seconds', used: (outcome) => (outcome as VideoOutcome).seconds });
  } else if (linesOf(sheet, 'video').length > 0) {
    // A per-clip price is tiered by the clip's length: the duration must be one the model prices.
    terms.push(clip('video', { ...params, duration: { value: String(call.seconds), field: 'seconds' } }));
  } else {
    throw new PricingError('model', `${sheet.modelId} has no video price`);
  }
  if (call.audio === true && linesOf(sheet, 'audio').length > 0) terms.push(clip('audio', params));
  return terms;
}

function audioPlan(sheet: PriceSheet, call: AudioCall): Term[] {
  const terms: Term[] = [];
  const has = (component: string) => linesOf(sheet, component).length > 0;
  const per = (component: string, field: keyof Omit<AudioCall, 'kind'>, reported: keyof Omit<AudioOutcome, 'kind'>, bound: bigint) =>
    terms.push({ line: lineFor(sheet, component, {}), bound, field, used: (outcome) => (outcome as AudioOutcome)[reported] });
  if (has('audio_character')) per('audio_character', 'characters', 'characters', BigInt(whole(call.characters, 'characters')) * MILLI);
  if (has('audio_second')) {
    const seconds = milli(call.seconds, 'seconds');
    per('audio_second', 'seconds', 'seconds', seconds);
  }
  if (has('input_token')) per('input_token', 'inputTokens', 'inputTokens', BigInt(whole(call.inputTokens, 'inputTokens')) * MILLI);
  if (has('audio_output_token')) per('audio_output_token', 'maxOutputTokens', 'outputTokens', BigInt(whole(call.maxOutputTokens, 'maxOutputTokens')) * MILLI);
  if (has('request')) terms.push({ line: lineFor(sheet, 'request', {}), bound: MILLI, field: 'request', used: () => undefined });
  if (terms.length === 0) throw new PricingError('model', `${sheet.modelId} has no audio price`);
  return terms;
}
