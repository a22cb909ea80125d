import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import type { UpstreamCloud } from '../providers/family.js';
import { MAX_MODELS_PER_CALL } from './limits.js';
import { MAX_TARGETS_PER_ROUTE, byPriority, type RouteTarget, type RoutingTable, type VirtualModel } from './targets.js';

/** The routing file is read whole at start-up: an operator's file, bounded all the same. */
const MAX_FILE_BYTES = 1024 * 1024;

/** Where a target starts from when the file does not say: the vendor's `<VENDOR>_BASE_URL` and `<VENDOR>_API_KEY`. */
export interface VendorDefaults {
  readonly baseUrl: string;
  readonly apiKey: string;
}

/** A routing file that cannot be used: the message names the file and the line. */
export class RoutingFileError extends Error {
  override name = 'RoutingFileError';
}

const ENV_NAME = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'));
const TEXT = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(4096, 'is too long'));
const HTTP_URL = v.pipe(v.string(), v.regex(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, 'must be an http(s) URL'));
const int = (min: number, max: number) => v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`));

const CloudSchema = v.variant('kind', [
  v.strictObject({ kind: v.literal('azure'), deployment: TEXT, api_version: TEXT }),
  v.strictObject({
    kind: v.literal('bedrock'), region: v.pipe(v.string(), v.regex(/^[a-z0-9-]{1,32}$/, 'must be an AWS region such as us-east-1')),
    access_key_id: v.optional(TEXT), access_key_id_env: v.optional(ENV_NAME),
    secret_access_key: v.optional(TEXT), secret_access_key_env: v.optional(ENV_NAME),
    session_token: v.optional(TEXT), session_token_env: v.optional(ENV_NAME),
  }),
], 'must have kind azure or bedrock');

const targetEntries = {
  name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1 to 64 letters, digits, dots, dashes or underscores')),
  api_key: v.optional(TEXT),
  api_key_env: v.optional(ENV_NAME),
  base_url: v.optional(HTTP_URL),
  model: v.optional(TEXT),
  priority: v.optional(int(-1000, 1000)),
  weight: v.optional(int(1, 1_000_000)),
  head_timeout_ms: v.optional(int(100, 3_600_000)),
  cloud: v.optional(CloudSchema),
};

const targets = <T extends v.GenericSchema>(target: T) =>
  v.pipe(v.array(target, 'must be a list'), v.minLength(1, 'must list at least one target'), v.maxLength(MAX_TARGETS_PER_ROUTE, `must list at most ${MAX_TARGETS_PER_ROUTE} targets`));

/**
 * A virtual model's name: no `/`, so it never takes a catalog id (`vendor/model`); it may shadow an
 * alias of the catalog's (`chat_generate.x`), which the operator then means to replace.
 */
const VIRTUAL_NAME = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/, 'must be 1 to 64 letters, digits, dots, colons, dashes or underscores, without /'));

const VirtualModelSchema = v.strictObject({
  models: v.pipe(v.array(TEXT, 'must be a list of catalog model ids'), v.minLength(1, 'must list at least one model'), v.maxLength(MAX_MODELS_PER_CALL, `must list at most ${MAX_MODELS_PER_CALL} models`)),
  description: v.optional(v.pipe(v.string(), v.maxLength(500, 'is too long'))),
});

function fileSchema(vendors: readonly string[]) {
  const vendor = v.picklist(vendors, `must be one of ${vendors.join(', ')}`);
  return v.strictObject({
    vendors: v.optional(v.record(vendor, v.strictObject({ targets: targets(v.strictObject(targetEntries)) }))),
    models: v.optional(v.record(TEXT, v.strictObject({ targets: targets(v.strictObject({ ...targetEntries, vendor })) }))),
    virtual_models: v.optional(v.record(VIRTUAL_NAME, VirtualModelSchema)),
  }, 'must be a mapping with vendors, models and/or virtual_models');
}

type FileTarget = v.InferOutput<ReturnType<typeof v.strictObject<typeof targetEntries, undefined>>> & { vendor?: string };
type Path = readonly (string | number)[];

/** Reads and validates the routing file at `path`; every error names the file and its line. */
export function readRoutingFile(path: string, vendors: Readonly<Record<string, VendorDefaults>>, env: Readonly<Record<string, string | undefined>>): RoutingTable {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) throw new RoutingFileError(`${path}: larger than ${MAX_FILE_BYTES} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof RoutingFileError) throw error;
    throw new RoutingFileError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parseRoutingFile(text, path, vendors, env);
}

/** The routing file's text (YAML, or JSON, which is YAML too) as a routing table. */
export function parseRoutingFile(text: string, source: string, vendors: Readonly<Record<string, VendorDefaults>>, env: Readonly<Record<string, string | undefined>>): RoutingTable {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const at = (path: Path) => `${source}:${lineOf(doc, lines, path)}`;
  const syntax = doc.errors[0];
  if (syntax) throw new RoutingFileError(`${source}:${lines.linePos(syntax.pos[0]).line}: ${syntax.message.split('\n', 1)[0]}`);
  const result = v.safeParse(fileSchema(Object.keys(vendors)), doc.toJS() ?? {});
  if (!result.success) {
    const issue = result.issues[0];
    const path = (issue.path ?? []).map((item) => item.key as string | number);
    throw new RoutingFileError(`${at(path)}: ${path.length ? `${path.join('.')} ` : ''}${issue.message}`);
  }
  const names = new Set<string>();
  let slot = 0;
  const build = (target: FileTarget, vendor: string, path: Path, catalogId: string | undefined): RouteTarget => {
    if (names.has(target.name)) throw new RoutingFileError(`${at([...path, 'name'])}: target name '${target.name}' is used twice (names label metrics and breakers)`);
    names.add(target.name);
    const defaults = vendors[vendor]!;
    const secret = (value: string | undefined, envName: string | undefined, field: string): string | undefined => {
      if (value !== undefined && envName !== undefined) throw new RoutingFileError(`${at([...path, field])}: give ${field} or ${field}_env, not both`);
      if (envName === undefined) return value;
      const found = env[envName];
      if (!found) throw new RoutingFileError(`${at([...path, `${field}_env`])}: ${field}_env names ${envName}, which is not set`);
      return found;
    };
    const apiKey = secret(target.api_key, target.api_key_env, 'api_key');
    const cloud = target.cloud && cloudOf(target.cloud, target.model, catalogId, [...path, 'cloud'], secret, at);
    const baseUrl = target.base_url ?? (target.cloud?.kind === 'bedrock' ? `https://bedrock-runtime.${target.cloud.region}.amazonaws.com` : target.cloud ? undefined : defaults.baseUrl);
    if (!baseUrl) throw new RoutingFileError(`${at(path)}: a target with cloud kind ${target.cloud!.kind} needs base_url (the endpoint's origin)`);
    return Object.freeze({
      name: target.name, vendor, baseUrl: baseUrl.replace(/\/+$/, ''),
      apiKey: apiKey ?? (cloud?.kind === 'bedrock' ? '' : defaults.apiKey),
      ...(cloud ? { cloud } : {}),
      ...(target.model !== undefined ? { model: target.model } : {}),
      priority: target.priority ?? 0, weight: target.weight ?? 1, slot: slot++,
      ...(target.head_timeout_ms !== undefined ? { headTimeoutMs: target.head_timeout_ms } : {}),
    });
  };
  const table = { vendors: {} as Record<string, readonly RouteTarget[]>, models: {} as Record<string, readonly RouteTarget[]> };
  for (const [vendor, route] of Object.entries(result.output.vendors ?? {})) {
    table.vendors[vendor] = byPriority(route.targets.map((target, i) => build(target, vendor, ['vendors', vendor, 'targets', i], undefined)));
  }
  for (const [model, route] of Object.entries(result.output.models ?? {})) {
    table.models[model] = byPriority(route.targets.map((target, i) => build(target, target.vendor, ['models', model, 'targets', i], model)));
  }
  const virtualModels: Record<string, VirtualModel> = {};
  const virtualEntries = Object.entries(result.output.virtual_models ?? {});
  for (const [name, entry] of virtualEntries) {
    entry.models.forEach((model, i) => {
      // One level only: a chain is what the file says, never a graph to walk at call time.
      if (result.output.virtual_models?.[model]) throw new RoutingFileError(`${at(['virtual_models', name, 'models', i])}: '${model}' is a virtual model; a virtual model lists catalog models only`);
      if (entry.models.indexOf(model) !== i) throw new RoutingFileError(`${at(['virtual_models', name, 'models', i])}: '${model}' is listed twice`);
    });
    virtualModels[name] = Object.freeze({ models: Object.freeze([...entry.models]), ...(entry.description !== undefined ? { description: entry.description } : {}) });
  }
  return Object.freeze({ vendors: Object.freeze(table.vendors), models: Object.freeze(table.models), virtualModels: Object.freeze(virtualModels), slots: slot });
}

type Secret = (value: string | undefined, envName: string | undefined, field: string) => string | undefined;

/** A target's cloud form as the families take it; a Bedrock target's `model` is its Bedrock model id. */
function cloudOf(cloud: v.InferOutput<typeof CloudSchema>, model: string | undefined, catalogId: string | undefined, path: Path, secret: Secret, at: (path: Path) => string): UpstreamCloud {
  if (cloud.kind === 'azure') return Object.freeze({ kind: 'azure', deployment: cloud.deployment, apiVersion: cloud.api_version });
  const accessKeyId = secret(cloud.access_key_id, cloud.access_key_id_env, 'access_key_id');
  const secretAccessKey = secret(cloud.secret_access_key, cloud.secret_access_key_env, 'secret_access_key');
  const sessionToken = secret(cloud.session_token, cloud.session_token_env, 'session_token');
  if (!accessKeyId || !secretAccessKey) throw new RoutingFileError(`${at(path)}: a bedrock target needs access_key_id and secret_access_key (or their _env forms)`);
  return Object.freeze({
    kind: 'bedrock', region: cloud.region, accessKeyId, secretAccessKey,
    ...(sessionToken ? { sessionToken } : {}),
    modelMap: Object.freeze(model !== undefined && catalogId !== undefined ? { [catalogId]: model } : {}),
  });
}

/** The 1-based line of the entry at `path` (a mapping's key, a list's item), or of its nearest ancestor the document has. */
function lineOf(doc: Document, lines: LineCounter, path: Path): number {
  for (let length = path.length; length > 0; length--) {
    const parent = length === 1 ? doc.contents : doc.getIn(path.slice(0, length - 1), true);
    const entry = path[length - 1];
    let node: unknown;
    if (isMap(parent)) node = parent.items.find((pair) => isScalar(pair.key) && String(pair.key.value) === String(entry))?.key;
    else if (isSeq(parent)) node = parent.items[Number(entry)];
    const offset = (node as { range?: [number, number, number] } | null | undefined)?.range?.[0];
    if (offset !== undefined) return lines.linePos(offset).line;
  }
  const offset = doc.contents?.range?.[0];
  return offset === undefined ? 1 : lines.linePos(offset).line;
}
