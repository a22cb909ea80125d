// deploy/: the compose file of two gateways on a three-node Redis Cluster, checked for structure here
// because Docker Compose is not installed on CI. Each check returns problems as sentences, so a broken
// file fails with what is wrong; the checks are also run on broken copies to show they catch it.
import t from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isAbsolute, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { randomBytes } from 'node:crypto';
import { VENDORS, loadConfig } from '../src/config.js';
import { parseRedisUrl } from '../src/store/redis-url.js';
import { IpRanges } from '../src/auth/ip-ranges.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/test/ -> the repository
const DEPLOY = join(ROOT, 'deploy');
const COMPOSE_FILE = join(DEPLOY, 'docker-compose.yml');
const GATEWAY_DOCKERFILE = 'deploy/Dockerfile';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Service = Record<string, Json>;
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, Json>;
  configs?: Record<string, { file?: string }>;
  networks?: Record<string, Json>;
}

/** The compose file as Compose reads it: YAML with `<<` merge keys, no duplicate keys. */
export function parseCompose(text: string): Compose {
  const doc = parseDocument(text, { merge: true, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) throw new Error(`not valid YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
  const compose = doc.toJS() as Compose | null;
  if (!compose || typeof compose !== 'object' || !compose.services || typeof compose.services !== 'object' || Object.keys(compose.services).length === 0) {
    throw new Error('no top-level `services`');
  }
  return compose;
}

/** The environment variables the gateway reads through its config: the keys of EnvSchema in src/config.ts, and each vendor's key and URL. */
export function knownGatewayVariables(): Set<string> {
  const source = readFileSync(join(ROOT, 'src/config.ts'), 'utf8');
  const start = source.indexOf('const EnvSchema = v.object({');
  if (start < 0) throw new Error('src/config.ts has no `const EnvSchema = v.object({`: update knownGatewayVariables');
  const end = source.indexOf('\n});', start);
  const keys = [...source.slice(start, end).matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);
  for (const vendor of VENDORS) keys.push(`${vendor.toUpperCase()}_API_KEY`, `${vendor.toUpperCase()}_BASE_URL`);
  return new Set(keys);
}

function asList(value: Json | undefined): Json[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

/** `environment` in either form (a map, or a list of `NAME=value`), as strings. */
function environmentOf(service: Service): Record<string, string> {
  const env = service.environment;
  if (!env) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(env.map((entry) => {
      const text = String(entry);
      const eq = text.indexOf('=');
      return eq < 0 ? [text, ''] : [text.slice(0, eq), text.slice(eq + 1)];
    }));
  }
  if (typeof env === 'object') return Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value === null ? '' : String(value)]));
  return {};
}

function dependsOn(service: Service): string[] {
  const deps = service.depends_on;
  if (!deps) return [];
  return Array.isArray(deps) ? deps.map(String) : Object.keys(deps as object);
}

function buildOf(service: Service): { context: string; dockerfile: string } | undefined {
  const build = service.build;
  if (build === undefined || build === null) return undefined;
  if (typeof build === 'string') return { context: resolve(DEPLOY, build), dockerfile: 'Dockerfile' };
  const spec = build as Record<string, Json>;
  return { context: resolve(DEPLOY, String(spec.context ?? '.')), dockerfile: String(spec.dockerfile ?? 'Dockerfile') };
}

function commandWords(service: Service): string[] {
  const command = service.command;
  if (Array.isArray(command)) return command.map(String);
  return typeof command === 'string' ? command.split(/\s+/) : [];
}

/** Services running a Redis node in cluster mode, with the port each listens on. */
function clusterNodes(compose: Compose): Map<string, number> {
  const nodes = new Map<string, number>();
  for (const [name, service] of Object.entries(compose.services)) {
    const words = commandWords(service);
    const flag = words.indexOf('--cluster-enabled');
    if (flag < 0 || words[flag + 1] !== 'yes') continue;
    const port = words.indexOf('--port');
    nodes.set(name, port < 0 ? 6379 : Number(words[port + 1]));
  }
  return nodes;
}

/** Services built from the gateway's Dockerfile. */
function gateways(compose: Compose): string[] {
  return Object.entries(compose.services)
    .filter(([, service]) => buildOf(service) && join(buildOf(service)!.context, buildOf(service)!.dockerfile) === join(ROOT, GATEWAY_DOCKERFILE))
    .map(([name]) => name);
}

/** Host files a service mounts (bind mounts of the short and long syntax), resolved against deploy/. */
function boundFiles(service: Service): string[] {
  const files: string[] = [];
  for (const volume of asList(service.volumes)) {
    if (typeof volume === 'string') {
      const source = volume.split(':')[0]!;
      if (source.startsWith('.') || isAbsolute(source)) files.push(resolve(DEPLOY, source));
    } else if (volume && typeof volume === 'object' && !Array.isArray(volume) && volume.type === 'bind') {
      files.push(resolve(DEPLOY, String(volume.source)));
    }
  }
  return files;
}

/** Named volumes a service mounts (`name:/path`, or the long syntax's `type: volume`). */
function namedVolumes(service: Service): string[] {
  const names: string[] = [];
  for (const volume of asList(service.volumes)) {
    if (typeof volume === 'string') {
      const parts = volume.split(':');
      if (parts.length >= 2 && !parts[0]!.startsWith('.') && !isAbsolute(parts[0]!)) names.push(parts[0]!);
    } else if (volume && typeof volume === 'object' && !Array.isArray(volume) && volume.type === 'volume' && volume.source) {
      names.push(String(volume.source));
    }
  }
  return names;
}

/**
 * What the operator gives a required variable (`${NAME:?message}`) in these checks: a generated secret,
 * as deploy/README.md says to make one (one per name, so two secrets differ).
 */
const operatorValues = new Map<string, string>();
const operatorValue = (name: string) => {
  if (!operatorValues.has(name)) operatorValues.set(name, randomBytes(48).toString('base64'));
  return operatorValues.get(name)!;
};

/** The secrets Compose must refuse to start without (`${NAME:?...}`: no default anyone could read here). */
const REQUIRED_SECRETS = ['JWT_SECRET', 'KEY_SECRET'];

/** Compose's `${NAME:-default}` (and `-`), `${NAME:?message}` (and `?`, given a generated value), `$NAME` and `$$`, applied with each optional variable unset. */
function interpolate(value: string, where: string, problems: string[]): string {
  return value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (match, braced: string | undefined, operator: string | undefined, fallback: string | undefined, bare: string | undefined) => {
    if (match === '$$') return '$';
    if (bare) {
      problems.push(`${where}: Compose would replace $${bare} with an environment variable; write $$${bare} for a literal $`);
      return '';
    }
    if (!operator) {
      problems.push(`${where}: \${${braced}} has no default and is not marked required (\${${braced}:?message}), so the file silently runs with it empty`);
      return '';
    }
    if (operator.endsWith('?')) {
      if (!fallback?.trim()) problems.push(`${where}: \${${braced}:?} says nothing: tell the operator what to set`);
      return operatorValue(braced!);
    }
    return fallback ?? '';
  });
}

/** Every string in the file, interpolated (problems for bare `$name` and variables without a default). */
function interpolateAll(value: Json, where: string, problems: string[]): Json {
  if (typeof value === 'string') return interpolate(value, where, problems);
  if (Array.isArray(value)) return value.map((item, i) => interpolateAll(item, `${where}[${i}]`, problems));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolateAll(item, `${where}.${key}`, problems)]));
  return value;
}

/** Host ports a service publishes, as `port/protocol` (short `[ip:]host:container[/proto]` and long syntax). */
function publishedPorts(service: Service): string[] {
  const ports: string[] = [];
  for (const entry of asList(service.ports)) {
    if (entry && typeof entry === 'object' && !Array.isArray(entry)) {
      if (entry.published !== undefined) ports.push(`${entry.published}/${entry.protocol ?? 'tcp'}`);
      continue;
    }
    const [spec, protocol = 'tcp'] = String(entry).split('/');
    const parts = spec!.split(':');
    if (parts.length >= 2) ports.push(`${parts[parts.length - 2]}/${protocol}`);
  }
  return ports;
}

/** Everything wrong with a compose file of gateways on a Redis Cluster; empty when it holds together. */
export function composeProblems(raw: Compose): string[] {
  const problems: string[] = [];
  const compose = interpolateAll(raw as unknown as Json, 'compose', problems) as unknown as Compose;
  const names = new Set(Object.keys(compose.services));
  const declaredVolumes = new Set(Object.keys(compose.volumes ?? {}));

  const hostPorts = new Map<string, string>();
  for (const [name, service] of Object.entries(compose.services)) {
    if (!service || typeof service !== 'object') {
      problems.push(`service ${name} is not a map`);
      continue;
    }
    const build = buildOf(service);
    if (!service.image && !build) problems.push(`service ${name} has neither image nor build`);
    if (build) {
      if (!existsSync(build.context) || !statSync(build.context).isDirectory()) problems.push(`service ${name}: build context ${build.context} is not a folder`);
      else if (!existsSync(join(build.context, build.dockerfile))) problems.push(`service ${name}: Dockerfile ${build.dockerfile} is not in ${build.context}`);
    }
    for (const dependency of dependsOn(service)) {
      if (!names.has(dependency)) problems.push(`service ${name} depends on ${dependency}, which is not a service`);
    }
    for (const port of publishedPorts(service)) {
      const other = hostPorts.get(port);
      if (other) problems.push(`host port ${port} is published by both ${other} and ${name}`);
      hostPorts.set(port, name);
    }
    for (const file of boundFiles(service)) {
      if (!existsSync(file)) problems.push(`service ${name} mounts ${file}, which does not exist`);
    }
    for (const volume of namedVolumes(service)) {
      if (!declaredVolumes.has(volume)) problems.push(`service ${name} mounts volume ${volume}, which is not under the top-level volumes`);
    }
    for (const config of asList(service.configs)) {
      const source = typeof config === 'string' ? config : String((config as Record<string, Json>)?.source);
      if (!compose.configs?.[source]) problems.push(`service ${name} uses config ${source}, which is not under the top-level configs`);
    }
  }
  for (const [name, config] of Object.entries(compose.configs ?? {})) {
    if (config?.file && !existsSync(resolve(DEPLOY, config.file))) problems.push(`config ${name}: file ${config.file} does not exist`);
  }

  const nodes = clusterNodes(compose);
  if (nodes.size !== 3) problems.push(`expected three Redis Cluster nodes (--cluster-enabled yes), found ${nodes.size}: ${[...nodes.keys()].join(', ')}`);
  const expectedSeeds = [...nodes].map(([name, port]) => `${name}:${port}`).sort();

  const gatewayNames = gateways(compose);
  if (gatewayNames.length < 2) problems.push(`expected at least two gateways built from ${GATEWAY_DOCKERFILE}, found ${gatewayNames.length}`);
  const known = knownGatewayVariables();
  for (const name of gatewayNames) {
    const service = compose.services[name]!;
    const env = environmentOf(service);
    for (const variable of Object.keys(env)) {
      if (!known.has(variable)) problems.push(`gateway ${name} sets ${variable}, which src/config.ts does not read`);
    }
    const redisUrl = env.REDIS_URL ?? '';
    try {
      const target = parseRedisUrl(redisUrl);
      const seeds = target.nodes.map(({ host, port }) => `${host}:${port}`).sort();
      if (!target.cluster) problems.push(`gateway ${name}: REDIS_URL ${redisUrl} is not the cluster form (redis-cluster://host:port,...)`);
      else if (seeds.join(',') !== expectedSeeds.join(',')) problems.push(`gateway ${name}: REDIS_URL names ${seeds.join(', ')}, not the cluster's nodes ${expectedSeeds.join(', ')}`);
    } catch (error) {
      problems.push(`gateway ${name}: REDIS_URL ${JSON.stringify(redisUrl)} does not parse: ${(error as Error).message}`);
    }
    try {
      loadConfig(env); // the values too: what the gateway would refuse at start-up
    } catch (error) {
      problems.push(`gateway ${name}: the gateway refuses its environment: ${(error as Error).message}`);
    }
    if (env.NODE_ENV !== 'production') problems.push(`gateway ${name}: NODE_ENV is ${env.NODE_ENV ?? 'unset'}, not production (development takes published secrets and mocks keyless vendors)`);
    const rawEnv = environmentOf(raw.services[name]!);
    for (const secret of REQUIRED_SECRETS) {
      if (!new RegExp(`^\\$\\{${secret}:\\?[^}]+\\}$`).test(rawEnv[secret] ?? '')) {
        problems.push(`gateway ${name}: ${secret} is ${JSON.stringify(rawEnv[secret] ?? null)}, not \${${secret}:?message} (Compose must refuse to start without it; a default here is published)`);
      }
    }
    if (!env.METRICS_PORT || env.METRICS_PORT === (env.PORT ?? '8080')) problems.push(`gateway ${name}: /metrics is on the public listener (set METRICS_PORT to a port of its own)`);
    const health = JSON.stringify(service.healthcheck ?? null);
    if (!/\/(readyz|healthz)\b/.test(health)) problems.push(`gateway ${name} has no healthcheck on /readyz or /healthz`);
  }

  // The balancer: a service whose mounted config names every gateway at its port.
  const balancers = Object.entries(compose.services).filter(([, service]) => /^(haproxy|nginx|traefik|envoyproxy\/envoy)(:|$)/.test(String(service.image ?? '')));
  if (balancers.length !== 1) problems.push(`expected one balancer (haproxy, nginx, …) service, found ${balancers.length}`);
  for (const [name, service] of balancers) {
    if (publishedPorts(service).length === 0) problems.push(`balancer ${name} publishes no port`);
    const configs = boundFiles(service).filter((file) => existsSync(file) && statSync(file).isFile()).map((file) => readFileSync(file, 'utf8').replace(/^\s*#.*$/gm, ''));
    if (configs.length === 0) problems.push(`balancer ${name} mounts no config file`);
    for (const gateway of gatewayNames) {
      const port = environmentOf(compose.services[gateway]!).PORT ?? '8080';
      const address = new RegExp(`(^|\\s)${gateway}:${port}\\b`, 'm');
      if (!configs.some((text) => address.test(text))) problems.push(`balancer ${name}'s config does not name ${gateway}:${port}`);
    }
    // Behind it every client would share its address (one failure budget, one allow-list entry for all)
    // unless each gateway trusts its X-Forwarded-For: a fixed address, listed in TRUSTED_PROXIES.
    const fixed = balancerAddresses(service);
    if (fixed.length === 0) problems.push(`balancer ${name} has no fixed ipv4_address, so no gateway can name it in TRUSTED_PROXIES`);
    for (const gateway of gatewayNames) {
      const trusted = new IpRanges((environmentOf(compose.services[gateway]!).TRUSTED_PROXIES ?? '').split(',').map((entry) => entry.trim()).filter(Boolean));
      if (fixed.length > 0 && !fixed.every((address) => trusted.contains(address))) problems.push(`gateway ${gateway}: TRUSTED_PROXIES does not name the balancer ${name} (${fixed.join(', ')})`);
    }
  }
  return problems;
}

/** The fixed IPv4 addresses a service has on its networks (`networks: {name: {ipv4_address}}`). */
function balancerAddresses(service: Service): string[] {
  const networks = service.networks;
  if (!networks || typeof networks !== 'object' || Array.isArray(networks)) return [];
  return Object.values(networks).flatMap((network) => {
    const address = network && typeof network === 'object' && !Array.isArray(network) ? network.ipv4_address : undefined;
    return typeof address === 'string' ? [address] : [];
  });
}

/** What is wrong with the gateway's Dockerfile: a Node 20 base, it runs the built main, as a user other than root, in production. */
export function dockerfileProblems(text: string): string[] {
  const problems: string[] = [];
  const users = [...text.matchAll(/^\s*USER\s+(\S+)/gim)].map((m) => m[1]!);
  const user = users[users.length - 1];
  if (!user || /^(root|0)(:|$)/.test(user)) problems.push(`the gateway runs as ${user ?? 'root (no USER)'}, not as a user of its own`);
  if (!/^\s*ENV\s+(?:.*\s)?NODE_ENV=production\b/m.test(text)) problems.push('no `ENV NODE_ENV=production`: a container would run in development, with the published development secrets');
  const from = /^FROM\s+(?:--platform=\S+\s+)?(\S+)/im.exec(text)?.[1];
  if (!from || !/^node:20(?:[.-][\w.-]*)?$/.test(from)) problems.push(`the base image is ${from ?? 'missing'}, not node:20-something`);
  if (!/^\s*RUN\s+npm ci\b/m.test(text)) problems.push('no `RUN npm ci`');
  if (!/^\s*RUN\s+npm run build\b/m.test(text)) problems.push('no `RUN npm run build`');
  if (!/^\s*CMD\s+\[\s*"node",\s*"dist\/src\/main\.js"\s*\]/m.test(text)) problems.push('CMD does not run node dist/src/main.js (exec form, so SIGTERM reaches node)');
  return problems;
}

/** What is wrong with the scrape config: it must scrape every gateway at its metrics listener, and load rule files that exist. */
export function scrapeProblems(scrapeText: string, compose: Compose): string[] {
  const problems: string[] = [];
  const config = parseDocument(scrapeText).toJS() as { rule_files?: string[]; scrape_configs?: { static_configs?: { targets?: string[] }[] }[] } | null;
  const targets = new Set((config?.scrape_configs ?? []).flatMap((job) => (job.static_configs ?? []).flatMap((group) => group.targets ?? [])));
  for (const gateway of gateways(compose)) {
    const env = environmentOf(compose.services[gateway]!);
    const target = `${gateway}:${env.METRICS_PORT ?? env.PORT ?? '8080'}`;
    if (!targets.has(target)) problems.push(`the scrape config does not scrape ${target} (${[...targets].join(', ') || 'no targets'})`);
  }
  for (const file of config?.rule_files ?? []) {
    if (!existsSync(join(ROOT, 'ops', file))) problems.push(`rule file ${file} is not in ops/`);
  }
  return problems;
}

const composeText = readFileSync(COMPOSE_FILE, 'utf8');
const SCRAPE_FILE = join(ROOT, 'ops', 'prometheus.yml');

t.test('deploy/docker-compose.yml holds together', async (t) => {
  const compose = parseCompose(composeText);
  t.same(composeProblems(compose), [], 'no problems');
  t.same([...clusterNodes(compose).keys()].sort(), ['redis-1', 'redis-2', 'redis-3']);
  t.same(gateways(compose).sort(), ['gateway-1', 'gateway-2']);
});

t.test('Prometheus scrapes every gateway\'s metrics listener; the balancer keeps /metrics from clients', async (t) => {
  const compose = parseCompose(composeText);
  t.same(scrapeProblems(readFileSync(SCRAPE_FILE, 'utf8'), compose), [], 'ops/prometheus.yml');
  const prometheus = Object.entries(compose.services).find(([, service]) => /^prom\/prometheus(:|$)/.test(String(service.image ?? '')));
  t.ok(prometheus && boundFiles(prometheus[1]).includes(SCRAPE_FILE), 'the compose file runs Prometheus with ops/prometheus.yml');
  const haproxy = readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8');
  t.match(haproxy, /^\s*http-request deny\b.*\bif \{ path \/metrics \}/m, 'haproxy answers /metrics itself');
  const broken = parseCompose(composeText);
  const service = broken.services['gateway-2']!;
  broken.services['gateway-2'] = { ...service, environment: { ...(service.environment as Record<string, string>), METRICS_PORT: '9999' } };
  t.match(scrapeProblems(readFileSync(SCRAPE_FILE, 'utf8'), broken), [/does not scrape gateway-2:9999/], 'a moved metrics port is caught');
});

t.test('deploy/Dockerfile is a Node 20 image running the gateway', async (t) => {
  t.same(dockerfileProblems(readFileSync(join(ROOT, GATEWAY_DOCKERFILE), 'utf8')), []);
  t.ok(existsSync(join(ROOT, 'src/main.ts')), 'the main it runs exists');
  t.ok(existsSync(join(ROOT, '.dockerignore')), 'the build context leaves node_modules and dist out');
});

t.test('the healthchecks use routes the gateway serves', async (t) => {
  const app = readFileSync(join(ROOT, 'src/http/app.ts'), 'utf8');
  t.match(app, /\.get\('\/readyz'/);
  t.match(app, /\.get\('\/healthz'/);
  t.match(readFileSync(join(DEPLOY, 'haproxy.cfg'), 'utf8'), /^\s*option httpchk GET \/healthz\b/m, 'the balancer checks liveness, not readiness (see haproxy.cfg)');
});

t.test('the checks catch a broken file', async (t) => {
  const caught = (what: string, edit: (compose: Compose) => void, expected: RegExp) => {
    const compose = parseCompose(composeText);
    edit(compose);
    const problems = composeProblems(compose);
    t.ok(problems.some((problem) => expected.test(problem)), what, { problems, expected: String(expected) });
  };
  // A gateway's copy with its environment changed (both gateways share one parsed object through the YAML anchor).
  const withEnv = (compose: Compose, gateway: string, change: Record<string, string>) => {
    const service = compose.services[gateway]!;
    compose.services[gateway] = { ...service, environment: { ...(service.environment as Record<string, string>), ...change } };
  };
  caught('a REDIS_URL missing a node', (c) => withEnv(c, 'gateway-2', { REDIS_URL: 'redis-cluster://redis-1:6379,redis-2:6379' }), /gateway-2: REDIS_URL names redis-1:6379, redis-2:6379, not the cluster's nodes/);
  caught('a one-node REDIS_URL', (c) => withEnv(c, 'gateway-1', { REDIS_URL: 'redis://redis-1:6379' }), /gateway-1: REDIS_URL .* is not the cluster form/);
  caught('a variable the gateway does not read', (c) => withEnv(c, 'gateway-1', { REDIS_CLUSTER: 'yes' }), /gateway-1 sets REDIS_CLUSTER, which src\/config.ts does not read/);
  caught('a value the gateway refuses', (c) => withEnv(c, 'gateway-1', { PORT: 'http' }), /gateway-1: the gateway refuses its environment: invalid PORT/);
  caught('a dependency on no service', (c) => { c.services.balancer!.depends_on = ['gateway-3']; }, /balancer depends on gateway-3, which is not a service/);
  caught('a host port published twice', (c) => { c.services.postgres!.ports = ['8080:5432']; }, /host port 8080\/tcp is published by both/);
  caught('a mounted file that is not there', (c) => { c.services.balancer!.volumes = ['./nginx.conf:/etc/nginx/nginx.conf:ro']; }, /balancer mounts .*nginx\.conf, which does not exist/);
  caught('a balancer config without the gateways', (c) => { c.services.balancer!.volumes = ['./Dockerfile:/usr/local/etc/haproxy/haproxy.cfg:ro']; }, /balancer's config does not name gateway-1:8080/);
  caught('a named volume not declared', (c) => { c.services.postgres!.volumes = ['pgdata:/var/lib/postgresql/data']; }, /service postgres mounts volume pgdata, which is not under the top-level volumes/);
  caught('a service with neither image nor build', (c) => { delete c.services.postgres!.image; }, /service postgres has neither image nor build/);
  caught('a shell $ that Compose would eat', (c) => { c.services['redis-cluster-init']!.command = ['sh', '-c', 'redis-cli -h $node ping']; }, /Compose would replace \$node/);
  caught('a variable without a default', (c) => withEnv(c, 'gateway-1', { PUBLIC_URL: '${PUBLIC_URL}' }), /\$\{PUBLIC_URL\} has no default and is not marked required/);
  // Generated here, so that no secret-looking value is published in this file (test/production-config.test.ts).
  const generated = randomBytes(48).toString('base64');
  caught('a secret with a default', (c) => withEnv(c, 'gateway-1', { JWT_SECRET: `\${JWT_SECRET:-${generated}}` }), /gateway-1: JWT_SECRET is .*, not \$\{JWT_SECRET:\?message\}/);
  caught('a secret written in the file', (c) => withEnv(c, 'gateway-2', { KEY_SECRET: generated }), /gateway-2: KEY_SECRET is .*, not \$\{KEY_SECRET:\?message\}/);
  caught('a published demo secret', (c) => withEnv(c, 'gateway-1', { JWT_SECRET: '${JWT_SECRET:-compose-demo-jwt-secret-change-me-0123456789}' }), /gateway-1: the gateway refuses its environment: invalid JWT_SECRET: refused in production/);
  caught('a gateway in development', (c) => withEnv(c, 'gateway-1', { NODE_ENV: 'development' }), /gateway-1: NODE_ENV is development, not production/);
  caught('/metrics on the public listener', (c) => withEnv(c, 'gateway-2', { METRICS_PORT: '' }), /gateway-2: \/metrics is on the public listener/);
  caught('a required variable that says nothing', (c) => withEnv(c, 'gateway-1', { KEY_SECRET: '${KEY_SECRET:?}' }), /\$\{KEY_SECRET:\?\} says nothing/);
  caught('gateways that do not trust the balancer', (c) => withEnv(c, 'gateway-2', { TRUSTED_PROXIES: '' }), /gateway-2: TRUSTED_PROXIES does not name the balancer balancer \(172\.28\.0\.10\)/);
  caught('a balancer without a fixed address', (c) => { delete c.services.balancer!.networks; }, /balancer balancer has no fixed ipv4_address/);
  caught('a cluster of two nodes', (c) => { delete c.services['redis-3']; }, /expected three Redis Cluster nodes/);
  t.throws(() => parseCompose('services:\n  a: {image: x}\n  a: {image: y}\n'), /not valid YAML/, 'a duplicate key');
  t.throws(() => parseCompose('volumes: {}\n'), /no top-level `services`/);
  const dockerfile = dockerfileProblems('FROM node:22-slim\nRUN npm ci\nRUN npm run build\nCMD node dist/src/main.js\n');
  t.ok(dockerfile.some((problem) => /not node:20-something/.test(problem)), 'another Node', { dockerfile });
  t.ok(dockerfile.some((problem) => /CMD does not run/.test(problem)), 'a shell-form CMD', { dockerfile });
  t.ok(dockerfile.some((problem) => /runs as root \(no USER\)/.test(problem)), 'no USER', { dockerfile });
  t.ok(dockerfile.some((problem) => /no `ENV NODE_ENV=production`/.test(problem)), 'no NODE_ENV', { dockerfile });
  const asRoot = dockerfileProblems('FROM node:20-slim\nRUN npm ci\nRUN npm run build\nUSER node\nRUN true\nUSER root\nENV NODE_ENV=production\nCMD ["node", "dist/src/main.js"]\n');
  t.same(asRoot, ['the gateway runs as root, not as a user of its own'], 'the last USER counts');
});
