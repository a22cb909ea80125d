// GET /api/v1/requests and GET /api/v1/usage (issue 28 item 4): after a mix of calls each request is
// listed with its tokens and its cost (equal to its usage transaction), filters and cursor pages work,
// another account's rows never show, and the hourly rollup sums to the transactions to the nano-USD,
// also after a ledger event is replayed (counted once) and for a charge whose event is unreadable.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { usdToNano } from './helpers/billing-checks.js';
import { assertEnvelope, eventually, newestKeyId } from './helpers/http-tools.js';
import { RedisKeys } from '../src/admission/keys.js';
import { expireUsageRollup, NO_KEY } from '../src/store/usage-rollup.js';

let gateway: Gateway;
const mediaDir = mkdtempSync(join(tmpdir(), 'usage-api-media-'));
t.before(async () => {
  // Loopback fetches allowed: the video's reference image is at a local address, as in the task tests.
  gateway = await startGateway({ env: { FETCH_ALLOW_LOOPBACK: 'true', MEDIA_DIR: mediaDir, TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20' } });
});
t.teardown(() => rmSync(mediaDir, { recursive: true, force: true }));
t.teardown(() => gateway.close());

const A = 'usage-owner';
const B = 'usage-other';

async function get(path: string, token: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: await response.json() };
}

/** Every page of /api/v1/requests (with `query`), walked by cursor. */
async function allPages(t: Test, token: string, query: string, limit: number): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const { status, body } = await get(`/api/v1/requests?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`, token);
    if (status !== 200) throw new Error(`page ${page}: ${status} ${JSON.stringify(body)}`);
    t.ok(body.data.length <= limit, 'a page holds at most limit rows');
    rows.push(...body.data);
    if (!body.has_more) {
      t.equal(body.next_cursor, null);
      return rows;
    }
    cursor = body.next_cursor;
  }
  throw new Error('too many pages');
}

type Usage = { id: string; credits_nano: bigint; api_key_id: string | null; model: string };
const usageTransactions = (user: string) => gateway.sql<Usage[]>`
  select id::text, credits_nano, api_key_id::text, model from transactions where user_id = ${user} and payment_method = 'usage'`;
const sumOf = (rows: readonly Usage[]) => rows.reduce((sum, row) => sum - row.credits_nano, 0n);

let tokenA = '', tokenB = '', key1 = '', key2 = '', key1Id = '', key2Id = '';
/** x-request-id of each call by name. */
const ids: Record<string, string> = {};
const answers: Record<string, any> = {};

t.test('a mix of calls: whole, streamed and aborted chat, a failed chat, Responses, an image, embeddings, a video task', async (t) => {
  ({ token: tokenA, key: key1 } = await gateway.user(A, '5'));
  key1Id = await newestKeyId(gateway.url, tokenA);
  key2 = await gateway.createKey(tokenA, { name: 'second' });
  key2Id = await newestKeyId(gateway.url, tokenA);
  t.not(key1Id, key2Id);
  const b = await gateway.user(B, '5');
  tokenB = b.token;

  const call = async (name: string, path: string, key: string, body: unknown, status = 200) => {
    const answer = await postJson(`${gateway.v1}${path}`, key, body);
    t.equal(answer.status, status, `${name}: ${status}`);
    // Error answers carry it too: the failed call's is its request log's id.
    ids[name] = answer.headers.get('x-request-id')!;
    t.match(ids[name], /^[0-9a-f-]{36}$/, `${name}: x-request-id`);
    answers[name] = answer.body;
  };
  await call('whole', '/chat/completions', key1, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello [[mock chunks=5]]' }] });
  await call('streamed', '/chat/completions', key1, { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'stream [[mock chunks=4]]' }] });
  await call('failed', '/chat/completions', key2, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'fail [[mock fail=500]]' }] }, 502);
  await call('responses', '/responses', key2, { model: 'openai/gpt-4o-mini', input: 'a response [[mock chunks=3]]' });
  await call('image', '/images/generations', key1, { model: 'openai/gpt-image-2', prompt: 'a lighthouse', size: '1024x1024', quality: 'low' });
  await call('embedding', '/embeddings', key1, { model: 'openai/text-embedding-3-small', input: ['one', 'two'] });
  await call('other', '/chat/completions', b.key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'not yours [[mock chunks=2]]' }] });

  // A client that leaves mid-stream: charged for what was generated, logged as aborted.
  const controller = new AbortController();
  const response = await fetch(`${gateway.v1}/chat/completions`, {
    method: 'POST', signal: controller.signal,
    headers: { authorization: `Bearer ${key2}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'leave [[mock chunks=200 delay_ms=20]]' }] }),
  });
  ids.aborted = response.headers.get('x-request-id')!;
  const reader = response.body!.getReader();
  let seen = '';
  while ((seen.match(/"content":"[^"]/g) ?? []).length < 3) seen += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  await reader.read().catch(() => undefined);

  // A video task: its ending writes its charge, log and rollup itself (src/store/tasks.ts), not through the ledger stream.
  const video = await postJson(`${gateway.v1}/videos/generations`, key1, {
    model: 'bytedance/seedance-1.0-pro-fast', prompt: 'waves roll in [[mock job_ms=150]]', image_urls: ['https://localhost/reference.png'],
  });
  t.equal(video.status, 200, JSON.stringify(video.body));
  ids.video = video.body.id;
  t.ok(await eventually(async () => {
    const task = await (await fetch(`${gateway.v1}/videos/generations/${ids.video}`, { headers: { authorization: `Bearer ${key1}` } })).json() as { status: string };
    return task.status === 'success';
  }, 20_000, 30), 'the video task succeeded');

  await gateway.ledgerSettled(A);
  await gateway.ledgerSettled(B);
  const failed = await gateway.sql<{ id: string }[]>`select id::text from request_logs where user_id = ${A} and status = 502`;
  t.equal(failed.length, 1, 'the failed call is logged');
  t.equal(failed[0]!.id, ids.failed, 'under the x-request-id its error answer carried');
});

t.test('GET /api/v1/requests lists each call with its tokens and a cost equal to its transaction', async (t) => {
  const { status, body } = await get('/api/v1/requests?limit=100', tokenA);
  t.equal(status, 200);
  const rows: any[] = body.data;
  t.equal(rows.length, 8, 'the owner\'s eight calls, the other account\'s none');
  t.notOk(rows.some((row) => row.id === ids.other), 'another account\'s call never shows');
  const times = rows.map((row) => row.created_at);
  t.same(times, [...times].sort().reverse(), 'newest first');
  const byId = new Map(rows.map((row) => [row.id, row]));
  const charges = new Map((await usageTransactions(A)).map((row) => [row.id, -row.credits_nano]));
  for (const row of rows) t.equal(usdToNano(row.cost), charges.get(row.id) ?? 0n, `${row.endpoint} ${row.status}: cost equals its transaction`);

  const whole = byId.get(ids.whole!);
  t.match(whole, {
    key_id: key1Id, model: 'openai/gpt-4o-mini', endpoint: 'chat.completions', modality: 'chat', status: 200, error_code: null,
    prompt_tokens: answers.whole.usage.prompt_tokens, completion_tokens: answers.whole.usage.completion_tokens,
    stream: false, client_aborted: false, byok: false, attempts: 1,
  });
  t.ok(whole.cost > 0 && whole.reserved >= whole.cost, 'charged within its reservation');
  t.type(whole.latency_ms, 'number');
  t.match(byId.get(ids.streamed!), { stream: true, client_aborted: false, status: 200, completion_tokens: 4 });
  t.ok(byId.get(ids.streamed!).ttfb_ms !== null, 'a stream has a time to first byte');
  t.match(byId.get(ids.aborted!), { stream: true, client_aborted: true, key_id: key2Id, status: 499 });
  t.ok(byId.get(ids.aborted!).cost > 0, 'an aborted stream pays for what was generated');
  t.match(byId.get(ids.failed!), { status: 502, cost: 0, modality: 'chat' });
  t.type(byId.get(ids.failed!).error_code, 'string');
  t.match(byId.get(ids.responses!), {
    endpoint: 'responses', modality: 'chat', key_id: key2Id,
    prompt_tokens: answers.responses.usage.input_tokens, completion_tokens: answers.responses.usage.output_tokens,
  });
  t.match(byId.get(ids.image!), { endpoint: 'images.generations', modality: 'image', model: 'openai/gpt-image-2' });
  t.ok(byId.get(ids.image!).cost > 0);
  t.match(byId.get(ids.embedding!), { modality: 'embedding', prompt_tokens: answers.embedding.usage.prompt_tokens });
  t.match(byId.get(ids.video!), { endpoint: 'videos.generations', modality: 'video', key_id: key1Id, status: 200, stream: false });
  t.ok(byId.get(ids.video!).cost > 0, 'the task is charged');

  const one = await get(`/api/v1/requests/${ids.whole}`, tokenA);
  t.equal(one.status, 200);
  t.same(one.body, whole, 'GET /api/v1/requests/{id} answers the same row');
  assertEnvelope(t, await get(`/api/v1/requests/${ids.whole}`, tokenB), 404, 'not_found', "another account's id");
  assertEnvelope(t, await get(`/api/v1/requests/${randomUUID()}`, tokenA), 404, 'not_found', 'an unknown id');
  assertEnvelope(t, await get('/api/v1/requests/not-an-id', tokenA), 404, 'not_found', 'not an id');
  const other = await get('/api/v1/requests', tokenB);
  t.same(other.body.data.map((row: any) => row.id), [ids.other], 'the other account sees only its own call');
});

t.test('filters and cursor pages', async (t) => {
  const all = (await get('/api/v1/requests?limit=100', tokenA)).body.data.map((row: any) => row.id);
  for (const limit of [1, 3]) t.same((await allPages(t, tokenA, '', limit)).map((row) => row.id), all, `pages of ${limit}: every row once, in order`);
  const ofKey2 = await allPages(t, tokenA, `&key_id=${key2Id}`, 2);
  t.same(ofKey2.map((row) => row.id).sort(), [ids.failed, ids.responses, ids.aborted].sort(), 'key_id');
  t.same((await allPages(t, tokenA, '&model=openai%2Fgpt-image-2', 5)).map((row) => row.id), [ids.image], 'model');
  t.same((await allPages(t, tokenA, '&modality=image', 5)).map((row) => row.id), [ids.image], 'modality=image');
  t.same((await allPages(t, tokenA, '&modality=embedding', 5)).map((row) => row.id), [ids.embedding], 'modality=embedding');
  t.same((await allPages(t, tokenA, '&modality=video', 5)).map((row) => row.id), [ids.video], 'modality=video');
  t.equal((await allPages(t, tokenA, '&modality=chat', 2)).length, 5, 'modality=chat: chat completions and Responses');
  t.same((await allPages(t, tokenA, '&status=error', 5)).map((row) => row.id).sort(), [ids.failed, ids.aborted].sort(), 'status=error: from 400 (an aborted call is a 499)');
  t.same((await allPages(t, tokenA, '&status=502', 5)).map((row) => row.id), [ids.failed], 'an exact status');
  t.equal((await allPages(t, tokenA, '&status=200&modality=chat', 5)).length, 3, 'filters combine');
  const rows = await allPages(t, tokenA, '', 100);
  const middle = rows[3].created_at;
  const newer = await allPages(t, tokenA, `&from=${encodeURIComponent(middle)}`, 100);
  const older = await allPages(t, tokenA, `&to=${encodeURIComponent(middle)}`, 100);
  t.equal(newer.length + older.length, rows.length, 'from is inclusive, to exclusive: the two halves make the whole');
  t.ok(newer.every((row) => row.created_at >= middle) && older.every((row) => row.created_at < middle));
  t.equal((await allPages(t, tokenA, '&from=2099-01-01T00:00:00Z', 5)).length, 0, 'a range with nothing in it');

  // A regular key reads only its own calls.
  const own = await allPages(t, key2, '', 100);
  t.same(own.map((row) => row.id).sort(), [ids.failed, ids.responses, ids.aborted].sort(), 'a regular key: its own calls');
  t.equal((await allPages(t, key2, `&key_id=${key1Id}`, 5)).length, 0, 'and never another key\'s');
  assertEnvelope(t, await get(`/api/v1/requests/${ids.whole}`, key2), 404, 'not_found', "another key's call, for a regular key");
  t.equal((await get(`/api/v1/requests/${ids.responses}`, key2)).status, 200, 'its own call');
});

t.test('GET /api/v1/usage sums to the transactions to the nano-USD, by day and hour, by model and key', async (t) => {
  const transactions = await usageTransactions(A);
  const total = sumOf(transactions);
  t.ok(total > 0n);
  const nano = (rows: any[]) => rows.reduce((sum: bigint, row: any) => sum + usdToNano(row.cost), 0n);
  for (const interval of ['day', 'hour']) {
    const none = await get(`/api/v1/usage?interval=${interval}`, tokenA);
    t.equal(none.status, 200);
    t.equal(usdToNano(none.body.total.cost), total, `by ${interval}: the total is the transactions' sum`);
    t.equal(none.body.total.requests, 8, `by ${interval}: eight requests`);
    t.equal(none.body.total.errors, 2, 'the failed and the aborted call');
    t.ok(none.body.data.every((row: any) => new Date(row.start).getTime() % (interval === 'day' ? 86_400_000 : 3_600_000) === 0), 'periods start on UTC boundaries');

    const byModel = await get(`/api/v1/usage?interval=${interval}&group_by=model`, tokenA);
    for (const model of new Set(transactions.map((row) => row.model))) {
      t.equal(nano(byModel.body.data.filter((row: any) => row.model === model)), sumOf(transactions.filter((row) => row.model === model)), `by ${interval} and model: ${model}`);
    }
    const byKey = await get(`/api/v1/usage?interval=${interval}&group_by=key`, tokenA);
    for (const keyId of [key1Id, key2Id]) {
      t.equal(nano(byKey.body.data.filter((row: any) => row.key_id === keyId)), sumOf(transactions.filter((row) => row.api_key_id === keyId)), `by ${interval} and key`);
    }
    const tokens = (await get('/api/v1/requests?limit=100', tokenA)).body.data.reduce((sum: number, row: any) => sum + row.prompt_tokens, 0);
    t.equal(none.body.total.prompt_tokens, tokens, 'the tokens are the request log\'s');
  }
  const other = await get('/api/v1/usage', tokenB);
  t.equal(usdToNano(other.body.total.cost), sumOf(await usageTransactions(B)), 'each account its own');
  t.equal(other.body.total.requests, 1);
  const keyOnly = await get('/api/v1/usage?group_by=key', key2);
  t.same(keyOnly.body.data.map((row: any) => row.key_id), keyOnly.body.data.map(() => key2Id), 'a regular key: its own usage only');
  t.equal(usdToNano(keyOnly.body.total.cost), sumOf(transactions.filter((row) => row.api_key_id === key2Id)));
});

t.test('a replayed ledger event counts once; an unreadable one counts its charge only', async (t) => {
  const before = (await get('/api/v1/usage', tokenA)).body.total;
  const [log] = await gateway.sql<{ cost_nano: bigint; created_at: Date; duration_ms: number }[]>`
    select cost_nano, created_at, duration_ms from request_logs where id = ${ids.whole!}`;
  // The whole call's entry again, as a settlement journal replay would append it.
  const event = {
    keyId: key1Id, model: 'openai/gpt-4o-mini', endpoint: 'chat.completions', stream: false, status: 200, errorCode: null,
    promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 0, reservedNano: '1000', startedAtMs: log!.created_at.getTime(),
    durationMs: log!.duration_ms, ttfbMs: null, clientAborted: false, attempts: 1,
  };
  const stream = `${gateway.prefix}{u:${A}}:ledger`;
  const dirty = new RedisKeys(gateway.prefix).ledgerDirtyOf(A);
  await gateway.redis.xadd(stream, '*', 'r', ids.whole!, 'c', log!.cost_nano.toString(), 'e', JSON.stringify(event));
  await gateway.redis.sadd(dirty, A);
  await gateway.ledgerSettled(A);
  const replayed = (await get('/api/v1/usage', tokenA)).body.total;
  t.same(replayed, before, 'the replay inserted nothing and counted nothing');

  const poison = randomUUID();
  await gateway.redis.xadd(stream, '*', 'r', poison, 'c', '123', 'e', '{not json');
  await gateway.redis.sadd(dirty, A);
  await gateway.ledgerSettled(A);
  const after = (await get('/api/v1/usage?group_by=key', tokenA)).body;
  t.equal(usdToNano(after.total.cost), usdToNano(before.cost) + 123n, 'its charge is counted');
  t.equal(usdToNano(after.total.cost), sumOf(await usageTransactions(A)), 'still the transactions\' sum to the nano-USD');
  t.equal(after.total.requests, before.requests, 'with no request (it has no request log)');
  t.ok(after.data.some((row: any) => row.key_id === null), 'under no key');
});

t.test('a call served with the caller\'s own credential is listed as BYOK, uncharged, and counted', async (t) => {
  const user = 'usage-byok';
  const { token, key } = await gateway.user(user, '1');
  const created = await fetch(`${gateway.url}/api/v1/byok`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'openai', label: 'mine', api_key: 'sk-mine-usage-0001' }),
  });
  t.equal(created.status, 201);
  const answer = await postJson(`${gateway.v1}/chat/completions`, key, { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'mine [[mock chunks=2]]' }] });
  t.equal(answer.status, 200);
  t.equal(gateway.mock.requests().at(-1)?.authorization, 'Bearer sk-mine-usage-0001', 'served on the caller\'s own key');
  await gateway.ledgerSettled(user);
  const { body } = await get(`/api/v1/requests/${answer.headers.get('x-request-id')}`, token);
  t.match(body, { byok: true, cost: 0, reserved: 0, attempts: 1, status: 200, completion_tokens: 2 });
  const usage = (await get('/api/v1/usage', token)).body.total;
  t.match(usage, { requests: 1, cost: 0, completion_tokens: 2 });
  const others = (await get('/api/v1/requests?limit=100', tokenA)).body.data;
  t.ok(others.every((row: any) => row.byok === false), 'platform calls are not BYOK');
});

t.test('bad parameters are 400s naming them', async (t) => {
  const cases: [string, string][] = [
    ['/api/v1/requests?limit=0', 'limit'],
    ['/api/v1/requests?limit=101', 'limit'],
    ['/api/v1/requests?limit=ten', 'limit'],
    ['/api/v1/requests?limit=1&limit=2', 'limit'],
    ['/api/v1/requests?cursor=not-a-cursor', 'cursor'],
    [`/api/v1/requests?cursor=${Buffer.from('1.2.3').toString('base64url')}`, 'cursor'],
    ['/api/v1/requests?key_id=key-1', 'key_id'],
    ['/api/v1/requests?modality=text', 'modality'],
    ['/api/v1/requests?status=ok', 'status'],
    ['/api/v1/requests?status=700', 'status'],
    ['/api/v1/requests?from=yesterday', 'from'],
    ['/api/v1/requests?to=2026-13-01T00:00:00Z', 'to'],
    ['/api/v1/requests?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'to'],
    ['/api/v1/requests?model=', 'model'],
    ['/api/v1/usage?interval=week', 'interval'],
    ['/api/v1/usage?group_by=user', 'group_by'],
    ['/api/v1/usage?from=2026-01-01', 'from'],
    ['/api/v1/usage?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'to'],
    ['/api/v1/usage?interval=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z', 'from'],
    ['/api/v1/usage?from=2020-01-01T00:00:00Z&to=2026-03-01T00:00:00Z', 'from'],
    ['/api/v1/usage?key_id=1', 'key_id'],
  ];
  for (const [path, param] of cases) {
    const answer = await get(path, tokenA);
    assertEnvelope(t, answer, 400, 'invalid_request', path);
    t.equal(answer.body.error?.param, param, `${path}: names '${param}'`);
  }
  assertEnvelope(t, await get('/api/v1/usage', 'not-a-token'), 401, undefined, 'no credential');
});

t.test('the rollup is kept USAGE_ROLLUP_RETENTION_MONTHS (13 by default) calendar months, then swept', async (t) => {
  const now = new Date('2026-11-27T05:00:00Z');
  const row = (bucket: string) => gateway.sql`
    insert into usage_rollup (user_id, bucket, model, api_key_id, requests, cost_nano) values ('retained', ${bucket}, 'm', ${NO_KEY}, 1, 5)`;
  await row('2025-10-27T04:00:00Z'); // 13 months and an hour before
  await row('2025-10-27T05:00:00Z'); // exactly at the edge: kept
  await row('2026-11-27T04:00:00Z');
  t.equal(await expireUsageRollup(gateway.sql, now), 1, 'one hour past the window');
  const left = await gateway.sql<{ bucket: Date }[]>`select bucket from usage_rollup where user_id = 'retained' order by bucket`;
  t.same(left.map((r) => r.bucket.toISOString()), ['2025-10-27T05:00:00.000Z', '2026-11-27T04:00:00.000Z']);
  t.equal(await expireUsageRollup(gateway.sql, now, 1), 1, 'a shorter setting sweeps more');
});

t.test('task objects carry their charge once ended: usage.cost equals the task\'s transaction; a failed task shows 0', async (t) => {
  const { key } = await gateway.user('usage-tasks', '5');
  const submit = async (path: string, body: Record<string, unknown>) => {
    const answer = await postJson(`${gateway.v1}${path}`, key, body);
    t.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
    t.notOk('usage' in answer.body, `${path}: a pending task has no usage yet`);
    return answer.body.id as string;
  };
  const ended = async (path: string, id: string): Promise<any> => {
    let task: any;
    t.ok(await eventually(async () => {
      task = await (await fetch(`${gateway.v1}${path}/${id}`, { headers: { authorization: `Bearer ${key}` } })).json();
      return task.status !== 'pending';
    }, 20_000, 30), `${path} ${id} ended`);
    return task;
  };
  const video = await submit('/videos/generations', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'a kite [[mock job_ms=150]]', image_urls: ['https://localhost/kite.png'] });
  const speech = await submit('/audio/speech', { model: 'openai/tts-1-hd', input: 'Cost, please. [[mock audio_ms=600]]', voice: 'alloy' });
  const failed = await submit('/videos/generations', { model: 'bytedance/seedance-1.0-pro-fast', prompt: 'refused [[mock submit_fail=400]]', image_urls: ['https://localhost/kite.png'] });
  const charges = async () => new Map((await usageTransactions('usage-tasks')).map((row) => [row.id, -row.credits_nano]));
  for (const [path, id] of [['/videos/generations', video], ['/audio/speech', speech]] as const) {
    const task = await ended(path, id);
    t.equal(task.status, 'success', `${path}: succeeded`);
    const charge = (await charges()).get(id);
    t.ok(charge !== undefined && charge > 0n, `${path}: charged`);
    t.type(task.usage?.cost, 'number', `${path}: usage.cost is a JSON number`);
    t.equal(usdToNano(task.usage.cost), charge, `${path}: usage.cost is the task's transaction to the nano-USD`);
  }
  const refused = await ended('/videos/generations', failed);
  t.equal(refused.status, 'failed');
  t.same(refused.usage, { cost: 0 }, 'a failed task released its hold: cost 0');
  t.notOk((await charges()).has(failed), 'and has no transaction');
  const listed = await (await fetch(`${gateway.v1}/videos/generations`, { headers: { authorization: `Bearer ${key}` } })).json() as { data: any[] };
  t.same(listed.data.find((task) => task.id === video)?.usage, (await ended('/videos/generations', video)).usage, 'a list entry carries it too');
});

t.test('every answer of /v1 and /api/v1 carries x-request-id, errors included; other paths none', async (t) => {
  const id = (response: Response) => response.headers.get('x-request-id');
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  const answers: [string, Response][] = [
    ['401 without a key', await fetch(`${gateway.v1}/chat/completions`, { method: 'POST', body: '{}' })],
    ['400 a body that is not JSON', await fetch(`${gateway.v1}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key1}`, 'content-type': 'application/json' }, body: '{' })],
    ['404 an unknown /v1 path', await fetch(`${gateway.v1}/nothing-here`, { headers: { authorization: `Bearer ${key1}` } })],
    ['404 an unknown task', await fetch(`${gateway.v1}/videos/generations/${randomUUID()}`, { headers: { authorization: `Bearer ${key1}` } })],
    ['200 a management read', await fetch(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: `Bearer ${tokenA}` } })],
    ['401 a management call with a bad token', await fetch(`${gateway.url}/api/v1/api-keys`, { headers: { authorization: 'Bearer not-a-token' } })],
    ['200 the model list', await fetch(`${gateway.v1}/models`, { headers: { authorization: `Bearer ${key1}` } })],
  ];
  const seen = new Set<string>();
  for (const [label, response] of answers) {
    await response.arrayBuffer();
    t.match(id(response), uuid, `${label}: x-request-id`);
    seen.add(id(response)!);
  }
  t.equal(seen.size, answers.length, 'one id per request');
  const health = await fetch(`${gateway.url}/readyz`);
  await health.arrayBuffer();
  t.equal(id(health), null, 'a health check is no API answer');

  // A refusal after admission (the vendor failed, no attempt left) is a logged call: the same id.
  const refused = await postJson(`${gateway.v1}/embeddings`, key1, { model: 'openai/text-embedding-3-small', input: 'x [[mock fail=400]]' });
  t.equal(refused.status, 400, JSON.stringify(refused.body));
  const refusedId = refused.headers.get('x-request-id')!;
  t.match(refusedId, uuid);
  await gateway.ledgerSettled(A);
  t.ok(await eventually(async () => (await gateway.sql`select 1 from request_logs where id = ${refusedId}`).length === 1), 'the request log row has the id the error answer carried');
});
