/**
 * A consumption chunk: a delta of its day, or, when its body carries a `lifetime` object (builds
 * 2.2.35-2.2.39), a snapshot of the day's totals so far. The `lifetime` values themselves are not read:
 * the service sums its own. Other unknown top-level fields are ignored.
 */
import {
  calendarDate,
  compiledParser,
  finiteNumber,
  invalid,
  numberIn,
  object,
  optional,
  timeMs,
  uuid,
  type JsonObject,
} from '../http/validate.ts';
import { Type } from '@sinclair/typebox';
import { ingestErrors, InstallationPath, TimeMs, Uuid, type ApiOperation } from '../http/openapi.ts';
import { limits } from '../limits.ts';
import { DAY_FIELDS, type DayValues } from './totals.ts';

export interface Chunk {
  installationId: string;
  recordedAt: number;
  /** The car's local day, `YYYY-MM-DD`. */
  date: string;
  day: DayValues;
  sohPercent: number | null;
  snapshot: boolean;
}

/** A chunk checked field by field: the 400 names the first bad field. */
export function explainChunk(body: JsonObject): Chunk {
  return {
    installationId: uuid(body.installationId, 'installationId'),
    recordedAt: timeMs(body.recordedAt, 'recordedAt'),
    date: calendarDate(body.date, 'date'),
    day: parseDay(object(body.day, 'day')),
    sohPercent: optional(body.sohPercent, 'sohPercent', stateOfHealth),
    snapshot: isObject(body.lifetime),
  };
}

function parseDay(day: JsonObject): DayValues {
  const max = limits.consumptionValueMax;
  const [km, kwh, hours, socDrop] = DAY_FIELDS.map((field) => numberIn(day[field], `day.${field}`, -max, max));
  return { km: km!, kwh: kwh!, hours: hours!, socDrop: socDrop! };
}

/** 0 < x ≤ 100: a state of health of 0 is a missing reading, not a dead battery. */
function stateOfHealth(value: unknown, path: string): number {
  const percent = finiteNumber(value, path);
  if (!(percent > 0 && percent <= 100)) invalid(path, 'must be above 0 and at most 100');
  return percent;
}

const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);

const DAY_UNITS = { km: 'km', kwh: 'kWh', hours: 'h', socDrop: 'percentage points' } as const;

/** A day's four values; a chunk's may be negative (a correction). */
const DaySchema = (description: string) =>
  Type.Object(
    Object.fromEntries(
      DAY_FIELDS.map((field) => [
        field,
        Type.Number({
          minimum: -limits.consumptionValueMax,
          maximum: limits.consumptionValueMax,
          description: `${field}, ${DAY_UNITS[field]}`,
        }),
      ]),
    ),
    { description },
  );

const CalendarDate = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}$',
  description: "The car's local day, YYYY-MM-DD.",
});

export const ChunkSchema = Type.Object({
  installationId: Uuid('The installation (a UUID, any case).'),
  recordedAt: TimeMs("The chunk's key within its installation"),
  date: CalendarDate,
  day: DaySchema("The chunk's delta of its day."),
  sohPercent: Type.Optional(
    Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 100 }), Type.Null()], {
      description: 'State of health, %.',
    }),
  ),
  lifetime: Type.Optional(
    Type.Object({}, { description: 'Present (builds 2.2.35-2.2.39): the chunk is a snapshot of the day so far.' }),
  ),
});

const HistoryRecordSchema = Type.Object({
  date: CalendarDate,
  day: DaySchema("Sum of the day's chunks."),
  sohPercent: Type.Union([Type.Number(), Type.Null()], { description: "That of the day's newest chunk carrying one." }),
  lifetime: DaySchema('Sum of every day up to this date.'),
});

export const HistorySchema = Type.Object({
  records: Type.Array(HistoryRecordSchema, { description: 'The newest 400 days that have chunks, newest first.' }),
  lifetime: DaySchema("The newest record's lifetime; zeros without records."),
});

const day = { km: 12.5, kwh: 2, hours: 0.25, socDrop: 3 };

export const consumptionApi: ApiOperation[] = [
  {
    method: 'put',
    path: '/v1/consumption/daily',
    summary: 'Store a chunk of a day’s consumption',
    description: 'A chunk with a stored `recordedAt` replaces it completely: a re-sent chunk never counts twice.',
    security: 'ingest',
    body: {
      schema: ChunkSchema,
      example: {
        installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
        recordedAt: 1_764_080_000_123,
        date: '2026-11-25',
        day: { km: 12.4, kwh: 2.05, hours: 0.31, socDrop: 3 },
        sohPercent: 97.5,
      },
    },
    answers: {
      204: { description: 'Stored.' },
      ...ingestErrors([
        'installationId must be a UUID',
        'recordedAt must be Unix milliseconds (a non-negative safe integer)',
        'date must be a calendar date YYYY-MM-DD',
        'day must be an object',
        'day.kwh is out of range -10000000..10000000',
        'sohPercent must be above 0 and at most 100',
      ]),
    },
  },
  {
    method: 'get',
    path: '/v1/consumption/history/{installationId}',
    summary: 'Read the daily history and lifetime sums',
    security: 'ingest',
    pathParams: InstallationPath,
    answers: {
      200: {
        description: 'The history; sums are exact.',
        schema: HistorySchema,
        example: { records: [{ date: '2026-11-25', day, sohPercent: 97.5, lifetime: day }], lifetime: day },
      },
      ...ingestErrors(['installationId must be a UUID']),
    },
  },
];

/** A chunk the schema accepts; whether its date exists is the one rule the schema cannot hold. */
function readChunk(body: JsonObject): Chunk {
  const day = body.day as DayValues;
  return {
    installationId: (body.installationId as string).toLowerCase(),
    recordedAt: body.recordedAt as number,
    date: calendarDate(body.date, 'date'),
    day: { km: day.km, kwh: day.kwh, hours: day.hours, socDrop: day.socDrop },
    sohPercent: (body.sohPercent as number | null | undefined) ?? null,
    snapshot: isObject(body.lifetime),
  };
}

export const parseChunk = compiledParser(ChunkSchema, readChunk, explainChunk);
