// Tasks on the management API (issue 29): GET /api/v1/tasks lists an account's video, speech and music
// tasks newest first (filters kind and status, keyset pages that never repeat or skip), each item the
// /v1 task object plus `kind`; GET /api/v1/tasks/:id reads one; DELETE cancels it with the /v1 cancel.
// A JWT and a management key see the whole account, a regular key only the tasks it created, and
// another account's task is 404 to everyone.
import t from 'tap';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, eventually, fastUser, mintToken } from './helpers/http-tools.js';

let gateway: Gateway;

t.before(async () => {
  gateway = await startGateway({
    env: {
      JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '5000/10', FETCH_ALLOW_LOOPBACK: 'true',
      TASK_POLL_MS: '30', TASK_TIMER_TICK_MS: '20', TASK_RETRY_MS: '50', TASK_USER_CONCURRENCY: '50',
    },
  });
});
t.teardown(() => gateway.close());

const call = async (method: string, path: string, credential: string) => {
  const response = await fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${credential}` } });
  return { status: response.status, body: await response.json() as any };
};

const LONG_SPEECH = { model: 'minimax/speech-2.6-hd', input: 'x [[mock job_ms=60000]]' };
const LONG_VIDEO = { model: 'alibaba/wan2.6-r2v', prompt: 'x [[mock job_ms=60000]]', video_urls: ['https://localhost/r.mp4'] };

t.test('an account\'s tasks: lists, filters, pages, one by id, and who sees which', async (t) => {
  const { token, key: keyA } = await fastUser(gateway, 'tasks-alice', '20');
  const keyB = await gateway.createKey(token, { name: 'second' });
  const management = await gateway.createKey(token, { name: 'ops', is_provisioning: true });
  const bob = await fastUser(gateway, 'tasks-bob', '5');

  const submit = async (key: string, path: string, body: object) => {
    const answer = await postJson(`${gateway.v1}/${path}`, key, body);
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body.id as string;
  };
  // Oldest first; each a moment apart so newest-first order is certain.
  const done = await submit(keyA, 'audio/speech', { model: 'openai/tts-1-hd', input: 'done', voice: 'alloy' });
  const speech = await submit(keyA, 'audio/speech', LONG_SPEECH);
  const videoA = await submit(keyA, 'videos/generations', LONG_VIDEO);
  const videoB = await submit(keyB, 'videos/generations', LONG_VIDEO);
  const bobs = await submit(bob.key, 'audio/speech', LONG_SPEECH);
  t.ok(await eventually(async () => (await call('GET', `/api/v1/tasks/${done}`, token)).body.status === 'success', 15_000), 'the short speech task succeeds');

  const all = await call('GET', '/api/v1/tasks', token);
  t.equal(all.status, 200);
  t.same(all.body.data.map((task: any) => task.id), [videoB, videoA, speech, done], 'a JWT: the account\'s tasks of every kind and key, newest first');
  t.same(all.body.data.map((task: any) => task.kind), ['video', 'video', 'speech', 'speech'], 'each with its kind');
  t.match(all.body, { has_more: false, next_cursor: null });
  const own = await call('GET', `/v1/audio/speech/${done}`, keyA);
  t.same(all.body.data[3], { ...own.body, kind: 'speech' }, 'an item is the /v1 task object plus kind');
  t.ok(own.body.data[0].url, 'a finished task has its media URL');

  const ids = async (query: string, credential = token) => {
    const page = await call('GET', `/api/v1/tasks${query}`, credential);
    t.equal(page.status, 200, `${query}: 200`);
    return page.body.data.map((task: any) => task.id);
  };
  t.same(await ids('?kind=video'), [videoB, videoA], 'kind=video');
  t.same(await ids('?kind=speech'), [speech, done], 'kind=speech');
  t.same(await ids('?kind=music'), [], 'kind=music: none');
  t.same(await ids('?status=success'), [done], 'status=success');
  t.same(await ids('?status=pending&kind=video'), [videoB, videoA], 'status and kind together');

  // Pages of one: walked by next_cursor, every task once, in order.
  const walked: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10; pages++) {
    const page: { status: number; body: any } = await call('GET', `/api/v1/tasks?limit=1${cursor ? `&cursor=${cursor}` : ''}`, token);
    walked.push(...page.body.data.map((task: any) => task.id));
    cursor = page.body.next_cursor;
    t.equal(page.body.has_more, cursor !== null, 'has_more says whether a next_cursor is given');
    if (!cursor) break;
  }
  t.same(walked, [videoB, videoA, speech, done], 'limit=1 pages walk every task once, newest first');

  t.same(await ids('', management), [videoB, videoA, speech, done], 'a management key: the whole account');
  t.same(await ids('', keyA), [videoA, speech, done], 'a regular key: only the tasks it created');
  t.same(await ids('', keyB), [videoB], 'the other key: its own');
  t.same(await ids('', bob.key), [bobs], 'another account: its own only');

  t.match((await call('GET', `/api/v1/tasks/${videoB}`, token)).body, { id: videoB, kind: 'video', object: 'video.generation', status: 'pending' }, 'one by id');
  t.equal((await call('GET', `/api/v1/tasks/${videoB}`, management)).status, 200, 'a management key reads any of the account\'s');
  t.equal((await call('GET', `/api/v1/tasks/${videoB}`, keyB)).status, 200, 'its key reads it');
  assertEnvelope(t, await call('GET', `/api/v1/tasks/${videoB}`, keyA), 404, 'not_found', 'another key\'s task, for a regular key');
  assertEnvelope(t, await call('GET', `/api/v1/tasks/${bobs}`, token), 404, 'not_found', 'another account\'s task');
  assertEnvelope(t, await call('GET', `/api/v1/tasks/${videoA}`, bob.key), 404, 'not_found', 'another account\'s task, by key');
  assertEnvelope(t, await call('GET', '/api/v1/tasks/not-a-uuid', token), 404, 'not_found', 'a malformed id');

  for (const query of ['?kind=image', '?status=done', '?limit=0', '?limit=101', '?cursor=garbage', '?kind=video&kind=music', `?cursor=${Buffer.from('1.2').toString('base64url')}`]) {
    assertEnvelope(t, await call('GET', `/api/v1/tasks${query}`, token), 400, 'invalid_request', query);
  }
  assertEnvelope(t, await call('GET', '/api/v1/tasks', 'not-a-token'), 401, undefined, 'no valid credential');
  t.same((await call('GET', '/api/v1/tasks', mintToken('tasks-nobody'))).body, { data: [], has_more: false, next_cursor: null }, 'an account without tasks: an empty page');
});

t.test('DELETE /api/v1/tasks/:id: the /v1 cancel, for the account\'s credentials and a regular key\'s own tasks', async (t) => {
  const { token, key: keyA } = await fastUser(gateway, 'cancel-alice', '20');
  const keyB = await gateway.createKey(token, { name: 'second' });
  const bob = await fastUser(gateway, 'cancel-bob', '5');
  const submitted = await postJson(`${gateway.v1}/audio/speech`, keyA, LONG_SPEECH);
  const byB = await postJson(`${gateway.v1}/videos/generations`, keyB, LONG_VIDEO);
  const id = submitted.body.id as string;

  assertEnvelope(t, await call('DELETE', `/api/v1/tasks/${id}`, bob.token), 404, 'not_found', 'another account cannot cancel it');
  assertEnvelope(t, await call('DELETE', `/api/v1/tasks/${id}`, keyB), 404, 'not_found', 'nor another key of the account');
  t.equal((await call('GET', `/api/v1/tasks/${id}`, token)).body.status, 'pending', 'still pending');

  /** DELETE, again while the task is being handed to its vendor (409 `task_starting`). */
  const cancel = async (taskId: string, credential: string) => {
    for (;;) {
      const answer = await call('DELETE', `/api/v1/tasks/${taskId}`, credential);
      if (answer.status !== 409 || answer.body.error.code !== 'task_starting') return answer;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const heldBefore = (await gateway.balanceNano('cancel-alice')).held;
  const [row] = await gateway.sql<{ hold_nano: bigint }[]>`select hold_nano from tasks where id = ${id}`;
  const holdNano = row!.hold_nano;
  t.ok(holdNano > 0n, 'the task holds its price');
  const cancelled = await cancel(id, token);
  t.equal(cancelled.status, 200, 'a JWT cancels the account\'s task');
  t.match(cancelled.body, { id, kind: 'speech', object: 'audio.speech', status: 'failed', error: { code: 'cancelled' } });
  t.match((await call('GET', `/v1/audio/speech/${id}`, keyA)).body, { status: 'failed', error: { code: 'cancelled' } }, 'the /v1 route sees the cancel');
  t.equal((await gateway.balanceNano('cancel-alice')).held, heldBefore - holdNano, 'its hold is settled when the DELETE answers (the other task\'s stays)');
  const again = await call('DELETE', `/api/v1/tasks/${id}`, token);
  t.equal(again.status, 409, 'an ended task: 409');
  t.equal(again.body.error.code, 'task_ended');

  const own = await cancel(byB.body.id, keyB);
  t.equal(own.status, 200, 'a regular key cancels a task it created');
  t.match(own.body, { id: byB.body.id, kind: 'video', status: 'failed', error: { code: 'cancelled' } });
  assertEnvelope(t, await call('DELETE', '/api/v1/tasks/00000000-0000-4000-8000-000000000000', token), 404, 'not_found', 'an unknown id');
});
