/** The query parameters of the owner's reads; a bad one is a 400 naming it. */
import { invalid, uuid } from '../http/validate.ts';
import { limits } from '../limits.ts';

/** An optional integer parameter from `min` to `max`. */
export function integerParam(query: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  if (!/^-?\d{1,16}$/.test(raw)) invalid(name, 'must be an integer');
  const value = Number(raw);
  if (value < min || value > max) invalid(name, `must be from ${min} to ${max}`);
  return value;
}

/** `from` and `to`, both optional and both included; `to` before `from` is refused rather than answered empty. */
export function rangeParams(query: URLSearchParams, min: number, max: number): { from?: number; to?: number } {
  const from = integerParam(query, 'from', min, max);
  const to = integerParam(query, 'to', min, max);
  if (from !== undefined && to !== undefined && to < from) invalid('to', 'must not be before from');
  return { from, to };
}

/** `format`: one of `formats`, the first when absent. */
export function formatParam<F extends string>(query: URLSearchParams, formats: readonly F[]): F {
  const raw = query.get('format');
  if (raw === null) return formats[0]!;
  if (!(formats as readonly string[]).includes(raw)) invalid('format', `must be one of ${formats.join(', ')}`);
  return raw as F;
}

/** The required `installationId` of a query, lower-cased. */
export const installationParam = (query: URLSearchParams): string =>
  uuid(query.get('installationId') ?? undefined, 'installationId');

/** A sessions page's size: `limit`, 1 to `limits.sessionsPageMax`. */
export const limitParam = (query: URLSearchParams): number =>
  integerParam(query, 'limit', 1, limits.sessionsPageMax) ?? limits.sessionsPageDefault;
