/** @jsxImportSource @kitajs/html */
/**
 * The pages behind the sign-in, read through the owner's services (the same ones the /v1 routes use):
 * the installations, one installation, its charging sessions, one session, the revoke form and the exports.
 */
import type { ChargingHistory } from '../charging/history.ts';
import type { Consumption } from '../consumption/service.ts';
import type { DeviceRegistry } from '../devices/service.ts';
import { deviceKey } from '../devices/store.ts';
import type { Logger } from '../log.ts';
import { attachment } from '../owner/routes.ts';
import { exportFormats, type ExportKind, type OwnerData } from '../owner/service.ts';
import { pageAnswer } from '../pairing/page.tsx';
import type { PlannerStatus } from '../planner/status.ts';
import type { SampleHistory } from '../telemetry/history.ts';
import { isUuid } from '../uuid.ts';
import { consumptionView, dateOf, PERIODS, type Period } from './consumption-view.ts';
import { InstallationPage } from './installation.tsx';
import { InstallationsPage } from './installations.tsx';
import { DASHBOARD_PATH, type DashboardLinks } from './paths.ts';
import { notFoundPage, redirect, type SignedInRoutes } from './routes.tsx';
import { ConsumptionSummaries, type DashboardSession } from './service.ts';
import { SessionPage, SessionsPage } from './sessions.tsx';

export interface OwnerReads {
  ownerData: Pick<OwnerData, 'installations' | 'exportStream'>;
  samples: Pick<SampleHistory, 'latest' | 'samplesSince'>;
  consumption: Pick<Consumption, 'days' | 'version'>;
  sessions: Pick<ChargingHistory, 'list' | 'one'>;
  plannerStatus: Pick<PlannerStatus, 'status'>;
  devices: Pick<DeviceRegistry, 'list' | 'revoke'>;
}

/** Sessions listed on one page of the charging sessions. */
const SESSIONS_PER_PAGE = 50;

const DAY_MS = 86_400_000;

export function ownerPages(reads: OwnerReads, links: DashboardLinks, log: Logger, now: () => number): SignedInRoutes {
  const summaries = new ConsumptionSummaries(reads.consumption);
  /** The installation a path names, with its device names; null for an id that is not one, or holds nothing here. */
  const installationOf = (id: string | undefined) => {
    if (!isUuid(id)) return null;
    const installationId = id.toLowerCase();
    return reads.ownerData.installations().find((known) => known.installationId === installationId) ?? null;
  };

  const installations = (_request: Request, session: DashboardSession) => {
    const at = now();
    const midnight = Math.floor(at / DAY_MS) * (DAY_MS / 1000);
    const today = reads.samples.samplesSince(midnight);
    const rows = reads.ownerData.installations().map((known) => ({
      ...known,
      samplesToday: today.get(known.installationId) ?? 0,
      forwarding: reads.plannerStatus.status(known.installationId),
    }));
    return pageAnswer(200, <InstallationsPage rows={rows} now={at} formToken={session.formToken} links={links} />);
  };

  const installation = (request: Request, session: DashboardSession, params: Record<string, string>) => {
    const known = installationOf(params.installationId);
    if (known === null) return notFoundPage(links, 'installation');
    const { installationId, names } = known;
    const at = now();
    const period = periodOf(new URL(request.url).searchParams.get('days'));
    return pageAnswer(
      200,
      <InstallationPage
        installationId={installationId}
        names={names}
        period={period}
        consumption={consumptionView(summaries.of(installationId), dateOf(at), period)}
        latest={reads.samples.latest(installationId)}
        forwarding={reads.plannerStatus.status(installationId)}
        devices={reads.devices.list().filter((device) => device.installationId === installationId)}
        now={at}
        formToken={session.formToken}
        links={links}
      />,
    );
  };

  const sessions = (request: Request, session: DashboardSession, params: Record<string, string>) => {
    const known = installationOf(params.installationId);
    if (known === null) return notFoundPage(links, 'installation');
    const before = new URL(request.url).searchParams.get('before') ?? undefined;
    const page = reads.sessions.list(known.installationId, { limit: SESSIONS_PER_PAGE, before });
    return pageAnswer(
      200,
      <SessionsPage
        owner={{ ...known, formToken: session.formToken, links }}
        sessions={page.sessions}
        next={page.next}
      />,
    );
  };

  const chargingSession = (_request: Request, session: DashboardSession, params: Record<string, string>) => {
    const known = installationOf(params.installationId);
    const found =
      known && params.sessionId !== undefined ? reads.sessions.one(known.installationId, params.sessionId) : null;
    if (known === null || found === null) return notFoundPage(links, 'charging session');
    return pageAnswer(200, <SessionPage owner={{ ...known, formToken: session.formToken, links }} session={found} />);
  };

  /** The export a file name asks for (`telemetry.csv`), streamed as the /v1 export routes stream it. */
  const exported = (_request: Request, _session: DashboardSession, params: Record<string, string>) => {
    const known = installationOf(params.installationId);
    const [kind, format] = (params.file ?? '').split('.') as [ExportKind, string];
    const formats: readonly string[] | undefined = Object.hasOwn(exportFormats, kind) ? exportFormats[kind] : undefined;
    if (known === null || !formats?.includes(format)) return notFoundPage(links, 'export');
    return attachment(reads.ownerData.exportStream(kind, known.installationId, format as never));
  };

  /** Revokes one of the installation's devices, then shows the installation again. */
  const revoke = async (_request: Request, _session: DashboardSession, params: Record<string, string>) => {
    const known = installationOf(params.installationId);
    const id = deviceKey(params.deviceId ?? '');
    const owned =
      known !== null &&
      reads.devices.list().some((device) => device.id === id && device.installationId === known.installationId);
    if (!owned) return notFoundPage(links, 'device');
    await reads.devices.revoke(id);
    log.info('device.revoked', { device: id, by: 'dashboard' });
    return redirect(`${links.installation(known.installationId)}#devices`);
  };

  const installationRoute = `${DASHBOARD_PATH}/installations/:installationId`;
  return {
    get: {
      [DASHBOARD_PATH]: installations,
      [installationRoute]: installation,
      [`${installationRoute}/charging-sessions`]: sessions,
      [`${installationRoute}/charging-sessions/:sessionId`]: chargingSession,
      [`${installationRoute}/export/:file`]: exported,
    },
    post: {
      [`${installationRoute}/devices/:deviceId/revoke`]: revoke,
    },
  };
}

/** The period the `days` parameter names; 30 days for anything else. */
function periodOf(days: string | null): Period {
  return PERIODS.find((period) => String(period) === days) ?? 30;
}
