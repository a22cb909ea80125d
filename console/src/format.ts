// How the console writes money, times and counts: USD to the nano-dollar the ledger keeps, times in the browser's locale.

const USD = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 9 });
const COUNT = new Intl.NumberFormat();

/** $0.000123, $9.0938908, $25.00: every digit a small charge needs, trailing zeros past the cents dropped. */
export const usd = (amount: number | null | undefined) => (amount === null || amount === undefined ? '—' : USD.format(amount));

export const count = (value: number | null | undefined) => (value === null || value === undefined ? '—' : COUNT.format(value));

export function dateTime(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}

export const milliseconds = (value: number | null | undefined) => (value === null || value === undefined ? '—' : `${COUNT.format(value)} ms`);

/** The value of a datetime-local input for an ISO time (local time, to the minute). */
export function toLocalInput(iso: string | null): string {
  if (!iso) return '';
  const date = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** An ISO time with its zone from a datetime-local input (read as local time); null when empty. */
export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}
