// A Postgres connection reset between a transaction's statements (scripts/patch-dependencies.mjs): the
// `postgres` client used to write the next statement (the COMMIT) to a socket that was gone, an uncaught
// TypeError that ended the whole gateway; the ledger writer, which awaits Redis inside its transaction,
// met it under load. Now the transaction fails with CONNECTION_CLOSED, nothing of it is committed, and
// the same client connects again for the next query. Through a TCP proxy that resets the connection.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { connect, type Sql } from '../src/store/db.js';
import { TcpProxy } from './helpers/tcp-proxy.js';
import { PG_BASE, postgresAddress } from './helpers/harness.js';

t.test('a reset between two statements of a transaction fails the transaction, not the process', async (t) => {
  const proxy = await TcpProxy.start(postgresAddress());
  t.teardown(() => proxy.close());
  const via = new URL(PG_BASE);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.port);
  const sql: Sql = connect(via.toString(), 2, 'connection-loss-test');
  t.teardown(() => sql.end({ timeout: 1 }));
  const direct: Sql = connect(PG_BASE, 1, 'connection-loss-check');
  t.teardown(() => direct.end({ timeout: 1 }));
  const table = `connection_loss_${randomBytes(4).toString('hex')}`;
  await direct.unsafe(`create table ${table} (n int)`);
  t.teardown(() => direct.unsafe(`drop table if exists ${table}`));

  // Rounds back to back, each on whichever pooled connection the client picks (one reconnecting, one new).
  for (let round = 1; round <= 6; round++) {
    const outcome = await sql.begin(async (tx) => {
      await tx.unsafe(`insert into ${table} values (${round})`);
      proxy.cut();
      // Other work inside the transaction (the ledger writer awaits Redis here) while the close arrives.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }).then(() => 'committed', (error: { code?: string }) => error.code ?? String(error));
    t.equal(outcome, 'CONNECTION_CLOSED', `round ${round}: the commit fails with CONNECTION_CLOSED`);
    proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const [{ n }] = await sql`select 1 as n` as unknown as [{ n: number }];
  t.equal(n, 1, 'the client connects again for the next query');
  t.same(await direct.unsafe(`select n from ${table}`), [], 'nothing of the failed transactions was committed');
});
