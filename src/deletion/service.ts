/**
 * The running server's side of a purge made by the `purge` command in another process: it checks the
 * purges table as the device registry checks the devices' version, and forgets what it holds in memory
 * of each installation purged (the answers it caches, the samples queued for the planner, device tokens).
 */
import type { Database } from 'bun:sqlite';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { lastPurge, purgesAfter } from './store.ts';

/** Something holding an installation's data in memory. */
export interface Forgetting {
  forget(installationId: string): void;
}

export class PurgeWatcher {
  private seen: number;
  private watcher: Timer | null = null;

  constructor(
    private readonly db: Database,
    private readonly holders: Forgetting[],
    private readonly log: Logger,
  ) {
    this.seen = lastPurge(db);
  }

  /** Checks every `limits.purgeCheckMs`, so a purge is honoured within a second. */
  watch(): void {
    this.watcher ??= setInterval(() => this.check(), limits.purgeCheckMs);
    this.watcher.unref();
  }

  stop(): void {
    if (this.watcher) clearInterval(this.watcher);
    this.watcher = null;
  }

  /** Forgets each installation purged since the last check; a failed read is logged and read again next time. */
  check(): void {
    try {
      for (const { id, installationId } of purgesAfter(this.db, this.seen)) {
        for (const holder of this.holders) holder.forget(installationId);
        this.seen = id;
        this.log.info('purge.applied', { installation: installationId });
      }
    } catch (error) {
      this.log.error('purge.check_failed', { reason: (error as Error).message });
    }
  }
}
