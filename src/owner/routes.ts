/**
 * The owner's data, back out: the sessions list and one session, the latest sample, the streamed
 * exports and the forwarding status. Tokens as for the ingest routes; answers never cached.
 */
import { Elysia } from 'elysia';
import type { ChargingHistory, StartedRange } from '../charging/history.ts';
import { parseSessionId } from '../charging/model.ts';
import type { Authenticator } from '../http/auth.ts';
import { handlerReadsBody, type BodyBounds } from '../http/body.ts';
import { messages, notFound } from '../http/errors.ts';
import { ownedRead, pathId } from '../http/ingest.ts';
import { uuid } from '../http/validate.ts';
import type { PlannerStatus } from '../planner/status.ts';
import { UTC_MIN } from '../telemetry/fields.ts';
import type { SampleHistory } from '../telemetry/history.ts';
import { formatParam, installationParam, limitParam, rangeParams } from './model.ts';
import { exportFormats, type Export, type OwnerData } from './service.ts';

export interface OwnerDataDeps {
  auth: Authenticator;
  bodyBounds: BodyBounds;
  ownerData: OwnerData;
  samples: SampleHistory;
  sessions: ChargingHistory;
  plannerStatus: PlannerStatus;
}

/** Answers hold the owner's data (locations among them): no cache along the way may keep them. */
const NO_STORE = { 'cache-control': 'no-store' };

const json = (value: unknown) => Response.json(value, { headers: NO_STORE });

const DOWNLOAD_HEADERS = { 'x-content-type-options': 'nosniff', 'content-security-policy': 'sandbox' };

/**
 * An export as a download, never cached; the /v1 export routes and the dashboard's export links answer
 * with it. Should a browser show it rather than save it, it is neither sniffed as a page nor allowed to act as one.
 */
export function attachment({ contentType, filename, body }: Export): Response {
  const headers = { 'content-type': contentType, 'content-disposition': `attachment; filename="${filename}"` };
  return new Response(body, { headers: { ...headers, ...NO_STORE, ...DOWNLOAD_HEADERS } });
}

/** `startedAt` and charging times: Unix ms from 2000-01-01 to before 3000-01-01, as the app's times are checked. */
const MS_MIN = 946_684_800_000;
const MS_MAX = 32_503_679_999_999;
/** Sample times: Unix seconds from 2000-01-01 on. */
const UTC_MAX = Math.floor(MS_MAX / 1000);

/** What `GET /v1/charging-sessions` is asked for: a page of the list, or the export. */
type SessionsAsked = { installationId: string; range: StartedRange } & (
  | { kind: 'page'; limit: number; before: string | undefined }
  | { kind: 'export'; format: (typeof exportFormats.sessions)[number] }
);

/** The installation whose id ends the path, checked as `installationId`. */
const pathInstallation = (params: Record<string, string>) => uuid(pathId(params), 'installationId');

export function ownerDataRoutes({ auth, bodyBounds, ownerData, samples, sessions, plannerStatus }: OwnerDataDeps) {
  const read = <T extends { installationId: string }>(
    parse: (params: Record<string, string>, query: URLSearchParams) => T,
    handle: (value: T) => Response,
  ) => ownedRead(auth, bodyBounds, parse, handle);

  return new Elysia({ name: 'owner-data' })
    .get(
      '/v1/charging-sessions',
      read(
        (_, query): SessionsAsked => {
          const installationId = installationParam(query);
          const range = rangeParams(query, MS_MIN, MS_MAX);
          // With a format, every session of the range as one file; without, a page of the JSON list.
          if (query.has('format'))
            return { kind: 'export', installationId, range, format: formatParam(query, exportFormats.sessions) };
          return {
            kind: 'page',
            installationId,
            range,
            limit: limitParam(query),
            before: query.get('before') ?? undefined,
          };
        },
        (asked) => {
          if (asked.kind === 'export')
            return attachment(ownerData.exportStream('sessions', asked.installationId, asked.format, asked.range));
          return json(
            sessions.list(asked.installationId, { ...asked.range, limit: asked.limit, before: asked.before }),
          );
        },
      ),
      handlerReadsBody,
    )
    .get(
      '/v1/charging-sessions/*',
      read(
        (params, query) => ({ sessionId: parseSessionId(pathId(params)), installationId: installationParam(query) }),
        ({ installationId, sessionId }) =>
          json(sessions.one(installationId, sessionId) ?? notFoundError(messages.sessionNotFound)),
      ),
      handlerReadsBody,
    )
    .get(
      '/v1/telemetry/latest/*',
      read(
        (params) => ({ installationId: pathInstallation(params) }),
        ({ installationId }) => json(samples.latest(installationId) ?? notFoundError(messages.noSamples)),
      ),
      handlerReadsBody,
    )
    .get(
      '/v1/telemetry/export/*',
      read(
        (params, query) => ({
          installationId: pathInstallation(params),
          range: rangeParams(query, UTC_MIN, UTC_MAX),
          format: formatParam(query, exportFormats.telemetry),
        }),
        ({ installationId, range, format }) =>
          attachment(ownerData.exportStream('telemetry', installationId, format, range)),
      ),
      handlerReadsBody,
    )
    .get(
      '/v1/consumption/export/*',
      read(
        (params, query) => ({
          installationId: pathInstallation(params),
          format: formatParam(query, exportFormats.consumption),
        }),
        ({ installationId, format }) => attachment(ownerData.exportStream('consumption', installationId, format)),
      ),
      handlerReadsBody,
    )
    .get(
      '/v1/planner/status/*',
      read(
        (params) => ({ installationId: pathInstallation(params) }),
        ({ installationId }) => json(plannerStatus.status(installationId)),
      ),
      handlerReadsBody,
    );
}

function notFoundError(message: string): never {
  throw notFound(message);
}
