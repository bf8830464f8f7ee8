/**
 * Durable commits without holding the writer. With FULL durability the writer's connection commits
 * with `synchronous=NORMAL` (its ordinary commits skip the sync; checkpoints still sync) and this
 * syncs the WAL on a pool thread afterwards, while the writer already runs the next group. A commit
 * is answered only once a sync that began after it has finished: the durability of SQLite's
 * `synchronous=FULL`, with no more syncs, but off the writer's path. Unlike FULL, another connection
 * may read a commit before its sync; a reader that acts on what it read outside the database (the
 * planner forwarder) waits for `durable()` first.
 */
import { closeSync, fdatasync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { StorageError } from './open.ts';
import { syncPath } from './private-file.ts';

/** Flushes a file's data to the disk; `fdatasync` but for fault drills. */
export type SyncFile = (fd: number, done: (error: Error | null) => void) => void;

/** The WAL was closed: the committer stopped, nothing failed. */
export class WalClosedError extends Error {
  override name = 'WalClosedError';
  constructor() {
    super('the WAL is closed');
  }
}

interface Waiter {
  resolve(): void;
  reject(error: Error): void;
}

export class WalSync {
  private readonly fd: number;
  /** Commits done since the sync in progress began: the next sync covers them all. */
  private waiting: Waiter[] = [];
  private syncing = false;
  private closed = false;
  private readonly fileClosed = Promise.withResolvers<void>();
  /** The first failed sync: after it the kernel may have dropped pages, so no later sync proves anything. */
  private failure: Error | null = null;
  /** How long a sync takes, smoothed over the last ones (0 before the first). */
  syncMs = 0;
  syncs = 0;
  /** Told how long each successful sync took, in ms (the metrics). */
  onSynced: (ms: number) => void = () => {};

  /**
   * `walPath` as SQLite names it (symbolic links resolved); it exists while a connection is open.
   * Its folder is synced once here, as SQLite's FULL does on a new WAL's first sync: a WAL created at
   * this start (the writer's own syncs come only with checkpoints) must not vanish with a power cut.
   * So is the WAL itself: commits of a process killed before their sync are there for every reader to
   * see, and nothing answered since may be taken back (the forwarder sends what it reads).
   */
  constructor(
    walPath: string,
    private readonly syncFile: SyncFile = fdatasync,
    syncNow: (fd: number) => void = fsyncSync,
  ) {
    try {
      syncPath(dirname(walPath), syncNow);
      // r+: some systems (Windows, some network file systems) refuse to flush a file opened read-only.
      this.fd = openSync(walPath, 'r+');
      syncNow(this.fd);
    } catch (error) {
      throw new StorageError(`cannot open the WAL ${walPath} to sync it: ${(error as Error).message}`);
    }
  }

  /** Settles once everything committed so far is on disk; rejects should that sync fail. */
  durable(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new WalClosedError());
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.syncing) this.sync();
    });
  }

  /**
   * Takes no more callers; those waiting now (a flush asked as the stop began) get one last sync. Settles
   * once the file is closed.
   */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // Callers only wait while a sync runs (`durable` starts one at once): its end closes the file.
      if (!this.syncing) this.closeFile();
    }
    return this.fileClosed.promise;
  }

  private closeFile(): void {
    closeSync(this.fd);
    this.fileClosed.resolve();
  }

  private sync(): void {
    const covered = this.waiting;
    this.waiting = [];
    this.syncing = true;
    this.syncs += 1;
    const began = performance.now();
    this.syncFile(this.fd, (error) => {
      this.syncing = false;
      if (error) this.failure ??= error;
      else {
        const took = performance.now() - began;
        this.syncMs = smoothed(this.syncMs, took);
        this.onSynced(took);
      }
      for (const waiter of covered) {
        if (this.failure) waiter.reject(this.failure);
        else waiter.resolve();
      }
      if (this.failure) for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
      if (this.waiting.length > 0) this.sync();
      else if (this.closed) this.closeFile();
    });
  }
}

/** A running average that follows the recent measurements: `average` moved a quarter of the way to `latest`. */
export function smoothed(average: number, latest: number): number {
  return average === 0 ? latest : average + (latest - average) / 4;
}
