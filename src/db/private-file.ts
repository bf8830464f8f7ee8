/**
 * The files the service creates hold every location and all token hashes: they are its owner's alone,
 * whatever the umask. SQLite gives a database's -wal and -shm files the database file's own mode.
 */
import { chmodSync, closeSync, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

const PRIVATE_FOLDER_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

/**
 * Makes `folder` and its missing parents, private whatever the umask (which `mkdir`'s mode passes
 * through), and syncs each new entry into its parent: a first start's answered writes must not vanish
 * with a folder a power cut took back. `sync` is a seam for tests.
 */
export function createPrivateFolders(folder: string, sync: (fd: number) => void = fsyncSync): void {
  // Walked as the kernel resolves the path (`..` after a link included), outermost first, one level at a
  // time: each is private before the next goes in it, and one that exists (`m/..`) is never touched.
  const missing: string[] = [];
  for (let path = folder; !existsSync(path); path = dirname(path)) missing.unshift(path);
  for (const path of missing) {
    if (!madeFolder(path)) continue;
    chmodSync(path, PRIVATE_FOLDER_MODE);
    syncPath(dirname(path), sync);
  }
}

/** Makes one folder; false when it exists (a `..` step, or another process made it meanwhile). */
function madeFolder(path: string): boolean {
  try {
    mkdirSync(path, { mode: PRIVATE_FOLDER_MODE });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Flushes a file or a folder (its entries) to the disk; `sync` is a seam for tests. */
export function syncPath(path: string, sync: (fd: number) => void = fsyncSync): void {
  const fd = openSync(path, 'r');
  try {
    sync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Creates the empty file `path`, private; never an existing file, nor where a symbolic link points. */
export function createPrivateFile(path: string): void {
  createPrivate(path, 'wx');
}

/**
 * Creates the empty file `path`, private, unless it exists: an existing file keeps the mode its owner
 * gave it. A symbolic link to a file yet to be created is followed, as SQLite follows it.
 */
export function createPrivateFileIfAbsent(path: string): void {
  if (statSync(path, { throwIfNoEntry: false })) return;
  createPrivate(path, 'a'); // 'a', not 'w': a file another process makes meanwhile is not emptied
}

function createPrivate(path: string, flags: 'wx' | 'a'): void {
  const fd = openSync(path, flags, PRIVATE_FILE_MODE);
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE); // the umask may have taken the owner's own bits
  } finally {
    closeSync(fd);
  }
}
