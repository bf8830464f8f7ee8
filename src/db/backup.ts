/**
 * `ev-ingest backup FILE`: a consistent copy of the live database, taken on a connection of its own
 * while the server goes on writing. `VACUUM INTO` reads one WAL snapshot (a plain file copy of a WAL
 * database would miss or tear the commits still in the -wal file).
 */
import { Database } from 'bun:sqlite';
import { closeSync, existsSync, fchmodSync, linkSync, lstatSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { commandDatabasePath, toStderr, toStdout, usage, type Out } from '../command.ts';
import { limits } from '../limits.ts';
import { syncPath } from './wal-sync.ts';

export const BACKUP_USAGE = `  ev-ingest backup FILE          copy the live database into FILE (which must not exist), server running`;

export async function backupCommand(
  args: string[],
  out: Out = toStdout,
  err: Out = toStderr,
): Promise<number> {
  if (args.length !== 1 || args[0] === '') {
    return usage(err, BACKUP_USAGE);
  }
  const databasePath = commandDatabasePath();
  try {
    const bytes = backupDatabase(databasePath, args[0]!, (leftover) => err(`ev-ingest: ${leftover}\n`));
    out(`backup of ${databasePath} written to ${args[0]} (${bytes} bytes)\n`);
    return 0;
  } catch (error) {
    err(`ev-ingest: backup failed: ${(error as Error).message}\n`);
    return 1;
  }
}

/**
 * Copies `source` into the new file `target`; answers its size. Never overwrites, never leaves a
 * partial file but one it cannot remove, which it tells `leftBehind`.
 */
function backupDatabase(source: string, target: string, leftBehind: Out): number {
  if (!existsSync(source)) throw new Error(`no database at ${source} (set DATABASE_PATH)`);
  // lstat: a dangling symbolic link is there too, and the link into place would refuse it only after the whole copy.
  if (lstatSync(target, { throwIfNoEntry: false })) throw new Error(`${target} already exists; choose a new file`);
  if (!existsSync(dirname(target))) throw new Error(`the folder ${dirname(target)} does not exist`);
  // Written under a temporary name, synced, then linked into place: a crash leaves no half backup.
  const partial = `${target}.partial-${process.pid}`;
  createPrivateFile(partial); // before the try: a file this run did not create is not its to remove
  try {
    const db = new Database(source, { readwrite: true, create: false });
    try {
      db.run(`PRAGMA busy_timeout = ${limits.databaseBusyMs}`);
      db.query('VACUUM INTO ?').run(partial); // may fail half-way (a full disk, a damaged page)
    } finally {
      db.close();
    }
    const check = new Database(partial, { readonly: true });
    try {
      const result = check.query<{ quick_check: string }, []>('PRAGMA quick_check').get()?.quick_check;
      if (result !== 'ok') throw new Error(`the copy failed its check: ${result}`);
    } finally {
      check.close();
    }
    syncPath(partial);
    linkSync(partial, target); // fails if `target` appeared meanwhile
    syncPath(dirname(target));
    return statSync(target).size;
  } finally {
    removePartial(partial, leftBehind);
  }
}

/** Removes the partial copy; never throws, so that a failed removal cannot hide why the copy failed. */
function removePartial(partial: string, leftBehind: Out): void {
  try {
    rmSync(partial, { force: true });
  } catch (error) {
    leftBehind(`could not remove ${partial}: ${(error as Error).message}`);
  }
}

/**
 * Creates the empty file `path`, readable by its owner alone before any data goes in: the copy holds
 * every location and token hash. `VACUUM INTO` accepts an empty file, keeps its mode and gives its
 * journal the same; the link into place keeps it too.
 */
function createPrivateFile(path: string): void {
  const fd = openSync(path, 'wx', 0o600); // wx: never an existing file, nor where a symbolic link points
  try {
    fchmodSync(fd, 0o600); // the umask may have taken the owner's own bits
  } finally {
    closeSync(fd);
  }
}
