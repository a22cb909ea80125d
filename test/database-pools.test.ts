// Each Postgres pool of a gateway process is as large as its setting, whatever the load: the sum over
// the processes is what an operator checks against Postgres's max_connections (docs/configuration.md).
import t from 'tap';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, mintToken, rawRequest } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, HTTP_THREADS: '2', DATABASE_POOL_MAIN: '1', DATABASE_POOL_PER_THREAD: '2', DATABASE_POOL_TASKS: '1' } });
});
t.teardown(() => gateway?.close());

/** The gateway's connections to its database now, by pool (application_name). */
async function connections(): Promise<Record<string, number>> {
  const rows = await gateway.sql<{ name: string; count: number }[]>`
    select application_name as name, count(*)::int as count from pg_stat_activity
    where datname = ${gateway.database} and application_name like 'gateway-%' group by application_name`;
  return Object.fromEntries(rows.map((row) => [row.name, row.count]));
}

t.test('a burst of management calls never opens more connections than the pools allow', async (t) => {
  const tokens = Array.from({ length: 40 }, (_, i) => mintToken(`pool-user-${i}`));
  let busiest: Record<string, number> = {};
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = await connections();
      for (const [name, count] of Object.entries(now)) busiest[name] = Math.max(busiest[name] ?? 0, count);
    }
  })();
  // Each new account's first call writes it; each key listing reads Postgres: 200 calls at once.
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => rawRequest(`${gateway.url}/api/v1/api-keys`, {
    headers: { authorization: `Bearer ${tokens[i % tokens.length]}` },
  })));
  sampling = false;
  await sampler;
  t.ok(answers.every((answer) => answer.status === 200), 'every call answered');
  t.ok((busiest['gateway-http'] ?? 0) >= 2, `the HTTP threads used their pools (${busiest['gateway-http']} connections at most)`);
  t.ok((busiest['gateway-http'] ?? 0) <= 2 * 2, `two HTTP threads of two connections each (${busiest['gateway-http']})`);
  t.ok((busiest['gateway-main'] ?? 0) <= 1, `the main pool of one (${busiest['gateway-main'] ?? 0})`);
  t.ok((busiest['gateway-tasks'] ?? 0) <= 1, `the task pool of one (${busiest['gateway-tasks'] ?? 0})`);
});
