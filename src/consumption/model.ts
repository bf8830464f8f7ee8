/** A consumption chunk as the car app uploads it; unknown top-level fields (an old `lifetime`) are ignored. */
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
}

export function parseChunk(body: JsonObject): Chunk {
  return {
    installationId: uuid(body.installationId, 'installationId'),
    recordedAt: timeMs(body.recordedAt, 'recordedAt'),
    date: calendarDate(body.date, 'date'),
    day: parseDay(object(body.day, 'day')),
    sohPercent: optional(body.sohPercent, 'sohPercent', stateOfHealth),
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
