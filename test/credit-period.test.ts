// The credit period of a key: UTC calendar boundaries, never before the limit was set.
import t from 'tap';
import { creditPeriodStartMs } from '../src/billing/credit-period.js';

const at = (iso: string) => Date.parse(iso);

t.test('daily, weekly and monthly periods start at UTC midnight, Monday and the 1st', async (t) => {
  const anchor = at('2026-01-01T00:00:00Z');
  const now = at('2026-11-22T15:30:00Z'); // a Sunday
  t.equal(creditPeriodStartMs('daily', anchor, now), at('2026-11-22T00:00:00Z'));
  t.equal(creditPeriodStartMs('weekly', anchor, now), at('2026-11-16T00:00:00Z'), 'Sunday belongs to the week that began on Monday');
  t.equal(creditPeriodStartMs('weekly', anchor, at('2026-11-23T00:00:00Z')), at('2026-11-23T00:00:00Z'), 'Monday midnight starts a week');
  t.equal(creditPeriodStartMs('monthly', anchor, now), at('2026-11-01T00:00:00Z'));
  t.equal(creditPeriodStartMs('monthly', anchor, at('2026-12-31T23:59:59.999Z')), at('2026-12-01T00:00:00Z'));
  t.equal(creditPeriodStartMs('daily', anchor, at('2026-11-22T23:59:59.999Z')), at('2026-11-22T00:00:00Z'), 'the last millisecond of a day');
});

t.test('a period never starts before the limit was set; none is one period from then', async (t) => {
  const anchor = at('2026-11-22T10:00:00Z');
  const now = at('2026-11-22T15:30:00Z');
  t.equal(creditPeriodStartMs('daily', anchor, now), anchor, 'set today: the period starts when it was set');
  t.equal(creditPeriodStartMs('monthly', anchor, now), anchor);
  t.equal(creditPeriodStartMs('daily', anchor, at('2026-11-23T00:00:01Z')), at('2026-11-23T00:00:00Z'), 'the next day starts a new period');
  t.equal(creditPeriodStartMs('none', anchor, at('2027-06-01T00:00:00Z')), anchor);
});
