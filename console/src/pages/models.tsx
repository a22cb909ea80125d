// The model catalog: filter by modality, search, and each model's prices.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useApi, type NumberedPage } from '../api.js';
import { ErrorAlert, Loading, PageButtons, PageTitle, SelectField, useLoad } from '../components.js';

type Model = { id: string; name: string; provider: string; modality: string; description: string; is_active: boolean; status: string; alias_of: string | null };
type Price = { component: string; unit: string; tier: string; usd_per_unit: string; usd_per_million: string };
type Pricing = { model_id: string; prices: Price[] };

const PER_PAGE = 50;
const SEARCH_DELAY_MS = 300;
const MODALITIES = [
  { value: '', label: 'All' },
  { value: 'chat', label: 'Chat' },
  { value: 'image', label: 'Image' },
  { value: 'video', label: 'Video' },
  { value: 'audio', label: 'Audio' },
  { value: 'embedding', label: 'Embedding' },
];

/** Token prices per million tokens, other units per unit, as the catalog's exact decimal strings. */
function priceText(price: Price): string {
  const name = price.component.replace(/_/g, ' ');
  const tier = price.tier ? ` (${price.tier})` : '';
  return price.unit === 'token' ? `${name}: $${price.usd_per_million} / 1M${tier}` : `${name}: $${price.usd_per_unit} / ${price.unit}${tier}`;
}

const PRICE_LINES_SHOWN = 6;

/** The model's charged lines (a component the vendor does not charge, "0", left out), the first few and a count of the rest. */
function PriceList({ prices }: { prices: Price[] | undefined }) {
  if (!prices) return <span class="muted">Not priced</span>;
  const charged = prices.filter((price) => Number(price.usd_per_unit) !== 0);
  return (
    <ul class="prices">
      {charged.slice(0, PRICE_LINES_SHOWN).map((price) => (
        <li key={`${price.component}:${price.tier}`}>{priceText(price)}</li>
      ))}
      {charged.length > PRICE_LINES_SHOWN && <li class="muted">{charged.length - PRICE_LINES_SHOWN} more tiers</li>}
    </ul>
  );
}

export function ModelsPage() {
  const api = useApi();
  const [modality, setModality] = useState('');
  const [typed, setTyped] = useState('');
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  useEffect(() => {
    const timer = setTimeout(() => {
      setSearch(typed.trim());
      setPage(1);
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [typed]);
  const models = useLoad(() => api.get<NumberedPage<Model>>('/api/v1/models', { task: modality, search, page, per_page: PER_PAGE }), [modality, search, page]);
  const pricing = useLoad(() => api.get<{ data: Pricing[] }>('/api/v1/pricing'), []);
  const prices = useMemo(() => new Map((pricing.data?.data ?? []).map((entry) => [entry.model_id, entry.prices])), [pricing.data]);

  return (
    <>
      <PageTitle>Models</PageTitle>
      <form class="filters" onSubmit={(event) => event.preventDefault()} role="search" aria-label="Models">
        <SelectField
          id="models-modality"
          label="Modality"
          value={modality}
          options={MODALITIES}
          onChange={(value) => {
            setModality(value);
            setPage(1);
          }}
        />
        <div class="field grow">
          <label for="models-search">Search</label>
          <input id="models-search" type="search" placeholder="name, vendor, tag…" value={typed} onInput={(event) => setTyped(event.currentTarget.value)} />
        </div>
      </form>
      <ErrorAlert error={models.error ?? pricing.error} />
      <Loading loading={models.loading && !models.data} />
      {models.data && <p class="muted">{models.data.total} models</p>}
      {models.data && models.data.data.length > 0 && (
        <div class="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Provider</th>
                <th scope="col">Modality</th>
                <th scope="col">Prices (USD)</th>
              </tr>
            </thead>
            <tbody>
              {models.data.data.map((model) => (
                <tr key={model.id}>
                  <th scope="row">
                    {model.name}
                    <br />
                    <code class="small">{model.id}</code>
                    {model.status !== 'active' && <span class="badge muted-badge">{model.status}</span>}
                  </th>
                  <td>{model.provider}</td>
                  <td>{model.modality}</td>
                  <td>
                    <PriceList prices={prices.get(model.alias_of ?? model.id)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {models.data && <PageButtons page={page} totalPages={models.data.total_pages ?? Math.ceil(models.data.total / PER_PAGE)} onPage={setPage} />}
    </>
  );
}
