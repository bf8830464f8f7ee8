/**
 * Consumption sums held exactly: BigInt integers in units of 2^-bits, each sum carrying its unit and two
 * sums meeting in the finer of theirs. Every double is an integer multiple of 2^-1074 (the least
 * subnormal), so every chunk value converts without loss, a day's lone chunk reads back as sent, and
 * replacing chunks any number of times, negative corrections included, leaves exactly the sum of the
 * surviving chunks, read back as the double nearest to it. Floating-point running sums drift,
 * micro-unit integers round every value, and int64 overflows past ~900 thousand chunks at the 1e7
 * bound, while BigInt has no bound. The database keeps a row's sums as decimal text in the coarsest
 * unit that holds them: 2^-50 to 2^-60 for usual values, fewer digits than the earlier fixed 2^-64,
 * and only a row holding a tiny value carries more (~330 for 5e-324 beside 1e7).
 */
export const DAY_FIELDS = ['km', 'kwh', 'hours', 'socDrop'] as const;
type DayField = (typeof DAY_FIELDS)[number];
export type DayValues = Record<DayField, number>;
/** Each field is its integer times 2^-bits. */
export type Totals = Record<DayField, bigint> & { bits: number };
/** Each field is its integer times 2^-unitBits, as decimal text. */
export type StoredTotals = Record<DayField, string> & { unitBits: number };

export const ZERO: Totals = { bits: 0, km: 0n, kwh: 0n, hours: 0n, socDrop: 0n };

export function totalsOf(values: DayValues): Totals {
  const exact = {
    km: exactly(values.km),
    kwh: exactly(values.kwh),
    hours: exactly(values.hours),
    socDrop: exactly(values.socDrop),
  };
  const bits = Math.max(exact.km.bits, exact.kwh.bits, exact.hours.bits, exact.socDrop.bits);
  return combine(bits, (field) => inFinerUnit(exact[field].units, exact[field].bits, bits));
}

const binary = new DataView(new ArrayBuffer(8));

/** A double exactly as `units` · 2^-bits, read from its IEEE 754 fields (`toStored` drops the spare bits). */
function exactly(x: number): { units: bigint; bits: number } {
  if (x === 0) return { units: 0n, bits: 0 };
  binary.setFloat64(0, x);
  const high = binary.getUint32(0);
  const exponent = (high >>> 20) & 0x7ff;
  // A subnormal (exponent 0) has no implicit leading 1 and the scale of exponent 1.
  const significand = ((high & 0xfffff) + (exponent === 0 ? 0 : 0x100000)) * 2 ** 32 + binary.getUint32(4);
  const bits = 1075 - Math.max(exponent, 1);
  return { units: BigInt(x < 0 ? -significand : significand), bits };
}

/** The double nearest to each exact sum, as `Number` rounds (to nearest, ties to even). */
export function valuesOf(totals: Totals): DayValues {
  const number = (field: DayField) => toNumber(totals[field], totals.bits);
  return { km: number('km'), kwh: number('kwh'), hours: number('hours'), socDrop: number('socDrop') };
}

/** Leaves at least 63 bits of an integer near 2^1023 or above: more than the 53 kept plus 2 for rounding to odd. */
const ODD_ROUNDED_SHIFT = 959;

/**
 * `Number(units)` rounds once, and the power-of-two scale is then exact: a subnormal result comes
 * from units < 2^52, which `Number` holds exactly. Integers rounding to 2^1023 or more (near doubles'
 * range) are first shifted down rounding to odd, which keeps the later rounding to 53 bits correct.
 */
function toNumber(units: bigint, bits: number): number {
  const rounded = Number(units);
  if (Math.abs(rounded) < 2 ** 1023) return rounded * 2 ** -bits;
  return Number(roundedToOdd(units, ODD_ROUNDED_SHIFT)) * 2 ** (ODD_ROUNDED_SHIFT - bits);
}

function roundedToOdd(units: bigint, shift: number): bigint {
  const magnitude = units < 0n ? -units : units;
  let kept = magnitude >> BigInt(shift);
  if (kept << BigInt(shift) !== magnitude) kept |= 1n;
  return units < 0n ? -kept : kept;
}

export const plus = (a: Totals, b: Totals): Totals => aligned(a, b, (x, y) => x + y);
export const minus = (a: Totals, b: Totals): Totals => aligned(a, b, (x, y) => x - y);

/** Applies `operation` to each field of `a` and `b` in the finer of their units, so no unit mixes with another. */
function aligned(a: Totals, b: Totals, operation: (x: bigint, y: bigint) => bigint): Totals {
  const bits = Math.max(a.bits, b.bits);
  return combine(bits, (field) => operation(inFinerUnit(a[field], a.bits, bits), inFinerUnit(b[field], b.bits, bits)));
}

/** `units` · 2^-`bits` as an integer in the finer unit 2^-`finer`. */
const inFinerUnit = (units: bigint, bits: number, finer: number): bigint =>
  bits === finer ? units : units << BigInt(finer - bits);

export const fromStored = (stored: StoredTotals): Totals => combine(stored.unitBits, (field) => BigInt(stored[field]));

/** In the coarsest unit holding every field exactly, so that usual sums keep few digits. */
export function toStored(totals: Totals): StoredTotals {
  const { km, kwh, hours, socDrop } = totals;
  const spare = BigInt(trailingZeroBits(km | kwh | hours | socDrop, totals.bits));
  const digits = (field: bigint) => String(field >> spare);
  return {
    unitBits: totals.bits - Number(spare),
    km: digits(km),
    kwh: digits(kwh),
    hours: digits(hours),
    socDrop: digits(socDrop),
  };
}

/** How many of `value`'s lowest bits are zero, up to `most` (a zero value has `most`). */
function trailingZeroBits(value: bigint, most: number): number {
  // The lowest set bit alone (two's complement, so for negative values too), and its position.
  return value === 0n ? most : Math.min((value & -value).toString(2).length - 1, most);
}

// The fields are spelled out here, in `totalsOf`, `valuesOf` and `toStored`: built by a loop over
// `DAY_FIELDS` or a spread, a chunk write's sums took 10-30% longer in a micro-benchmark.
function combine(bits: number, value: (field: DayField) => bigint): Totals {
  return { bits, km: value('km'), kwh: value('kwh'), hours: value('hours'), socDrop: value('socDrop') };
}
