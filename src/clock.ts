/**
 * The clock of the durations tests inject (`AppOptions.elapsed`: pairing lifetimes, the lockout, the
 * last-seen throttle): monotonic, unlike `Date.now`, so the wall clock's jumps (NTP) neither stretch nor end them.
 */
export const monotonicNow = (): number => performance.now();

/** A wall-clock time (Unix ms) as an answer shows it: ISO 8601 in UTC, or null when unknown. */
export const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
