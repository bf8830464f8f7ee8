/**
 * The owner's data, back out: the sessions list and one session, the latest sample, the streamed
 * exports and the forwarding status. Tokens as for the ingest routes; answers never cached.
 */
import { Elysia } from 'elysia';
import type { ChargingHistory } from '../charging/history.ts';
import { SessionPath } from '../charging/model.ts';
import { messages, notFound } from '../http/errors.ts';
import { InstallationPath } from '../http/openapi.ts';
import { installationOfPath, type Pipeline, type RequestParts } from '../http/pipeline.ts';
import type { PlannerStatus } from '../planner/status.ts';
import type { SampleHistory } from '../telemetry/history.ts';
import {
  parseConsumptionExportQuery,
  parseSessionQuery,
  parseSessionsQuery,
  parseTelemetryExportQuery,
  type SessionsAsked,
} from './model.ts';
import type { Export, OwnerData } from './service.ts';

export interface OwnerDataDeps {
  pipeline: Pipeline;
  ownerData: OwnerData;
  samples: SampleHistory;
  sessions: ChargingHistory;
  plannerStatus: PlannerStatus;
}

/** Exports hold the owner's data (locations among them): no cache along the way may keep them. */
const NO_STORE = { 'cache-control': 'no-store' };

const DOWNLOAD_HEADERS = { 'x-content-type-options': 'nosniff', 'content-security-policy': 'sandbox' };

/**
 * An export as a download, never cached; the /v1 export routes and the dashboard's export links answer
 * with it. Should a browser show it rather than save it, it is neither sniffed as a page nor allowed to act as one.
 */
export function attachment({ contentType, filename, body }: Export): Response {
  const headers = { 'content-type': contentType, 'content-disposition': `attachment; filename="${filename}"` };
  return new Response(body, { headers: { ...headers, ...NO_STORE, ...DOWNLOAD_HEADERS } });
}

/** How a read of the installation ending the path declares its pipeline; new each time: Elysia edits it. */
const pathRead = () =>
  ({ auth: 'ingest', path: 'installationId', params: InstallationPath, owned: installationOfPath }) as const;

const telemetryExport = (parts: RequestParts) => ({
  ...installationOfPath(parts),
  ...parseTelemetryExportQuery(parts.query),
});

const consumptionExport = (parts: RequestParts) => ({
  ...installationOfPath(parts),
  ...parseConsumptionExportQuery(parts.query),
});

export function ownerDataRoutes({ pipeline, ownerData, samples, sessions, plannerStatus }: OwnerDataDeps) {
  return new Elysia({ name: 'owner-data' })
    .use(pipeline)
    .get(
      '/v1/charging-sessions',
      ({ owned }) => {
        const asked = owned as SessionsAsked;
        if (asked.kind === 'export')
          return attachment(ownerData.exportStream('sessions', asked.installationId, asked.format, asked.range));
        return Response.json(
          sessions.list(asked.installationId, { ...asked.range, limit: asked.limit, before: asked.before }),
        );
      },
      { auth: 'ingest', owned: ({ query }: RequestParts) => parseSessionsQuery(query) },
    )
    .get(
      '/v1/charging-sessions/*',
      ({ owned, params }) =>
        Response.json(sessions.one(owned.installationId, params.sessionId) ?? notFoundError(messages.sessionNotFound)),
      {
        auth: 'ingest',
        path: 'sessionId',
        params: SessionPath,
        owned: ({ query }: RequestParts) => parseSessionQuery(query),
      },
    )
    .get(
      '/v1/telemetry/latest/*',
      ({ owned }) => Response.json(samples.latest(owned.installationId) ?? notFoundError(messages.noSamples)),
      pathRead(),
    )
    .get(
      '/v1/telemetry/export/*',
      ({ owned }) => {
        const { installationId, format, range } = owned as ReturnType<typeof telemetryExport>;
        return attachment(ownerData.exportStream('telemetry', installationId, format, range));
      },
      { ...pathRead(), owned: telemetryExport },
    )
    .get(
      '/v1/consumption/export/*',
      ({ owned }) => {
        const { installationId, format } = owned as ReturnType<typeof consumptionExport>;
        return attachment(ownerData.exportStream('consumption', installationId, format));
      },
      { ...pathRead(), owned: consumptionExport },
    )
    .get('/v1/planner/status/*', ({ owned }) => Response.json(plannerStatus.status(owned.installationId)), pathRead());
}

function notFoundError(message: string): never {
  throw notFound(message);
}
