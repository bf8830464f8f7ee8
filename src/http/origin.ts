/**
 * The check that a state-changing form post comes from the service's own pages: a browser names the site
 * a request comes from (`Sec-Fetch-Site`, `Origin`), so a stranger's page cannot post on the owner's behalf.
 */
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { AddressOf } from './client-address.ts';
import type { RepeatCounter } from './security-log.ts';

type OriginConfig = Pick<Config, 'publicUrl' | 'trustProxy'>;

/** Where refusals are logged (`pairing.cross_site`): at most once a minute per address, with a count. */
export interface CrossSiteLog {
  repeats: RepeatCounter;
  log: Logger;
  addressOf: AddressOf;
}

/** Why a request is taken for another site's: what the browser said, and the host the service expected. */
interface CrossSite {
  site: string | null;
  origin: string | null;
  expected: string;
}

/**
 * Whether a browser says a form post comes from another site, logged as `pairing.cross_site` when it does.
 * As Go's `http.CrossOriginProtection`: `Sec-Fetch-Site` decides when sent (`same-origin` and `none` pass);
 * else an `Origin` must name PUBLIC_URL's host or the request's own (behind a trusted proxy, the forwarded
 * one). Hosts, not schemes: behind a TLS proxy the page is `https` while the service sees `http`.
 * A request naming neither (a script, an old browser) passes: the password still guards it.
 */
export function isCrossSite(request: Request, config: OriginConfig, log: CrossSiteLog): boolean {
  return logged(crossSiteOf(request, config), request, log);
}

/** Whether `Sec-Fetch-Site` says `cross-site` (logged as `isCrossSite` does): the car's endpoints take no form. */
export function isFetchedCrossSite(request: Request, config: OriginConfig, log: CrossSiteLog): boolean {
  const site = request.headers.get('sec-fetch-site')?.toLowerCase();
  const found = site === 'cross-site' ? { ...ownHostAndOrigin(request, config), site } : null;
  return logged(found, request, log);
}

function crossSiteOf(request: Request, config: OriginConfig): CrossSite | null {
  const site = request.headers.get('sec-fetch-site')?.toLowerCase() ?? null;
  const hosts = ownHostAndOrigin(request, config);
  if (site !== null) return site === 'same-origin' || site === 'none' ? null : { ...hosts, site };
  if (hosts.origin === null) return null;
  const allowed = config.publicUrl === '' ? [hosts.expected] : [hosts.expected, hostOf(config.publicUrl)];
  return allowed.includes(hosts.origin) ? null : { ...hosts, site };
}

/** The host the `Origin` names (the header as sent when it names none, `null` included), and the request's own. */
function ownHostAndOrigin(request: Request, { trustProxy }: OriginConfig) {
  const origin = request.headers.get('origin');
  return { origin: origin === null ? null : hostOf(origin), expected: hostOf(requestOrigin(request, trustProxy)) };
}

function logged(found: CrossSite | null, request: Request, crossSiteLog: CrossSiteLog) {
  if (found === null) return false;
  const { repeats, log, addressOf } = crossSiteLog;
  const address = addressOf(request);
  const count = repeats.due(address);
  if (count !== null) log.warn('pairing.cross_site', { ...found, address, count });
  return true;
}

/** The host of a URL (lower-case, no default port), or the text itself when it is none (`null`). */
function hostOf(url: string): string {
  const parsed = URL.parse(url);
  return parsed === null || parsed.host === '' ? url : parsed.host;
}

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/** Scheme and `Host` of a request; behind a trusted proxy the first forwarded values win. */
export function requestOrigin(request: Request, trustProxy: boolean): string {
  const url = new URL(request.url);
  let scheme = url.protocol.slice(0, -1);
  let host = request.headers.get('host') ?? url.host;
  if (trustProxy) {
    const forwardedScheme = firstValue(request.headers.get('x-forwarded-proto'))?.toLowerCase();
    const forwardedHost = firstValue(request.headers.get('x-forwarded-host'));
    if (forwardedScheme === 'http' || forwardedScheme === 'https') scheme = forwardedScheme;
    if (forwardedHost) host = forwardedHost;
  }
  // A header that is not a plain host name must not shape the URL the car shows.
  return `${scheme}://${HOST.test(host) ? host : url.host}`;
}

function firstValue(header: string | null): string | undefined {
  const value = header?.split(',')[0]?.trim();
  return value === '' ? undefined : value;
}
