/**
 * A consumption chunk: a delta of its day, or, when its body carries a `lifetime` object (builds
 * 2.2.35-2.2.39), a snapshot of the day's totals so far. The `lifetime` values themselves are not read:
 * the service sums its own. Other unknown top-level fields are ignored.
 */
import { calendarDate, finiteNumber, invalid, numberIn, object, optional, timeMs, uuid, type JsonObject } from '../http/validate.ts';
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

export function parseChunk(body: JsonObject): Chunk {
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
