/** The query parameters of the owner's reads; a bad one is a 400 naming it. */
import { Type } from '@sinclair/typebox';
import type { StartedRange } from '../charging/history.ts';
import { SessionPath, SessionSummarySchema, SessionWithCurveSchema } from '../charging/model.ts';
import { messages } from '../http/errors.ts';
import {
  errorAnswer,
  ingestErrors,
  InstallationPath,
  Uuid,
  type ApiAnswer,
  type ApiOperation,
} from '../http/openapi.ts';
import {
  compiledQueryParser,
  invalid,
  QUERY_INTEGER,
  TIME_MS_MAX,
  TIME_MS_MIN,
  uuid,
  type JsonObject,
} from '../http/validate.ts';
import { limits } from '../limits.ts';
import { ForwardingStatusSchema } from '../planner/model.ts';
import { UTC_MIN } from '../telemetry/fields.ts';
import { LatestSampleSchema } from '../telemetry/model.ts';
import { exportFormats } from './service.ts';

/** Sample times: Unix seconds up to the end of 2999, as the app's millisecond times. */
const UTC_MAX = Math.floor(TIME_MS_MAX / 1000);

/** An optional integer parameter from `min` to `max`. */
function integerParam(query: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  if (!QUERY_INTEGER.test(raw)) invalid(name, 'must be an integer');
  const value = Number(raw);
  if (value < min || value > max) invalid(name, `must be from ${min} to ${max}`);
  return value;
}

/** `from` and `to`, both optional and both included; `to` before `from` is refused rather than answered empty. */
function rangeParams(query: URLSearchParams, min: number, max: number): { from?: number; to?: number } {
  const from = integerParam(query, 'from', min, max);
  return ordered(from, integerParam(query, 'to', min, max));
}

/** The range, once its order is checked. */
function ordered(from: number | undefined, to: number | undefined): { from?: number; to?: number } {
  if (from !== undefined && to !== undefined && to < from) invalid('to', 'must not be before from');
  return { from, to };
}

/** `format`: one of `formats`, the first when absent. */
function formatParam<F extends string>(query: URLSearchParams, formats: readonly F[]): F {
  const raw = query.get('format');
  if (raw === null) return formats[0]!;
  if (!(formats as readonly string[]).includes(raw)) invalid('format', `must be one of ${formats.join(', ')}`);
  return raw as F;
}

/** The required `installationId` of a query, lower-cased. */
const installationParam = (query: URLSearchParams): string =>
  uuid(query.get('installationId') ?? undefined, 'installationId');

/** A sessions page's size: `limit`, 1 to `limits.sessionsPageMax`. */
const limitParam = (query: URLSearchParams): number =>
  integerParam(query, 'limit', 1, limits.sessionsPageMax) ?? limits.sessionsPageDefault;

const format = (formats: readonly string[]) =>
  Type.Optional(
    Type.Union(
      formats.map((name) => Type.Literal(name)),
      { description: `The file's format; ${formats[0]} when absent.`, examples: [formats[0]] },
    ),
  );
const range = (unit: string, min: number, max: number) => ({
  from: Type.Optional(Type.Integer({ minimum: min, maximum: max, description: `Earliest, included (${unit}).` })),
  to: Type.Optional(Type.Integer({ minimum: min, maximum: max, description: `Latest, included (${unit}).` })),
});

/** The query of `GET /v1/charging-sessions`: checked by the route, and described in the document. */
export const SessionsQuery = Type.Object({
  installationId: Uuid('The installation.'),
  ...range('Unix ms, of startedAt', TIME_MS_MIN, TIME_MS_MAX),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: limits.sessionsPageMax, description: 'Sessions per page.', examples: [20] }),
  ),
  before: Type.Optional(Type.String({ description: 'The `next` of the previous page.' })),
  format: format(exportFormats.sessions),
});

export const SessionQuery = Type.Object({ installationId: Uuid('The installation the session belongs to.') });

export const TelemetryExportQuery = Type.Object({
  ...range('Unix seconds, of utc', UTC_MIN, UTC_MAX),
  format: format(exportFormats.telemetry),
});

export const ConsumptionExportQuery = Type.Object({ format: format(exportFormats.consumption) });

const file = (description: string, mediaTypes: string[]): ApiAnswer => ({
  description: `${description} (\`Content-Disposition: attachment\`), streamed.`,
  schema: Type.String(),
  mediaTypes,
});

const sessionSummary = {
  installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
  sessionId: '3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f',
  startedAt: 1_764_080_000_000,
  endedAt: 1_764_081_800_000,
  energyKwh: 41.7,
  durationSeconds: 1800,
  meteredSeconds: null,
  chargingLossPercent: null,
  gridEnergyKwh: null,
  pricePerKwh: null,
  totalCost: null,
  startSocPercent: 12,
  endSocPercent: 80.5,
  lastPower: null,
  curveIntervalMs: null,
  isDemo: false,
  receivedAt: '2025-11-25T14:30:02.117Z',
};

/** The owner's reads: what was stored, back out. */
export const ownerApi: ApiOperation[] = [
  {
    method: 'get',
    path: '/v1/charging-sessions',
    summary: 'List charging sessions, or export them',
    description: 'Newest `startedAt` first, without curves. With `format`, every session of the range as one file.',
    security: 'ingest',
    query: SessionsQuery,
    answers: {
      200: {
        description: 'A page (JSON), or with `format` the file (text/csv, application/x-ndjson).',
        schema: Type.Object({
          sessions: Type.Array(SessionSummarySchema),
          next: Type.Union([Type.String(), Type.Null()], { description: 'Cursor of the next page; null on the last.' }),
        }),
        example: { sessions: [sessionSummary], next: null },
      },
      ...ingestErrors([
        'installationId is required',
        'limit must be from 1 to 1000',
        'to must not be before from',
        'before is not a cursor of this list',
        'format must be one of csv, ndjson',
      ]),
    },
  },
  {
    method: 'get',
    path: '/v1/charging-sessions/{sessionId}',
    summary: 'Read one charging session with its curve',
    security: 'ingest',
    pathParams: SessionPath,
    query: SessionQuery,
    answers: {
      200: {
        description: 'The session.',
        schema: SessionWithCurveSchema,
        example: { ...sessionSummary, curve: [{ timestampMs: 1_764_080_000_000, powerKw: 0, socPercent: 12 }] },
      },
      ...ingestErrors(['installationId must be a UUID']),
      404: errorAnswer('No such session of that installation.', messages.sessionNotFound),
    },
  },
  {
    method: 'get',
    path: '/v1/telemetry/latest/{installationId}',
    summary: 'Read the newest sample',
    security: 'ingest',
    pathParams: InstallationPath,
    answers: {
      200: {
        description: 'The newest sample by `utc`.',
        schema: LatestSampleSchema,
        example: {
          installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
          utc: 1_764_090_005,
          receivedAt: '2025-11-25T17:00:07.412Z',
          soc: 49.5,
          is_parked: 0,
        },
      },
      ...ingestErrors(['installationId must be a UUID']),
      404: errorAnswer('The installation has no samples.', messages.noSamples),
    },
  },
  {
    method: 'get',
    path: '/v1/telemetry/export/{installationId}',
    summary: 'Export samples as CSV, NDJSON or GPX',
    security: 'ingest',
    pathParams: InstallationPath,
    query: TelemetryExportQuery,
    answers: {
      200: file('Every sample of the range, oldest first', ['text/csv', 'application/x-ndjson', 'application/gpx+xml']),
      ...ingestErrors([
        'from must be an integer',
        'to must not be before from',
        'format must be one of csv, ndjson, gpx',
      ]),
    },
  },
  {
    method: 'get',
    path: '/v1/consumption/export/{installationId}',
    summary: 'Export daily consumption as CSV or NDJSON',
    security: 'ingest',
    pathParams: InstallationPath,
    query: ConsumptionExportQuery,
    answers: {
      200: file('Every day with chunks, oldest first', ['text/csv', 'application/x-ndjson']),
      ...ingestErrors(['format must be one of csv, ndjson', 'installationId must be a UUID']),
    },
  },
  {
    method: 'get',
    path: '/v1/planner/status/{installationId}',
    summary: 'Read whether forwarding to the planner works',
    security: 'ingest',
    pathParams: InstallationPath,
    answers: {
      200: {
        description: 'The forwarding status.',
        schema: ForwardingStatusSchema,
        example: {
          forwarding: true,
          waiting: 0,
          sent: 1520,
          givenUp: 2,
          lastSentAt: '2025-11-25T17:00:08.003Z',
          lastSentUtc: 1_764_090_005,
          lastFailure: { at: '2025-11-25T09:12:44.501Z', status: 503, error: null, attempt: 1 },
          nextAttemptAt: null,
        },
      },
      ...ingestErrors(['installationId must be a UUID']),
    },
  },
];

/** What `GET /v1/charging-sessions` is asked for: a page of the list, or the export. */
export type SessionsAsked = { installationId: string; range: StartedRange } & (
  | { kind: 'page'; limit: number; before: string | undefined }
  | { kind: 'export'; format: SessionsFormat }
);

type SessionsFormat = (typeof exportFormats.sessions)[number];

/** The sessions list's query checked parameter by parameter, in the documented order. */
export function explainSessionsQuery(query: URLSearchParams): SessionsAsked {
  const installationId = installationParam(query);
  const range = rangeParams(query, TIME_MS_MIN, TIME_MS_MAX);
  // With a format, every session of the range as one file; without, a page of the JSON list.
  if (query.has('format'))
    return { kind: 'export', installationId, range, format: formatParam(query, exportFormats.sessions) };
  return { kind: 'page', installationId, range, limit: limitParam(query), before: query.get('before') ?? undefined };
}

/** A range the schema accepted; its order is the rule it cannot hold. */
const rangeOf = (values: JsonObject) => ordered(values.from as number | undefined, values.to as number | undefined);

export const parseSessionsQuery = compiledQueryParser(
  SessionsQuery,
  (values): SessionsAsked => {
    const installationId = (values.installationId as string).toLowerCase();
    const range = rangeOf(values);
    if (values.format !== undefined)
      return { kind: 'export', installationId, range, format: values.format as SessionsFormat };
    const limit = (values.limit as number | undefined) ?? limits.sessionsPageDefault;
    return { kind: 'page', installationId, range, limit, before: values.before as string | undefined };
  },
  explainSessionsQuery,
);

export const explainSessionQuery = (query: URLSearchParams) => ({ installationId: installationParam(query) });

export const parseSessionQuery = compiledQueryParser(
  SessionQuery,
  (values) => ({ installationId: (values.installationId as string).toLowerCase() }),
  explainSessionQuery,
);

type TelemetryFormat = (typeof exportFormats.telemetry)[number];

export const explainTelemetryExportQuery = (query: URLSearchParams) => ({
  range: rangeParams(query, UTC_MIN, UTC_MAX),
  format: formatParam(query, exportFormats.telemetry),
});

export const parseTelemetryExportQuery = compiledQueryParser(
  TelemetryExportQuery,
  (values) => ({
    range: rangeOf(values),
    format: (values.format as TelemetryFormat | undefined) ?? exportFormats.telemetry[0],
  }),
  explainTelemetryExportQuery,
);

type ConsumptionFormat = (typeof exportFormats.consumption)[number];

export const explainConsumptionExportQuery = (query: URLSearchParams) => ({
  format: formatParam(query, exportFormats.consumption),
});

export const parseConsumptionExportQuery = compiledQueryParser(
  ConsumptionExportQuery,
  (values) => ({ format: (values.format as ConsumptionFormat | undefined) ?? exportFormats.consumption[0] }),
  explainConsumptionExportQuery,
);
