/** Helpers of the consumption tests: a fresh service for each test, chunk builders, exact sums. */
import { afterAll, beforeEach, expect } from 'bun:test';
import { answer, consumptionChunk, INSTALLATION, startTestService, type TestService } from './support.ts';

export let service: TestService;
export function useConsumptionService(): void {
  beforeEach(async () => {
    await service?.close();
    service = await startTestService();
  });
  afterAll(() => service.close());
}

export interface Day {
  km: number;
  kwh: number;
  hours: number;
  socDrop: number;
}

/** A chunk's fields, each of any value (the invalid ones too); unknown fields as well. */
export type ChunkBody = Record<string, unknown>;

export const T0 = consumptionChunk().recordedAt;
// Fractions of powers of two, so that the expected sums are exact.
export const day = (km: number, kwh = km / 4, hours = km / 8, socDrop = km / 2): Day => ({ km, kwh, hours, socDrop });
export const chunk = (overrides: ChunkBody = {}): ChunkBody => consumptionChunk({ day: day(10), ...overrides });

/** The calendar date `n` days after 2020-01-01. */
export const dateOf = (n: number) => new Date(Date.UTC(2020, 0, 1 + n)).toISOString().slice(0, 10);

export const putChunk = (body: unknown, token?: string | null) =>
  service.request('PUT', '/v1/consumption/daily', { body, token });

export async function put(body: ChunkBody): Promise<void> {
  expect(await answer(await putChunk(body))).toEqual({ status: 204, body: null });
}

export async function history(installationId = INSTALLATION) {
  const { status, body } = await answer(await service.request('GET', `/v1/consumption/history/${installationId}`));
  expect(status).toBe(200);
  return body as { records: { date: string; day: Day; sohPercent?: number; lifetime: Day }[]; lifetime: Day };
}

export const FIELDS = ['km', 'kwh', 'hours', 'socDrop'] as const;

/**
 * A double as the exact integer it is in units of 2^-1074 (the smallest subnormal): scaling by 2^537
 * twice, each step exact, the second in BigInt since x·2^1074 passes doubles' range.
 */
export function finestUnits(x: number): bigint {
  const scaled = x * 2 ** 537;
  const whole = Math.trunc(scaled);
  return (BigInt(whole) << 537n) + BigInt((scaled - whole) * 2 ** 537);
}

/** The double nearest units·2^-1074, read by parseFloat from its exact decimal expansion (units·5^1074 / 10^1074). */
export function nearestDouble(units: bigint): number {
  const digits = ((units < 0n ? -units : units) * 5n ** 1074n).toString().padStart(1075, '0');
  const magnitude = Number.parseFloat(`${digits.slice(0, -1074)}.${digits.slice(-1074)}`);
  return units < 0n ? -magnitude : magnitude;
}

/** The correctly rounded sum of each field over the chunks' days: what an exact sum reads back as. */
export function exactSums(days: Day[]): Day {
  const sum = (field: (typeof FIELDS)[number]) =>
    nearestDouble(days.reduce((units, day) => units + finestUnits(day[field]), 0n));
  return { km: sum('km'), kwh: sum('kwh'), hours: sum('hours'), socDrop: sum('socDrop') };
}
