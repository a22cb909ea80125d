import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as v from 'valibot';
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Document } from 'yaml';
import type { UpstreamCloud } from '../providers/family.js';
import { readCloudForm, type ServiceAccount } from '../providers/cloud/forms.js';
import { GOOGLE_TOKEN_URIS } from '../providers/cloud/known-hosts.js';
import { offKnownHosts } from '../providers/byok-addresses.js';
import { MAX_MODELS_PER_CALL } from './limits.js';
import { vendorKeyProblem } from '../vendor-keys.js';
import { MAX_TARGETS_PER_ROUTE, byPriority, type RouteTarget, type RoutingTable, type VirtualModel } from './targets.js';

/** The routing file is read whole at start-up: an operator's file, bounded all the same. */
const MAX_FILE_BYTES = 1024 * 1024;
/** A service account key file is a few kilobytes (its PEM key is the bulk). */
const MAX_SERVICE_ACCOUNT_BYTES = 64 * 1024;
/** The vendors whose wire family Vertex AI serves: Claude (Anthropic's Messages) and Gemini. */
const VERTEX_VENDORS: readonly string[] = Object.freeze(['anthropic', 'gemini']);

/** How the file is read beyond its text. */
export interface RoutingFileOptions {
  /** FETCH_ALLOW_LOOPBACK: a service account's token_uri may name a loopback host (tests, the offline demo). */
  readonly allowLoopback?: boolean;
}

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
  v.strictObject({
    kind: v.literal('vertex'),
    region: v.pipe(v.string(), v.regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be a Google Cloud region such as us-east5, europe-west1 or global')),
    project_id: v.optional(TEXT),
    service_account_json_env: v.optional(ENV_NAME),
    service_account_file: v.optional(TEXT),
  }),
], 'must have kind azure, bedrock or vertex');

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
export function readRoutingFile(path: string, vendors: Readonly<Record<string, VendorDefaults>>, env: Readonly<Record<string, string | undefined>>, options: RoutingFileOptions = {}): RoutingTable {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) throw new RoutingFileError(`${path}: larger than ${MAX_FILE_BYTES} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof RoutingFileError) throw error;
    throw new RoutingFileError(`${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  return parseRoutingFile(text, path, vendors, env, options);
}

/**
 * The routing file's text (YAML, or JSON, which is YAML too) as a routing table. `source` names the
 * file in errors; a relative `service_account_file` is read from its directory.
 */
export function parseRoutingFile(text: string, source: string, vendors: Readonly<Record<string, VendorDefaults>>, env: Readonly<Record<string, string | undefined>>, options: RoutingFileOptions = {}): RoutingTable {
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
    const keyProblem = apiKey === undefined ? undefined : vendorKeyProblem(vendor, apiKey);
    if (keyProblem) throw new RoutingFileError(`${at([...path, target.api_key === undefined ? 'api_key_env' : 'api_key'])}: a ${vendor} key ${keyProblem}`);
    const cloudPath = [...path, 'cloud'];
    const vertex = target.cloud?.kind === 'vertex' ? vertexOf(target.cloud, vendor, cloudPath, { env, at, source, allowLoopback: options.allowLoopback === true }) : undefined;
    if (vertex && apiKey !== undefined) throw new RoutingFileError(`${at([...path, target.api_key === undefined ? 'api_key_env' : 'api_key'])}: a vertex target's credential is its service account, not an api_key`);
    const cloud = vertex?.cloud ?? (target.cloud && target.cloud.kind !== 'vertex' ? cloudOf(target.cloud, target.model, catalogId, cloudPath, secret, at) : undefined);
    const baseUrl = target.base_url ?? vertex?.endpointUrl ?? (target.cloud?.kind === 'bedrock' ? `https://bedrock-runtime.${target.cloud.region}.amazonaws.com` : target.cloud ? undefined : defaults.baseUrl);
    if (!baseUrl) throw new RoutingFileError(`${at(path)}: a target with cloud kind ${target.cloud!.kind} needs base_url (the endpoint's origin)`);
    return Object.freeze({
      name: target.name, vendor, baseUrl: baseUrl.replace(/\/+$/, ''),
      // A vertex target's key is its access token, filled in by each HTTP thread (access-tokens.ts).
      apiKey: apiKey ?? (cloud?.kind === 'bedrock' || vertex ? '' : defaults.apiKey),
      ...(cloud ? { cloud } : {}),
      ...(vertex ? { serviceAccount: vertex.account } : {}),
      // The endpoint derived from the region is vetted like a BYOK row's; a base_url the operator wrote is trusted like <VENDOR>_BASE_URL.
      ...(vertex && target.base_url === undefined ? { guarded: true } : {}),
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

interface VertexContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly at: (path: Path) => string;
  readonly source: string;
  readonly allowLoopback: boolean;
}

/**
 * A vertex target's cloud form, service account and default endpoint. The key file is read as a
 * BYOK row's service_account is (forms.ts), so both accept and refuse the same files.
 */
function vertexOf(cloud: Extract<v.InferOutput<typeof CloudSchema>, { kind: 'vertex' }>, vendor: string, path: Path, context: VertexContext): { cloud: UpstreamCloud; account: ServiceAccount; endpointUrl: string } {
  const { env, at } = context;
  if (!VERTEX_VENDORS.includes(vendor)) throw new RoutingFileError(`${at([...path, 'kind'])}: cloud kind vertex serves the vendors ${VERTEX_VENDORS.join(' and ')} (Claude and Gemini on Vertex AI), not ${vendor}`);
  const envName = cloud.service_account_json_env;
  if ((envName === undefined) === (cloud.service_account_file === undefined)) {
    throw new RoutingFileError(`${at(path)}: a vertex target needs service_account_json_env or service_account_file (one of them)`);
  }
  const field = envName !== undefined ? 'service_account_json_env' : 'service_account_file';
  const fail = (message: string) => new RoutingFileError(`${at([...path, field])}: ${message}`);
  let text: string;
  let what: string;
  if (envName !== undefined) {
    what = `the value of ${envName}`;
    const found = env[envName];
    if (!found) throw fail(`service_account_json_env names ${envName}, which is not set`);
    text = found;
  } else {
    what = resolve(dirname(context.source), cloud.service_account_file!);
    let bytes: Buffer;
    try {
      bytes = readFileSync(what);
    } catch (error) {
      throw fail(`${what} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    if (bytes.length > MAX_SERVICE_ACCOUNT_BYTES) throw fail(`${what} is larger than ${MAX_SERVICE_ACCOUNT_BYTES} bytes, so not a service account key file`);
    text = bytes.toString('utf8');
  }
  let account: unknown;
  try {
    account = JSON.parse(text);
  } catch {
    throw fail(`${what} is not a service account key file (not JSON)`);
  }
  if (typeof account !== 'object' || account === null || Array.isArray(account)) throw fail(`${what} is not a service account key file (not a JSON object)`);
  const read = readCloudForm('google', { service_account: account, region: cloud.region, ...(cloud.project_id !== undefined ? { project_id: cloud.project_id } : {}) }, false);
  if ('problem' in read) {
    throw fail(`${what} is not a usable service account key file: ${read.problem.field.replace(/^config_json\./, '')} ${read.problem.message.replaceAll('config_json.', 'cloud.')}`);
  }
  const form = read.form;
  if (form?.kind !== 'vertex') throw fail(`${what} is not a service account key file`);
  try {
    createPrivateKey(form.account.privateKey);
  } catch {
    throw fail(`${what} is not a usable service account key file: its private_key is not a PEM private key`);
  }
  // Where its tokens come from is held to Google's token endpoint, as a BYOK row's is (and every connection to it is vetted).
  if (offKnownHosts(new URL(form.account.tokenUri), GOOGLE_TOKEN_URIS, context.allowLoopback)) throw fail(`${what}: token_uri must be ${GOOGLE_TOKEN_URIS.description}`);
  return {
    cloud: Object.freeze({ kind: 'vertex', projectId: form.projectId, region: form.region }),
    account: Object.freeze({ ...form.account }),
    endpointUrl: form.endpointUrl,
  };
}

/** A target's cloud form as the families take it; a Bedrock target's `model` is its Bedrock model id. */
function cloudOf(cloud: Exclude<v.InferOutput<typeof CloudSchema>, { kind: 'vertex' }>, model: string | undefined, catalogId: string | undefined, path: Path, secret: Secret, at: (path: Path) => string): UpstreamCloud {
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
