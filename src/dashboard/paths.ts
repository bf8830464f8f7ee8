/**
 * The dashboard's addresses: the paths its routes match, and the links it sends to a browser, which carry
 * the path of PUBLIC_URL (the prefix a reverse proxy strips before the request reaches the service).
 */
import { STYLE_PATH } from './style.ts';

export const DASHBOARD_PATH = '/dashboard';
export const SIGN_IN_PATH = `${DASHBOARD_PATH}/sign-in`;
export const SIGN_OUT_PATH = `${DASHBOARD_PATH}/sign-out`;

/** The addresses of the dashboard's links, form actions and redirects, as the browser must ask for them. */
export interface DashboardLinks {
  home: string;
  signIn: string;
  signOut: string;
  style: string;
  installation(installationId: string): string;
  sessions(installationId: string): string;
  session(installationId: string, sessionId: string): string;
  revoke(installationId: string, deviceId: string): string;
  export(installationId: string, kind: string, format: string): string;
}

/** The links under the path of `publicUrl` (none when it is empty or names the root). */
export function dashboardLinks(publicUrl: string): DashboardLinks {
  const prefix = publicUrl === '' ? '' : new URL(publicUrl).pathname.replace(/\/+$/, '');
  const home = `${prefix}${DASHBOARD_PATH}`;
  const installation = (installationId: string) => `${home}/installations/${installationId}`;
  const sessions = (installationId: string) => `${installation(installationId)}/charging-sessions`;
  return {
    home,
    signIn: `${prefix}${SIGN_IN_PATH}`,
    signOut: `${prefix}${SIGN_OUT_PATH}`,
    style: `${prefix}${STYLE_PATH}`,
    installation,
    sessions,
    session: (installationId, sessionId) => `${sessions(installationId)}/${encodeURIComponent(sessionId)}`,
    revoke: (installationId, deviceId) => `${installation(installationId)}/devices/${deviceId}/revoke`,
    export: (installationId, kind, format) => `${installation(installationId)}/export/${kind}.${format}`,
  };
}

/** Whether a raw request path is the dashboard's (its pages carry the dashboard's headers). */
export function isDashboardPath(path: string): boolean {
  const resolved = URL.parse(path, 'http://localhost')?.pathname;
  return resolved === DASHBOARD_PATH || resolved?.startsWith(`${DASHBOARD_PATH}/`) === true;
}
