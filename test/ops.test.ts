// The operations kit in ops/: the Prometheus alerting rules pass promtool (syntax and their unit tests),
// and every metric the Grafana dashboard or the rules query is one a running gateway exports. Also the
// per-thread event-loop metrics, build info, dependency and ledger-lag gauges of a real /metrics.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { createDependencyMetrics, createLedgerLagMetrics } from '../src/metrics.js';
import { LoopDelaySampler } from '../src/worker-pool.js';
import { RedisKeys } from '../src/admission/keys.js';
import { DIRTY_SHARDS, dirtyMarks } from '../src/ledger/dirty-set.js';
import { TEST_JWT_SECRET, eventually, fastUser, parsePrometheus, type Sample } from './helpers/http-tools.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/test/ -> the repository
const OPS = `${ROOT}ops/`;
const RULES = `${OPS}prometheus-alerts.yml`;
const RULE_TESTS = `${OPS}prometheus-alerts.test.yml`;
const DASHBOARD = `${OPS}grafana-dashboard.json`;
const CHAT = '/v1/chat/completions';
const MODEL = 'openai/gpt-4o-mini';

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'inf', 'nan', 'atan2']);

/**
 * The metric names a PromQL expression selects: identifiers outside strings, label matchers, ranges and
 * grouping lists that are neither functions, keywords nor numbers (Grafana's `$vars` sit in matchers and ranges).
 */
export function promqlMetricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ')
    .replace(/\boffset\s+-?[0-9a-z]+/gi, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/(?<![\w.$:])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const name = match[0];
    const rest = stripped.slice(match.index! + name.length);
    if (/^\s*\(/.test(rest)) continue; // a function (or an aggregation) call
    if (PROMQL_WORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** The `expr` of each rule in a rules file (one-line values and `|` / `>-` blocks). */
function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n');
  const exprs: string[] = [];
  lines.forEach((line, index) => {
    const match = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!match) return;
    const [, indent, value] = match;
    if (value && !/^[|>][-+]?$/.test(value)) {
      exprs.push(value.replace(/^'(.*)'$/, '$1').replace(/^"(.*)"$/, '$1'));
      return;
    }
    const block: string[] = [];
    for (let i = index + 1; i < lines.length; i++) {
      const next = lines[i]!;
      if (next.trim() !== '' && next.search(/\S/) <= indent!.length) break;
      block.push(next.trim());
    }
    exprs.push(block.join(' '));
  });
  return exprs;
}

interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; title: string; panels: DashboardPanel[]; templating: { list: { name: string; type: string; query?: unknown }[] } };
const dashboardExprs = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));
const rulesText = readFileSync(RULES, 'utf8');
const ruleExprs = ruleExpressions(rulesText);

t.test('the PromQL name parser', async (t) => {
  t.same(promqlMetricNames('histogram_quantile(0.99, sum by (le, route) (rate(gateway_http_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval])))'),
    ['gateway_http_request_duration_seconds_bucket']);
  t.same(promqlMetricNames('sum by (instance) (rate(a_total{status=~"5.."}[5m])) / sum(rate(a_total[5m])) > 0.05 and sum(b) by (x) > 1e3'), ['a_total', 'b']);
  t.same(promqlMetricNames('max(x{q="by (y)"}) offset 5m unless on (instance) group_left (z) up_like == bool 1'), ['x', 'up_like']);
  t.same(promqlMetricNames('gateway_build_info'), ['gateway_build_info']);
});

const promtoolMissing = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).error !== undefined;
// CI installs promtool (.ci/run) and must run this; elsewhere it may be missing.
const skipPromtool = promtoolMissing && process.env.CI !== 'true' ? 'promtool is not installed (Debian package prometheus)' : false;

t.test('the alerting rules pass promtool: syntax and their unit tests', { skip: skipPromtool }, async (t) => {
  if (promtoolMissing) {
    t.fail('promtool is not installed under CI=true: .ci/run installs it from Debian\'s prometheus package');
    return;
  }
  const check = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
  t.equal(check.status, 0, `promtool check rules:\n${check.stdout}${check.stderr}`);
  t.match(check.stdout, new RegExp(`SUCCESS: ${ruleExprs.length} rules found`), 'promtool saw every rule this test reads');
  const unit = spawnSync('promtool', ['test', 'rules', RULE_TESTS], { encoding: 'utf8', cwd: OPS });
  t.equal(unit.status, 0, `promtool test rules:\n${unit.stdout}${unit.stderr}`);
});

t.test('the scrape configuration passes promtool, with the alerting rules it loads', { skip: skipPromtool }, async (t) => {
  if (promtoolMissing) {
    t.fail('promtool is not installed under CI=true: .ci/run installs it from Debian\'s prometheus package');
    return;
  }
  const check = spawnSync('promtool', ['check', 'config', `${OPS}prometheus.yml`], { encoding: 'utf8' });
  t.equal(check.status, 0, `promtool check config:\n${check.stdout}${check.stderr}`);
});

t.test('the dashboard is importable: unique ids, one data source variable, every panel on the grid with queries', async (t) => {
  t.equal(dashboard.uid, 'model-gateway');
  const ids = dashboard.panels.map((panel) => panel.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  t.ok(dashboard.templating.list.some((variable) => variable.name === 'datasource' && variable.type === 'datasource' && variable.query === 'prometheus'), 'a Prometheus data source variable');
  const titles = new Set<string>();
  for (const panel of dashboard.panels) {
    t.ok(panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title} fits the grid`);
    if (panel.type === 'row') continue;
    t.notOk(titles.has(panel.title), `${panel.title}: one panel of that title`);
    titles.add(panel.title);
    t.equal(panel.datasource?.uid, '${datasource}', `${panel.title} queries the chosen data source`);
    t.ok(panel.targets && panel.targets.length > 0 && panel.targets.every((target) => target.expr && target.datasource?.uid === '${datasource}'), `${panel.title} has queries`);
  }
  const used = new Set(dashboardExprs.flatMap(promqlMetricNames));
  for (const name of ['gateway_http_requests_total', 'gateway_http_request_duration_seconds_bucket', 'gateway_upstream_ttfb_seconds_bucket', 'gateway_tokens_total',
    'gateway_cost_usd_total', 'gateway_admission_rejections_total', 'gateway_ledger_lag_seconds', 'gateway_event_loop_delay_seconds',
    'gateway_event_loop_utilization', 'gateway_task_duration_seconds_bucket', 'gateway_task_callbacks_total', 'gateway_build_info',
    'gateway_routing_attempts_total', 'gateway_routing_breaker_state', 'gateway_idempotency_replays_total', 'gateway_idempotency_refusals_total']) {
    t.ok(used.has(name), `the dashboard shows ${name}`);
  }
});

let gateway: Gateway;
t.before(async () => {
  gateway = await startGateway({ threads: 2, env: { JWT_SECRET: TEST_JWT_SECRET } });
});
t.teardown(async () => {
  await gateway?.close();
});

const scrape = async () => {
  const response = await fetch(`${gateway.url}/metrics`);
  const text = await response.text();
  return { status: response.status, text, samples: parsePrometheus(text) };
};
const of = (samples: Sample[], name: string) => samples.filter((sample) => sample.name === name);

t.test('a gateway exports every metric the dashboard and the rules query, and each thread\'s event loop', async (t) => {
  const rich = await fastUser(gateway, 'ops-rich', '5');
  const poor = await fastUser(gateway, 'ops-poor', '0');
  const chat = (key: string, body: Record<string, unknown>) => postJson(`${gateway.url}${CHAT}`, key, { model: MODEL, ...body });
  const answers = await Promise.all([
    chat(rich.key, { messages: [{ role: 'user', content: 'hello [[mock chunks=3]]' }] }),
    chat(rich.key, { stream: true, messages: [{ role: 'user', content: 'stream [[mock chunks=3]]' }] }),
    // No usage upstream: the HTTP thread counts the tokens in its on-demand worker pool.
    chat(rich.key, { messages: [{ role: 'user', content: 'count me [[mock chunks=4 no_usage=1]]' }] }),
    chat(rich.key, { messages: [{ role: 'user', content: 'again [[mock chunks=4 no_usage=1]]' }] }),
    chat(poor.key, { messages: [{ role: 'user', content: 'no money' }] }),
    chat(rich.key, { messages: [{ role: 'user', content: 'upstream down [[mock fail=500]]' }] }),
  ]);
  t.same(answers.map((answer) => answer.status).slice(0, 5), [200, 200, 200, 200, 402], `the calls were answered: ${JSON.stringify(answers.map((answer) => [answer.status, typeof answer.body === 'string' ? answer.body.slice(0, 200) : answer.body]))}`);

  // The token counter announces its probe once it starts: wait for its first answer.
  let samples: Sample[] = [];
  let text = '';
  const countTokensThread = /^token-counter$/;
  t.ok(await eventually(async () => {
    ({ samples, text } = await scrape());
    return of(samples, 'gateway_event_loop_delay_seconds').some((sample) => countTokensThread.test(sample.labels.thread!))
      && of(samples, 'gateway_tokens_total').length > 0;
  }, 10_000, 200), 'the token counter\'s thread reports its loop');
  ({ samples, text } = await scrape());

  // Every name the dashboard and the rules select is exported (histograms by their _bucket/_sum/_count series).
  const types = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1]!, match[2]!);
  const exported = (name: string) => {
    if (types.has(name)) return true;
    const series = /^(.*)_(bucket|sum|count)$/.exec(name);
    if (!series) return false;
    const type = types.get(series[1]!);
    return type === 'histogram' || (type === 'summary' && series[2] !== 'bucket');
  };
  t.equal(ruleExprs.length, (rulesText.match(/^\s*- alert:/gm) ?? []).length, 'an expression read for every alert');
  const used = new Map<string, string>();
  for (const expr of dashboardExprs) for (const name of promqlMetricNames(expr)) used.set(name, 'the dashboard');
  for (const expr of ruleExprs) for (const name of promqlMetricNames(expr)) used.set(name, used.has(name) ? 'the dashboard and the rules' : 'the rules');
  t.ok(used.size >= 30, `${used.size} metric names queried`);
  for (const [name, where] of used) t.ok(exported(name), `${name} (used by ${where}) is exported`);

  // Per-thread event-loop delay: the main thread, both HTTP threads, the task worker, the token counter.
  const delay = of(samples, 'gateway_event_loop_delay_seconds');
  const threads = new Set(delay.map((sample) => sample.labels.thread!));
  for (const thread of ['main', 'http-0', 'http-1', 'tasks-0']) {
    const quantiles = delay.filter((sample) => sample.labels.thread === thread).map((sample) => sample.labels.quantile).sort();
    t.same(quantiles, ['0.5', '0.99', '1'], `delay of ${thread}: p50, p99, max`);
  }
  t.ok([...threads].some((thread) => countTokensThread.test(thread)), `delay of the token counter's worker (${[...threads].join(', ')})`);
  t.ok(delay.every((sample) => Number.isFinite(sample.value) && sample.value >= 0 && sample.value < 5), 'delays are seconds, under 5');
  const utilization = of(samples, 'gateway_event_loop_utilization');
  for (const thread of ['main', 'http-0', 'http-1', 'tasks-0']) {
    t.equal(utilization.filter((sample) => sample.labels.thread === thread).length, 1, `utilisation of ${thread}`);
  }
  t.ok(utilization.some((sample) => countTokensThread.test(sample.labels.thread!)), 'utilisation of the token counter\'s worker');
  t.ok(utilization.every((sample) => sample.value >= 0 && sample.value <= 1), `utilisations are between 0 and 1: ${utilization.map((sample) => `${sample.labels.thread}=${sample.value}`).join(', ')}`);
  // An idle task worker is not parked in Atomics.wait (which would read as 100 % busy).
  t.ok(utilization.find((sample) => sample.labels.thread === 'tasks-0')!.value < 0.5, 'an idle task worker reads as mostly idle');
  t.equal(of(samples, 'gateway_http_event_loop_delay_seconds').length, 3, 'the worst HTTP thread\'s delay is still exported (p50, p99, max)');

  const [build] = of(samples, 'gateway_build_info');
  const version = (JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version;
  t.equal(build?.value, 1, 'gateway_build_info is 1');
  t.equal(build?.labels.version, version, 'its version is package.json\'s');
  t.equal(build?.labels.node_version, process.version, 'its node_version');
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status === 0 && !process.env.GATEWAY_COMMIT && !process.env.GIT_COMMIT) t.equal(build?.labels.commit, head.stdout.trim(), 'its commit is the checkout\'s HEAD');

  const up = of(samples, 'gateway_dependency_up');
  t.same(up.map((sample) => [sample.labels.dependency, sample.value]).sort(), [['postgres', 1], ['redis', 1]], 'Redis and Postgres answer');
  const [lag] = of(samples, 'gateway_ledger_lag_seconds');
  t.ok(lag && lag.value >= 0 && lag.value < 60, `ledger lag is seconds (${lag?.value})`);
  t.ok(of(samples, 'gateway_ledger_pending_users')[0]!.value >= 0, 'pending users counted');
});

t.test('the ledger lag reads the oldest event waiting in Redis; a dependency that fails or hangs is down', async (t) => {
  // On a key prefix of its own, which no ledger writer drains.
  const keys = new RedisKeys(`ops-test:${randomBytes(4).toString('hex')}:`);
  const registry = new Registry();
  createLedgerLagMetrics(registry, gateway.redis, keys, 1000);
  const read = async () => {
    const metrics = await registry.getMetricsAsJSON();
    const value = (name: string) => metrics.find((metric) => metric.name === name)?.values[0]?.value;
    return { lag: value('gateway_ledger_lag_seconds'), users: value('gateway_ledger_pending_users') };
  };
  t.same(await read(), { lag: 0, users: 0 }, 'nothing waits: lag 0');
  const [seconds] = await gateway.redis.time();
  await gateway.redis.multi()
    .xadd(keys.ledger('old'), `${(Number(seconds) - 30) * 1000}-0`, 'r', 'x', 'c', '0', 'e', '{}')
    .xadd(keys.ledger('new'), '*', 'r', 'y', 'c', '0', 'e', '{}')
    .exec();
  for (const [key, marked] of dirtyMarks(keys, ['old', 'new', 'drained'])) await gateway.redis.sadd(key, ...marked);
  const waiting = await read();
  t.equal(waiting.users, 3, 'three users marked');
  t.ok(waiting.lag! >= 29.5 && waiting.lag! < 40, `the oldest event's age (${waiting.lag} s)`);
  await gateway.redis.del(keys.ledger('old'), keys.ledger('new'), ...DIRTY_SHARDS.map((shard) => keys.ledgerDirty(shard)));
  t.same(await read(), { lag: 0, users: 0 }, 'drained: lag 0 again');

  const deps = new Registry();
  createDependencyMetrics(deps, { ok: async () => 'PONG', refused: () => Promise.reject(new Error('ECONNREFUSED')), silent: () => new Promise(() => {}) }, 200);
  for (let round = 0; round < 2; round++) {
    const [up] = await deps.getMetricsAsJSON();
    t.same(Object.fromEntries(up!.values.map((v) => [v.labels.dependency, v.value])), { ok: 1, refused: 0, silent: 0 }, `scrape ${round + 1}: up, refused, no answer`);
  }
});

t.test('a held event loop shows in the delay sampler, in the window it ends and in the next', async (t) => {
  const sampler = new LoopDelaySampler(20);
  const hold = (ms: number) => { const until = performance.now() + ms; while (performance.now() < until); };
  hold(300);
  const during = sampler.read(); // its timer has not run since: the whole window counts as held
  t.ok(during.max >= 0.2 && during.max < 1, `held window: ${during.max} s`);
  await new Promise((resolve) => setTimeout(resolve, 60));
  hold(150);
  await new Promise((resolve) => setTimeout(resolve, 60));
  const after = sampler.read();
  t.ok(after.max >= 0.1 && after.max < 1, `the late wake-up's gap: ${after.max} s`);
  t.ok(after.p50 <= after.max, 'p50 at most the max');
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.ok(sampler.read().max < 0.1, 'an idle window reads near 0');
  sampler.close();
});
