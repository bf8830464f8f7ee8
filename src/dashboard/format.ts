/** How the dashboard writes times, ages and quantities: UTC, short, the unit always named. */
import { formatNumber } from './charts.tsx';

/** A time as `2026-11-28 05:12 UTC` (ms since 1970). */
export function utcText(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** How long ago `ms` was, from `now`: `just now`, `5 min ago`, `3 h ago`, `12 days ago`. */
export function ageText(ms: number, now: number): string {
  const seconds = Math.round((now - ms) / 1000);
  if (seconds < 60) return seconds < 0 ? 'in the future' : 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86_400);
  return `${days} ${days === 1 ? 'day' : 'days'} ago`;
}

/** A quantity with its unit, `12.5 km`; an absent one as a dash. */
export function quantityText(value: number | null | undefined, unit: string, decimals = 1): string {
  return value === null || value === undefined ? '–' : `${formatNumber(value, decimals)} ${unit}`;
}

/** Consumption as kWh per 100 km, or a dash where no distance was driven. */
export function per100Km(kwh: number, km: number): number | null {
  return km > 0 ? (kwh / km) * 100 : null;
}

/** A duration in seconds as `1 h 05 min` or `12 min`. */
export function durationText(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '–';
  const minutes = Math.round(Math.abs(seconds) / 60);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}
