/**
 * The client address of a request, as the per-client limits count it: the socket's peer, or behind a
 * trusted proxy (TRUST_PROXY=1) the last `X-Forwarded-For` value, the one that proxy appended. IPv6
 * addresses count per /64, the block one household or one server is given.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** The peer address of each request the listener accepted; a request built in-process (a test's) has none. */
const peers = new WeakMap<Request, string>();

/** Stands for the peer of a request that came through no socket (`app.handle` in tests). */
export const NO_PEER = 'unknown';

/** Records the socket's peer of a request, before the app sees it (the listener; tests name one). */
export function recordPeer(request: Request, address: string | undefined): Request {
  if (address !== undefined) peers.set(request, address);
  return request;
}

/** The address a request counts under: an IPv4 address, an IPv6 /64 (`2001:db8:1:2::/64`), or `NO_PEER`. */
export function clientAddress(request: Request, trustProxy: boolean): string {
  const forwarded = trustProxy ? lastForwarded(request.headers.get('x-forwarded-for')) : undefined;
  return networkOf(forwarded ?? peers.get(request) ?? NO_PEER);
}

/** The last value of `X-Forwarded-For` when it is an IP address; an earlier one may be anything a client sent. */
function lastForwarded(header: string | null): string | undefined {
  const last = header?.slice(header.lastIndexOf(',') + 1).trim();
  return last !== undefined && (isIPv4(last) || isIPv6(last)) ? last : undefined;
}

/** An IPv4 address as it is (an IPv4-mapped IPv6 one unwrapped), an IPv6 one as its /64. */
function networkOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  return isIPv6(address) ? `${ipv6Groups(address).slice(0, 4).join(':')}::/64` : address;
}

/**
 * The coarse form the approval page shows: an IPv4 address's /24, an IPv6 one's /48; enough to tell
 * a home network from a stranger's without showing one household.
 */
export function coarseAddress(address: string): string {
  if (isIPv4(address)) return `${address.split('.').slice(0, 3).join('.')}.0/24`;
  const ipv6 = address.replace(/\/\d+$/, '');
  return isIPv6(ipv6) ? `${ipv6Groups(ipv6).slice(0, 3).join(':')}::/48` : address;
}

/** The groups of one side of an IPv6 address's `::`, an IPv4 tail counted as its two. */
function groupsOf(text: string | undefined): string[] {
  return text ? text.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])) : [];
}

/** The eight groups of an IPv6 address, without leading zeros (`::` expanded, a zone or IPv4 tail as zeros). */
function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.replace(/%.*$/, '').split('::');
  const left = groupsOf(head);
  const right = groupsOf(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
}
