// A Postgres connection reset between a transaction's statements (scripts/patch-dependencies.mjs): the
// `postgres` client used to write the next statement (the COMMIT) to a socket that was gone, an uncaught
// TypeError that ended the whole gateway; the ledger writer, which awaits Redis inside its transaction,
// met it under load. And a transaction's callback that went on after the reset sent its later statements
// and its COMMIT on the reconnected connection, into whatever transaction was open there. Now the
// transaction fails with the connection's error, nothing of it is committed, and the same client
// connects again for the next query. Through a TCP proxy that resets the connection.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { connect, type Sql } from '../src/store/db.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { PG_BASE, postgresAddress } from './helpers/harness.js';

/** A pool of `connections` through a TCP proxy to the test Postgres, a direct pool beside it, and a table of their own. */
async function throughProxy(t: Test, connections: number): Promise<{ proxy: TcpProxy; sql: Sql; direct: Sql; table: string }> {
  const proxy = await TcpProxy.start(postgresAddress());
  t.teardown(() => proxy.close());
  const via = new URL(PG_BASE);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  const sql: Sql = connect(via.toString(), connections, 'connection-loss-test');
  t.teardown(() => sql.end({ timeout: 1 }));
  const direct: Sql = connect(PG_BASE, 1, 'connection-loss-check');
  t.teardown(() => direct.end({ timeout: 1 }));
  const table = `connection_loss_${randomBytes(4).toString('hex')}`;
  await direct.unsafe(`create table ${table} (n int)`);
  t.teardown(() => direct.unsafe(`drop table if exists ${table}`));
  return { proxy, sql, direct, table };
}

t.test('a reset between two statements of a transaction fails the transaction, not the process', async (t) => {
  const { proxy, sql, direct, table } = await throughProxy(t, 2);

  // Rounds back to back, each on whichever pooled connection the client picks (one reconnecting, one new).
  // Odd rounds: other work inside the transaction (the ledger writer awaits Redis there) while the close
  // arrives, so the COMMIT meets a closed socket, and the callback goes on after begin() has failed (the
  // next round's transaction may be open on the reconnected connection by then). Even rounds: the
  // COMMIT is written at once, before the client has read the reset.
  for (let round = 1; round <= 8; round++) {
    const outcome = await sql.begin(async (tx) => {
      await tx.unsafe(`insert into ${table} values (${round})`);
      proxy.cut();
      if (round % 2 === 1) await new Promise((resolve) => setTimeout(resolve, 100));
    }).then(() => 'committed', (error: { code?: string }) => error.code ?? String(error));
    // CONNECTION_CLOSED, or the reset itself (ECONNRESET) when the COMMIT was written before the client read it.
    t.match(outcome, /^(CONNECTION_CLOSED|ECONNRESET)$/, `round ${round}: the transaction fails with the connection`);
    proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [{ n }] = await sql`select 1 as n` as unknown as [{ n: number }];
  t.equal(n, 1, 'the client connects again for the next query');
  t.same(await direct.unsafe(`select n from ${table}`), [], 'nothing of the failed transactions was committed');
});

t.test("a transaction whose connection was reset sends nothing more: its late statements and COMMIT never reach the next transaction on the reconnected connection", async (t) => {
  // One connection, so the replacement transaction is on the very connection object the first one held.
  const { proxy, sql, direct, table } = await throughProxy(t, 1);

  let resumeFirst!: () => void;
  const firstMayGoOn = new Promise<void>((resolve) => (resumeFirst = resolve));
  let lateStatement: Promise<string> | undefined;
  // The first transaction loses its connection while it waits (the ledger writer awaits Redis there), and goes on afterwards.
  const first = sql.begin(async (tx) => {
    await tx.unsafe(`insert into ${table} values (1)`);
    proxy.cut();
    await firstMayGoOn;
    lateStatement = tx.unsafe(`insert into ${table} values (11)`).then(() => 'ran', (error: { code?: string }) => error.code ?? String(error));
    await lateStatement;
  }).then(() => 'committed', (error: { code?: string }) => error.code ?? String(error));
  t.equal(await first, 'CONNECTION_CLOSED', 'the first transaction fails when its connection resets');
  proxy.restore();

  // The replacement transaction, on the reconnected connection: the first one's callback resumes inside
  // it, and it then rolls back on its own.
  const second = await sql.begin(async (tx) => {
    await tx.unsafe(`insert into ${table} values (2)`);
    resumeFirst();
    await new Promise((resolve) => setTimeout(resolve, 200));
    throw new Error('the second transaction rolls back');
  }).then(() => 'committed', (error: Error) => error.message);
  t.equal(second, 'the second transaction rolls back');
  t.equal(await lateStatement, 'CONNECTION_CLOSED', "the first transaction's late statement fails, unsent");
  t.same(await direct.unsafe(`select n from ${table} order by n`), [], 'nothing of either transaction was committed');
  const [{ n }] = await sql`select 1 as n` as unknown as [{ n: number }];
  t.equal(n, 1, 'the client goes on serving queries');
});
