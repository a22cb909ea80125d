// One call of the request log: tokens, cost, latency, time to first byte, attempts and its error.
import { keyName, segment, useApi, useKeys, type RequestRecord } from '../api.js';
import { ErrorAlert, Loading, PageTitle, useLoad } from '../components.js';
import { count, dateTime, milliseconds, usd } from '../format.js';
import { Link } from '../router.js';

export function RequestDetailPage({ id }: { id: string }) {
  const api = useApi();
  const call = useLoad(() => api.get<RequestRecord>(`/api/v1/requests/${segment(id)}`), [id]);
  const keys = useKeys();
  const record = call.data;
  const yesNo = (value: boolean) => (value ? 'Yes' : 'No');
  return (
    <>
      <PageTitle>Request</PageTitle>
      <p>
        <Link to="/requests">← All requests</Link>
      </p>
      <Loading loading={call.loading && !record} />
      <ErrorAlert error={call.error} />
      {record && (
        <section class="panel" aria-label="Request details">
          <dl class="details">
            <dt>Request id</dt>
            <dd>
              <code>{record.id}</code>
            </dd>
            <dt>Time</dt>
            <dd>{dateTime(record.created_at)}</dd>
            <dt>Model</dt>
            <dd>{record.model ?? '—'}</dd>
            <dt>Endpoint</dt>
            <dd>{record.endpoint}</dd>
            <dt>Key</dt>
            <dd>{keyName(keys.data, record.key_id)}</dd>
            <dt>Status</dt>
            <dd>
              <span class={record.status >= 400 ? 'status bad' : 'status good'}>{record.status}</span>
            </dd>
            <dt>Error</dt>
            <dd>{record.error_code ?? 'None'}</dd>
            <dt>Cost</dt>
            <dd data-testid="request-cost">{usd(record.cost)}</dd>
            <dt>Held while running</dt>
            <dd>{usd(record.reserved)}</dd>
            <dt>Input tokens</dt>
            <dd>{count(record.prompt_tokens)}</dd>
            <dt>Output tokens</dt>
            <dd>{count(record.completion_tokens)}</dd>
            <dt>Cached input tokens</dt>
            <dd>{count(record.cached_tokens)}</dd>
            <dt>Reasoning tokens</dt>
            <dd>{count(record.reasoning_tokens)}</dd>
            <dt>Latency</dt>
            <dd>{milliseconds(record.latency_ms)}</dd>
            <dt>Time to first byte</dt>
            <dd>{milliseconds(record.ttfb_ms)}</dd>
            <dt>Attempts</dt>
            <dd>{count(record.attempts)}</dd>
            <dt>Streamed</dt>
            <dd>{yesNo(record.stream)}</dd>
            <dt>Client left early</dt>
            <dd>{yesNo(record.client_aborted)}</dd>
            <dt>Your own credential (BYOK)</dt>
            <dd>{yesNo(record.byok)}</dd>
          </dl>
        </section>
      )}
    </>
  );
}
