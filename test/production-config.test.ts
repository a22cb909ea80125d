// NODE_ENV=production refuses every secret published in this repository (found by scanning its files,
// not from a list kept by hand), guessable and shared secrets, an open /metrics, and never plays a
// vendor with the mock unless MOCK_VENDOR=on.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { ConfigError, VENDORS, loadConfig } from '../src/config.js';
import { productionWarnings } from '../src/production-warnings.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/test/ -> the repository
const SKIPPED = new Set(['node_modules', 'dist', '.git', '.tap', 'package-lock.json', 'media', 'state']);
const TEXT_FILE = /\.(ts|js|mjs|cjs|md|ya?ml|cfg|conf|json|sh|txt|toml|env)$|(^|\/)(Dockerfile|\.env[\w.-]*|\.ci\/[\w.-]+)$/;
/** Names of settings and variables that hold a secret: JWT/KEY secrets, passwords, tokens, API and access keys. */
const SECRET_NAME = /secret|password|passwd|token|api_?key|access_?key|_key$/i;
/** Names of ids (`api_key_id`, `keyId`) and of token counts (`prompt_tokens`): they name a secret's record or count words, never hold a secret. */
const ID_NAME = /_?id$|_?tokens$/i;
/** `NAME = 'value'`, `NAME: value`, `"name": "value"`, `NAME=value` with a value of 32+ characters (the least a secret may be). */
const ASSIGNMENT = /([A-Za-z_][A-Za-z0-9_]*)['"]?\s*[:=]\s*['"`]?([^\s'"`,;(){}]{32,})/g;
/** Compose's `${NAME:-default}`. */
const COMPOSE_DEFAULT = /\$\{([A-Za-z_][A-Za-z0-9_]*):?-([^}\s]{32,})\}/g;
/** Code, not a value: URLs, expressions, templates, regular expressions. */
const NOT_A_VALUE = /:\/\/|\?\.|[[\]<>!]|^\$|^-|^\/.*\/[a-z]*$/;

function* repositoryFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (SKIPPED.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* repositoryFiles(path);
    else if (TEXT_FILE.test(relative(ROOT, path))) yield path;
  }
}

/** Every secret-looking value of 32+ characters assigned to a secret's name anywhere in the repository, with where it was found. */
export function publishedSecrets(): Map<string, string> {
  const found = new Map<string, string>();
  for (const path of repositoryFiles(ROOT)) {
    const text = readFileSync(path, 'utf8');
    for (const pattern of [ASSIGNMENT, COMPOSE_DEFAULT]) {
      for (const [, name, value] of text.matchAll(pattern)) {
        if (SECRET_NAME.test(name!) && !ID_NAME.test(name!) && !NOT_A_VALUE.test(value!) && !found.has(value!)) found.set(value!, `${relative(ROOT, path)} (${name})`);
      }
    }
  }
  return found;
}

/** A secret as the docs say to make one (openssl rand -base64 48). */
const generated = () => randomBytes(48).toString('base64');
/** A production environment that passes, to change one thing at a time. */
const production = (change: Record<string, string> = {}) => ({ NODE_ENV: 'production', JWT_SECRET: generated(), KEY_SECRET: generated(), METRICS_TOKEN: generated(), ...change });
const refusal = (env: Record<string, string>): string | undefined => {
  try {
    loadConfig(env);
    return undefined;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.message;
  }
};

t.test('production refuses every secret published in the repository, as each secret setting', async (t) => {
  const published = publishedSecrets();
  t.ok(published.size >= 10, `${published.size} published secrets found`);
  t.ok(published.has('dev-only-jwt-secret-change-me-0123456789'), 'the development fallbacks are among them');
  t.ok([...published.values()].some((where) => where.startsWith('docs/')), 'and the docs\' examples');
  t.ok([...published.values()].some((where) => where.startsWith('test/helpers/')), 'and the test helpers\'');
  for (const [value, where] of published) {
    for (const name of ['JWT_SECRET', 'KEY_SECRET', 'METRICS_TOKEN']) {
      const message = refusal(production({ [name]: value }));
      // (The development fallbacks are refused together: `invalid JWT_SECRET/KEY_SECRET: set both`.)
      t.match(message, new RegExp(`^invalid (?:[A-Z_]+/)?${name}\\b`), `${name} = the value in ${where} is refused`, { value });
    }
    t.equal(refusal({ JWT_SECRET: value }), undefined, `development still takes it (${where})`);
  }
});

t.test('production refuses guessable secrets and takes generated ones', async (t) => {
  const weak: [string, RegExp][] = [
    ['a'.repeat(40), /distinct characters/],
    ['ab'.repeat(20), /distinct characters/],
    ['Xk9#Qz7!'.repeat(5), /repeats a 8-character pattern/],
    ['Zq8-0123456789-Wm3Kp9Rt5Yv1Hn4Lx7Bc', /repeated or consecutive characters/],
    ['Zq8Wm3Kp9Rt5Yv1Hn4Lx7Bc-999999-Ft6Gs', /repeated or consecutive characters/],
    ['my-production-password-Zq8Wm3Kp9Rt5Yv1', /placeholder word "password"/],
    ['Zq8Wm3Kp9Rt5Yv1Hn4Lx7Bc_CHANGEME_Ft6Gs', /placeholder word "CHANGEME"/],
  ];
  for (const [value, reason] of weak) {
    t.match(refusal(production({ JWT_SECRET: value })), reason, `JWT_SECRET ${value}`);
    t.match(refusal(production({ KEY_SECRET: value })), reason, `KEY_SECRET ${value}`);
  }
  for (let i = 0; i < 200; i++) {
    const secret = generated();
    const message = refusal(production({ JWT_SECRET: secret }));
    if (message) t.fail(`a generated secret is refused: ${secret}: ${message}`);
  }
  t.pass('200 secrets from openssl rand -base64 48 are taken');
});

t.test('production refuses one secret used for two settings', async (t) => {
  const shared = generated();
  t.match(refusal(production({ JWT_SECRET: shared, KEY_SECRET: shared })), /^invalid KEY_SECRET: must differ from JWT_SECRET/);
  t.match(refusal(production({ KEY_SECRET: shared, METRICS_TOKEN: shared })), /^invalid METRICS_TOKEN: must differ from KEY_SECRET/);
  t.match(refusal(production({ JWT_SECRET: shared, METRICS_TOKEN: shared })), /^invalid METRICS_TOKEN: must differ from JWT_SECRET/);
  t.equal(refusal({ JWT_SECRET: shared, KEY_SECRET: shared }), undefined, 'development does not mind');
});

t.test('production refuses /metrics open on the public listener unless asked for', async (t) => {
  const { METRICS_TOKEN: _token, ...open } = production();
  t.match(refusal(open), /^invalid METRICS_TOKEN: production does not serve \/metrics open/);
  t.equal(refusal({ ...open, METRICS_PORT: '9464' }), undefined, 'a listener of its own');
  t.equal(refusal({ ...open, METRICS_PUBLIC: 'true' }), undefined, 'explicitly public');
  t.equal(refusal(production()), undefined, 'a token');
  t.match(refusal(production({ METRICS_TOKEN: 'short' })), /^invalid METRICS_TOKEN: must be at least 32 characters/);
  const config = loadConfig(production({ METRICS_PORT: '9464' }));
  t.same({ port: config.metrics.port, host: config.metrics.host }, { port: 9464, host: '127.0.0.1' }, 'the metrics listener is on loopback by default');
  t.equal(refusal(open), refusal({ ...open, FETCH_ALLOW_LOOPBACK: 'false' }), 'FETCH_ALLOW_LOOPBACK=false changes nothing');
  t.match(refusal(production({ FETCH_ALLOW_LOOPBACK: 'true' })), /^invalid FETCH_ALLOW_LOOPBACK: only for tests/);
});

t.test('production plays no vendor with the mock unless MOCK_VENDOR=on', async (t) => {
  const keyless = loadConfig(production({ OPENAI_API_KEY: 'sk-live-openai' }));
  t.same(VENDORS.filter((name) => keyless.vendors[name].served), ['openai'], 'only the vendor with a key is served (MOCK_VENDOR=auto)');
  t.same(VENDORS.filter((name) => keyless.vendors[name].mocked), [], 'nothing is mocked');
  t.equal(keyless.vendors.anthropic.apiKey, '', 'a vendor without a key gets no made-up one');
  t.equal(keyless.vendors.anthropic.baseUrl, 'https://api.anthropic.com/v1', 'and its real address (BYOK rows without a base URL use it)');
  const proxied = loadConfig(production({ ANTHROPIC_BASE_URL: 'https://proxy.internal/anthropic/v1' }));
  t.ok(proxied.vendors.anthropic.served && !proxied.vendors.anthropic.mocked, 'a base URL alone configures a vendor');
  t.equal(proxied.vendors.anthropic.apiKey, 'mock-key', 'with the placeholder key');
  const off = loadConfig(production({ MOCK_VENDOR: 'off' }));
  t.same(VENDORS.filter((name) => off.vendors[name].served), [], 'MOCK_VENDOR=off: none served');
  const on = loadConfig(production({ MOCK_VENDOR: 'on', OPENAI_API_KEY: 'sk-live-openai' }));
  t.same(VENDORS.filter((name) => on.vendors[name].mocked), VENDORS.filter((name) => name !== 'openai'), 'MOCK_VENDOR=on: the keyless ones are mocked');
  t.ok(VENDORS.every((name) => on.vendors[name].served));
  const development = loadConfig({ MOCK_VENDOR: 'auto' });
  t.ok(VENDORS.every((name) => development.vendors[name].mocked && development.vendors[name].served), 'development: auto mocks every keyless vendor');
  const separate = loadConfig({ MOCK_VENDOR: 'off' });
  t.ok(VENDORS.every((name) => separate.vendors[name].mocked), 'development, off: keyless vendors still go to a separately run mock');
  t.match(refusal({ MOCK_VENDOR: 'yes' }), /^invalid MOCK_VENDOR: must be auto, on or off/);
});

t.test('production warns about plain-http vendors, an open metrics listener beyond loopback, a plain-http PUBLIC_URL', async (t) => {
  t.same(productionWarnings(loadConfig(production({ METRICS_PORT: '9464' }))), [], 'none with real vendors and a loopback metrics listener');
  const risky = productionWarnings(loadConfig(production({
    OPENAI_BASE_URL: 'http://10.0.0.5:8000/v1', OPENAI_API_KEY: 'sk-live', METRICS_TOKEN: '', METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', PUBLIC_URL: 'http://gateway.example.com',
  })));
  t.match(risky, [/^vendors reached over plain http .*: openai$/, /^\/metrics is open on 0\.0\.0\.0:9464 with no METRICS_TOKEN/, /^PUBLIC_URL is plain http/]);
  t.same(productionWarnings(loadConfig({ OPENAI_BASE_URL: 'http://10.0.0.5:8000/v1' })), [], 'development: none');
});
