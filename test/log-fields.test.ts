// Every JSON log line names the thread that wrote it: `main`, or an HTTP thread's `http-<n>` (the
// name its metrics carry), never a bare number.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, FETCH_ALLOW_LOOPBACK: 'true', LOG_LEVEL: 'info' } }); });
t.teardown(() => gateway?.close());

const logLines = () => gateway.output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);

t.test("an HTTP thread's log lines name it as its metrics do", async (t) => {
  const { key } = await fastUser(gateway, 'log-fields', '5');
  const submitted = await postJson(`${gateway.v1}/videos/generations`, key, { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'a lighthouse [[mock job_ms=50]]', image_urls: ['https://localhost/reference.png'] });
  t.equal(submitted.status, 200, `a task, whose submission an HTTP thread logs: ${JSON.stringify(submitted.body)}`);
  t.ok(await eventually(() => logLines().some((line) => line.msg === 'task submitted')), 'the submission is logged');
  const submittedLine = logLines().find((line) => line.msg === 'task submitted')!;
  t.match(submittedLine.thread, /^http-\d+$/, `written by an HTTP thread, named (${JSON.stringify(submittedLine.thread)})`);
  const unnamed = logLines().filter((line) => typeof line.thread !== 'string');
  t.same(unnamed, [], 'no line names its thread by a number, or not at all');
});
