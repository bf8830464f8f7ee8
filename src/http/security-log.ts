/**
 * The count of a security event a client may repeat many times (a bad token, a full pairing book), so
 * that it is logged at most once per `limits.securityLogIntervalMs` for each key, with how many came.
 */
import { limits } from '../limits.ts';
import { RecentMap } from './recent-map.ts';

export class RepeatCounter {
  /** Per key: when its last line was due (monotonic ms), and how many came since. */
  private readonly byKey = new RecentMap<string, { loggedAt: number; since: number }>(limits.addressesTracked);

  /** A monotonic clock in ms (`AppOptions.elapsed`). */
  constructor(private readonly elapsed: () => number) {}

  /** Counts one; answers the count to log now (since the key's last line, this one included), or null. */
  due(key: string): number | null {
    const at = this.elapsed();
    const last = this.byKey.get(key);
    if (last && at - last.loggedAt < limits.securityLogIntervalMs) {
      last.since += 1;
      return null;
    }
    this.byKey.set(key, { loggedAt: at, since: 0 });
    return (last?.since ?? 0) + 1;
  }
}
