/**
 * The client address of a request, as the per-client limits count it: the socket's peer, or behind a
 * trusted proxy (TRUST_PROXY=1) the last `X-Forwarded-For` value, the one that proxy appended. IPv6
 * addresses count per /64, the block one household or one server is given.
 */
import { isIPv4, isIPv6 } from 'node:net';

/**
 * Peers named for requests that came through no socket of their own: a test's (`app.handle`), or one the
 * listener rebuilt. A request the listener accepted is not in here: its socket is asked when a handler needs it.
 */
const named = new WeakMap<Request, string>();

/** Stands for the peer of a request that came through no socket (`app.handle` in tests). */
export const NO_PEER = 'unknown';

/** Names the socket's peer of a request built in-process (tests, the listener's rebuilt ones). */
export function recordPeer(request: Request, address: string | undefined): Request {
  if (address !== undefined) named.set(request, address);
  return request;
}

/** The socket's peer address of a request, if it has one; injected into the routes that count by address. */
export type PeerOf = (request: Request) => string | undefined;

/** The peer of an app that serves no socket: the one named with `recordPeer`. */
export const namedPeer: PeerOf = (request) => named.get(request);

/** What the listening server tells of a request it made, while its connection is open. */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

/**
 * The peers of a listening server, asked of its socket only when a handler needs one (a password check,
 * a pairing start, a logged refusal): asking for every upload cost it about 1.5 µs of CPU. A client
 * gone before its handler asks (it closed after sending) counts under `NO_PEER`.
 */
export class SocketPeers {
  private server: PeerSource | null = null;

  /** Binds the lookup to the server once it listens; until then only named peers are known. */
  listening(server: PeerSource): void {
    this.server = server;
  }

  readonly of: PeerOf = (request) => named.get(request) ?? this.server?.requestIP(request)?.address;
}

/** The address a request counts under, as one app's settings and listener give it (`addressesOf`). */
export type AddressOf = (request: Request) => string;

/** The client addresses of an app: from `X-Forwarded-For` behind a trusted proxy, else from its socket. */
export const addressesOf =
  (trustProxy: boolean, peerOf: PeerOf = namedPeer): AddressOf =>
  (request) =>
    clientAddress(request, trustProxy, peerOf);

/**
 * The address a request counts under: an IPv4 address, an IPv6 /64 (`2001:db8:1:2::/64`), or `NO_PEER`.
 * `peerOf` is the socket's lookup (`SocketPeers`) on a listening server.
 */
export function clientAddress(request: Request, trustProxy: boolean, peerOf: PeerOf = namedPeer): string {
  const forwarded = trustProxy ? lastForwarded(request.headers.get('x-forwarded-for')) : undefined;
  return networkOf(forwarded ?? peerOf(request) ?? NO_PEER);
}

/** The last value of `X-Forwarded-For` when it is an IP address; an earlier one may be anything a client sent. */
function lastForwarded(header: string | null): string | undefined {
  const last = header?.slice(header.lastIndexOf(',') + 1).trim();
  return last !== undefined && (isIPv4(last) || isIPv6(last)) ? last : undefined;
}

/** An IPv4 address as it is (an IPv4-mapped IPv6 one unwrapped, dotted or hex), an IPv6 one as its /64. */
function networkOf(address: string): string {
  if (!isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  return mappedIPv4(groups) ?? `${compressed([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

/**
 * The coarse form the approval page shows: an IPv4 address's /24, an IPv6 one's /48; enough to tell
 * a home network from a stranger's without showing one household.
 */
export function coarseAddress(address: string): string {
  if (isIPv4(address)) return `${address.split('.').slice(0, 3).join('.')}.0/24`;
  const ipv6 = address.replace(/\/\d+$/, '');
  return isIPv6(ipv6) ? `${compressed([...ipv6Groups(ipv6).slice(0, 3), 0, 0, 0, 0, 0])}/48` : address;
}

/** The IPv4 address of an IPv4-mapped IPv6 one (`::ffff:0:0/96`), or undefined. */
function mappedIPv4(groups: number[]): string | undefined {
  if (groups.slice(0, 5).some((group) => group !== 0) || groups[5] !== 0xffff) return undefined;
  return groups
    .slice(6)
    .flatMap((group) => [group >> 8, group & 0xff])
    .join('.');
}

/** The groups of one side of an IPv6 address's `::`, an IPv4 tail as its two. */
function groupsOf(text: string | undefined): number[] {
  if (!text) return [];
  return text.split(':').flatMap((group) => {
    if (!group.includes('.')) return [Number.parseInt(group, 16)];
    const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
    return [(a << 8) | b, (c << 8) | d];
  });
}

/** The eight groups of an IPv6 address (`::` expanded, a zone dropped). */
function ipv6Groups(address: string): number[] {
  const [head = '', tail] = address.replace(/%.*$/, '').split('::');
  const left = groupsOf(head);
  const right = groupsOf(tail);
  const zeros = tail === undefined ? [] : Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...zeros, ...right];
}

/** RFC 5952's text of eight groups: lower-case hex, the first longest run of two or more zero groups as `::`. */
function compressed(groups: number[]): string {
  let best = { start: -1, length: 1 };
  for (let start = 0; start < 8; start += 1) {
    let length = 0;
    while (groups[start + length] === 0) length += 1;
    if (length > best.length) best = { start, length };
  }
  const hex = groups.map((group) => group.toString(16));
  if (best.start < 0) return hex.join(':');
  return `${hex.slice(0, best.start).join(':')}::${hex.slice(best.start + best.length).join(':')}`;
}
