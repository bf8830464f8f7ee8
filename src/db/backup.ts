/**
 * A consistent copy of the live database, taken on a connection of its own while the server goes on
 * writing. `VACUUM INTO` reads one WAL snapshot (a plain file copy of a WAL database would miss or tear
 * the commits still in the -wal file).
 */
import { existsSync, lstatSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CopyOutcome, CopyRequest } from './backup.worker.ts';
import { refuseForeignWal } from './open.ts';
import { createPrivateFile, syncPath, unsupportedByFileSystem } from './private-file.ts';
import { workerEntry } from './worker-entry.ts';

/** Told a line about the copy: a file it could not remove. */
type Tell = (text: string) => void;

/** Gives the file `existing` the second name `target`; `linkSync` but for tests of file systems without hard links. */
export type LinkFile = (existing: string, target: string) => void;

export interface BackupRun {
  /** Rejects when the backup is to give up. */
  stopped: Promise<never>;
  /** Told of each file it could not remove. */
  leftBehind: Tell;
  link: LinkFile;
}

/**
 * Copies `source` into the new file `target`; answers its size. Never overwrites, never leaves a
 * partial file but one it cannot remove, which it tells `leftBehind`; gives up when `stopped` rejects.
 */
export async function backupDatabase(
  source: string,
  target: string,
  { stopped, leftBehind, link }: BackupRun,
): Promise<number> {
  if (!existsSync(source)) throw new Error(`no database at ${source} (set DATABASE_PATH)`);
  // Its connection would take another database's -wal into the file for good, as a server's would.
  refuseForeignWal(source);
  // lstat: a dangling symbolic link is there too, and the link into place would refuse it only after the whole copy.
  if (lstatSync(target, { throwIfNoEntry: false })) throw new Error(`${target} already exists; choose a new file`);
  if (!existsSync(dirname(target))) throw new Error(`the folder ${dirname(target)} does not exist`);
  // Written under a temporary name, synced, then put in place: a crash leaves no half backup.
  const partial = `${target}.partial-${process.pid}`;
  // Private before any data goes in: VACUUM INTO keeps an empty file's mode and gives its journal the same; the
  // link or rename into place keeps it too. Before the try: a file this run did not create is not its to remove.
  createPrivateFile(partial);
  try {
    await copyOnWorker({ source, partial }, stopped);
    putInPlace(partial, target, link, leftBehind);
  } finally {
    removePartial(partial, leftBehind);
  }
  syncPath(dirname(target)); // after the removal: the new name and the partial's end reach the disk together
  return statSync(target).size;
}

/** Gives the synced copy `partial` the name `target`, never overwriting it (EEXIST should it appear meanwhile). */
function putInPlace(partial: string, target: string, link: LinkFile, leftBehind: Tell): void {
  try {
    link(partial, target);
  } catch (error) {
    if (!cannotLink(error)) throw error;
    renameOverPlaceholder(partial, target, leftBehind);
  }
}

/** Why a file system without hard links refuses one: FAT and exFAT say EPERM, others that it is not supported. */
function cannotLink(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'EPERM' || unsupportedByFileSystem(error);
}

/** What `target` holds between its exclusive creation and the rename: not a database, never taken for a backup. */
const PLACEHOLDER = 'not a backup: ev-ingest backup stopped while putting its copy here; delete this file\n';

/**
 * Where a link cannot be made: `target` is taken by an exclusive create, as the link would take it, so
 * a file that appeared meanwhile is refused (EEXIST), never replaced; the rename then puts the copy
 * over that placeholder. What remains is a crash in the microseconds between the two, or a power cut
 * before the folder's sync, which may leave the placeholder (a line of text SQLite refuses to open)
 * under the final name, never a half backup. A
 * rename after a check instead would overwrite a file made in between (a second backup to that name).
 */
function renameOverPlaceholder(partial: string, target: string, leftBehind: Tell): void {
  writeFileSync(target, PLACEHOLDER, { flag: 'wx', mode: 0o600 });
  try {
    renameSync(partial, target);
  } catch (error) {
    removeIfThere(target, leftBehind);
    throw error;
  }
}

/** Settles when the Worker has copied, or rejects with why not; the Worker ends either way. */
async function copyOnWorker(request: CopyRequest, stopped: Promise<never>): Promise<void> {
  const worker = new Worker(workerEntry('db/backup.worker.ts'));
  const copied = new Promise<void>((resolve, reject) => {
    worker.onmessage = ({ data }: MessageEvent<CopyOutcome>) =>
      data.type === 'copied' ? resolve() : reject(new Error(data.message));
    worker.onerror = (event) => reject(new Error(event.message));
    // A Worker that ends without a word (killed, out of memory) must not leave the backup waiting for ever.
    worker.addEventListener('close', () => reject(new Error('the copy stopped without an answer')));
  });
  copied.catch(() => {}); // stopped first, the copy's own end is of no interest
  worker.postMessage(request);
  try {
    await Promise.race([copied, stopped]);
  } finally {
    worker.terminate(); // a copy still running goes on into a removed file until the process exits
  }
}

/** Removes the partial copy and its journal; never throws, so that a failed removal cannot hide why the copy failed. */
function removePartial(partial: string, leftBehind: Tell): void {
  // The journal is there only when the copy was stopped half-way.
  for (const path of [partial, `${partial}-journal`]) removeIfThere(path, leftBehind);
}

/** Removes `path` if it is there; tells `leftBehind` rather than throw should that fail. */
function removeIfThere(path: string, leftBehind: Tell): void {
  try {
    // Only if there: on a read-only file system even a missing file's removal fails.
    if (lstatSync(path, { throwIfNoEntry: false })) rmSync(path);
  } catch (error) {
    leftBehind(`could not remove ${path}: ${(error as Error).message}`);
  }
}
