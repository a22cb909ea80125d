// Usage: spend, tokens and requests over time (by day or by hour, split by model or by key) with totals,
// read from GET /api/v1/usage, which adds up to the billing page's usage transactions.
import { useMemo, useState } from 'preact/hooks';
import { keyName, useApi, useKeys, type ApiKey } from '../api.js';
import { Chart, type ChartSeries } from '../chart.js';
import { ErrorAlert, Loading, PageTitle, SelectField, Stats, useLoad } from '../components.js';
import { count, usd } from '../format.js';

type Totals = { requests: number; errors: number; prompt_tokens: number; completion_tokens: number; cached_tokens: number; reasoning_tokens: number; cost: number };
type UsageRow = Totals & { start: string; model?: string; key_id?: string | null };
type UsageAnswer = { from: string; to: string; interval: 'day' | 'hour'; group_by: 'none' | 'model' | 'key'; data: UsageRow[]; total: Totals };

const RANGES = {
  day: [
    { value: '7', label: 'Last 7 days' },
    { value: '30', label: 'Last 30 days' },
    { value: '90', label: 'Last 90 days' },
  ],
  hour: [
    { value: '1', label: 'Last 24 hours' },
    { value: '3', label: 'Last 3 days' },
    { value: '7', label: 'Last 7 days' },
  ],
} as const;

const STEPS = [
  { value: 'day', label: 'By day' },
  { value: 'hour', label: 'By hour' },
];
const GROUPS = [
  { value: 'none', label: 'Nothing (all calls)' },
  { value: 'model', label: 'Model' },
  { value: 'key', label: 'API key' },
];
const DAY_MS = 86_400_000;

type Series = { times: number[]; cost: ChartSeries[]; tokens: ChartSeries[]; requests: ChartSeries[] };

const STEP_SECONDS = { day: 86_400, hour: 3_600 } as const;

/**
 * One line per group (or one for all calls) over every period of the answer's range (x in seconds),
 * 0 where a group had no calls, so a quiet day reads as zero rather than as a gap.
 */
function seriesOf(answer: UsageAnswer, keys: ApiKey[] | null): Series {
  const step = STEP_SECONDS[answer.interval];
  const times: number[] = [];
  for (let time = Date.parse(answer.from) / 1000; time < Date.parse(answer.to) / 1000; time += step) times.push(time);
  const position = new Map(times.map((time, index) => [time, index]));
  const groups = new Map<string, UsageRow[]>();
  for (const row of answer.data) {
    const group = answer.group_by === 'model' ? (row.model ?? 'unknown') : answer.group_by === 'key' ? (row.key_id ?? '') : 'All calls';
    groups.set(group, [...(groups.get(group) ?? []), row]);
  }
  const labelOf = (group: string) => (answer.group_by === 'key' ? (group === '' ? 'No key' : keyName(keys, group)) : group);
  const measure = (pick: (row: UsageRow) => number): ChartSeries[] =>
    [...groups].map(([group, rows]) => {
      const values: number[] = times.map(() => 0);
      for (const row of rows) {
        const index = position.get(Date.parse(row.start) / 1000);
        if (index !== undefined) values[index] = pick(row);
      }
      return { label: labelOf(group), values };
    });
  return {
    times: answer.data.length === 0 ? [] : times,
    cost: measure((row) => row.cost),
    tokens: measure((row) => row.prompt_tokens + row.completion_tokens),
    requests: measure((row) => row.requests),
  };
}

export function UsagePage() {
  const api = useApi();
  const [step, setStep] = useState<'day' | 'hour'>('day');
  const [range, setRange] = useState('30');
  const [groupBy, setGroupBy] = useState<'none' | 'model' | 'key'>('none');
  const usage = useLoad(() => {
    const to = new Date();
    const from = new Date(to.getTime() - Number(range) * DAY_MS);
    return api.get<UsageAnswer>('/api/v1/usage', { interval: step, group_by: groupBy, from: from.toISOString(), to: to.toISOString() });
  }, [step, range, groupBy]);
  const keys = useKeys();
  const series = useMemo(() => (usage.data ? seriesOf(usage.data, keys.data) : null), [usage.data, keys.data]);

  const changeInterval = (value: 'day' | 'hour') => {
    setStep(value);
    setRange(value === 'day' ? '30' : '1');
  };
  const total = usage.data?.total;

  return (
    <>
      <PageTitle>Usage</PageTitle>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <SelectField id="usage-interval" label="Interval" value={step} options={STEPS} onChange={(value) => changeInterval(value as 'day' | 'hour')} />
        <SelectField id="usage-range" label="Period" value={range} options={RANGES[step]} onChange={setRange} />
        <SelectField id="usage-group" label="Split by" value={groupBy} options={GROUPS} onChange={(value) => setGroupBy(value as 'none' | 'model' | 'key')} />
      </form>
      <Loading loading={usage.loading && !usage.data} />
      <ErrorAlert error={usage.error ?? keys.error} />
      {total && (
        <section class="panel" aria-labelledby="usage-totals-title">
          <h2 id="usage-totals-title">Totals for the period</h2>
          <Stats
            items={[
              { label: 'Spend', value: usd(total.cost), testId: 'usage-total-cost' },
              { label: 'Requests', value: count(total.requests), testId: 'usage-total-requests' },
              { label: 'Errors', value: count(total.errors) },
              { label: 'Input tokens', value: count(total.prompt_tokens) },
              { label: 'Output tokens', value: count(total.completion_tokens) },
              { label: 'Cached input tokens', value: count(total.cached_tokens) },
            ]}
          />
        </section>
      )}
      {series && (
        <section class="panel charts" aria-label="Charts">
          <Chart title="Spend (USD)" times={series.times} series={series.cost} format={usd} />
          <Chart title="Tokens (input + output)" times={series.times} series={series.tokens} format={count} />
          <Chart title="Requests" times={series.times} series={series.requests} format={count} />
        </section>
      )}
    </>
  );
}
