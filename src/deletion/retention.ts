/**
 * TELEMETRY_RETENTION_DAYS: once at start and then every hour, samples older than that many days are
 * deleted a small batch per write through the committer (ingest writes go on between batches), never
 * one still waiting for the planner. A database with incremental auto-vacuum then gives the freed pages
 * back to the file system, a few per write; in any other the freed pages are reused by new samples.
 */
import type { Database } from 'bun:sqlite';
import type { Committer } from '../db/committer.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../log.ts';
import type { deletionWrites } from './store.ts';

/**
 * Waits `limits.deletionPauseFactor` times as long as a deletion's write took: deletions take at most a
 * share of the writer's time, however long the backlog, and ingest keeps the rest.
 */
export function yieldWriter(writeMs: number): Promise<void> {
  return Bun.sleep(Math.min(writeMs * limits.deletionPauseFactor, limits.deletionPauseMaxMs));
}

/** `PRAGMA auto_vacuum` of a database made with incremental auto-vacuum. */
const INCREMENTAL = 2;

export class Retention {
  private timer: Timer | null = null;
  private running: Promise<void> | null = null;
  private halted = false;

  constructor(
    private readonly db: Database,
    private readonly committer: Committer<typeof deletionWrites>,
    private readonly log: Logger,
    /** Days samples are kept; null keeps them for ever. */
    private readonly days: number | null,
    private readonly now: () => number,
  ) {}

  /** Runs now and then every `limits.retentionIntervalMs`; nothing without a retention. */
  start(): void {
    if (this.days === null || this.timer) return;
    void this.run();
    this.timer = setInterval(() => void this.run(), limits.retentionIntervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a run under way to end after its current batch. */
  async stop(): Promise<void> {
    this.halted = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass (joining one under way): deletes what is past the retention, then gives free pages back. */
  run(): Promise<void> {
    this.running ??= this.pass()
      .catch((error: Error) => this.log.error('retention.failed', { reason: error.message }))
      .finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<void> {
    if (this.days === null) return;
    const before = Math.floor(this.now() / 1000) - this.days * 86_400;
    let deleted = 0;
    for (let from: number | null = 0; from !== null && !this.halted; ) {
      const started = performance.now();
      const batch: { deleted: number; next: number | null } = await this.committer.write('deleteExpiredSamples', {
        from,
        before,
        limit: limits.deleteBatchSamples,
      });
      deleted += batch.deleted;
      from = batch.next;
      await yieldWriter(performance.now() - started);
    }
    const freed = await this.giveSpaceBack();
    if (deleted > 0) this.log.info('retention.deleted', { samples: deleted, before, pagesFreed: freed });
  }

  /** Gives free pages back a write at a time when the database has incremental auto-vacuum; answers how many. */
  private async giveSpaceBack(): Promise<number> {
    if (this.db.query<{ auto_vacuum: number }, []>('PRAGMA auto_vacuum').get()?.auto_vacuum !== INCREMENTAL) return 0;
    let freed = 0;
    let left = this.db.query<{ freelist_count: number }, []>('PRAGMA freelist_count').get()!.freelist_count;
    while (left > 0 && !this.halted) {
      const started = performance.now();
      const now = await this.committer.write('vacuumFreePages', { pages: limits.vacuumPagesPerWrite });
      await yieldWriter(performance.now() - started);
      if (now >= left) break; // nothing more could be given back
      freed += left - now;
      left = now;
    }
    return freed;
  }
}
