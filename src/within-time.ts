/**
 * `work`, or a rejection with `timeoutError()` once `ms` have passed. The work itself is not
 * cancelled (a DNS lookup, a query on a connection that waits for a reconnect cannot be): only the
 * wait for it is bounded.
 */
export function withinTime<T>(work: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timeoutError()), ms);
    work.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}
