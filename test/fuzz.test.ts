// Property-based fuzzing of the whole HTTP surface (every route of src/http/app.ts) through real HTTP
// against one gateway and the mock vendor: generated bodies (valid ones, mutated ones, raw garbage:
// truncated JSON, duplicate keys, exponent forms and numbers JSON cannot hold exactly, deep nesting,
// invalid UTF-8, NUL, lone surrogates, RTL, emoji), headers (content types, authorization garbage,
// forged JWTs), query strings and path ids. Asserts: no 5xx, no dropped connection, every error in
// the documented envelope, no "unexpected error" logged, and a valid chat call still works after.
//
// Replay a failure with the seed and path it prints:
//   FUZZ_SEED=<seed> FUZZ_PATH=<path> npx tap dist/test/fuzz.test.js
// Other knobs: FUZZ_CASES (default 10000), FUZZ_CONCURRENCY (requests in flight, default 32),
// FUZZ_TIME_LIMIT_MS (stop generating after this long, default 150000), FUZZ_SHRINK=1 (shrink a
// failing batch instead of stopping at it; slow: every shrink step is real HTTP), FUZZ_VERBOSE=1
// (statuses and error codes per route), FUZZ_LOG=<file> (the gateway's log, written at the end).
import t from 'tap';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import { mkdtemp, rm } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, fastUser, forgeJwt, mintToken } from './helpers/http-tools.js';
import { errorType } from '../src/http/errors.js';
import { vendorHintUrl } from '../src/tasks/vendor-hints.js';

const CASES = Number(process.env.FUZZ_CASES ?? 10_000);
const BATCH = Number(process.env.FUZZ_CONCURRENCY ?? 32);
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? 150_000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const REPLAY_PATH = process.env.FUZZ_PATH;
const SHRINK = process.env.FUZZ_SHRINK === '1';
const VERBOSE = process.env.FUZZ_VERBOSE === '1';

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG = Buffer.from(PNG_B64, 'base64');
const PNG_URI = `data:image/png;base64,${PNG_B64}`;
/** Loopback https: the URL guard takes it in tests (FETCH_ALLOW_LOOPBACK), nothing listens there, so a fetch fails at once. */
const REF = 'https://localhost/reference.png';
const KEY_SECRET = 'fuzz-key-secret-0123456789-0123456789-abcdef';
const MAX_BODY_BYTES = 1024 * 1024;
const MEDIA_MAX_BYTES = 64 * 1024;
const CALLBACK_URLS = ['https://localhost/cb', 'http://127.0.0.1:1/cb', 'https://10.0.0.1/cb', 'http://example.com/cb', 'https://[::1]/cb', 'https://localhost:0/cb', 'https://localhost/cb#frag'];

/**
 * Ids of the tasks the fuzz itself created (from their 200 answers), so reads and cancels also hit
 * tasks in every state. Generation reads it as it grows: a replay regenerates the same choices, not
 * necessarily the same ids.
 */
const liveTasks: string[] = [];

// ---- JSON text with what JSON.stringify cannot write ----

/** A JSON token written as is: `1e3`, `1e400`, `-0.0`, or a whole nested text. */
class Raw {
  constructor(readonly text: string) {}
  toString(): string { return `Raw(${this.text.length > 60 ? `${this.text.slice(0, 60)}…` : this.text})`; }
}
/** An object written with its pairs as given, duplicate keys included. */
class Pairs {
  constructor(readonly pairs: readonly (readonly [string, Json])[]) {}
}
type Json = Raw | Pairs | null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json | undefined };
type Fields = Record<string, Json | undefined>;

function jsonText(value: Json): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Pairs) return `{${value.pairs.map(([key, item]) => `${JSON.stringify(key)}:${jsonText(item)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const parts: string[] = [];
    for (const [key, item] of Object.entries(value)) if (item !== undefined) parts.push(`${JSON.stringify(key)}:${jsonText(item)}`);
    return `{${parts.join(',')}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  return JSON.stringify(value); // a lone surrogate comes out as its \udXXX escape
}

// ---- leaves ----

const EDGE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', '\udc00', 'x\ud83d', '\ude00y', '\ud83d\ude00', '👍🏽', '👨‍👩‍👧', '\u202eevil\u202c', 'مرحبا بالعالم', 'שלום',
  '\u200b', '\ufeff', '\uffff', '\ufffd', '\t', '\n', '\r\n', 'a\u0001b', '\u007f', '\u0085', '\u2028', 'é', 'e\u0301', 'İ', 'ß', '𝔘𝔫𝔦',
  'null', 'true', 'false', 'NaN', 'Infinity', '-Infinity', '1e3', '1E3', '0x10', '1_000', ' 1', '1 ', '-0', '00', '0', '-1', '1.5', '١٢٣',
  '%00', '%ff', '%', '../../etc/passwd', '<script>alert(1)</script>', "' OR 1=1 --", '${jndi:ldap://x}', '{{7*7}}', '\\', '"', '\\u0000',
  'a'.repeat(257), 'ä'.repeat(1001), '😀'.repeat(1600),
];
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const text: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...EDGE_STRINGS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 2, arbitrary: fc.string({ unit: anyUnit, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('z'.repeat(3_000), 'z'.repeat(20_000), 'lorem ipsum dolor '.repeat(20_000), 'lorem ipsum dolor '.repeat(70_000)) },
);
const RAW_NUMBERS = ['1e3', '1E3', '1e+3', '1.0e3', '100e-2', '1e400', '-1e400', '1e-400', '-0.0', '1.0', '5.000', '9007199254740993', '123456789012345678901234567890', '0e0', '2e0', '1E-7', '-0'];
const number: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(0, 1, -1, 2, 5, 6, 10, 0.5, 1.5, -2.5, 100, 1000, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, 2 ** 53, 1e15, 1e21, 1e300, -1e300, 5e-324, Number.MAX_VALUE, 1e-7, 1e-9, 1e-10, 0.1 + 0.2),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(...RAW_NUMBERS).map((token) => new Raw(token)),
);
const nested: fc.Arbitrary<Json> = fc.tuple(fc.constantFrom(3, 127, 128, 129, 130, 2_000, 100_000), fc.boolean()).map(([depth, arrays]) =>
  new Raw(arrays ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`));

/** Anything JSON can hold, and a few things it holds awkwardly. */
const anything: fc.Arbitrary<Json> = fc.letrec<{ value: Json; array: Json[]; object: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: text },
    { weight: 3, arbitrary: number },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: nested },
    { weight: 2, arbitrary: tie('array') },
    { weight: 2, arbitrary: tie('object') },
  ),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(text, tie('value'), { maxKeys: 4 }) as fc.Arbitrary<Json>,
})).value;

// ---- bodies: a valid template, then mutations, or raw garbage ----

type Mutation =
  | { kind: 'set'; key: string; value: Json }
  | { kind: 'delete'; key: string }
  | { kind: 'duplicate'; key: string; value: Json }
  /** Replaces the value at a path inside the body: each step picks a child (index modulo the children). */
  | { kind: 'deep'; steps: number[]; value: Json };

const mutation = (keys: readonly string[]): fc.Arbitrary<Mutation> => {
  const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: text });
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), key, value: anything }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), key }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('duplicate' as const), key, value: anything }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('deep' as const), steps: fc.array(fc.nat(), { minLength: 2, maxLength: 5 }), value: anything }) },
  );
};

const isContainer = (value: unknown): value is Json[] | Record<string, Json> =>
  typeof value === 'object' && value !== null && !(value instanceof Raw) && !(value instanceof Pairs);

/** A copy of `root` with the value at the path `steps` chooses replaced (the path ends where the body has no deeper children). */
function replaceDeep(root: Json, steps: readonly number[], value: Json): Json {
  if (!isContainer(root) || steps.length === 0) return value;
  const keys = Array.isArray(root) ? root.map((_, i) => i) : Object.keys(root);
  if (keys.length === 0) return value;
  const key = keys[steps[0]! % keys.length]!;
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[key as number] = replaceDeep(root[key as number]!, steps.slice(1), value);
    return copy;
  }
  return { ...root, [key]: replaceDeep((root as Record<string, Json>)[key as string]!, steps.slice(1), value) };
}

function mutate(fields: Fields, mutations: readonly Mutation[]): Json {
  let body: Json = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Record<string, Json>;
  for (const change of mutations) if (change.kind === 'deep') body = replaceDeep(body, change.steps, change.value);
  if (!isContainer(body) || Array.isArray(body)) return body;
  const pairs: [string, Json][] = Object.entries(body);
  for (const change of mutations) {
    if (change.kind === 'deep') continue;
    const at = pairs.findIndex(([key]) => key === change.key);
    if (change.kind === 'delete') {
      if (at !== -1) pairs.splice(at, 1);
    } else if (change.kind === 'set') {
      if (at === -1) pairs.push([change.key, change.value]);
      else pairs[at] = [change.key, change.value];
    } else {
      pairs.push([change.key, change.value]);
    }
  }
  return new Pairs(pairs);
}

const RAW_BODIES = [
  '', ' ', 'null', '[]', '[{}]', '"x"', '1', 'true', '{', '{"a":', '{"a":1,}', '{"model":"x"', ' {} ', '\ufeff{}', '{}garbage', '{"a":1}{"b":2}',
  '{"a":NaN}', '{"a":Infinity}', '{"a":-Infinity}', '{"a":01}', '{"a":.5}', '{"a":+1}', '{"a":0x10}', "{'a':1}", '{"a":"\\u00"}', '{"a":"\\x41"}',
  '{"a":"\u0001"}', '{a:1}', '{"a":1 /* c */}', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{}}}',
];

/** Raw bytes: invalid UTF-8 inside an otherwise plausible body, or anything. */
const invalidUtf8 = fc.tuple(fc.constantFrom('{"model":"', '{"name":"', '{"code":"', '{"prompt":"', '{"'), fc.uint8Array({ minLength: 1, maxLength: 16 }))
  .map(([head, bytes]) => Buffer.concat([Buffer.from(head), Buffer.from([0xff, ...bytes, 0xc3]), Buffer.from('"}')]));

type Body = string | Buffer;

/** Field names a mutation may touch besides the template's own: fields of other endpoints, stateful ones, prototype names. */
const OTHER_KEYS = ['model', 'previous_response_id', 'conversation', 'background', 'input', 'messages', 'prompt', 'seed', 'n', 'stream', 'callback_url', '__proto__', 'constructor', ''];

function bodyOf(template: fc.Arbitrary<Fields>): fc.Arbitrary<Body> {
  return template.chain((valid) => {
    const keys = [...Object.keys(valid), ...OTHER_KEYS];
    const validText = jsonText(valid as Json);
    return fc.oneof(
      { weight: 6, arbitrary: fc.constant(validText) },
      { weight: 10, arbitrary: fc.array(mutation(keys), { minLength: 1, maxLength: 3 }).map((changes) => jsonText(mutate(valid, changes))) },
      { weight: 1, arbitrary: fc.nat({ max: Math.max(0, validText.length - 1) }).map((cut) => validText.slice(0, cut)) },
      { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES) },
      { weight: 1, arbitrary: anything.map(jsonText) },
      { weight: 1, arbitrary: invalidUtf8 },
    );
  });
}

// ---- URLs: every character outside the safe set percent-encoded (undici refuses the rest) ----

/** Percent-encodes `value` as UTF-8, lone surrogates as their CESU-8 bytes (which are not UTF-8: a server must refuse them). */
function percentEncode(value: string, keep = /[A-Za-z0-9\-._~]/): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const char = value[i]!;
    const code = value.charCodeAt(i);
    if (keep.test(char)) { out += char; continue; }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length && value.charCodeAt(i + 1) >= 0xdc00 && value.charCodeAt(i + 1) <= 0xdfff) {
      out += encodeURIComponent(value.slice(i, i + 2));
      i++;
      continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
      continue;
    }
    out += encodeURIComponent(char);
  }
  return out;
}

const RAW_SEGMENTS = ['%00', '%ff', '%FF%FE', '%ed%a0%80', '%c0%af', '%e2%82', '%', '%zz', '%2F', '%2f..%2f', '..', '.', '%2e%2e', 'a%2Fb', '1e3', '-1', 'NaN', '0', '9'.repeat(40), '%20', '+', '%0a', '%7f', '%C2%85'];
const segment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
  { weight: 3, arbitrary: text.filter((value) => value.length < 2_000).map((value) => percentEncode(value)) },
  { weight: 1, arbitrary: fc.constantFrom(1_500, 6_000).map((n) => 'a'.repeat(n)) },
);
const QUERY_VALUES = [
  '%ff', '%00', '%zz', '%', '%e2%82', '%c0%af', '%ed%a0%80', '+', '%2B', '1e3', '-1', '0', '1', '2', '20', '100', '101', '1.5', '%EF%BC%91', '%D9%A1', '+1',
  '0x10', 'NaN', 'true', 'false', 'TRUE', 'chat', 'image', 'video', 'audio', 'OpenAI', 'openai', 'anthropic', 'google', 'Moonshot+AI', 'Moonshot%20AI', '', '%0a', '%09',
  'seeda', 'gpt', '!!!', 'a%00b', '99999999999999999999', '01', '1%00',
];
const queryValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...QUERY_VALUES) },
  { weight: 2, arbitrary: text.filter((value) => value.length < 1_000).map((value) => percentEncode(value)) },
  { weight: 1, arbitrary: fc.integer().map(String) },
);
const queryOf = (names: readonly string[]) => fc.array(
  fc.tuple(fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: segment }), queryValue, fc.boolean()),
  { maxLength: 4 },
).map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([name, value, bare]) => (bare && value === '' ? name : `${name}=${value}`)).join('&')}`));

// ---- headers ----

const CONTENT_TYPES = [
  'application/json', 'application/json', 'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=latin1',
  ' application/json ', 'application/json;;', 'application/jsonx', 'text/json', 'text/plain', '', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz', 'multipart/form-data', 'image/png', 'application/octet-stream', '*/*',
];
/** Printable text a header may carry (undici refuses controls but tab). */
const headerText = fc.string({ unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((code) => String.fromCharCode(code)), maxLength: 60 });

/** `X-Forwarded-For` values: the gateway trusts 127.0.0.1 here, and the management key has an ip_whitelist, so they are parsed. */
const FORWARDED_FOR = ['10.1.2.3', '10.1.2.3, 127.0.0.1', '8.8.8.8', '8.8.8.8, 10.0.0.1', '::1', '::ffff:10.0.0.1', 'garbage', ',,,', ' ', '1.2.3.4.5', '[::1]:80', '300.0.0.1', '10.0.0.1:443', 'unknown, 127.0.0.1'];

type AuthKind = 'key' | 'jwt' | 'either' | 'none';

interface Credentials {
  /** The inference user's key (credits; only ever sent to /v1 and media routes). */
  readonly key: string;
  /** The management user's JWT and key (every /api/v1 mutation is theirs). */
  readonly jwt: string;
  readonly managementKey: string;
}

function authorizationFor(kind: AuthKind, creds: Credentials): fc.Arbitrary<string | undefined> {
  const valid = kind === 'key' ? fc.constant(`Bearer ${creds.key}`)
    : kind === 'jwt' ? fc.constant(`Bearer ${creds.jwt}`)
      : kind === 'either' ? fc.constantFrom(`Bearer ${creds.jwt}`, `Bearer ${creds.managementKey}`)
        : fc.constant(undefined);
  const now = Math.floor(Date.now() / 1000);
  const own = kind === 'key' ? creds.key : creds.managementKey;
  const forged = [
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-manage@example.com', exp: now - 10 }),
    forgeJwt('not-the-secret-000000000000000000000000', { sub: 'fuzz-manage@example.com', exp: now + 3600 }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz\u0000user', exp: now + 3600 }),
    forgeJwt(TEST_JWT_SECRET, { sub: 42, exp: now + 3600 }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-manage@example.com' }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-manage@example.com', exp: 1e300 }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-manage@example.com', exp: '9999999999' }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-manage@example.com', exp: now + 3600, nbf: now + 3000 }),
    forgeJwt(TEST_JWT_SECRET, { sub: 'x'.repeat(129), exp: now + 3600 }),
    forgeJwt(TEST_JWT_SECRET, { sub: `fuzz-new-${now}`, exp: now + 3600 }),
    // Valid tokens whose `email` claim (kept as the account's address) is hostile.
    ...['alerts@example.com', 'a\u0000@example.com', '\ud800@example.com', 'a@example.com\n', `${'x'.repeat(300)}@example.com`, 42, { a: 1 }]
      .map((email) => forgeJwt(TEST_JWT_SECRET, { sub: 'fuzz-email@example.com', exp: now + 3600, email })),
    `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'fuzz-manage@example.com', exp: now + 3600 })).toString('base64url')}.`,
    'a.b.c', '..', 'eyJ.eyJ.', `${creds.jwt}x`, `${creds.jwt.split('.').slice(0, 2).join('.')}.`,
  ];
  const garbage = fc.oneof(
    fc.constant(undefined),
    fc.constantFrom('', 'Bearer', 'Bearer ', `bearer ${own}`, `BEARER ${own}`, `Bearer  ${own}`, own, `Bearer ${own}x`, `Bearer ${own.slice(0, -1)}`,
      `Bearer ${own} `, `Bearer ${own}, Bearer ${own}`, `Basic ${Buffer.from(`user:${own}`).toString('base64')}`, `Token ${own}`,
      'Bearer sk-', 'Bearer sk-gw-', `Bearer sk-gw-${'A'.repeat(12)}-${'b'.repeat(48)}`, `Bearer sk-gw-prov-${'A'.repeat(12)}-${'b'.repeat(48)}`,
      // The wrong kind of credential; never the caller's key on a management route (a BYOK row it
      // created there, with always_use, would make its calls fail upstream: a 502 by design).
      `Bearer ${kind === 'key' ? creds.jwt : kind === 'jwt' ? creds.managementKey : `${creds.jwt}x`}`),
    fc.constantFrom(...forged).map((token) => `Bearer ${token}`),
    headerText.map((value) => `Bearer ${value}`),
    headerText,
  );
  return fc.oneof({ weight: 17, arbitrary: valid }, { weight: 3, arbitrary: garbage });
}

// ---- the cases ----

interface FuzzCase {
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Body;
}

interface RouteSpec {
  readonly route: string;
  readonly weight: number;
  readonly auth: AuthKind;
  readonly method: string;
  /** The path (and query) for the case. */
  readonly path: fc.Arbitrary<string>;
  readonly body?: fc.Arbitrary<Body>;
  /** Content types to pick from (JSON mostly, unless the route takes other bytes). */
  readonly contentTypes?: readonly string[];
}

function caseOf(spec: RouteSpec, creds: Credentials): fc.Arbitrary<FuzzCase> {
  const contentTypes = spec.contentTypes ?? CONTENT_TYPES;
  return fc.record({
    path: spec.path,
    authorization: authorizationFor(spec.auth, creds),
    contentType: fc.oneof(
      { weight: spec.contentTypes ? 0 : 16, arbitrary: fc.constant('application/json') },
      { weight: 4, arbitrary: fc.constantFrom(...contentTypes) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: headerText },
    ),
    body: spec.body ?? fc.constant(undefined),
    extra: fc.oneof(
      { weight: 4, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.oneof(
        fc.record({ name: fc.constantFrom('user-agent', 'accept', 'x-request-id', 'idempotency-key', 'accept-encoding', 'x-forwarded-for'), value: headerText }),
        fc.record({ name: fc.constant('x-forwarded-for'), value: fc.constantFrom(...FORWARDED_FOR) }),
      ) },
    ),
  }).map(({ path, authorization, contentType, body, extra }) => {
    const headers: Record<string, string> = {};
    if (authorization !== undefined) headers.authorization = authorization;
    if (contentType !== undefined && body !== undefined) headers['content-type'] = contentType;
    if (extra) headers[extra.name] = extra.value;
    return { route: spec.route, method: spec.method, path, headers, ...(body !== undefined ? { body } : {}) };
  });
}

interface Catalog {
  readonly chat: readonly string[];
  readonly image: readonly string[];
  readonly video: readonly { id: string; profile: string }[];
  readonly speech: readonly string[];
  readonly music: readonly string[];
  readonly embedding: readonly string[];
  readonly all: readonly string[];
}

interface RealIds {
  readonly taskIds: readonly string[];
  readonly keyId: string;
  readonly byokId: string;
  readonly alertId: string;
  readonly mediaKey: string;
  readonly coupon: string;
}

/** Mostly catalog ids of the modality, sometimes another modality's, an unknown or a garbage one. */
const modelOf = (ids: readonly string[], catalog: Catalog): fc.Arbitrary<Json> => fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...ids) },
  { weight: 1, arbitrary: fc.constantFrom(...catalog.all) },
  { weight: 1, arbitrary: fc.constantFrom('openai/gpt-4o-mini\u0000', 'OPENAI/GPT-4O-MINI', 'openai/', '/', 'gpt-4o-mini', 'openai/o4-mini', 'chat_generate.deepseek_reasoner', 'video_generate.vidu_q3_i2v', 'audio_generate.eleven_v3', 'image_generate.flux_kontext_pro') },
  { weight: 1, arbitrary: text },
);

/** The required fields and up to `maxOptional` of the others: a body that is valid as a whole more often than one with every field. */
function fieldsOf(fields: Record<string, fc.Arbitrary<Json>>, required: readonly string[], maxOptional: number): fc.Arbitrary<Fields> {
  const optional = Object.keys(fields).filter((name) => !required.includes(name));
  return fc.subarray(optional, { maxLength: Math.min(maxOptional, optional.length) }).chain((chosen) =>
    fc.record(Object.fromEntries([...required, ...chosen].map((name) => [name, fields[name]!]))) as fc.Arbitrary<Fields>);
}

const short = fc.oneof(fc.constantFrom('hi', 'a cat on a mat', 'Say one word.', 'a red fox at dawn'), text);
const NUL_ID = 'msg_\u0000';
/** Keeps the mock's answers to one chunk (and so calls cheap). */
const MOCK = ' [[mock chunks=1]]';

function templates(catalog: Catalog, ownMedia: readonly string[]) {
  const imageUrls = fc.oneof(
    fc.constantFrom<Json>([PNG_URI], [REF], [PNG_URI, PNG_URI], ['https://localhost/a.jpg', 'https://localhost/b.png'], ['data:image/png;base64,!!!'], ['data:text/html;base64,PGI+']),
    fc.constantFrom(...ownMedia).map((url) => [url] as Json),
  );
  const callbackUrl = fc.constantFrom(...CALLBACK_URLS);
  const userMessage = fc.record({
    role: fc.constant('user'),
    content: fc.oneof(
      { weight: 4, arbitrary: short.map((s) => `${s}${MOCK}`) },
      { weight: 1, arbitrary: fc.constant([{ type: 'text', text: `hi${MOCK}` }, { type: 'image_url', image_url: { url: PNG_URI, detail: 'low' } }]) },
      { weight: 1, arbitrary: fc.constant([{ type: 'image_url', image_url: { url: REF } }, { type: 'text', text: `what is it?${MOCK}` }]) },
    ),
  });
  const otherMessage = fc.oneof(
    fc.record({ role: fc.constantFrom('system', 'developer'), content: short }),
    fc.record({ role: fc.constant('assistant'), content: fc.option(short, { nil: null }) }),
    fc.constant({ role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] }),
    fc.record({ role: fc.constant('tool'), content: short, tool_call_id: fc.constant('call_1') }),
  );
  const messages = fc.tuple(fc.array(otherMessage, { maxLength: 2 }), userMessage).map(([rest, user]) => [...rest, user] as Json);
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const chat = fieldsOf({
    model: modelOf(catalog.chat, catalog),
    messages,
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
    frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 64 }),
    max_completion_tokens: fc.integer({ min: 1, max: 64 }),
    n: fc.integer({ min: 1, max: 2 }),
    stream: fc.boolean(),
    stream_options: fc.constant({ include_usage: true }),
    stop: fc.oneof(fc.constant('\n'), fc.array(fc.constantFrom('END', '###'), { maxLength: 4 })),
    seed: fc.integer(),
    response_format: fc.constantFrom({ type: 'text' }, { type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }),
    tools: fc.constant(tools),
    tool_choice: fc.constantFrom('auto', 'none', 'required', { type: 'function', function: { name: 'get_weather' } }),
    parallel_tool_calls: fc.boolean(),
    logprobs: fc.boolean(),
    top_logprobs: fc.integer({ min: 0, max: 20 }),
    logit_bias: fc.constant({ 50256: -100 }),
    reasoning_effort: fc.constantFrom('minimal', 'low', 'medium', 'high'),
    user: short,
    metadata: fc.constant({ purpose: 'fuzz' }),
    store: fc.boolean(),
    service_tier: fc.constantFrom('auto', 'default'),
    include_reasoning: fc.boolean(),
    prompt_cache_key: fc.constantFrom('k1', 'user-42'),
  }, ['model', 'messages'], 8);

  const inputItem = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'system', 'developer', 'assistant'), content: short.map((s) => `${s}${MOCK}`) }),
    fc.constant({ type: 'message', role: 'user', content: [{ type: 'input_text', text: `hi${MOCK}` }, { type: 'input_image', image_url: PNG_URI }] }),
    fc.constant({ type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{}' }),
    fc.constant({ type: 'function_call_output', call_id: 'call_1', output: 'sunny' }),
    fc.constant({ type: 'reasoning', id: 'rs_1', summary: [] }),
    fc.constantFrom({ type: 'item_reference', id: `msg_${'0'.repeat(32)}` }, { type: 'item_reference', id: 'fc_x' }, { id: `msg_${'a'.repeat(32)}_1` }, { type: 'item_reference' }, { type: 'item_reference', id: NUL_ID }),
  );
  const responses = fieldsOf({
    model: modelOf(catalog.chat, catalog),
    input: fc.oneof(short.map((s) => `${s}${MOCK}`), fc.array(inputItem, { minLength: 1, maxLength: 3 }) as fc.Arbitrary<Json>),
    instructions: short,
    max_output_tokens: fc.integer({ min: 1, max: 64 }),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    stream: fc.boolean(),
    tools: fc.constantFrom([{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } }], [{ type: 'web_search' }]),
    tool_choice: fc.constantFrom('auto', 'none', 'required', { type: 'function', name: 'get_weather' }),
    parallel_tool_calls: fc.boolean(),
    store: fc.boolean(),
    metadata: fc.constant({ a: 'b' }),
    user: short,
    text: fc.constantFrom({ format: { type: 'text' } }, { format: { type: 'json_object' } }, { format: { type: 'json_schema', name: 'x', schema: { type: 'object' } } }),
    reasoning: fc.constantFrom({ effort: 'low' }, { effort: 'high', summary: 'auto' }),
    prompt_cache_key: fc.constant('k'),
    service_tier: fc.constantFrom('auto', 'default'),
    truncation: fc.constant('disabled'),
    include: fc.constant(['reasoning.encrypted_content']),
    stream_options: fc.constant({}),
  }, ['model', 'input'], 6);

  const images = fieldsOf({
    model: modelOf(catalog.image, catalog),
    prompt: short,
    n: fc.integer({ min: 1, max: 2 }),
    size: fc.constantFrom('1024x1024', '1536x1024', 'auto', '512x512', '2048x2048'),
    aspect_ratio: fc.constantFrom('1:1', '16:9', '9:16'),
    resolution: fc.constantFrom('1K', '2K', '1k', '4K'),
    quality: fc.constantFrom('low', 'medium', 'high', 'auto', 'standard', 'hd'),
    style: fc.constantFrom('vivid', 'natural'),
    negative_prompt: short,
    image_urls: imageUrls,
    response_format: fc.constant('url'),
    user: short,
  }, ['model', 'prompt'], 3);

  const embeddings = fieldsOf({
    model: modelOf(catalog.embedding, catalog),
    input: fc.oneof(
      { weight: 4, arbitrary: short },
      { weight: 2, arbitrary: fc.array(short, { minLength: 1, maxLength: 3 }) as fc.Arbitrary<Json> },
      { weight: 1, arbitrary: fc.array(fc.integer({ min: -1, max: 100_300 }), { maxLength: 4 }) as fc.Arbitrary<Json> },
      { weight: 1, arbitrary: fc.array(fc.array(fc.integer({ min: 0, max: 100_257 }), { maxLength: 3 }), { maxLength: 3 }) as fc.Arbitrary<Json> },
      { weight: 1, arbitrary: anything },
    ),
    encoding_format: fc.constantFrom('float', 'base64', 'hex', null),
    dimensions: fc.oneof(fc.constantFrom(64, 256, 768, 1024, 1536, 3072, 4096, 0, -1), fc.double()) as fc.Arbitrary<Json>,
    user: short,
  }, ['model', 'input'], 2);

  // Per profile, the fields it takes (README "Video profiles"): a valid body is one of those.
  const VIDEO_FIELDS: Record<string, readonly string[]> = {
    'R2V-A': ['prompt', 'negative_prompt', 'image_urls', 'video_urls', 'size', 'resolution', 'aspect_ratio', 'duration', 'shot_type', 'audio', 'watermark', 'seed'],
    'R2V-B': ['prompt', 'image_urls', 'duration', 'resolution', 'aspect_ratio', 'ratio'],
    'R2V-C': ['prompt', 'image_urls', 'duration', 'resolution', 'aspect_ratio', 'audio', 'movement_amplitude', 'bgm', 'seed'],
    'R2V-D': ['prompt', 'image_urls', 'duration', 'resolution', 'aspect_ratio', 'movement_amplitude', 'bgm', 'seed'],
    'I2V-A': ['prompt', 'image_urls', 'duration', 'resolution', 'movement_amplitude', 'seed'],
    'I2V-B': ['prompt', 'image_urls', 'resolution', 'ratio', 'aspect_ratio', 'duration', 'seed'],
  };
  // A model on a vendor's schema (Veo, Hailuo, Kling, Runway, Luma, Seedance, ...): the general video
  // table and the vendors' own switches; a field its schema does not take is a 400, never a 5xx.
  const VENDOR_SCHEMA_FIELDS = ['prompt', 'negative_prompt', 'image_urls', 'duration', 'resolution', 'aspect_ratio', 'audio', 'seed', 'mode', 'dynamic_range', 'prompt_optimizer', 'camera_fixed'];
  const videoField: Record<string, fc.Arbitrary<Json>> = {
    prompt: fc.oneof(fc.constantFrom('a fox runs @1', 'waves at dusk'), short),
    negative_prompt: short,
    image_urls: imageUrls,
    video_urls: fc.oneof(fc.constant(['https://localhost/clip.mp4']), fc.constantFrom(...ownMedia).map((url) => [url] as Json)),
    callback_url: callbackUrl,
    size: fc.constantFrom('1920*1080', '1280*720', '960*960', '1024*1024'),
    resolution: fc.constantFrom('540p', '720p', '1080p', '2K', '720P'),
    aspect_ratio: fc.constantFrom('16:9', '9:16', '1:1', '4:3', 'adaptive'),
    ratio: fc.constantFrom('16:9', '1:1', '21:9'),
    duration: fc.oneof(fc.integer({ min: 1, max: 16 }), fc.constantFrom('6', '10', 6, 10) as fc.Arbitrary<Json>),
    shot_type: fc.constantFrom('single', 'multi'),
    audio: fc.boolean(),
    watermark: fc.boolean(),
    seed: fc.oneof(fc.integer({ min: 0, max: 2_147_483_647 }), fc.constantFrom(-1, 2_147_483_648, 1e300) as fc.Arbitrary<Json>),
    movement_amplitude: fc.constantFrom('auto', 'small', 'medium', 'high', 'large'),
    bgm: fc.boolean(),
    mode: fc.constantFrom('std', 'pro', 'turbo'),
    dynamic_range: fc.constantFrom('sdr', 'hdr', 'HDR'),
    prompt_optimizer: fc.boolean(),
    camera_fixed: fc.oneof(fc.boolean(), fc.constant('yes') as fc.Arbitrary<Json>),
  };
  const videos = (catalog.video.length > 0 ? fc.constantFrom(...catalog.video) : fc.constant({ id: 'shengshu/viduq3-pro-i2v', profile: 'I2V-A' })).chain(({ id, profile }) => {
    const fields = [...(VIDEO_FIELDS[profile] ?? VENDOR_SCHEMA_FIELDS), 'callback_url'];
    const record: Record<string, fc.Arbitrary<Json>> = { model: modelOf([id], catalog) };
    for (const name of fields) record[name] = videoField[name]!;
    // The profiles take their images as required; a vendor schema may take none (Veo is text-to-video only).
    const required = fields.filter((name) => (name === 'image_urls' && VIDEO_FIELDS[profile] !== undefined) || (name === 'prompt' && profile !== 'I2V-A'));
    return fieldsOf(record, ['model', ...required], 4);
  });

  const speech = fieldsOf({
    model: modelOf(catalog.speech, catalog),
    input: short,
    voice: fc.constantFrom('alloy', 'nova', 'English_expressive_narrator', 'JBFqnCBsd6RMkjVDRZzb', 'Rachel'),
    response_format: fc.constantFrom('mp3', 'wav', 'opus', 'flac', 'pcm', 'aac'),
    speed: fc.double({ min: 0.25, max: 4, noNaN: true }),
    instructions: short,
    stream_format: fc.constantFrom('audio', 'sse'),
    callback_url: callbackUrl,
  }, ['model', 'input'], 3);
  const music = fieldsOf({
    model: modelOf(catalog.music, catalog),
    prompt: short,
    lyrics: fc.constantFrom('[verse]\nla la la', 'hello\nworld'),
    duration: fc.oneof(fc.integer({ min: 1, max: 120 }), fc.double({ min: 3, max: 30, noNaN: true })),
    instrumental: fc.boolean(),
    format: fc.constantFrom('mp3', 'wav'),
    callback_url: callbackUrl,
  }, ['model', 'prompt'], 3);

  const future = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const timestamps = fc.constantFrom(future, '2099-12-31T23:59:59Z', '2099-01-01T00:00:00+01:00', '2099-01-01 00:00:00 +0100', '2099-01-01T00:00:00+01',
    '2000-01-01T00:00:00Z', '2099-02-30T00:00:00Z', '2099-01-01T24:00:00Z', '0000-01-01T00:00:00Z', '2099-01-01T00:00:00', 'tomorrow', '2099-01-01T00:00:00.123456789Z');
  const keyFields = {
    name: short,
    rate_limit_rpm: fc.integer({ min: 0, max: 1_000_000 }),
    rate_limit_tph: fc.integer({ min: 0, max: 1e9 }),
    rate_limit_tpd: fc.integer({ min: 0, max: 1e9 }),
    ip_whitelist: fc.constantFrom([], ['10.0.0.1'], ['192.168.0.0/16', '127.0.0.1'], ['::1'], ['300.1.1.1']),
    credit_limit: fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.constantFrom(0.01, 12.5, 1e-9, 1e-12) as fc.Arbitrary<Json>),
    credit_reset_interval: fc.constantFrom('none', 'daily', 'weekly', 'monthly'),
    expires_at: fc.oneof(timestamps, fc.constant(null)) as fc.Arbitrary<Json>,
  };
  const apiKeyCreate = fc.record({ ...keyFields, is_provisioning: fc.boolean() }, { requiredKeys: ['name'] }) as fc.Arbitrary<Fields>;
  const apiKeyUpdate = fc.record({ ...keyFields, disabled: fc.boolean() }, { requiredKeys: [] }) as fc.Arbitrary<Fields>;

  const byokFields = {
    label: short,
    api_key: fc.constantFrom('sk-test-0123456789abcdef', 'AIza-test', 'x'),
    base_url: fc.constantFrom('https://localhost:1/v1', 'https://127.0.0.1:1', 'http://localhost/v1', 'https://user:pw@localhost/v1', 'ftp://x'),
    config_json: fc.constantFrom<Json>({}, { region: 'us-east-1' }, { accessKeyId: 'AKIA', secretAccessKey: 's', region: 'us-east-1' },
      { service_account: { client_email: 'a@b.iam.gserviceaccount.com', private_key: 'k', project_id: 'p' }, region: 'us-central1' }, { deployment: 'gpt', endpoint_url: 'https://x.openai.azure.com', api_version: '2024-10-21' }),
    always_use: fc.boolean(),
    disabled: fc.boolean(),
    priority: fc.oneof(fc.integer({ min: -2000, max: 2000 }), fc.double({ noNaN: true, noDefaultInfinity: true })),
  };
  const byokCreate = fc.record({ provider: fc.constantFrom('openai', 'anthropic', 'google', 'OpenAI'), ...byokFields }, { requiredKeys: ['provider', 'label'] }) as fc.Arbitrary<Fields>;
  const byokUpdate = fc.record(byokFields, { requiredKeys: [] }) as fc.Arbitrary<Fields>;
  return { chat, responses, images, embeddings, videos, speech, music, apiKeyCreate, apiKeyUpdate, byokCreate, byokUpdate };
}

function routes(catalog: Catalog, ids: RealIds, gatewayUrl: string): RouteSpec[] {
  const ownMedia = [`${gatewayUrl}/media/${ids.mediaKey}`, `${gatewayUrl}/media/${'0'.repeat(64)}.png`, `${gatewayUrl}/media/../../etc/passwd`, `${gatewayUrl}/media/%00.png`, `${gatewayUrl}/media/`];
  const tpl = templates(catalog, ownMedia);
  const idOf = (real: readonly string[]) => fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...real) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.uuid().map((id) => id.toUpperCase()) },
    { weight: 3, arbitrary: segment },
  );
  const pageQuery = queryOf(['page', 'per_page']);
  const json = (route: string, weight: number, auth: AuthKind, template: fc.Arbitrary<Fields>, method = 'POST', path: fc.Arbitrary<string> = fc.constant(route)): RouteSpec =>
    ({ route: `${method} ${route}`, weight, auth, method, path, body: bodyOf(template) });
  const read = (route: string, weight: number, auth: AuthKind, path: fc.Arbitrary<string> = fc.constant(route), method = 'GET'): RouteSpec =>
    ({ route: `${method} ${route}`, weight, auth, method, path });
  const live = fc.nat().map((i) => (liveTasks.length > 0 ? liveTasks[i % liveTasks.length]! : ids.taskIds[0]!));
  const taskId = fc.oneof({ weight: 4, arbitrary: idOf(ids.taskIds) }, { weight: 3, arbitrary: live });
  /** A vendor hint for a live task with its real token (the hook then reads the task), or a forged one. */
  const hint = fc.oneof(
    live.map((id) => vendorHintUrl('', KEY_SECRET, id)),
    fc.tuple(taskId, queryOf(['token'])).map(([id, q]) => `/hooks/vendor-task/${id}${q}`),
  );
  const modelIds = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...catalog.all) },
    { weight: 2, arbitrary: fc.constantFrom(...catalog.all).map((id) => id.replace('/', '%2F')) },
    { weight: 3, arbitrary: segment },
    { weight: 1, arbitrary: fc.constantFrom('', 'pricing', '/pricing', 'openai', 'openai/', 'openai//gpt-4o-mini') },
  );
  const anyBody = fc.oneof(anything.map(jsonText), fc.constantFrom(...RAW_BODIES));
  const uploadBody: fc.Arbitrary<Body> = fc.oneof(
    fc.constant(PNG),
    fc.constantFrom(MEDIA_MAX_BYTES + 1, MAX_BODY_BYTES + 70 * 1024).map((n) => Buffer.concat([PNG, Buffer.alloc(n - PNG.length)])),
    fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes)),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.concat([PNG.subarray(0, 16), Buffer.from(bytes)])),
    fc.constantFrom('', '<html><script>1</script></html>', '%PDF-1.4', 'GIF89a', '\u0000\u0000\u0000\u0018ftypmp42').map((s) => Buffer.from(s)),
    fc.tuple(fc.constantFrom('xyz', 'other'), fc.constantFrom('file', 'File', 'other'), fc.boolean(), fc.boolean()).map(([boundary, field, close, twice]) => {
      const part = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
      const parts = [Buffer.from(part), PNG, Buffer.from('\r\n')];
      if (twice) parts.push(Buffer.from(part), PNG, Buffer.from('\r\n'));
      if (close) parts.push(Buffer.from(`--${boundary}--\r\n`));
      return Buffer.concat(parts);
    }),
  );
  const MEDIA_KEYS = [ids.mediaKey, `${'0'.repeat(64)}.png`, `${'a'.repeat(64)}.PNG`, `${'A'.repeat(64)}.png`, `${'0'.repeat(63)}.png`, `${ids.mediaKey}%00`, `${ids.mediaKey.replace('.png', '.svg')}`];
  const mediaKey = fc.oneof(fc.constantFrom(...MEDIA_KEYS), segment);
  const knownPath = fc.constantFrom('/v1/chat/completions', '/v1/responses', '/api/v1/api-keys/x', '/v1/uploads', '/api/v1/billing/coupons/redeem', '/hooks/vendor-task/x');
  const anyPath = fc.tuple(fc.constantFrom('/', '/v1/', '/api/v1/', '/v2/', '/api/', '/media/', '/hooks/'), fc.array(segment, { maxLength: 4 })).map(([head, rest]) => head + rest.join('/'));

  return [
    json('/v1/chat/completions', 16, 'key', tpl.chat),
    json('/v1/responses', 9, 'key', tpl.responses),
    json('/v1/images/generations', 5, 'key', tpl.images),
    json('/v1/embeddings', 4, 'key', tpl.embeddings),
    json('/v1/videos/generations', 8, 'key', tpl.videos),
    read('/v1/videos/generations', 1, 'key', pageQuery.map((q) => `/v1/videos/generations${q}`)),
    read('/v1/videos/generations/:id', 1, 'key', taskId.map((id) => `/v1/videos/generations/${id}`)),
    read('/v1/videos/generations/:id', 1, 'key', taskId.map((id) => `/v1/videos/generations/${id}`), 'DELETE'),
    json('/v1/audio/speech', 5, 'key', tpl.speech),
    read('/v1/audio/speech', 1, 'key', pageQuery.map((q) => `/v1/audio/speech${q}`)),
    read('/v1/audio/speech/:id', 1, 'key', taskId.map((id) => `/v1/audio/speech/${id}`)),
    read('/v1/audio/speech/:id', 1, 'key', taskId.map((id) => `/v1/audio/speech/${id}`), 'DELETE'),
    json('/v1/audio/generations', 4, 'key', tpl.music),
    read('/v1/audio/generations', 1, 'key', pageQuery.map((q) => `/v1/audio/generations${q}`)),
    read('/v1/audio/generations/:id', 1, 'key', taskId.map((id) => `/v1/audio/generations/${id}`)),
    read('/v1/audio/generations/:id', 1, 'key', taskId.map((id) => `/v1/audio/generations/${id}`), 'DELETE'),
    {
      route: 'POST /hooks/vendor-task/:id', weight: 1, auth: 'none', method: 'POST', body: anyBody, path: hint,
    },
    read('/api/v1/webhook-secret', 1, 'either'),
    { route: 'POST /api/v1/webhook-secret/rotate', weight: 1, auth: 'either', method: 'POST', path: fc.constant('/api/v1/webhook-secret/rotate') },
    json('/api/v1/api-keys', 4, 'jwt', tpl.apiKeyCreate),
    read('/api/v1/api-keys', 1, 'jwt'),
    json('/api/v1/api-keys/:id', 4, 'jwt', tpl.apiKeyUpdate, 'PUT', idOf([ids.keyId]).map((id) => `/api/v1/api-keys/${id}`)),
    read('/api/v1/api-keys/:id', 1, 'jwt', idOf([ids.keyId]).map((id) => `/api/v1/api-keys/${id}`), 'DELETE'),
    read('/api/v1/byok', 1, 'either', queryOf(['provider']).map((q) => `/api/v1/byok${q}`)),
    json('/api/v1/byok', 4, 'either', tpl.byokCreate),
    json('/api/v1/byok/:id', 3, 'either', tpl.byokUpdate, 'PUT', idOf([ids.byokId]).map((id) => `/api/v1/byok/${id}`)),
    read('/api/v1/byok/:id', 1, 'either', idOf([ids.byokId]).map((id) => `/api/v1/byok/${id}`), 'DELETE'),
    read('/api/v1/billing/balance', 1, 'either'),
    read('/api/v1/billing/transactions', 2, 'either', pageQuery.map((q) => `/api/v1/billing/transactions${q}`)),
    json('/api/v1/billing/coupons/redeem', 3, 'either', fc.record({ code: fc.oneof(fc.constant(ids.coupon), fc.constant(` ${ids.coupon} `), short) }) as fc.Arbitrary<Fields>),
    json('/api/v1/billing/alerts', 3, 'either', fc.record({
      threshold: fc.oneof(fc.double({ min: 0.01, max: 100, noNaN: true }), fc.constantFrom(1, 5, 1e-9, 1e-10, 1e9) as fc.Arbitrary<Json>),
      email: fc.constantFrom('alerts@example.com', 'a@b.co', 'not-an-email'),
    }, { requiredKeys: ['threshold'] }) as fc.Arbitrary<Fields>),
    read('/api/v1/billing/alerts', 1, 'either'),
    read('/api/v1/billing/alerts/:id', 1, 'either', idOf([ids.alertId]).map((id) => `/api/v1/billing/alerts/${id}`), 'DELETE'),
    read('/api/v1/models', 4, 'either', queryOf(['task', 'provider', 'search', 'include_inactive', 'page', 'per_page']).map((q) => `/api/v1/models${q}`)),
    read('/api/v1/models/popular', 1, 'either'),
    read('/api/v1/models/*', 3, 'either', fc.tuple(modelIds, fc.boolean()).map(([id, pricing]) => `/api/v1/models/${id}${pricing ? '/pricing' : ''}`)),
    read('/api/v1/pricing', 1, 'either'),
    read('/v1/models', 1, 'key'),
    read('/v1/models/*', 2, 'key', modelIds.map((id) => `/v1/models/${id}`)),
    {
      route: 'POST /v1/uploads', weight: 3, auth: 'key', method: 'POST', path: fc.constant('/v1/uploads'), body: uploadBody,
      contentTypes: ['image/png', 'application/octet-stream', 'multipart/form-data; boundary=xyz', 'multipart/form-data; boundary="xyz"', 'multipart/form-data', 'multipart/form-data; boundary=', 'text/html', ''],
    },
    read('/media/:key', 1, 'none', mediaKey.map((key) => `/media/${key}`)),
    read('/media/:key', 1, 'none', mediaKey.map((key) => `/media/${key}`), 'HEAD'),
    read('/healthz', 1, 'none'),
    read('/readyz', 1, 'none'),
    read('/metrics', 1, 'none'),
    // Unknown paths under every prefix, and methods a route does not have: the catch-all's 404.
    { route: 'ANY /*', weight: 2, auth: 'key', method: 'GET', path: anyPath },
    { route: 'ANY /*', weight: 1, auth: 'key', method: 'DELETE', path: anyPath },
    { route: 'ANY /*', weight: 1, auth: 'either', method: 'PATCH', path: anyPath, body: anyBody },
    { route: 'ANY method', weight: 1, auth: 'key', method: 'GET', path: knownPath },
    { route: 'ANY method', weight: 1, auth: 'key', method: 'PUT', path: knownPath, body: anyBody },
    { route: 'ANY method', weight: 1, auth: 'key', method: 'OPTIONS', path: knownPath },
    { route: 'ANY method', weight: 1, auth: 'key', method: 'HEAD', path: knownPath },
  ];
}

// ---- sending and judging ----

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

const agent = new Agent({ connections: BATCH, keepAliveTimeout: 30_000, headersTimeout: 60_000, bodyTimeout: 60_000 });

async function send(base: string, c: FuzzCase): Promise<Answer | Error> {
  try {
    const response = await request(`${base}${c.path}`, { method: c.method as 'GET', headers: c.headers, body: c.body, dispatcher: agent });
    const bytes = Buffer.from(await response.body.arrayBuffer());
    const type = response.headers['content-type'];
    return { status: response.statusCode, contentType: Array.isArray(type) ? type.join(',') : type ?? '', text: bytes.toString('utf8') };
  } catch (error) {
    return error as Error;
  }
}

const sameKeys = (value: object, keys: readonly string[]) => Object.keys(value).sort().join(',') === [...keys].sort().join(',');

/** What is wrong with an answer, or undefined (README "Errors": one envelope everywhere). */
function problemOf(c: FuzzCase, answer: Answer | Error): string | undefined {
  if (answer instanceof Error) return `no answer (dropped connection or timeout): ${(answer as { code?: string }).code ?? ''} ${answer.message}`;
  const { status, text, contentType } = answer;
  if (status >= 500) return `status ${status}: ${text.slice(0, 500)}`;
  if (status < 200 || status > 499) return `unexpected status ${status}`;
  if (c.method === 'HEAD' || status === 204) return undefined;
  if (status >= 400) {
    if (!contentType.startsWith('application/json')) return `error ${status} with content-type '${contentType}'`;
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      return `error ${status} body is not JSON: ${text.slice(0, 200)}`;
    }
    if (typeof body !== 'object' || body === null || !sameKeys(body, ['code', 'msg', 'error'])) return `error body is not {code, msg, error}: ${text.slice(0, 300)}`;
    if (body.code !== status) return `error body code ${body.code} is not the status ${status}`;
    if (typeof body.msg !== 'string' || body.msg === '') return 'error body msg is not a non-empty string';
    const error = body.error;
    if (typeof error !== 'object' || error === null || !sameKeys(error, ['message', 'type', 'code', 'param'])) return `error object is not {message, type, code, param}: ${text.slice(0, 300)}`;
    if (error.message !== body.msg) return 'error.message differs from msg';
    if (error.type !== errorType(status)) return `error.type '${error.type}' is not '${errorType(status)}' for ${status}`;
    if (typeof error.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(error.code)) return `error.code ${JSON.stringify(error.code)} is not a machine code`;
    if (error.param !== null && typeof error.param !== 'string') return `error.param ${JSON.stringify(error.param)} is neither null nor a string`;
    return undefined;
  }
  if (contentType.startsWith('application/json')) {
    try {
      JSON.parse(text);
    } catch {
      return `a ${status} JSON answer that does not parse: ${text.slice(0, 200)}`;
    }
  }
  if (contentType.startsWith('text/event-stream') && /upstream_stream_broken/.test(text)) return 'the stream broke';
  return undefined;
}

function describe(c: FuzzCase): string {
  const body = c.body === undefined ? '(none)'
    : typeof c.body === 'string' ? JSON.stringify(c.body.length > 2_000 ? `${c.body.slice(0, 2_000)}… (${c.body.length} chars)` : c.body)
      : `base64:${c.body.subarray(0, 1_500).toString('base64')}${c.body.length > 1_500 ? `… (${c.body.length} bytes)` : ''}`;
  return `${c.route}\n  ${c.method} ${c.path.length > 500 ? `${c.path.slice(0, 500)}…` : c.path}\n  headers ${JSON.stringify(c.headers)}\n  body ${body}`;
}

// ---- setup ----

let gateway: Gateway;
let mediaDir: string;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'fuzz-media-'));
  gateway = await startGateway({
    threads: 2,
    env: {
      JWT_SECRET: TEST_JWT_SECRET, KEY_SECRET, MEDIA_DIR: mediaDir, MAX_BODY_BYTES: String(MAX_BODY_BYTES), MEDIA_MAX_BYTES: String(MEDIA_MAX_BYTES), RATE_LIMIT_DEFAULT: '1000000/10', FETCH_ALLOW_LOOPBACK: 'true', IMAGE_POLL_MS: '10',
      FETCH_TIMEOUT_MS: '2000', TASK_POLL_MS: '200', TASK_CALLBACK_RETRY_MS: '1000', TASK_CALLBACK_TIMEOUT_MS: '1000', TRUSTED_PROXIES: '127.0.0.1',
    },
  });
});
t.teardown(async () => {
  await agent.close();
  await gateway?.close();
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
});

async function catalogOf(jwt: string): Promise<Catalog> {
  const records: any[] = [];
  for (let page = 1; page < 10; page++) {
    const response = await fetch(`${gateway.url}/api/v1/models?include_inactive=true&per_page=100&page=${page}`, { headers: { authorization: `Bearer ${jwt}` } });
    const body = (await response.json()) as { data: any[]; total_pages: number };
    records.push(...body.data);
    if (page >= body.total_pages) break;
  }
  const of = (modality: string, where: (record: any) => boolean = () => true) =>
    records.filter((record) => record.modality === modality && record.is_active && !record.deprecated && where(record)).map((record) => record.id as string);
  return {
    chat: of('chat'),
    image: of('image'),
    video: records.filter((record) => record.modality === 'video' && record.is_active && typeof record.capabilities?.profile === 'string')
      .map((record) => ({ id: record.id as string, profile: record.capabilities.profile as string })),
    speech: of('audio', (record) => record.capabilities?.task === 'speech'),
    music: of('audio', (record) => record.capabilities?.task !== 'speech'),
    embedding: of('embedding'),
    all: records.map((record) => record.id as string),
  };
}

t.test(`fuzz: ${CASES} generated requests over every route, no 5xx, no dropped connection, one error envelope`, async (t) => {
  const caller = await fastUser(gateway, 'fuzz-caller', '100000');
  const manager = { jwt: mintToken('fuzz-manage@example.com') };
  // A whitelist that admits the test's own address, so a forwarded-for value is parsed and judged.
  const managementKey = await gateway.createKey(manager.jwt, { name: 'fuzz management', ip_whitelist: ['127.0.0.1', '10.0.0.0/8'] });
  const creds: Credentials = { key: caller.key, jwt: manager.jwt, managementKey };
  const catalog = await catalogOf(manager.jwt);
  t.ok(catalog.chat.length > 5 && catalog.video.length > 0 && catalog.speech.length > 0, 'catalog ids to put in bodies');

  // Real ids for the path generators: a sacrificial key, a BYOK row, an alert, tasks, an upload, a coupon.
  const sacrificial = await postJson(`${gateway.url}/api/v1/api-keys`, manager.jwt, { name: 'sacrificial' });
  const byok = await postJson(`${gateway.url}/api/v1/byok`, manager.jwt, { provider: 'openai', label: 'fuzz', api_key: 'sk-test-fuzz' });
  // The caller's own OpenAI credential (the mock takes any): OpenAI-vendor calls go through the BYOK attempts first.
  const callerByok = await postJson(`${gateway.url}/api/v1/byok`, caller.key, { provider: 'openai', label: 'caller', api_key: 'sk-test-caller' });
  const alert = await postJson(`${gateway.url}/api/v1/billing/alerts`, manager.jwt, { threshold: 1, email: 'alerts@example.com' });
  const speech = await postJson(`${gateway.v1}/audio/speech`, caller.key, { model: catalog.speech.includes('openai/tts-1-hd') ? 'openai/tts-1-hd' : catalog.speech[0], input: 'hello', voice: 'alloy' });
  const video = await postJson(`${gateway.v1}/videos/generations`, caller.key, { model: 'shengshu/viduq3-pro-i2v', image_urls: [REF] });
  const upload = await fetch(`${gateway.v1}/uploads`, { method: 'POST', headers: { authorization: `Bearer ${caller.key}` }, body: PNG });
  const uploaded = (await upload.json()) as { id: string };
  const coupon = await gateway.cli('coupon', 'create', '--credits', '1');
  const keyList = await fetch(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${manager.jwt}` } });
  const keyId = ((await keyList.json()) as { id: string; name: string }[]).find((record) => record.name === 'sacrificial')?.id;
  t.equal(sacrificial.status, 201, 'sacrificial key');
  t.equal(byok.status, 201, 'BYOK row');
  t.equal(callerByok.status, 201, "the caller's BYOK row");
  t.equal(alert.status, 201, 'alert');
  t.equal(speech.status, 200, `speech task ${JSON.stringify(speech.body)}`);
  t.equal(video.status, 200, `video task ${JSON.stringify(video.body)}`);
  t.equal(upload.status, 201, 'upload');
  const ids: RealIds = {
    taskIds: [speech.body.id, video.body.id].filter((id): id is string => typeof id === 'string'),
    keyId: keyId ?? '00000000-0000-0000-0000-000000000000',
    byokId: byok.body.id,
    alertId: alert.body.id,
    mediaKey: uploaded.id,
    coupon: coupon.trim().split(/\s+/).pop() ?? 'none',
  };

  const specs = routes(catalog, ids, gateway.url);
  const anyCase = fc.oneof(...specs.map((spec) => ({ weight: spec.weight, arbitrary: caseOf(spec, creds) })));
  const routesSeen = new Map<string, number>();
  const statuses = new Map<number, number>();
  const byRoute = new Map<string, number>();
  let sent = 0;
  let failure = '';
  const started = Date.now();
  const property = fc.asyncProperty(fc.array(anyCase, { minLength: BATCH, maxLength: BATCH }), async (cases) => {
    const answers = await Promise.all(cases.map((c) => send(gateway.url, c)));
    sent += cases.length;
    for (let i = 0; i < cases.length; i++) {
      const c = cases[i]!;
      const answer = answers[i]!;
      routesSeen.set(c.route, (routesSeen.get(c.route) ?? 0) + 1);
      if (!(answer instanceof Error)) {
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const key = `${c.method} ${c.route.replace(/^\S+ /, '')} ${answer.status}${answer.status >= 400 && answer.contentType.startsWith('application/json') ? ` ${/"code":"([a-z_]+)"/.exec(answer.text)?.[1] ?? ''}` : ''}`;
        byRoute.set(key, (byRoute.get(key) ?? 0) + 1);
      }
      if (!(answer instanceof Error) && answer.status === 200 && c.method === 'POST' && /\/v1\/(videos|audio)\//.test(c.route) && liveTasks.length < 500) {
        const id = /"id":"([0-9a-f-]{36})"/.exec(answer.text)?.[1];
        if (id) liveTasks.push(id);
      }
      const problem = problemOf(c, answer);
      if (problem) {
        failure = `${problem}\n${describe(c)}`;
        throw new Error(`case ${i} of the batch: ${failure}`);
      }
    }
  });
  const details = await fc.check(property, {
    numRuns: Math.ceil(CASES / BATCH),
    ...(SEED !== undefined ? { seed: SEED } : {}),
    ...(REPLAY_PATH !== undefined ? { path: REPLAY_PATH } : {}),
    endOnFailure: !SHRINK,
    interruptAfterTimeLimit: TIME_LIMIT_MS,
    markInterruptAsFailure: false,
  });
  const seconds = (Date.now() - started) / 1000;
  t.comment(`fuzz: ${sent} requests in ${seconds.toFixed(1)} s (${Math.round(sent / seconds)}/s), seed ${details.seed}`);
  t.comment(`statuses: ${[...statuses].sort((a, b) => a[0] - b[0]).map(([status, n]) => `${status}×${n}`).join(' ')}`);
  if (VERBOSE) t.comment([...byRoute].sort((a, b) => a[0].localeCompare(b[0])).map(([key, n]) => `${key} ×${n}`).join('\n'));
  if (details.failed) {
    t.fail(`fuzz case failed: ${failure || String(details.errorInstance)}\n` +
      `replay: FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath} npx tap dist/test/fuzz.test.js`);
  } else {
    t.ok(sent >= CASES, `at least ${CASES} cases ran (${sent}${details.interrupted ? ', interrupted by the time limit' : ''})`);
  }
  const unseen = specs.map((spec) => spec.route).filter((route) => !routesSeen.has(route));
  t.same([...new Set(unseen)], [], 'every route was driven');

  // The gateway is still whole: a valid chat call, readiness, and nothing logged as an unexpected error.
  const chat = await postJson(`${gateway.v1}/chat/completions`, caller.key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: `still there?${MOCK}` }] });
  t.equal(chat.status, 200, `a valid chat call after the fuzz: ${JSON.stringify(chat.body).slice(0, 300)}`);
  t.type(chat.body?.choices?.[0]?.message?.content, 'string', 'with a completion');
  t.equal((await fetch(`${gateway.url}/readyz`)).status, 200, 'ready');
  if (process.env.FUZZ_LOG) writeFileSync(process.env.FUZZ_LOG, gateway.output);
  const unexpected = gateway.output.split('\n').filter((line) => line.includes('"unexpected error"'));
  t.same(unexpected.map((line) => line.slice(0, 600)), [], 'no unexpected error logged');
});
