import t from 'tap';
import { loadConfig, ConfigError } from '../src/config.js';

t.test('defaults make a fresh machine work', async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 8080);
  t.equal(config.host, '127.0.0.1');
  t.equal(config.databaseUrl, 'postgres://postgres@127.0.0.1:5432/gateway');
  t.equal(config.redisUrl, 'redis://127.0.0.1:6379');
  t.same(config.rateLimit, { requests: 20, windowMs: 10_000 });
  t.ok(config.vendors.openai.mocked, 'no key and no base URL: the mock vendor plays OpenAI');
  t.equal(config.vendors.openai.baseUrl, 'http://127.0.0.1:8090/openai/v1');
  t.ok(config.usesDevSecrets);
});

t.test('vendor keys and base URLs', async (t) => {
  const real = loadConfig({ OPENAI_API_KEY: 'sk-real' });
  t.equal(real.vendors.openai.mocked, false);
  t.equal(real.vendors.openai.baseUrl, 'https://api.openai.com/v1');
  t.equal(real.vendors.openai.apiKey, 'sk-real');
  t.equal(real.vendors.deepseek.mocked, true, 'each vendor decides for itself');
  const custom = loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1/' });
  t.equal(custom.vendors.openai.baseUrl, 'http://127.0.0.1:9999/v1');
  t.equal(custom.vendors.openai.mocked, false);
});

t.test('a bad value names its variable in one line', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /^invalid PORT: /],
    [{ PORT: '70000' }, /^invalid PORT: /],
    [{ HTTP_THREADS: '0' }, /^invalid HTTP_THREADS: /],
    [{ DATABASE_URL: 'mysql://x' }, /^invalid DATABASE_URL: /],
    [{ REDIS_URL: 'nope' }, /^invalid REDIS_URL: /],
    [{ REDIS_PREFIX: 'has space' }, /^invalid REDIS_PREFIX: /],
    [{ JWT_SECRET: 'short' }, /^invalid JWT_SECRET: /],
    [{ RATE_LIMIT_DEFAULT: '20' }, /^invalid RATE_LIMIT_DEFAULT: /],
    [{ RATE_LIMIT_DEFAULT: '0/10' }, /^invalid RATE_LIMIT_DEFAULT: /],
    [{ OPENAI_BASE_URL: 'ftp://x' }, /^invalid OPENAI_BASE_URL: /],
    [{ TRUSTED_PROXIES: '10.0.0.1, proxy.local' }, /^invalid TRUSTED_PROXIES: /],
    [{ ADMISSION_LEASE_CALLS: '0' }, /^invalid ADMISSION_LEASE_CALLS: /],
    [{ NODE_ENV: 'production' }, /^invalid JWT_SECRET\/KEY_SECRET: /],
  ];
  for (const [env, pattern] of cases) {
    let thrown: unknown;
    try {
      loadConfig(env);
    } catch (error) {
      thrown = error;
    }
    t.ok(thrown instanceof ConfigError, `${JSON.stringify(env)} refused`);
    t.match((thrown as Error).message, pattern);
    t.notMatch((thrown as Error).message, /\n/, 'one line');
  }
});

t.test('TRUSTED_PROXIES: a comma-separated list, spaces and empty entries ignored', async (t) => {
  t.same(loadConfig({}).trustedProxies, [], 'none by default');
  t.same(loadConfig({ TRUSTED_PROXIES: ' 10.0.0.1, 192.168.0.0/16 ,' }).trustedProxies, ['10.0.0.1', '192.168.0.0/16']);
});
