/**
 * Consumption sums held exactly: integers in units of 2^-64, added and taken back with BigInt.
 * A chunk's numbers are doubles of magnitude ≤ 1e7, so every one of at least 2^-12 converts without
 * loss and a smaller one rounds by less than 3e-20. Replacing chunks any number of times therefore
 * leaves exactly the sum of the surviving chunks: floating-point running sums drift with negative
 * corrections, micro-unit integers round every value, and int64 overflows past ~900 thousand
 * chunks at the 1e7 bound, while BigInt has no bound. The database keeps them as decimal text.
 */
export const DAY_FIELDS = ['km', 'kwh', 'hours', 'socDrop'] as const;
type DayField = (typeof DAY_FIELDS)[number];
export type DayValues = Record<DayField, number>;
export type Totals = Record<DayField, bigint>;
export type StoredTotals = Record<DayField, string>;

const SCALE = 2 ** 64;

export const ZERO: Totals = { km: 0n, kwh: 0n, hours: 0n, socDrop: 0n };

/** Exact for |x| ≥ 2^-12: x·2^64 is a double that is already an integer. */
export function totalsOf(values: DayValues): Totals {
  return combine((field) => BigInt(Math.round(values[field] * SCALE)));
}

/** The double nearest to each exact sum (a power-of-two division adds no rounding). */
export function valuesOf(totals: Totals): DayValues {
  return { km: toNumber(totals.km), kwh: toNumber(totals.kwh), hours: toNumber(totals.hours), socDrop: toNumber(totals.socDrop) };
}

const toNumber = (fixed: bigint) => Number(fixed) / SCALE;

export const plus = (a: Totals, b: Totals): Totals => combine((field) => a[field] + b[field]);
export const minus = (a: Totals, b: Totals): Totals => combine((field) => a[field] - b[field]);

export const fromStored = (stored: StoredTotals): Totals => combine((field) => BigInt(stored[field]));
export function toStored(totals: Totals): StoredTotals {
  return { km: String(totals.km), kwh: String(totals.kwh), hours: String(totals.hours), socDrop: String(totals.socDrop) };
}

function combine(value: (field: DayField) => bigint): Totals {
  return { km: value('km'), kwh: value('kwh'), hours: value('hours'), socDrop: value('socDrop') };
}
