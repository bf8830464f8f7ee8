/** The dashboard's addresses, in one place for the routes, the links and the listener's headers. */

export const DASHBOARD_PATH = '/dashboard';
export const SIGN_IN_PATH = `${DASHBOARD_PATH}/sign-in`;
export const SIGN_OUT_PATH = `${DASHBOARD_PATH}/sign-out`;

export const installationPath = (installationId: string) => `${DASHBOARD_PATH}/installations/${installationId}`;
export const sessionsPath = (installationId: string) => `${installationPath(installationId)}/charging-sessions`;
export const sessionPath = (installationId: string, sessionId: string) =>
  `${sessionsPath(installationId)}/${encodeURIComponent(sessionId)}`;
export const revokePath = (installationId: string, deviceId: string) =>
  `${installationPath(installationId)}/devices/${deviceId}/revoke`;
export const exportPath = (installationId: string, kind: string, format: string) =>
  `${installationPath(installationId)}/export/${kind}.${format}`;

/** Whether a raw request path is the dashboard's (its pages carry the dashboard's headers). */
export function isDashboardPath(path: string): boolean {
  const resolved = URL.parse(path, 'http://localhost')?.pathname;
  return resolved === DASHBOARD_PATH || resolved?.startsWith(`${DASHBOARD_PATH}/`) === true;
}
