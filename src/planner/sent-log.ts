/**
 * The `planner.sent` log line: a successful send is logged with the count since the last line, at most
 * once per `plannerSentLogMs` per installation, but at once for the first success after a start or
 * after a failed attempt, so an owner sees forwarding work, and work again, without a line a sample.
 */
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';

interface InstallationLog {
  /** Samples sent since the last line. */
  count: number;
  /** When the last line was written, by the monotonic clock. */
  loggedAt: number;
  /** An attempt failed since the last line. */
  failed: boolean;
}

export class SentLog {
  /** By installation, most recent last (at most `plannerQuietInstallations`); a forgotten one logs its next success. */
  private readonly installations = new Map<string, InstallationLog>();

  constructor(
    private readonly log: Logger,
    private readonly elapsed: () => number,
  ) {}

  sent(installationId: string): void {
    const now = this.elapsed();
    let entry = this.installations.get(installationId);
    if (!entry) {
      entry = { count: 0, loggedAt: -Infinity, failed: false };
      this.installations.set(installationId, entry);
      if (this.installations.size > limits.plannerQuietInstallations)
        this.installations.delete(this.installations.keys().next().value!);
    }
    entry.count += 1;
    if (!entry.failed && now - entry.loggedAt < limits.plannerSentLogMs) return;
    this.log.info('planner.sent', { installation: installationId, count: entry.count });
    entry.count = 0;
    entry.loggedAt = now;
    entry.failed = false;
  }

  failed(installationId: string): void {
    const entry = this.installations.get(installationId);
    if (entry) entry.failed = true;
  }
}
