/** The clock of durations: monotonic, unlike `Date.now`, so that the wall clock's jumps (NTP) neither stretch nor end them. */
export const monotonicNow = (): number => performance.now();
