/**
 * Durable commits without holding the writer. With FULL durability the writer's connection commits
 * with `synchronous=NORMAL` (no sync of its own) and this syncs the WAL on a pool thread afterwards,
 * while the writer already runs the next group. A commit is answered only once a sync that began
 * after it has finished: what `synchronous=FULL` promises, with no more syncs, but off the writer's path.
 */
import { closeSync, fdatasync, openSync } from 'node:fs';

/** Flushes a file's data to the disk; `fdatasync` but for fault drills. */
export type SyncFile = (fd: number, done: (error: Error | null) => void) => void;

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

export class WalSync {
  private readonly fd: number;
  /** Commits done since the sync in progress began: the next sync covers them all. */
  private waiting: Waiter[] = [];
  private syncing = false;
  /** How long a sync takes, smoothed over the last ones (0 before the first). */
  syncMs = 0;

  /** Opens the WAL of `databasePath`, which exists while a connection has the database open. */
  constructor(
    databasePath: string,
    private readonly syncFile: SyncFile = fdatasync,
  ) {
    this.fd = openSync(`${databasePath}-wal`, 'r');
  }

  /** Settles once everything committed so far is on disk; rejects should that sync fail. */
  durable(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.syncing) this.sync();
    });
  }

  close(): void {
    closeSync(this.fd);
  }

  private sync(): void {
    const covered = this.waiting;
    this.waiting = [];
    this.syncing = true;
    const began = performance.now();
    this.syncFile(this.fd, (error) => {
      this.syncing = false;
      this.syncMs = smoothed(this.syncMs, performance.now() - began);
      for (const waiter of covered) {
        if (error) waiter.reject(error);
        else waiter.resolve();
      }
      if (this.waiting.length > 0) this.sync();
    });
  }
}

/** A running average that follows the recent measurements: `average` moved a quarter of the way to `latest`. */
export function smoothed(average: number, latest: number): number {
  return average === 0 ? latest : average + (latest - average) / 4;
}
