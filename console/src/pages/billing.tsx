// Billing: the balance (credits, held, available), the transactions a page at a time, coupon redemption,
// a card top-up (the card processor's checkout page, then back), and balance alerts.
import { useEffect, useState } from 'preact/hooks';
import { segment, useApi, type NumberedPage } from '../api.js';
import { ErrorAlert, Loading, PageButtons, PageTitle, Stats, useAction, useLoad } from '../components.js';
import { dateTime, usd } from '../format.js';
import { Link } from '../router.js';

type Balance = { credits: number; held: number; available: number; currency: string };
type Transaction = { id: string; credits: number; amount: number; payment_method: string; status: string; created_at: string };
type Alert = { id: string; threshold: number; email: string | null; deliverable: boolean; undeliverable_reason: string | null; armed: boolean; created_at: string; last_triggered_at: string | null };

const PER_PAGE = 20;
const METHOD_NAMES: Record<string, string> = { usage: 'Usage', coupon: 'Coupon', manual: 'Manual top-up', stripe: 'Card top-up' };
const UNDELIVERABLE: Record<string, string> = {
  no_address: 'Not mailed: the account has no e-mail address yet.',
  address_unverified: 'Not mailed: the address is not the account’s verified address.',
};

function BalancePanel({ balance }: { balance: Balance }) {
  return (
    <Stats
      items={[
        { label: 'Credits', value: usd(balance.credits), testId: 'balance-credits' },
        { label: 'Held', value: usd(balance.held), testId: 'balance-held' },
        { label: 'Available', value: usd(balance.available), testId: 'balance-available' },
      ]}
    />
  );
}

function TopUpForm() {
  const api = useApi();
  const [amount, setAmount] = useState('');
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      const checkout = await api.post<{ url: string }>('/api/v1/billing/checkout', { amount_usd: Number(amount) });
      location.assign(checkout.url);
    });
  };
  return (
    <form class="form inline-form" onSubmit={submit}>
      <div class="field">
        <label for="topup-amount">Amount (USD)</label>
        <input id="topup-amount" type="number" step="0.01" required value={amount} onInput={(event) => setAmount(event.currentTarget.value)} />
      </div>
      <button type="submit" class="primary" disabled={action.busy}>
        Top up with a card
      </button>
      <ErrorAlert error={action.error} />
    </form>
  );
}

function CouponForm({ onRedeemed }: { onRedeemed: () => void }) {
  const api = useApi();
  const [code, setCode] = useState('');
  const [credited, setCredited] = useState<number | null>(null);
  const action = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    setCredited(null);
    void action.run(async () => {
      const answer = await api.post<{ credited: number }>('/api/v1/billing/coupons/redeem', { code: code.trim() });
      setCredited(answer.credited);
      setCode('');
      onRedeemed();
    });
  };
  return (
    <form class="form inline-form" onSubmit={submit}>
      <div class="field">
        <label for="coupon-code">Coupon code</label>
        <input id="coupon-code" required autoComplete="off" value={code} onInput={(event) => setCode(event.currentTarget.value)} />
      </div>
      <button type="submit" class="primary" disabled={action.busy}>
        Redeem
      </button>
      <ErrorAlert error={action.error} />
      {credited !== null && <p role="status">{usd(credited)} added to your balance.</p>}
    </form>
  );
}

function Alerts() {
  const api = useApi();
  const alerts = useLoad(() => api.get<{ data: Alert[] }>('/api/v1/billing/alerts'), []);
  const [threshold, setThreshold] = useState('');
  const [email, setEmail] = useState('');
  const create = useAction();
  const remove = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void create.run(async () => {
      await api.post('/api/v1/billing/alerts', email.trim() ? { threshold: Number(threshold), email: email.trim() } : { threshold: Number(threshold) });
      setThreshold('');
      setEmail('');
      alerts.reload();
    });
  };
  const drop = (alert: Alert) =>
    void remove.run(async () => {
      await api.del(`/api/v1/billing/alerts/${segment(alert.id)}`);
      alerts.reload();
    });
  return (
    <>
      <p class="muted">An alert e-mails you once when your credits drop below its threshold, and re-arms when they are back above it.</p>
      <ErrorAlert error={alerts.error ?? remove.error} />
      {alerts.data && alerts.data.data.length > 0 && (
        <ul class="plain-list">
          {alerts.data.data.map((alert) => (
            <li key={alert.id}>
              <span>
                Below <strong>{usd(alert.threshold)}</strong> → {alert.email ?? 'no address yet'}
                {alert.armed ? '' : ' (fired)'}
                {alert.undeliverable_reason && <small class="muted"> {UNDELIVERABLE[alert.undeliverable_reason] ?? alert.undeliverable_reason}</small>}
              </span>
              <button type="button" class="danger" onClick={() => drop(alert)} disabled={remove.busy} aria-label={`Delete the alert below ${usd(alert.threshold)}`}>
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
      {alerts.data && alerts.data.data.length === 0 && <p class="muted">No alerts.</p>}
      <form class="form inline-form" onSubmit={submit}>
        <div class="field">
          <label for="alert-threshold">Threshold (USD)</label>
          <input id="alert-threshold" type="number" step="any" required value={threshold} onInput={(event) => setThreshold(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="alert-email">E-mail (optional)</label>
          <input id="alert-email" type="email" value={email} onInput={(event) => setEmail(event.currentTarget.value)} />
        </div>
        <button type="submit" class="primary" disabled={create.busy}>
          Create alert
        </button>
        <ErrorAlert error={create.error} />
      </form>
    </>
  );
}

/** The card processor sends the payer back with `?checkout=success` or `?checkout=cancelled`. */
function checkoutOutcome(): string | null {
  const outcome = new URLSearchParams(location.search).get('checkout');
  if (outcome === 'success') return 'Payment received: the balance below includes it once the card processor has confirmed it.';
  if (outcome === 'cancelled') return 'The top-up was cancelled; nothing was charged.';
  return null;
}

export function BillingPage() {
  const api = useApi();
  const [outcome] = useState(checkoutOutcome);
  useEffect(() => {
    // Keep the address clean, so a reload does not repeat the message.
    if (location.search) history.replaceState(null, '', location.pathname);
  }, []);
  const balance = useLoad(() => api.get<Balance>('/api/v1/billing/balance'), []);
  const [page, setPage] = useState(1);
  const transactions = useLoad(() => api.get<NumberedPage<Transaction>>('/api/v1/billing/transactions', { page, per_page: PER_PAGE }), [page]);
  const refresh = () => {
    balance.reload();
    transactions.reload();
  };
  return (
    <>
      <PageTitle>Billing</PageTitle>
      {outcome && (
        <p class="panel notice" role="status">
          {outcome}
        </p>
      )}
      <section class="panel" aria-labelledby="balance-title">
        <h2 id="balance-title">Balance</h2>
        <Loading loading={balance.loading && !balance.data} />
        <ErrorAlert error={balance.error} />
        {balance.data && <BalancePanel balance={balance.data} />}
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </section>
      <section class="panel" aria-labelledby="topup-title">
        <h2 id="topup-title">Add credit</h2>
        <TopUpForm />
        <CouponForm onRedeemed={refresh} />
      </section>
      <section class="panel" aria-labelledby="transactions-title">
        <h2 id="transactions-title">Transactions</h2>
        <ErrorAlert error={transactions.error} />
        <Loading loading={transactions.loading && !transactions.data} />
        {transactions.data && transactions.data.data.length === 0 && <p class="muted">No transactions yet.</p>}
        {transactions.data && transactions.data.data.length > 0 && (
          <div class="table-scroll">
            <table class="cards">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="number">
                    Credits
                  </th>
                  <th scope="col">Reference</th>
                </tr>
              </thead>
              <tbody>
                {transactions.data.data.map((transaction) => (
                  <tr key={transaction.id}>
                    <td data-label="Time">{dateTime(transaction.created_at)}</td>
                    <td data-label="Kind">{METHOD_NAMES[transaction.payment_method] ?? transaction.payment_method}</td>
                    <td data-label="Status">{transaction.status}</td>
                    <td data-label="Credits" class={transaction.credits < 0 ? 'number negative' : 'number positive'}>{usd(transaction.credits)}</td>
                    <td data-label="Reference">
                      {/* A charge's id is its call's request id: its detail is in the request log. */}
                      {transaction.payment_method === 'usage' ? (
                        <Link to={`/requests/${encodeURIComponent(transaction.id)}`} aria-label={`The call charged ${usd(-transaction.credits)}`}>
                          <code class="small">{transaction.id}</code>
                        </Link>
                      ) : (
                        <code class="small">{transaction.id}</code>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {transactions.data && <PageButtons page={page} totalPages={Math.ceil(transactions.data.total / PER_PAGE)} onPage={setPage} />}
      </section>
      <section class="panel" aria-labelledby="alerts-title">
        <h2 id="alerts-title">Balance alerts</h2>
        <Alerts />
      </section>
    </>
  );
}
