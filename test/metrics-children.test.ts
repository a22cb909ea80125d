// childrenOf updates prom-client's own records in place (no label hashing per call): what a scrape
// shows must be exactly what prom-client's own API would have made of the same updates.
import t from 'tap';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { childrenOf } from '../src/metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

function pair() {
  const ours = new Registry();
  const theirs = new Registry();
  const make = (registry: Registry) => ({
    counter: new Counter({ name: 'c_total', help: 'c', labelNames: ['route', 'status'], registers: [registry] }),
    histogram: new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['route'], buckets: BUCKETS, registers: [registry] }),
  });
  return { ours, theirs, a: make(ours), b: make(theirs) };
}

t.test('counter children count as prom-client does, into the record prom-client made', async (t) => {
  const { ours, theirs, a, b } = pair();
  // A label set counted through prom-client's API before any child exists keeps one record.
  a.counter.inc({ route: '/x', status: '200' }, 2);
  b.counter.inc({ route: '/x', status: '200' }, 2);
  const of = childrenOf(a.counter);
  for (const [route, status, value] of [['/x', '200', 1], ['/x', '500', 3], ['/y', '200', 0.25], ['/x', '200', 1], ['/y', '200', 0]] as const) {
    of(route, status).inc(value);
    b.counter.inc({ route, status }, value);
  }
  of('/z', '200').inc();
  b.counter.inc({ route: '/z', status: '200' });
  a.counter.inc({ route: '/z', status: '200' }, 5); // prom-client's API after the child: the same record
  b.counter.inc({ route: '/z', status: '200' }, 5);
  t.equal(await ours.metrics(), await theirs.metrics(), 'the same exposition');
  t.equal(of('/x', '200'), of('/x', '200'), 'one child per label values');
  of('/x', '200').inc(-4);
  of('/x', '200').inc(Number.NaN);
  t.equal(await ours.metrics(), await theirs.metrics(), 'a decrease or NaN counts nothing');
});

t.test('histogram children fill the same buckets, sum and count as observe', async (t) => {
  const { ours, theirs, a, b } = pair();
  b.histogram.observe({ route: '/x' }, 0.5);
  a.histogram.observe({ route: '/x' }, 0.5);
  const of = childrenOf(a.histogram);
  // On a bound (counted in that bucket), between bounds, below the first, above the last (+Inf only).
  for (const [route, value] of [['/x', 0.01], ['/x', 0.0005], ['/y', 0.02], ['/y', 5], ['/x', 1], ['/y', 0]] as const) {
    of(route).observe(value);
    b.histogram.observe({ route }, value);
  }
  of('/x').observe(Number.NaN);
  of('/x').observe(Number.POSITIVE_INFINITY);
  t.equal(await ours.metrics(), await theirs.metrics(), 'the same exposition');
});

t.test("threads' registries still add up (the main thread aggregates each HTTP thread's JSON)", async (t) => {
  const first = pair();
  const second = pair();
  childrenOf(first.a.histogram)('/x').observe(0.05);
  childrenOf(second.a.histogram)('/x').observe(0.5);
  childrenOf(first.a.counter)('/x', '200').inc(2);
  childrenOf(second.a.counter)('/x', '200').inc(3);
  first.b.histogram.observe({ route: '/x' }, 0.05);
  second.b.histogram.observe({ route: '/x' }, 0.5);
  first.b.counter.inc({ route: '/x', status: '200' }, 2);
  second.b.counter.inc({ route: '/x', status: '200' }, 3);
  const aggregate = async (registries: Registry[]) => AggregatorRegistry.aggregate(await Promise.all(registries.map((r) => r.getMetricsAsJSON()))).metrics();
  t.equal(await aggregate([first.ours, second.ours]), await aggregate([first.theirs, second.theirs]));
});
