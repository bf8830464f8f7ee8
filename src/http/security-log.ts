/**
 * A security event a client may repeat many times (a bad token, a full pairing book): logged at most once
 * per `limits.securityLogIntervalMs` for each key, with how many happened since its previous line.
 */
import { limits } from '../limits.ts';
import type { LogFields, Logger } from '../log.ts';
import { RecentMap } from './recent-map.ts';

export class RepeatedEvent {
  /** Per key: when its last line was written (monotonic ms), and how many came since. */
  private readonly byKey = new RecentMap<string, { loggedAt: number; since: number }>(limits.addressesTracked);

  constructor(
    private readonly log: Logger,
    private readonly event: string,
    /** A monotonic clock in ms (`AppOptions.elapsed`). */
    private readonly elapsed: () => number,
  ) {}

  /** Counts one; writes the line when the key's last one is old enough. `count` includes this one. */
  record(key: string, fields: LogFields): void {
    const at = this.elapsed();
    const last = this.byKey.get(key);
    if (last && at - last.loggedAt < limits.securityLogIntervalMs) {
      last.since += 1;
      return;
    }
    this.log.warn(this.event, { ...fields, count: (last?.since ?? 0) + 1 });
    this.byKey.set(key, { loggedAt: at, since: 0 });
  }
}
