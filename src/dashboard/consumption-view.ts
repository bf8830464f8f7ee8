/**
 * What the installation page shows of consumption: the last 30, 90 or 365 calendar days (days without a
 * record add zero, and are told apart from days with a record of zero), the lifetime sums, and the state
 * of health by month, from a summary of every stored day gathered in one pass (oldest first).
 */
import type { ConsumptionDay } from '../consumption/service.ts';
import type { DayValues } from '../consumption/totals.ts';

export const PERIODS = [30, 90, 365] as const;
export type Period = (typeof PERIODS)[number];

export interface Driven {
  /** `YYYY-MM-DD` of a day or of a week's Monday, or `YYYY-MM` of a month. */
  label: string;
  km: number;
  kwh: number;
  /** How many of its days have a record: 0 for a day or a week or month with none. */
  recorded: number;
  /** Its first day, when the period begins after its week's or month's first: the row holds only part of it. */
  partFrom?: string;
}

export interface SohPoint {
  /** `YYYY-MM`. */
  month: string;
  /** The month's newest value. */
  sohPercent: number;
}

export interface ConsumptionView {
  /** Every calendar day of the period, oldest first. */
  days: Driven[];
  lifetime: DayValues | null;
  soh: SohPoint[];
}

/** What the page needs of every stored day, gathered in one pass over them. */
export interface ConsumptionSummary {
  /** The stored days, oldest first. */
  days: Driven[];
  lifetime: DayValues | null;
  soh: SohPoint[];
}

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` of the UTC day `ms` falls in. */
export const dateOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export function summarize(records: Iterable<ConsumptionDay>): ConsumptionSummary {
  const days: Driven[] = [];
  const soh: SohPoint[] = [];
  let lifetime: DayValues | null = null;
  for (const record of records) {
    lifetime = record.lifetime;
    days.push({ label: record.date, km: record.day.km, kwh: record.day.kwh, recorded: 1 });
    if (record.sohPercent === null) continue;
    const month = record.date.slice(0, 7);
    if (soh.at(-1)?.month === month) soh.at(-1)!.sohPercent = record.sohPercent;
    else soh.push({ month, sohPercent: record.sohPercent });
  }
  return { days, lifetime, soh };
}

/** The period's calendar days up to `today` (days without a record: zero, not recorded), with the lifetime and SoH. */
export function consumptionView(
  { days, lifetime, soh }: ConsumptionSummary,
  today: string,
  period: Period,
): ConsumptionView {
  const todayMs = Date.parse(today);
  const first = dateOf(todayMs - (period - 1) * DAY_MS);
  const inPeriod = new Map<string, Driven>();
  for (let i = days.length - 1; i >= 0 && days[i]!.label >= first; i -= 1) {
    if (days[i]!.label <= today) inPeriod.set(days[i]!.label, days[i]!);
  }
  const calendar = Array.from({ length: period }, (_, i) => {
    const label = dateOf(todayMs - (period - 1 - i) * DAY_MS);
    const day = inPeriod.get(label);
    return { label, km: day?.km ?? 0, kwh: day?.kwh ?? 0, recorded: day ? 1 : 0 };
  });
  return { days: calendar, lifetime, soh };
}

export type Grouping = 'day' | 'week' | 'month';

/** The table's rows: a row a day for 30 days, a week (from Monday) for 90, a month for 365. */
export const groupingOf = (period: Period): Grouping => (period === 30 ? 'day' : period === 90 ? 'week' : 'month');

/** The first day of the day, week (from Monday) or month a date falls in. */
function groupStart(date: string, grouping: Grouping): string {
  if (grouping === 'day') return date;
  if (grouping === 'month') return `${date.slice(0, 7)}-01`;
  const ms = Date.parse(date);
  const sinceMonday = (new Date(ms).getUTCDay() + 6) % 7;
  return dateOf(ms - sinceMonday * DAY_MS);
}

/** The days summed by day, week or month, oldest first; the first row marked when the days begin inside it. */
export function grouped(days: Driven[], grouping: Grouping): Driven[] {
  const groups: Driven[] = [];
  for (const day of days) {
    const start = groupStart(day.label, grouping);
    const label = grouping === 'month' ? start.slice(0, 7) : start;
    const last = groups.at(-1);
    if (last?.label === label) {
      last.km += day.km;
      last.kwh += day.kwh;
      last.recorded += day.recorded;
    } else {
      const partial = groups.length === 0 && start !== day.label;
      groups.push({ ...day, label, ...(partial ? { partFrom: day.label } : {}) });
    }
  }
  return groups;
}

/** The sums of a period. */
export function totalOf(days: Driven[]): { km: number; kwh: number } {
  return days.reduce((sum, day) => ({ km: sum.km + day.km, kwh: sum.kwh + day.kwh }), { km: 0, kwh: 0 });
}
