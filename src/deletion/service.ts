/**
 * The running server's side of a purge made by the `purge` command in another process: it checks the
 * purges table as the device registry checks the devices' version, forgets what it holds in memory
 * of each installation purged (the answers it caches, the samples queued for the planner, device tokens),
 * then deletes the purge's row, so the installation id is kept no longer than that.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { Poller } from '../db/poll.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import { purgesAfter } from './store.ts';

/** Something holding an installation's data in memory. */
export interface Forgetting {
  forget(installationId: string): void;
}

export class PurgeWatcher {
  /** The newest purge applied whose row may not be deleted yet: the checks skip the rows up to it. */
  private applied = 0;
  /** The deletion of applied rows under way, if any. */
  private clearing: Promise<void> | null = null;
  private readonly watcher = new Poller(() => this.check(), limits.purgeCheckMs);

  constructor(
    private readonly db: Database,
    private readonly committer: Committer,
    private readonly holders: Forgetting[],
    private readonly log: Logger,
  ) {}

  /** Checks every `limits.purgeCheckMs`, so a purge is honoured within a second. */
  watch(): void {
    this.watcher.start();
  }

  /** Stops checking and waits for a deletion under way. */
  async stop(): Promise<void> {
    this.watcher.stop();
    await this.clearing;
  }

  /**
   * Forgets each installation purged since the last check (at start, every row left: a server holds
   * nothing of them yet), then deletes their rows; a failed read is logged and read again next time.
   */
  check(): void {
    try {
      for (const { id, installationId } of purgesAfter(this.db, this.applied)) {
        for (const holder of this.holders) holder.forget(installationId);
        this.applied = id;
        this.log.info('purge.applied', { installation: installationId });
      }
    } catch (error) {
      this.log.error('purge.check_failed', { reason: (error as Error).message });
    }
    if (this.applied > 0) this.clearing ??= this.clearApplied(this.applied).finally(() => (this.clearing = null));
  }

  /**
   * Deletes the rows of the purges applied up to `upTo`. Only one server runs on a database, so no
   * other reader needs them; once none is left, the next purge's number may start again from 1.
   */
  private async clearApplied(upTo: number): Promise<void> {
    try {
      await this.committer.write('deleteAppliedPurges', { upTo });
      if (this.applied === upTo) this.applied = 0;
    } catch (error) {
      this.log.error('purge.check_failed', { reason: (error as Error).message });
    }
  }
}
