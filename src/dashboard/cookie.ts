/** The dashboard's session cookie, and whether a request came over https (the cookie's `Secure`). */
import type { Config } from '../config.ts';
import { limits } from '../limits.ts';
import { requestOrigin } from '../http/origin.ts';

const SESSION_COOKIE = 'ev_ingest_session';
/** Over https: a browser keeps a `__Host-` cookie only Secure, for this host alone, so no sibling host can set it. */
const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

type SchemeConfig = Pick<Config, 'publicUrl' | 'trustProxy'>;

/**
 * Whether the browser reached the server over https. A request to PUBLIC_URL's host takes its scheme (a
 * proxy terminating TLS in front); any other (the server's LAN address, say) its own, or
 * `X-Forwarded-Proto` from a trusted proxy: a Secure cookie would not come back over plain http.
 */
export function overHttps(request: Request, config: SchemeConfig): boolean {
  const origin = new URL(requestOrigin(request, config.trustProxy));
  const publicUrl = URL.parse(config.publicUrl);
  const scheme = publicUrl?.host === origin.host ? publicUrl.protocol : origin.protocol;
  return scheme === 'https:';
}

/** The cookie's name and attributes for this request's scheme. */
function cookieOf(request: Request, config: SchemeConfig): { name: string; attributes: string } {
  return overHttps(request, config)
    ? { name: SECURE_SESSION_COOKIE, attributes: 'HttpOnly; SameSite=Strict; Path=/; Secure' }
    : { name: SESSION_COOKIE, attributes: 'HttpOnly; SameSite=Strict; Path=/' };
}

/** The `Set-Cookie` of a session's secret, lasting as long as the session does unused. */
export function sessionCookie(token: string, request: Request, config: SchemeConfig): string {
  const { name, attributes } = cookieOf(request, config);
  return `${name}=${token}; Max-Age=${limits.dashboardSessionMs / 1000}; ${attributes}`;
}

/** The `Set-Cookie` that removes the session's cookie from the browser. */
export function clearedCookie(request: Request, config: SchemeConfig): string {
  const { name, attributes } = cookieOf(request, config);
  return `${name}=; Max-Age=0; ${attributes}`;
}

/** The value of the session cookie this request's scheme names, or null. */
export function sessionToken(request: Request, config: SchemeConfig): string | null {
  const header = request.headers.get('cookie');
  if (header === null) return null;
  const { name } = cookieOf(request, config);
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return null;
}
