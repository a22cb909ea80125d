const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** IPv4 address or IPv4 CIDR (`10.0.0.0/8`). */
export function isIpv4OrCidr(entry: string): boolean {
  const [address, bits, extra] = entry.split('/');
  if (extra !== undefined || !address || !IPV4.test(address)) return false;
  return bits === undefined || (/^\d{1,2}$/.test(bits) && Number(bits) <= 32);
}

/** The address as an unsigned 32-bit number; IPv4-mapped IPv6 (`::ffff:1.2.3.4`) counts as IPv4. */
function ipv4Number(address: string): number | undefined {
  const text = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (!IPV4.test(text)) return undefined;
  const [a, b, c, d] = text.split('.').map(Number) as [number, number, number, number];
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** A set of IPv4 addresses and CIDR ranges, compiled once; anything not IPv4 is outside it. */
export class IpRanges {
  private readonly ranges: readonly { readonly network: number; readonly mask: number }[];

  constructor(entries: readonly string[]) {
    this.ranges = entries.map((entry) => {
      if (!isIpv4OrCidr(entry)) throw new Error(`not an IPv4 address or CIDR: ${entry}`);
      const [address, bits = '32'] = entry.split('/');
      const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
      return { network: (ipv4Number(address!)! & mask) >>> 0, mask };
    });
  }

  get empty(): boolean {
    return this.ranges.length === 0;
  }

  contains(address: string): boolean {
    const value = ipv4Number(address);
    if (value === undefined) return false;
    return this.ranges.some(({ network, mask }) => ((value & mask) >>> 0) === network);
  }
}

/**
 * The client's address: the socket's peer, unless that peer is a trusted proxy; then the
 * `X-Forwarded-For` list is read from the right (nearest hop first) and the first address that is
 * not a trusted proxy is the client. A client cannot forge its way past a proxy it does not control.
 */
export function clientAddress(socketAddress: string, forwardedFor: string, trustedProxies: IpRanges): string {
  const peer = socketAddress.startsWith('::ffff:') ? socketAddress.slice(7) : socketAddress;
  if (trustedProxies.empty || !forwardedFor || !trustedProxies.contains(peer)) return peer;
  const hops = forwardedFor.split(',').map((hop) => hop.trim()).filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) if (!trustedProxies.contains(hops[i]!)) return hops[i]!;
  return hops[0] ?? peer;
}
