// Black Forest Labs' submit request: validation with FastAPI's 422 shape (every bad field listed,
// `{"detail":[{"loc","msg","type"}]}`) and the credits a task costs. Pure, no I/O.

export interface BflRequest {
  prompt: string;
  width: number | undefined;
  height: number | undefined;
  seed: number | undefined;
  /** input_image, input_image_2 … input_image_8 that were given, in that order. */
  inputImages: string[];
}

export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/**
 * Credits per task (1 credit = US$0.01), as BFL prices them: FLUX.2 by megapixel (the first output
 * MP, each further output MP, each input MP), FLUX.1 a flat price per image.
 */
type Price = { firstMp: number; perMp: number } | { flat: number };
const PRICES: ReadonlyMap<string, Price> = new Map<string, Price>([
  ['flux-2-pro', { firstMp: 3, perMp: 1.5 }],
  ['flux-2-pro-preview', { firstMp: 3, perMp: 1.5 }],
  ['flux-2-max', { firstMp: 7, perMp: 3 }],
  ['flux-2-flex', { firstMp: 6, perMp: 6 }],
  ['flux-2-klein-4b', { firstMp: 1.4, perMp: 0.1 }],
  ['flux-2-klein-9b', { firstMp: 1.5, perMp: 0.2 }],
  ['flux-kontext-pro', { flat: 4 }],
  ['flux-kontext-max', { flat: 8 }],
  ['flux-pro-1.1', { flat: 4 }],
  ['flux-pro-1.1-ultra', { flat: 6 }],
  ['flux-pro', { flat: 5 }],
  ['flux-dev', { flat: 2.5 }],
]);

export const isBflModel = (model: string): boolean => PRICES.has(model);

const INPUT_IMAGE_FIELDS = ['input_image', ...[2, 3, 4, 5, 6, 7, 8].map((i) => `input_image_${i}`)];
const MIN_SIDE = 64;
const SIDE_STEP = 32;
const MAX_SAFETY_TOLERANCE = 6;
/** Without width or height the mock assumes 1024 (BFL picks about one megapixel, or the input's size). */
const DEFAULT_SIDE = 1024;

const fieldError = (field: string, msg: string, type: string): FieldError => ({ loc: ['body', field], msg, type });

export const jsonDecodeError: FieldError[] = [{ loc: ['body', 0], msg: 'JSON decode error', type: 'json_invalid' }];

const present = (value: unknown): boolean => value !== undefined && value !== null;

function checkInteger(body: Record<string, unknown>, field: string, errors: FieldError[]): number | undefined {
  const value = body[field];
  if (!present(value)) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    errors.push(fieldError(field, 'Input should be a valid integer', 'int_type'));
    return undefined;
  }
  return value;
}

function checkSide(body: Record<string, unknown>, field: 'width' | 'height', errors: FieldError[]): number | undefined {
  const side = checkInteger(body, field, errors);
  if (side === undefined) return undefined;
  if (side < MIN_SIDE) errors.push(fieldError(field, `Input should be greater than or equal to ${MIN_SIDE}`, 'greater_than_equal'));
  else if (side % SIDE_STEP !== 0) errors.push(fieldError(field, `Input should be a multiple of ${SIDE_STEP}`, 'multiple_of'));
  return side;
}

export function parseBflRequest(body: unknown): BflRequest | FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return [{ loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }];
  }
  const req = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  if (!present(req.prompt)) errors.push(fieldError('prompt', 'Field required', 'missing'));
  else if (typeof req.prompt !== 'string') errors.push(fieldError('prompt', 'Input should be a valid string', 'string_type'));
  else if (req.prompt === '') errors.push(fieldError('prompt', 'String should have at least 1 character', 'string_too_short'));
  const inputImages: string[] = [];
  for (const field of INPUT_IMAGE_FIELDS) {
    const value = req[field];
    if (typeof value === 'string') inputImages.push(value);
    else if (present(value)) errors.push(fieldError(field, 'Input should be a valid string', 'string_type'));
  }
  const width = checkSide(req, 'width', errors);
  const height = checkSide(req, 'height', errors);
  const seed = checkInteger(req, 'seed', errors);
  const tolerance = checkInteger(req, 'safety_tolerance', errors);
  if (tolerance !== undefined && (tolerance < 0 || tolerance > MAX_SAFETY_TOLERANCE)) {
    errors.push(fieldError('safety_tolerance', `Input should be between 0 and ${MAX_SAFETY_TOLERANCE}`, tolerance < 0 ? 'greater_than_equal' : 'less_than_equal'));
  }
  if (present(req.aspect_ratio) && (typeof req.aspect_ratio !== 'string' || !/^\d+:\d+$/.test(req.aspect_ratio))) {
    errors.push(fieldError('aspect_ratio', "String should match pattern '^\\d+:\\d+$'", 'string_pattern_mismatch'));
  }
  if (present(req.output_format) && req.output_format !== 'jpeg' && req.output_format !== 'png') {
    errors.push(fieldError('output_format', "Input should be 'jpeg' or 'png'", 'enum'));
  }
  if (present(req.prompt_upsampling) && typeof req.prompt_upsampling !== 'boolean') {
    errors.push(fieldError('prompt_upsampling', 'Input should be a valid boolean', 'bool_type'));
  }
  if (errors.length > 0) return errors;
  return { prompt: req.prompt as string, width, height, seed, inputImages };
}

export interface BflCost {
  cost: number;
  inputMp: number;
  outputMp: number;
}

/**
 * The mock's megapixel rule: output MP = width x height / 2^20 rounded up (so 1024x1024 is exactly
 * 1 MP), each input image counts 1 MP (the mock does not look inside it).
 */
export function bflCost(model: string, request: BflRequest): BflCost {
  const price = PRICES.get(model);
  if (price === undefined) throw new Error(`unknown BFL model ${model}`);
  const pixels = (request.width ?? DEFAULT_SIDE) * (request.height ?? DEFAULT_SIDE);
  const outputMp = Math.max(1, Math.ceil(pixels / (1024 * 1024)));
  const inputMp = request.inputImages.length;
  const credits = 'flat' in price ? price.flat : price.firstMp + (outputMp - 1 + inputMp) * price.perMp;
  // Whole hundredths of a credit: 1.4 + 0.1 must not report 1.5000000000000002.
  return { cost: Math.round(credits * 100) / 100, inputMp, outputMp };
}
