/**
 * The clock of the durations tests inject (`AppOptions.elapsed`: pairing lifetimes, the lockout, the
 * last-seen throttle): monotonic, unlike `Date.now`, so the wall clock's jumps (NTP) neither stretch nor end them.
 */
export const monotonicNow = (): number => performance.now();
