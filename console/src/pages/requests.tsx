// The request log: the newest calls first, filtered by key, model, status and time, a page at a time
// (the API's cursor); each row opens the call's detail.
import { useState } from 'preact/hooks';
import { keyName, useApi, useKeys, type CursorPage, type RequestRecord } from '../api.js';
import { ErrorAlert, Loading, PageTitle, useCursorPages, useLoad } from '../components.js';
import { count, dateTime, fromLocalInput, milliseconds, usd } from '../format.js';
import { Link } from '../router.js';

type Filters = { key_id: string; model: string; status: string; from: string; to: string };
const NO_FILTERS: Filters = { key_id: '', model: '', status: '', from: '', to: '' };
const PAGE_SIZE = 50;

export function RequestsPage() {
  const api = useApi();
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const pages = useCursorPages();
  const keys = useKeys();
  const page = useLoad(
    () =>
      api.get<CursorPage<RequestRecord>>('/api/v1/requests', {
        limit: PAGE_SIZE,
        cursor: pages.cursor,
        key_id: filters.key_id,
        model: filters.model.trim(),
        status: filters.status.trim(),
        from: fromLocalInput(filters.from),
        to: fromLocalInput(filters.to),
      }),
    [filters, pages.cursor],
  );
  const set = (name: keyof Filters, value: string) => setDraft((previous) => ({ ...previous, [name]: value }));
  const apply = (event: Event) => {
    event.preventDefault();
    pages.first();
    setFilters(draft);
  };
  const reset = () => {
    setDraft(NO_FILTERS);
    pages.first();
    setFilters(NO_FILTERS);
  };

  return (
    <>
      <PageTitle>Requests</PageTitle>
      <form class="filters" onSubmit={apply} aria-label="Filters">
        <div class="field">
          <label for="requests-key">Key</label>
          <select id="requests-key" value={draft.key_id} onChange={(event) => set('key_id', event.currentTarget.value)}>
            <option value="">All keys</option>
            {keys.data?.map((key) => (
              <option key={key.id} value={key.id}>
                {key.name}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="requests-model">Model</label>
          <input id="requests-model" placeholder="openai/gpt-4o-mini" value={draft.model} onInput={(event) => set('model', event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="requests-status">Status</label>
          <input id="requests-status" list="requests-statuses" placeholder="any" value={draft.status} onInput={(event) => set('status', event.currentTarget.value)} aria-describedby="requests-status-hint" />
          <datalist id="requests-statuses">
            <option value="error">error (any status from 400)</option>
            <option value="200" />
            <option value="400" />
            <option value="401" />
            <option value="402" />
            <option value="429" />
            <option value="499" />
            <option value="502" />
          </datalist>
          <small id="requests-status-hint">An HTTP status, or “error”.</small>
        </div>
        <div class="field">
          <label for="requests-from">From</label>
          <input id="requests-from" type="datetime-local" value={draft.from} onInput={(event) => set('from', event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="requests-to">To</label>
          <input id="requests-to" type="datetime-local" value={draft.to} onInput={(event) => set('to', event.currentTarget.value)} />
        </div>
        <div class="actions">
          <button type="submit" class="primary">
            Apply filters
          </button>
          <button type="button" onClick={reset}>
            Clear
          </button>
          <button type="button" onClick={page.reload}>
            Refresh
          </button>
        </div>
      </form>
      <ErrorAlert error={page.error ?? keys.error} />
      <Loading loading={page.loading && !page.data} />
      {page.data && page.data.data.length === 0 && <p class="muted">No calls match.</p>}
      {page.data && page.data.data.length > 0 && (
        <div class="table-scroll">
          <table class="cards">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Model</th>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col" class="number">
                  Tokens (in / out)
                </th>
                <th scope="col" class="number">
                  Cost
                </th>
                <th scope="col" class="number">
                  Latency
                </th>
              </tr>
            </thead>
            <tbody>
              {page.data.data.map((call) => (
                <tr key={call.id}>
                  <td data-label="Time">
                    <Link to={`/requests/${encodeURIComponent(call.id)}`}>{dateTime(call.created_at)}</Link>
                  </td>
                  <td data-label="Model">{call.model ?? call.endpoint}</td>
                  <td data-label="Key">{keyName(keys.data, call.key_id)}</td>
                  <td data-label="Status">
                    <span class={call.status >= 400 ? 'status bad' : 'status good'}>{call.status}</span>
                    {call.error_code && <span class="muted"> {call.error_code}</span>}
                  </td>
                  <td data-label="Tokens (in / out)" class="number">
                    {count(call.prompt_tokens)} / {count(call.completion_tokens)}
                  </td>
                  <td data-label="Cost" class="number">{usd(call.cost)}</td>
                  <td data-label="Latency" class="number">{milliseconds(call.latency_ms)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {pages.pager(page.data)}
    </>
  );
}
