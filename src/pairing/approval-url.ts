/** The address the car's QR code leads to: PUBLIC_URL, else the request's own origin. */
import type { Config } from '../config.ts';
import { PAIR_PATH } from './page.tsx';

const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

export function approvalUrl(config: Pick<Config, 'publicUrl' | 'trustProxy'>, request: Request, userCode: string): string {
  return `${config.publicUrl || requestOrigin(request, config.trustProxy)}${PAIR_PATH}?code=${userCode}`;
}

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
