import type { Test } from 'tap';
import type { Gateway } from './harness.js';
import { eventually } from './http-tools.js';

/** Once no task of the gateway's database is pending, `gateway ledger check` passes. */
export async function ledgerCleanOnceTasksEnd(t: Test, gateway: Gateway): Promise<void> {
  t.ok(await eventually(async () => {
    const [row] = await gateway.sql<{ n: number }[]>`select count(*)::int as n from tasks where status = 'pending'`;
    return row!.n === 0;
  }, 20_000), 'no task left pending');
  t.match(await gateway.cli('ledger', 'check'), /^ledger check: ok/);
}
