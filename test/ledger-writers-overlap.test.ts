// Two ledger writers draining the same entries (a journal replay after a gateway was killed, both
// passes holding the users' ledger locks shared) insert overlapping charges and request logs at once.
// Each batch inserts in id order, so the second waits for the first's rows and then inserts nothing,
// instead of the two deadlocking ("deadlock detected while inserting index tuple").
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startGateway, type Gateway } from './helpers/harness.js';
import { UsageRecords, insertUsageRecords } from '../src/store/usage-records.js';
import type { LedgerEvent } from '../src/ledger/event.js';

let gateway: Gateway;
t.before(async () => { gateway = await startGateway(); });
t.teardown(() => gateway?.close());

const USER = 'ledger-overlap';
const event = (startedAtMs: number): LedgerEvent => ({
  keyId: randomUUID(), model: 'openai/gpt-4o-mini', endpoint: '/v1/chat/completions', stream: false, clientAborted: false, status: 200,
  errorCode: null, promptTokens: 10, completionTokens: 5, cachedTokens: 0, reasoningTokens: 0, reservedNano: '1000', startedAtMs, durationMs: 20, ttfbMs: 5,
});

function batch(ids: readonly string[], startedAtMs: number): UsageRecords {
  const records = new UsageRecords();
  for (const id of ids) records.add(id, USER, '1000', event(startedAtMs));
  return records;
}

t.test('two writers inserting the same 400 calls in opposite orders, 15 times over: no deadlock, each call written once', async (t) => {
  await gateway.sql`insert into accounts (id) values (${USER}) on conflict do nothing`;
  const startedAtMs = Date.now();
  const failures: string[] = [];
  let written = 0;
  for (let round = 0; round < 15; round++) {
    const ids = Array.from({ length: 400 }, () => randomUUID());
    const forward = batch(ids, startedAtMs);
    const backward = batch([...ids].reverse(), startedAtMs);
    const outcomes = await Promise.allSettled([
      gateway.sql.begin((tx) => insertUsageRecords(tx, forward)),
      gateway.sql.begin((tx) => insertUsageRecords(tx, backward)),
    ]);
    for (const outcome of outcomes) if (outcome.status === 'rejected') failures.push(String((outcome.reason as Error).message));
    written += ids.length;
  }
  t.same(failures, [], 'neither writer failed');
  const [counts] = await gateway.sql<{ charges: number; logs: number }[]>`
    select (select count(*)::int from transactions where user_id = ${USER}) as charges,
           (select count(*)::int from request_logs where user_id = ${USER}) as logs`;
  t.equal(counts?.charges, written, 'one charge per call');
  t.equal(counts?.logs, written, 'one request log per call');
});
