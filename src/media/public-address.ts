import { isIPv4, isIPv6 } from 'node:net';

/**
 * Whether the gateway may connect to an address on a caller's behalf: only addresses on the public
 * internet. Everything private, local, reserved or documentation-only is refused, so a caller cannot
 * make the gateway reach its own network (SSRF), cloud metadata (169.254.169.254) included.
 */
export function isPublicAddress(ip: string, allowLoopback: boolean): boolean {
  if (isIPv4(ip)) return isPublicIpv4(ipv4Number(ip), allowLoopback);
  const value = isIPv6(ip) ? ipv6Value(ip) : undefined;
  if (value === undefined) return false;
  if (value === IPV6_LOOPBACK) return allowLoopback;
  if (value === 0n) return false;
  // Mapped (::ffff:a.b.c.d) and compatible (::a.b.c.d) addresses reach the IPv4 host inside them.
  const high96 = value >> 32n;
  if (high96 === 0xffffn || high96 === 0n) return isPublicIpv4(Number(value & 0xffffffffn), allowLoopback);
  return !IPV6_REFUSED.some((range) => inRange(value, range));
}

/** Whether the address is loopback (127.0.0.0/8, ::1 or the mapped ::ffff:127.x.y.z). */
export function isLoopbackAddress(ip: string): boolean {
  if (isIPv4(ip)) return ipv4Number(ip) >>> 24 === 127;
  const value = isIPv6(ip) ? ipv6Value(ip) : undefined;
  if (value === undefined) return false;
  return value === IPV6_LOOPBACK || (value >> 32n === 0xffffn && Number(value & 0xffffffffn) >>> 24 === 127);
}

interface Range<T> {
  readonly network: T;
  readonly mask: T;
}

function isPublicIpv4(value: number, allowLoopback: boolean): boolean {
  if (value >>> 24 === 127) return allowLoopback;
  return !IPV4_REFUSED.some(({ network, mask }) => ((value & mask) >>> 0) === network);
}

function ipv4Number(ip: string): number {
  const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number];
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** The 128-bit value of a valid IPv6 text (zone index dropped, an IPv4 tail folded into two groups). */
function ipv6Value(ip: string): bigint | undefined {
  let text = ip.split('%')[0]!.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    if (!isIPv4(tail)) return undefined;
    const v4 = ipv4Number(tail);
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, rest, extra] = text.split('::');
  if (extra !== undefined) return undefined;
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const zeros = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(Math.max(zeros, 0)).fill('0'), ...restGroups];
  if (groups.length !== 8 || groups.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return undefined;
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function inRange(value: bigint, { network, mask }: Range<bigint>): boolean {
  return (value & mask) === network;
}

function ipv4Range(cidr: string): Range<number> {
  const [address, bits] = cidr.split('/') as [string, string];
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return { network: (ipv4Number(address) & mask) >>> 0, mask };
}

function ipv6Range(cidr: string): Range<bigint> {
  const [address, bits] = cidr.split('/') as [string, string];
  const all = (1n << 128n) - 1n;
  const mask = all ^ ((1n << BigInt(128 - Number(bits))) - 1n);
  return { network: ipv6Value(address)! & mask, mask };
}

const IPV6_LOOPBACK = 1n;

// 127.0.0.0/8 is handled apart: tests may allow it.
const IPV4_REFUSED = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '169.254.0.0/16', // link-local, cloud metadata
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation
  '203.0.113.0/24', // documentation
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and 255.255.255.255 broadcast
].map(ipv4Range);

// ::, ::1, mapped and compatible addresses are handled apart.
const IPV6_REFUSED = [
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'fec0::/10', // site-local: deprecated, still routed inside some networks
  'ff00::/8', // multicast
  '2001:db8::/32', // documentation
  '64:ff9b::/96', // NAT64: would reach any IPv4 address, private ones too
  '64:ff9b:1::/48', // local-use NAT64
  '100::/64', // discard
  // Tunnels that carry IPv4 inside: 6to4 embeds an IPv4 address (2002:a.b.c.d::/48) that a relay
  // would reach, private ones included; Teredo's client address is an obfuscated IPv4 behind a NAT.
  // Both are deprecated (RFC 7526) and no vendor serves from them: refused whole.
  '2002::/16', // 6to4
  '2001::/32', // Teredo
].map(ipv6Range);
