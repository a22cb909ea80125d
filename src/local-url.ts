/** The URL a process on this host reaches a listener at: a wildcard listen is reached on loopback; IPv6 needs brackets. */
export function localUrl(host: string, port: number, protocol: 'http' | 'https' = 'http'): string {
  const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `${protocol}://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}
