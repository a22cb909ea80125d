import * as v from 'valibot';
import { BYOK_PROVIDERS } from '../../store/byok.js';
import { httpsUrlProblem, readCloudForm, type ByokCloudProvider, type CloudForm, type FormProblem } from '../../providers/cloud/forms.js';
import { chosenAddresses, firstAddressProblem } from '../../providers/byok-addresses.js';
import { ApiError } from '../errors.js';
import { singleLine } from './text.js';

export const MAX_LABEL = 100;
export const MAX_API_KEY = 4096;
export const MAX_BASE_URL = 2048;
export const MAX_CONFIG_BYTES = 16 * 1024;
export const MIN_PRIORITY = -1000;
export const MAX_PRIORITY = 1000;

const providerList = BYOK_PROVIDERS.map((p) => `'${p}'`).join(', ');
export const provider = v.picklist(BYOK_PROVIDERS, `must be one of ${providerList}`);

/** Code points, as Postgres's char_length counts them. */
const codePoints = (text: string): number => Array.from(text).length;

const label = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.check((text) => codePoints(text) >= 1, 'must not be empty'),
  v.check((text) => codePoints(text) <= MAX_LABEL, `must be at most ${MAX_LABEL} characters`),
  singleLine(),
);

// Surrounding whitespace (a copy-and-paste artefact) is dropped; the rest is kept byte for byte. It goes
// upstream in a header, where a line break or other control character can never be sent.
const apiKey = v.pipe(
  v.string('must be a string'), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(MAX_API_KEY, `must be at most ${MAX_API_KEY} characters`),
  singleLine('must not contain line breaks or other control characters'),
);

const baseUrl = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.maxLength(MAX_BASE_URL, `must be at most ${MAX_BASE_URL} characters`),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = httpsUrlProblem(dataset.value);
    if (problem) addIssue({ message: problem });
  }),
);

const configJson = v.pipe(
  v.custom<Record<string, unknown>>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be a JSON object'),
  v.check((config) => Buffer.byteLength(JSON.stringify(config)) <= MAX_CONFIG_BYTES, `must be at most ${MAX_CONFIG_BYTES} bytes as JSON`),
);

/** The spec clamps instead of refusing: any finite number, clamped to [-1000, 1000], then rounded to the nearest integer (Math.round: 2.5 -> 3, -2.5 -> -2). */
export function clampPriority(value: number): number {
  return Math.round(Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, value)));
}
const priority = v.pipe(v.number('must be a number'), v.finite('must be a finite number'), v.transform(clampPriority));

const flag = v.boolean('must be a boolean');

/** Create body of POST /api/v1/byok; violations are 422 naming the field. The api_key-or-config rule is checked by the route. */
export const CreateByokSchema = v.strictObject({
  provider,
  label,
  api_key: v.optional(apiKey),
  base_url: v.optional(baseUrl),
  config_json: v.optional(configJson),
  always_use: v.optional(flag, false),
  disabled: v.optional(flag, false),
  priority: v.optional(priority, 0),
});

/**
 * Update body of PUT /api/v1/byok/{id}: any subset; an omitted field stays as it is. `null` clears
 * `base_url` and `config_json`, and `api_key` when config_json carries the credential. `provider`
 * is fixed at creation (an unknown field here).
 */
export const UpdateByokSchema = v.strictObject({
  label: v.optional(label),
  api_key: v.optional(v.nullable(apiKey)),
  base_url: v.optional(v.nullable(baseUrl)),
  config_json: v.optional(v.nullable(configJson)),
  always_use: v.optional(flag),
  disabled: v.optional(flag),
  priority: v.optional(priority),
});

/**
 * The cloud form a row's config_json holds (README "Cloud credential forms") must be complete: a 422
 * naming the first missing or wrong field (`config_json.region`, `api_key`, ...). A cloud form takes
 * its host from config_json (`endpoint_url`, or the region), so a `base_url` beside it is refused.
 */
export function checkCloudForm(provider: ByokCloudProvider, config: Record<string, unknown> | null, hasApiKey: boolean, baseUrl: string | null): CloudForm | undefined {
  const read = readCloudForm(provider, config, hasApiKey);
  if ('problem' in read) throw invalidField(read.problem);
  if (read.form && baseUrl !== null) {
    throw new ApiError(422, 'validation_error', "Invalid value for 'base_url': not used with a cloud form in config_json; set config_json.endpoint_url instead.", 'base_url');
  }
  return read.form;
}

/**
 * The addresses the row would connect to (its `base_url`, or its cloud form's endpoint and token
 * URI) must be on the public internet, and a cloud form's on that cloud's own hosts: a 422 naming
 * the first that is not (docs/byok.md "Addresses a row may name").
 */
export async function checkAddresses(baseUrl: string | null, form: CloudForm | undefined, allowLoopback: boolean): Promise<void> {
  const problem = await firstAddressProblem(chosenAddresses(baseUrl, form), allowLoopback);
  if (problem) throw invalidField(problem);
}

const invalidField = (problem: FormProblem) => new ApiError(422, 'validation_error', `Invalid value for '${problem.field}': ${problem.message}.`, problem.field);
