/**
 * The small value checks the JSON endpoints share. Bodies are checked by their TypeBox schemas compiled
 * (`compiledParser`) and explained by these checks, never by Elysia's `t` schemas, which would coerce "3"
 * to 3 and strip fields. The `is…` predicates answer
 * yes or no; the other functions return the checked value or throw a 400 whose message begins with
 * the value's JSON path (`day.km must be a finite number`).
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { isUuid } from '../uuid.ts';
import { badRequest, HttpError } from './errors.ts';

export type JsonObject = Record<string, unknown>;

export function invalid(path: string, problem: string): never {
  throw badRequest(`${path} ${problem}`);
}

/** `null` for an optional field means the field is absent (the API's convention). */
function isAbsent(value: unknown): value is null | undefined {
  return value === undefined || value === null;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A Unix time in milliseconds: a non-negative safe integer. */
function isTimeMs(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** `YYYY-MM-DD` naming a day that exists in the Gregorian calendar (year 0001 to 9999). */
function isCalendarDate(value: unknown): value is string {
  const match = typeof value === 'string' ? DATE.exec(value) : null;
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

export function required(value: unknown, path: string): unknown {
  if (isAbsent(value)) invalid(path, 'is required');
  return value;
}

/** A required UUID, lower-cased: the form in which installation ids are stored and compared. */
export function uuid(value: unknown, path: string): string {
  if (!isUuid(required(value, path))) invalid(path, 'must be a UUID');
  return (value as string).toLowerCase();
}

/** A required finite number. */
export function finiteNumber(value: unknown, path: string): number {
  if (!isFiniteNumber(required(value, path))) invalid(path, 'must be a finite number');
  return value as number;
}

/** A required finite number within `min..max` (both included). */
export function numberIn(value: unknown, path: string, min: number, max: number): number {
  const number = finiteNumber(value, path);
  if (number < min || number > max) invalid(path, `is out of range ${min}..${max}`);
  return number;
}

/** The millisecond times the app sends are plausible from 2000-01-01 to the last millisecond of 2999. */
export const TIME_MS_MIN = 946_684_800_000;
export const TIME_MS_MAX = 32_503_679_999_999;

const isPlausibleMs = (ms: number) => ms >= TIME_MS_MIN && ms <= TIME_MS_MAX;

/** A Unix time in milliseconds between 2000 and 2999; one off by a factor of 1000 is named as such. */
export function timeMs(value: unknown, path: string): number {
  if (!isTimeMs(required(value, path))) invalid(path, 'must be Unix milliseconds (a non-negative safe integer)');
  const ms = value as number;
  if (!isPlausibleMs(ms)) invalid(path, `${ms} is not between 2000 and 2999 in Unix milliseconds${unitHint(ms)}`);
  return ms;
}

function unitHint(ms: number): string {
  if (isPlausibleMs(ms * 1000)) return ' (seconds instead of milliseconds?)';
  if (isPlausibleMs(ms / 1000)) return ' (microseconds instead of milliseconds?)';
  return '';
}

export function calendarDate(value: unknown, path: string): string {
  if (!isCalendarDate(required(value, path))) invalid(path, 'must be a calendar date YYYY-MM-DD');
  return value as string;
}

export function boolean(value: unknown, path: string): boolean {
  if (typeof required(value, path) !== 'boolean') invalid(path, 'must be true or false');
  return value as boolean;
}

export function object(value: unknown, path: string): JsonObject {
  if (typeof required(value, path) !== 'object' || Array.isArray(value)) invalid(path, 'must be an object');
  return value as JsonObject;
}

export function array(value: unknown, path: string, maxItems: number): unknown[] {
  if (!Array.isArray(required(value, path))) invalid(path, 'must be an array');
  const items = value as unknown[];
  if (items.length > maxItems) invalid(path, `must have at most ${maxItems} entries`);
  return items;
}

/** Checks an optional value with a required-value check; absent (or null) gives null. */
export function optional<T>(value: unknown, path: string, check: (value: unknown, path: string) => T): T | null {
  return isAbsent(value) ? null : check(value, path);
}

/**
 * A body parser whose common case is one compiled schema check: a body `schema` accepts is read by
 * `read`; one it refuses goes to `explain`, the field-by-field parser, whose 400 names the first bad
 * field in the documented order. `read` must give what `explain` would for every body the schema
 * accepts (each feature's test holds it to that), applying the rules a schema cannot express.
 */
export function compiledParser<T, Rest extends unknown[] = []>(
  schema: TSchema,
  read: (body: JsonObject, ...rest: Rest) => T,
  explain: (body: JsonObject, ...rest: Rest) => T,
): (body: JsonObject, ...rest: Rest) => T {
  const compiled = TypeCompiler.Compile(schema);
  return (body, ...rest) => (compiled.Check(body) ? read(body, ...rest) : explain(body, ...rest));
}

/** The digits of an integer query parameter: at most 16, so that the number is exact. */
export const QUERY_INTEGER = /^-?\d{1,16}$/;

/**
 * A query as its schema reads it: the first value of each parameter the schema names; an integer's digits
 * as a number, anything else left a string for the schema to refuse.
 */
export function queryValues(schema: TObject, query: URLSearchParams): JsonObject {
  const values: JsonObject = {};
  for (const [name, property] of Object.entries(schema.properties)) {
    const raw = query.get(name);
    if (raw !== null) values[name] = property.type === 'integer' && QUERY_INTEGER.test(raw) ? Number(raw) : raw;
  }
  return values;
}

/**
 * A query parser in the manner of `compiledParser`: a query whose values `schema` accepts is read by `read`;
 * one it refuses goes to `explain`, the parameter-by-parameter checks, whose 400 names the first bad one.
 */
export function compiledQueryParser<T>(
  schema: TObject,
  read: (values: JsonObject) => T,
  explain: (query: URLSearchParams) => T,
): (query: URLSearchParams) => T {
  const parse = compiledParser<T, [URLSearchParams]>(schema, read, (_values, query) => explain(query));
  return (query) => parse(queryValues(schema, query), query);
}

const explainer = Symbol('explainer');

/**
 * A schema that Elysia checks (a route's `params`), carrying the field-by-field check that words its 400
 * as the API always has: `explain` throws that 400 for any value the schema refuses.
 */
export function explained<T extends TSchema>(schema: T, explain: (value: Record<string, string>) => unknown): T {
  return Object.assign(schema, { [explainer]: explain });
}

/** The 400 of a value a route's `explained` schema refused; null when none explains it. */
export function explainRefusal(schema: unknown, value: unknown): HttpError | null {
  const explain = (schema as { [explainer]?: (value: unknown) => unknown } | undefined)?.[explainer];
  if (!explain) return null;
  try {
    explain(value);
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  return null;
}
