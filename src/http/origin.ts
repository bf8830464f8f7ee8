/**
 * The check that a state-changing form post comes from the service's own pages: a browser names the site
 * a request comes from (`Sec-Fetch-Site`, `Origin`), so a stranger's page cannot post on the owner's behalf.
 */
import type { Config } from '../config.ts';

/**
 * Whether a browser says the request comes from another site: `Sec-Fetch-Site: cross-site`, or an
 * `Origin` that is neither PUBLIC_URL's nor the request's own (behind a trusted proxy, the forwarded one).
 * A request naming neither (a script, an old browser) passes: the password still guards it.
 */
export function isCrossSite(request: Request, config: Pick<Config, 'publicUrl' | 'trustProxy'>): boolean {
  if (request.headers.get('sec-fetch-site')?.toLowerCase() === 'cross-site') return true;
  const origin = request.headers.get('origin');
  if (origin === null) return false;
  const allowed = [requestOrigin(request, config.trustProxy), config.publicUrl].filter((url) => url !== '');
  return !allowed.map(originOf).includes(originOf(origin));
}

/** The serialized origin of a URL (lower-case, no default port), or the text itself when it is none (`null`). */
function originOf(url: string): string {
  const parsed = URL.parse(url);
  return parsed === null || parsed.origin === 'null' ? url : parsed.origin;
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
