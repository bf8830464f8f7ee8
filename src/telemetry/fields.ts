/**
 * The sample field table: the single source for validation, the storage columns and the planner
 * payload. Names and units are the planner's own (ABRP telemetry API). Adding a field is one line
 * here plus a migration (`bun run db:generate`).
 */
import { integer, real, text } from 'drizzle-orm/sqlite-core';

export type SampleField =
  | {
      kind: 'number';
      min: number;
      max: number;
      unit: string;
      /** A coordinate: usable only together with this partner field, and never quoted (personal data). */
      pairedWith?: string;
    }
  /** 0, 1, true or false; stored and forwarded as 0/1. */
  | { kind: 'flag' }
  | { kind: 'text'; minChars: number; maxChars: number };

const number = (min: number, max: number, unit: string): SampleField => ({ kind: 'number', min, max, unit });
const coordinate = (min: number, max: number, pairedWith: string): SampleField => ({
  kind: 'number',
  min,
  max,
  unit: 'degrees',
  pairedWith,
});
const flag: SampleField = { kind: 'flag' };

/** Every optional sample field, in the order of the documented field table. `utc` is handled apart. */
export const sampleFields = {
  soc: number(0, 100, '%'),
  soh: number(0, 100, '%'),
  power: number(-1000, 1000, 'kW'),
  speed: number(0, 500, 'km/h'),
  lat: coordinate(-90, 90, 'lon'),
  lon: coordinate(-180, 180, 'lat'),
  elevation: number(-500, 9000, 'm'),
  heading: number(0, 360, 'degrees'),
  is_charging: flag,
  is_dcfc: flag,
  is_parked: flag,
  capacity: number(0, 1000, 'kWh'),
  soe: number(0, 1000, 'kWh'),
  kwh_charged: number(0, 1000, 'kWh'),
  ext_temp: number(-60, 100, '°C'),
  batt_temp: number(-60, 100, '°C'),
  cabin_temp: number(-60, 100, '°C'),
  hvac_power: number(0, 100, 'kW'),
  hvac_setpoint: number(0, 50, '°C'),
  voltage: number(0, 2000, 'V'),
  current: number(-3000, 3000, 'A'),
  odometer: number(0, 10_000_000, 'km'),
  est_battery_range: number(0, 5000, 'km'),
  tire_pressure_fl: number(0, 1000, 'kPa'),
  tire_pressure_fr: number(0, 1000, 'kPa'),
  tire_pressure_rl: number(0, 1000, 'kPa'),
  tire_pressure_rr: number(0, 1000, 'kPa'),
  car_model: { kind: 'text', minChars: 1, maxChars: 100 },
} as const satisfies Record<string, SampleField>;

export type SampleFieldName = keyof typeof sampleFields;
export const sampleFieldNames = Object.keys(sampleFields) as SampleFieldName[];

/** `utc`: Unix seconds, usable from 2000-01-01 up to this far ahead of the server's clock. */
export const UTC_MIN = 946_684_800;
export const UTC_MAX_AHEAD_S = 300;

/** One column per field, named as the field, typed by its kind. */
function columnOf(name: string, field: SampleField) {
  switch (field.kind) {
    case 'number':
      return real(name);
    case 'flag':
      return integer(name);
    case 'text':
      return text(name);
  }
}

export const sampleColumns = Object.fromEntries(
  Object.entries(sampleFields).map(([name, field]) => [name, columnOf(name, field)]),
) as { [K in SampleFieldName]: ReturnType<typeof columnOf> };
