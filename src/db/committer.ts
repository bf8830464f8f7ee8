/**
 * The main thread's side of the writer: every write of the service goes through `write()`, which
 * answers only once the group holding the write has committed (and, with FULL durability, is on disk).
 */
import type { Durability } from '../config.ts';
import type { Outcome, Write, WriteFailure, WriteOp } from './group.ts';
import type { FromWriter, ToWriter } from './protocol.ts';
import { limits } from '../limits.ts';
import { StorageError, unusableDatabase } from './open.ts';
import { smoothed, WalClosedError, WalSync, type SyncFile } from './wal-sync.ts';
import { workerEntry } from './worker-entry.ts';

/** A write that did not commit; `scope` tells whether its whole group was rolled back. */
export class WriteError extends Error {
  override name = 'WriteError';
  readonly code: string | undefined;
  readonly scope: WriteFailure['scope'];
  constructor(failure: WriteFailure) {
    super(failure.message);
    this.code = failure.code;
    this.scope = failure.scope;
  }
}

interface Pending {
  write: Write;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export interface CommitterOptions {
  path: string;
  durability: Durability;
  /**
   * Writes per group at most; 1 commits and syncs every write on its own, the way a server without
   * group commit would (a benchmark baseline).
   */
  maxGroupWrites?: number;
  /** Fault seam: how the WAL is synced with FULL durability (tests hold or fail it). */
  syncFile?: SyncFile;
}

/** What the metrics are told of each commit and each sync of the WAL. */
export interface CommitObserver {
  groupCommitted(writes: number): void;
  walSynced(ms: number): void;
}

export interface CommitterStats {
  groups: number;
  writes: number;
  /** Syncs of the WAL run apart from the writer (each commit's with FULL durability, `flush()`'s with fast). */
  syncs: number;
}

/** The write operations a committer runs, by name; each feature's store contributes its own. */
export type WriteOps = Record<string, WriteOp>;

/**
 * `Ops` types `write()`: a feature holds a `Committer<typeof itsWrites>`, so the db layer needs no
 * list of every feature's writes (the worker gets that list from src/writes.ts).
 */
export class Committer<Ops extends WriteOps = WriteOps> {
  private queue: Pending[] = [];
  /** Groups handed to the writer and not committed yet, oldest first: the one it runs, perhaps one behind. */
  private atWriter: Pending[][] = [];
  /** Groups handed to the writer and not answered yet (at the writer or syncing), with when each was handed. */
  private unanswered = new Map<Pending[], number>();
  /**
   * When the oldest group at the writer was sent to it, or, if it waited there, when the group before
   * it committed; and how long a write has taken at the writer (smoothed).
   */
  private startedAt = 0;
  private writeMs = 0;
  private pumpScheduled = false;
  private closing: Promise<void> | null = null;
  private broken: Error | null = null;
  private idleWaiters: (() => void)[] = [];
  private pragmaWaiters: Pick<Pending, 'resolve' | 'reject'>[] = [];
  private stopped = false;
  /** Settles once the writer is gone, whether it closed, crashed or exited. */
  private readonly gone: Promise<void>;
  private markGone!: () => void;
  /** Called once should the writer fail; every write after that fails too. */
  onBroken: (error: Error) => void = () => {};
  private onAnswered: (writes: number) => void = () => {};
  private groups = 0;
  private writes = 0;

  private constructor(
    private readonly worker: Worker,
    private readonly maxGroupWrites: number,
    /** Syncs of the WAL: with FULL each commit's, overlapping the writer's next group; with fast, `flush()`'s. */
    private readonly walSync: WalSync | null,
    private readonly syncsEachCommit: boolean,
  ) {
    this.gone = new Promise((resolve) => (this.markGone = resolve));
    worker.addEventListener('message', (event: MessageEvent<FromWriter>) => this.onMessage(event.data));
    worker.addEventListener('error', (event) => this.onCrash(new Error(`writer failed: ${event.message}`)));
    // A writer that exits without an error (killed, `process.exit`) only says `close`.
    worker.addEventListener('close', () => {
      this.markGone();
      if (!this.stopped) this.onCrash(new Error('writer exited'));
    });
  }

  /** Starts the writer on its own connection to `path`. */
  static async start(options: CommitterOptions): Promise<Committer> {
    const maxGroupWrites = options.maxGroupWrites ?? limits.groupWritesMax;
    const syncApart = options.durability === 'full' && maxGroupWrites > 1;
    // Outside db/: the writer's module holds every feature's writes, which the db layer does not import.
    const worker = new Worker(workerEntry('writer.worker.ts'));
    let onError: (event: ErrorEvent) => void = () => {};
    const opened = new Promise<string>((resolve, reject) => {
      const onMessage = (event: MessageEvent<FromWriter>) => {
        worker.removeEventListener('message', onMessage);
        if (event.data.type === 'opened') resolve(event.data.walPath);
        else reject(new StorageError(event.data.type === 'failed' ? event.data.message : 'writer did not open'));
      };
      onError = (event) => reject(new StorageError(event.message));
      worker.addEventListener('message', onMessage);
      worker.addEventListener('error', onError);
    });
    post(worker, { type: 'open', path: options.path, durability: options.durability, syncApart });
    try {
      const walPath = await opened;
      // Fast commits go unsynced; a write that must outlive a power cut (revocation, collected token) asks flush().
      const walSync = syncApart || options.durability === 'fast' ? walSyncOf(options, walPath) : null;
      return new Committer(worker, maxGroupWrites, walSync, syncApart);
    } catch (error) {
      worker.terminate();
      throw error;
    } finally {
      worker.removeEventListener('error', onError);
    }
  }

  write<K extends keyof Ops & string>(op: K, args: Parameters<Ops[K]>[1]): Promise<ReturnType<Ops[K]>> {
    if (this.closing || this.broken) {
      return Promise.reject(this.broken ?? closedError());
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ write: { op, args }, resolve: resolve as (value: unknown) => void, reject });
      this.schedulePump();
    });
  }

  /**
   * Fault seam: runs `PRAGMA <pragma>` on the writer's own connection, after the groups already handed
   * to the writer (perhaps before their answers, which may wait for a sync).
   * For tests and fault drills only (checking `synchronous`, filling the disk with `max_page_count`).
   */
  writerPragma(pragma: string): Promise<unknown[]> {
    if (!/^[a-z_]+( = \d+)?$/.test(pragma)) return Promise.reject(new Error(`not a simple pragma: ${pragma}`));
    if (this.closing || this.broken) return Promise.reject(this.broken ?? closedError());
    return new Promise((resolve, reject) => {
      this.pragmaWaiters.push({ resolve: resolve as (value: unknown) => void, reject });
      post(this.worker, { type: 'pragma', pragma });
    });
  }

  /** Fault seam: ends the writer thread without a word, as a kill would (tests of the crash path only). */
  killWriter(): void {
    this.worker.terminate();
  }

  /** Tells `observer` of every group answered and every sync of the WAL from now on. */
  observe(observer: CommitObserver): void {
    this.onAnswered = (writes) => observer.groupCommitted(writes);
    if (this.walSync) this.walSync.onSynced = (ms) => observer.walSynced(ms);
  }

  /** Why the committer stores nothing any more (the writer failed), or null while it works. */
  get failure(): Error | null {
    return this.broken;
  }

  /** How long the oldest write still unanswered has waited, in ms; 0 when none waits. A stalled disk shows here. */
  oldestWaitMs(): number {
    for (const handedAt of this.unanswered.values()) return performance.now() - handedAt;
    return 0;
  }

  /** Settles once the writer has answered a message sent now, after the groups already handed to it. */
  ping(): Promise<void> {
    return this.writerPragma('data_version').then(() => {});
  }

  get stats(): CommitterStats {
    return { groups: this.groups, writes: this.writes, syncs: this.walSync?.syncs ?? 0 };
  }

  /**
   * Settles once every commit made so far is on disk. Other connections may read a commit whose
   * sync still runs; one that acts outside the database on what it read waits for this first.
   */
  durable(): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    // Every commit a reader can see is in a group already answered (so synced) or still unanswered.
    if (!this.eachCommitSync || this.unanswered.size === 0) return Promise.resolve();
    return this.synced();
  }

  /**
   * Settles once every write answered so far is on disk, whatever the durability: for the rare write that
   * must survive a power cut even with `DURABILITY=fast` (a revocation, a collected token). With FULL they are already.
   */
  flush(): Promise<void> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.syncsEachCommit || !this.walSync) return Promise.resolve();
    return this.synced();
  }

  /** The WAL's sync when every commit waits for one (FULL durability), else null. */
  private get eachCommitSync(): WalSync | null {
    return this.syncsEachCommit ? this.walSync : null;
  }

  /** Resolves once every write handed in so far has been answered. */
  idle(): Promise<void> {
    if (this.unanswered.size === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Commits what is queued, then closes the writer's connection and stops it. */
  close(): Promise<void> {
    this.closing ??= this.idle().then(() => this.stopWorker());
    return this.closing;
  }

  // Writes handed in during the same tick join one group instead of the first going alone.
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.broken && this.writerTakes()) {
      const group = this.queue.splice(0, Math.min(this.maxGroupWrites, this.nextGroupSize()));
      const now = performance.now();
      if (this.atWriter.length === 0) this.startedAt = now;
      this.atWriter.push(group);
      this.unanswered.set(group, now);
      post(this.worker, { type: 'group', writes: group.map((pending) => pending.write) });
    }
  }

  /**
   * An idle writer takes a group at once. A busy one takes the next early, so that it starts on it
   * the moment it commits instead of idling while messages cross between the threads: once the next
   * is as large as the group it runs and writing sets the pace (a group takes at least a sync to
   * write). Quicker writes gain nothing by it and would only go in more, smaller groups.
   */
  private writerTakes(): boolean {
    if (this.atWriter.length === 0) return true;
    if (this.atWriter.length > 1) return false;
    const running = this.atWriter[0]!.length;
    return this.queue.length >= running && running * this.writeMs >= (this.eachCommitSync?.syncMs ?? 0);
  }

  /**
   * A burst reaching an idle writer goes in two halves when writing half of it takes at least as long
   * as a sync: the halves then take turns, one written while the other syncs (the second, not the
   * smaller, waits at the writer). Writes quicker than that are cheaper all in one group, behind one
   * sync. Both times are measured as the service runs; until they are, bursts are split.
   */
  private nextGroupSize(): number {
    const walSync = this.eachCommitSync;
    if (!walSync || this.unanswered.size > 0 || this.queue.length < 2) return this.queue.length;
    const half = Math.floor(this.queue.length / 2);
    return half * this.writeMs >= walSync.syncMs ? half : this.queue.length;
  }

  private onMessage(message: FromWriter): void {
    if (message.type === 'pragma') return this.onPragma(message);
    if (message.type === 'committed') return this.onCommitted(message.outcomes);
  }

  private onCommitted(outcomes: Outcome[]): void {
    const group = this.atWriter.shift();
    if (!group) return; // the committer broke meanwhile and answered it
    const now = performance.now();
    this.writeMs = smoothed(this.writeMs, (now - this.startedAt) / group.length);
    this.startedAt = now; // the group waiting behind it, if any, runs from now
    this.pump();
    if (!this.eachCommitSync) return this.answer(group, outcomes);
    this.synced().then(
      () => this.answer(group, outcomes),
      () => {}, // the committer broke, failing the group
    );
  }

  private synced(): Promise<void> {
    return this.walSync!.durable().catch((error: Error) => {
      if (error instanceof WalClosedError) throw error; // the committer stopped: no sync failed
      // After a failed sync the kernel may have dropped the pages: nothing can be promised any more.
      this.onCrash(new Error(`writer failed: the WAL's sync failed: ${error.message}`));
      throw error;
    });
  }

  private answer(group: Pending[], outcomes: Outcome[]): void {
    if (!this.unanswered.delete(group)) return;
    this.groups += 1;
    this.writes += group.length;
    this.onAnswered(group.length);
    outcomes.forEach((outcome, index) => {
      const pending = group[index]!;
      if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(new WriteError(outcome.error));
    });
    this.pump();
    this.notifyIfIdle();
  }

  private onPragma({ rows, error }: Extract<FromWriter, { type: 'pragma' }>): void {
    const waiter = this.pragmaWaiters.shift();
    if (rows) waiter?.resolve(rows);
    else waiter?.reject(new Error(error));
  }

  private onCrash(error: Error): void {
    if (this.broken) return;
    this.broken = error;
    this.onBroken(error);
    const lost = [...[...this.unanswered.keys()].flat(), ...this.queue, ...this.pragmaWaiters.splice(0)];
    this.unanswered.clear();
    this.atWriter = [];
    this.queue = [];
    for (const pending of lost) pending.reject(error);
    this.notifyIfIdle();
  }

  private notifyIfIdle(): void {
    if (this.unanswered.size > 0 || this.queue.length > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private async stopWorker(): Promise<void> {
    this.stopped = true;
    if (!this.broken) {
      const closed = new Promise<void>((resolve) => {
        this.worker.addEventListener(
          'message',
          (event: MessageEvent<FromWriter>) => event.data.type === 'closed' && resolve(),
        );
      });
      post(this.worker, { type: 'close' });
      await Promise.race([closed, this.gone]); // a writer dying meanwhile must not hang the stop
    }
    this.worker.terminate();
    // Flushes asked until now (a revocation answered during the stop) get the WAL's last sync.
    await this.walSync?.close();
  }
}

const closedError = () => new Error('the writer is closed');

function post(worker: Worker, message: ToWriter): void {
  worker.postMessage(message);
}

/** The sync of the WAL beside the database at `path`; a WAL it cannot open refuses the start, naming DATABASE_PATH. */
function walSyncOf({ path, syncFile }: CommitterOptions, walPath: string): WalSync {
  try {
    return new WalSync(walPath, syncFile);
  } catch (error) {
    throw unusableDatabase(path, (error as Error).message);
  }
}
