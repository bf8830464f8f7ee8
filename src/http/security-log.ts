/**
 * The count of a security event a client may repeat many times (a bad token, a full pairing book), so
 * that it is logged at most once per `limits.securityLogIntervalMs` for each key, with how many came,
 * and in all at most `limits.securityLinesPerInterval` lines per interval: a flood from many addresses
 * (every /64 of an IPv6 prefix) is summed up in one `security.lines_dropped` line instead.
 */
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import type { LogEventName } from '../log-events.ts';
import { RecentMap } from './recent-map.ts';

/** The lines of one interval over all keys, and what was left out once its budget was spent. */
interface Interval {
  startedAt: number;
  lines: number;
  dropped: number;
  keys: Set<string>;
}

export class RepeatCounter {
  /** Per key: when its last line was due (monotonic ms), and how many came since. */
  private readonly byKey = new RecentMap<string, { loggedAt: number; since: number }>(limits.addressesTracked);
  private interval: Interval = newInterval(-Infinity);

  constructor(
    /** A monotonic clock in ms (`AppOptions.elapsed`). */
    private readonly elapsed: () => number,
    private readonly log: Logger,
    /** The event counted, named by the summary line. */
    private readonly event: LogEventName,
  ) {}

  /** Counts one; answers the count to log now (since the key's last line, this one included), or null. */
  due(key: string): number | null {
    const at = this.elapsed();
    const last = this.byKey.get(key);
    if (last && at - last.loggedAt < limits.securityLogIntervalMs) {
      last.since += 1;
      return null;
    }
    this.byKey.set(key, { loggedAt: at, since: 0 });
    return this.withinBudget(key, (last?.since ?? 0) + 1, at);
  }

  /**
   * The count when the interval's budget allows its line, else null (summed up instead). The summary of
   * an interval whose budget ran out is written with the first line due after it.
   */
  private withinBudget(key: string, count: number, at: number): number | null {
    if (at - this.interval.startedAt >= limits.securityLogIntervalMs) {
      const { dropped, keys } = this.interval;
      const addresses = keys.size;
      if (dropped > 0) this.log.warn('security.lines_dropped', { of: this.event, count: dropped, addresses });
      this.interval = newInterval(at);
    }
    if (this.interval.lines < limits.securityLinesPerInterval) {
      this.interval.lines += 1;
      return count;
    }
    this.interval.dropped += count;
    if (this.interval.keys.size < limits.addressesTracked) this.interval.keys.add(key);
    return null;
  }
}

const newInterval = (startedAt: number): Interval => ({ startedAt, lines: 0, dropped: 0, keys: new Set() });
