/** A finished charging session as the car app uploads it; unknown top-level fields are ignored. */
import {
  array,
  boolean,
  compiledParser,
  explained,
  invalid,
  numberIn,
  object,
  optional,
  timeMs,
  uuid,
  type JsonObject,
} from '../http/validate.ts';
import { Type, type TSchema } from '@sinclair/typebox';
import { ingestErrors, TimeMs, Uuid, type ApiOperation } from '../http/openapi.ts';
import { limits } from '../limits.ts';

/** Optional numbers of a session and their ranges (both ends included). */
const optionalNumbers = {
  durationSeconds: [0, 604_800],
  meteredSeconds: [0, 604_800],
  chargingLossPercent: [0, 100],
  gridEnergyKwh: [0, 2000],
  pricePerKwh: [0, 1_000_000],
  totalCost: [0, 1_000_000_000],
  startSocPercent: [0, 100],
  endSocPercent: [0, 100],
  lastPower: [-1000, 1000],
  curveIntervalMs: [0, 86_400_000],
} as const;

type OptionalNumbers = { [K in keyof typeof optionalNumbers]: number | null };

export interface CurvePoint {
  timestampMs: number;
  powerKw: number;
  socPercent?: number;
}

export interface ChargingSession extends OptionalNumbers {
  installationId: string;
  sessionId: string;
  startedAt: number;
  endedAt: number;
  energyKwh: number;
  isDemo: boolean | null;
  curve: CurvePoint[] | null;
}

/** 1 to `limits.sessionIdMaxChars` characters of `A-Z a-z 0-9 . _ -`, a letter or digit first (the app sends UUIDs). */
const SESSION_ID = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${limits.sessionIdMaxChars - 1}}$`);
const ID_RULE = `1..${limits.sessionIdMaxChars} characters of A-Z a-z 0-9 . _ - starting with a letter or digit`;

export function parseSessionId(value: string): string {
  if (!SESSION_ID.test(value)) {
    invalid('sessionId', `must be ${ID_RULE}`);
  }
  return value;
}

/** The session of a body checked field by field, in the documented order: the 400 names the first bad field. */
export function explainSession(body: JsonObject, sessionId: string): ChargingSession {
  const installationId = uuid(body.installationId, 'installationId');
  if (body.sessionId !== undefined && body.sessionId !== null && body.sessionId !== sessionId) {
    invalid('sessionId', 'does not match path');
  }
  const startedAt = timeMs(body.startedAt, 'startedAt');
  // The head unit's clock steps back when it picks up GPS or NTP time: an end before the start is kept as sent.
  const endedAt = timeMs(body.endedAt, 'endedAt');
  const energyKwh = numberIn(body.energyKwh, 'energyKwh', 0, 1000);
  const numbers = Object.fromEntries(
    Object.entries(optionalNumbers).map(([field, [min, max]]) => [
      field,
      optional(body[field], field, (value, path) => numberIn(value, path, min, max)),
    ]),
  ) as OptionalNumbers;
  return {
    installationId,
    sessionId,
    startedAt,
    endedAt,
    energyKwh,
    ...numbers,
    isDemo: optional(body.isDemo, 'isDemo', boolean),
    curve: optional(body.curve, 'curve', parseCurve),
  };
}

function parseCurve(value: unknown, path: string): CurvePoint[] {
  return array(value, path, limits.curvePointsMax).map((item, index) => {
    const at = `${path}[${index}]`;
    // A point that is null is there all the same: not "required", as an absent field would be.
    const point = item === null ? invalid(at, 'must be an object') : object(item, at);
    const timestampMs = timeMs(point.timestampMs, `${at}.timestampMs`);
    const powerKw = numberIn(point.powerKw, `${at}.powerKw`, 0, 1000);
    const socPercent = optional(point.socPercent, `${at}.socPercent`, (soc, socPath) => numberIn(soc, socPath, 0, 100));
    return socPercent === null ? { timestampMs, powerKw } : { timestampMs, powerKw, socPercent };
  });
}

const SESSION_ID_PATTERN = SESSION_ID.source;

const ranged = (min: number, max: number, description: string) =>
  Type.Number({ minimum: min, maximum: max, description });

/** Units of the optional numbers, for the document. */
const units: Record<keyof typeof optionalNumbers, string> = {
  durationSeconds: 's',
  meteredSeconds: 's',
  chargingLossPercent: '%',
  gridEnergyKwh: 'kWh',
  pricePerKwh: 'currency per kWh',
  totalCost: 'currency',
  startSocPercent: '%',
  endSocPercent: '%',
  lastPower: 'kW',
  curveIntervalMs: 'ms',
};

const optionalNumberSchemas = Object.fromEntries(
  Object.entries(optionalNumbers).map(([field, [min, max]]) => [
    field,
    Type.Optional(Type.Union([ranged(min, max, `${field}, ${units[field as keyof typeof units]}`), Type.Null()])),
  ]),
);

export const CurvePointSchema = Type.Object({
  timestampMs: TimeMs('When the point was taken'),
  powerKw: ranged(0, 1000, 'Charging power, kW'),
  socPercent: Type.Optional(Type.Union([ranged(0, 100, 'State of charge, %'), Type.Null()])),
});

export const SessionIdSchema = Type.String({
  pattern: SESSION_ID_PATTERN,
  description: `1..${limits.sessionIdMaxChars} characters of A-Z a-z 0-9 . _ -, starting with a letter or digit.`,
  examples: ['3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f'],
});

/** The path of a route ending in a session id: checked by the route, and described in the document. */
export const SessionPath = explained(Type.Object({ sessionId: SessionIdSchema }), (params) =>
  parseSessionId(params.sessionId!),
);

export const ChargingSessionSchema = Type.Object({
  installationId: Uuid('The installation (a UUID, any case).'),
  sessionId: Type.Optional(Type.Union([Type.String({ description: 'When present, equal to the path.' }), Type.Null()])),
  startedAt: TimeMs('Start'),
  endedAt: TimeMs('End; before the start is kept as sent'),
  energyKwh: ranged(0, 1000, 'Energy charged, kWh'),
  ...optionalNumberSchemas,
  isDemo: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  curve: Type.Optional(
    Type.Union([Type.Array(CurvePointSchema, { maxItems: limits.curvePointsMax }), Type.Null()], {
      description: 'The power curve; other point fields are not kept.',
    }),
  ),
});

const sessionExample = {
  installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
  startedAt: 1_764_080_000_000,
  endedAt: 1_764_081_800_000,
  energyKwh: 41.7,
  durationSeconds: 1800,
  curve: [{ timestampMs: 1_764_080_000_000, powerKw: 0, socPercent: 12 }],
};

export const chargingApi: ApiOperation[] = [
  {
    method: 'put',
    path: '/v1/charging-sessions/{sessionId}',
    summary: 'Store a finished charging session',
    description: 'Stored under (installation, `sessionId`); a repeated PUT replaces the whole session.',
    security: 'ingest',
    pathParams: SessionPath,
    body: { schema: ChargingSessionSchema, example: sessionExample },
    answers: {
      204: { description: 'Stored.' },
      ...ingestErrors([
        `sessionId must be ${ID_RULE}`,
        'sessionId does not match path',
        'installationId must be a UUID',
        'energyKwh is out of range 0..1000',
        `curve must have at most ${limits.curvePointsMax} entries`,
        'curve[3].powerKw is out of range 0..1000',
      ]),
    },
  },
];

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A stored session as read back, without its curve: every field of its PUT, `null` where not sent. */
export const SessionSummarySchema = Type.Object({
  installationId: Type.String({ description: 'Lower-case.' }),
  sessionId: Type.String(),
  startedAt: Type.Integer({ description: 'Unix ms' }),
  endedAt: Type.Integer({ description: 'Unix ms' }),
  energyKwh: Type.Number({ description: 'kWh' }),
  ...Object.fromEntries(
    Object.keys(optionalNumbers).map((field) => [
      field,
      nullable(Type.Number({ description: units[field as keyof typeof units] })),
    ]),
  ),
  isDemo: nullable(Type.Boolean()),
  receivedAt: nullable(Type.String({ description: 'When the server stored it, ISO 8601; null before version 2.2.' })),
});

export const SessionWithCurveSchema = Type.Composite([
  SessionSummarySchema,
  Type.Object({ curve: nullable(Type.Array(CurvePointSchema)) }),
]);

/** A session the schema accepts; that its `sessionId` matches the path is the rule the schema cannot hold. */
function readSession(body: JsonObject, sessionId: string): ChargingSession {
  if (body.sessionId !== undefined && body.sessionId !== null && body.sessionId !== sessionId) {
    invalid('sessionId', 'does not match path');
  }
  const numbers = Object.fromEntries(
    Object.keys(optionalNumbers).map((field) => [field, (body[field] as number | null | undefined) ?? null]),
  ) as OptionalNumbers;
  return {
    installationId: (body.installationId as string).toLowerCase(),
    sessionId,
    startedAt: body.startedAt as number,
    endedAt: body.endedAt as number,
    energyKwh: body.energyKwh as number,
    ...numbers,
    isDemo: (body.isDemo as boolean | null | undefined) ?? null,
    curve: readCurve(body.curve as CurvePoint[] | null | undefined),
  };
}

/** The points as kept: a point's other fields are not. */
function readCurve(points: CurvePoint[] | null | undefined): CurvePoint[] | null {
  if (points === undefined || points === null) return null;
  return points.map(({ timestampMs, powerKw, socPercent }) =>
    socPercent === undefined || socPercent === null ? { timestampMs, powerKw } : { timestampMs, powerKw, socPercent },
  );
}

/** The session of a PUT's body, once `SessionPath` has checked its path's id. */
export const parseSessionBody = compiledParser(ChargingSessionSchema, readSession, explainSession);
