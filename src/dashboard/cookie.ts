/** The dashboard's session cookie, and whether a request came over https (the cookie's `Secure`). */
import type { Config } from '../config.ts';
import { limits } from '../limits.ts';
import { requestOrigin } from '../http/origin.ts';

export const SESSION_COOKIE = 'ev_ingest_session';

type SchemeConfig = Pick<Config, 'publicUrl' | 'trustProxy'>;

/**
 * Whether the browser reached the server over https: directly, by PUBLIC_URL (a proxy terminating
 * TLS in front), or by `X-Forwarded-Proto` from a trusted proxy.
 */
export function overHttps(request: Request, config: SchemeConfig): boolean {
  return config.publicUrl.startsWith('https:') || requestOrigin(request, config.trustProxy).startsWith('https:');
}

function attributes(request: Request, config: SchemeConfig): string {
  return `HttpOnly; SameSite=Strict; Path=/${overHttps(request, config) ? '; Secure' : ''}`;
}

/** The `Set-Cookie` of a session's secret, lasting as long as the session does unused. */
export function sessionCookie(token: string, request: Request, config: SchemeConfig): string {
  return `${SESSION_COOKIE}=${token}; Max-Age=${limits.dashboardSessionMs / 1000}; ${attributes(request, config)}`;
}

/** The `Set-Cookie` that removes the session's cookie from the browser. */
export function clearedCookie(request: Request, config: SchemeConfig): string {
  return `${SESSION_COOKIE}=; Max-Age=0; ${attributes(request, config)}`;
}

/** The session cookie's value in a request, or null. */
export function sessionToken(request: Request): string | null {
  const header = request.headers.get('cookie');
  if (header === null) return null;
  for (const pair of header.split(';')) {
    const at = pair.indexOf('=');
    if (at > 0 && pair.slice(0, at).trim() === SESSION_COOKIE) return pair.slice(at + 1).trim();
  }
  return null;
}
