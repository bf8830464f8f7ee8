/**
 * The files the service creates hold every location and all token hashes: they are its owner's alone,
 * whatever the umask. SQLite gives a database's -wal and -shm files the database file's own mode.
 */
import {
  chmodSync,
  closeSync,
  existsSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs';
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

/**
 * Creates the empty file `path`, private; never an existing file, nor where a symbolic link points.
 * A failure after the create removes the file again. `setMode` is a seam for tests.
 */
export function createPrivateFile(path: string, setMode: SetMode = fchmodSync): void {
  try {
    createPrivate(path, 'wx', setMode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).syscall !== 'open') rmSync(path, { force: true });
    throw error;
  }
}

/**
 * Creates the empty file `path`, private, unless it exists: an existing file keeps the mode its owner
 * gave it. A symbolic link to a file yet to be created is followed, as SQLite follows it.
 */
export function createPrivateFileIfAbsent(path: string): void {
  if (statSync(path, { throwIfNoEntry: false })) return;
  createPrivate(path, 'a'); // 'a', not 'w': a file another process makes meanwhile is not emptied
}

type SetMode = (fd: number, mode: number) => void;

function createPrivate(path: string, flags: 'wx' | 'a', setMode: SetMode = fchmodSync): void {
  const fd = openSync(path, flags, PRIVATE_FILE_MODE);
  try {
    setMode(fd, PRIVATE_FILE_MODE); // the umask may have taken the owner's own bits
  } catch (error) {
    // The create's own mode already keeps everyone else out; a file system without modes refuses to set one.
    if (!unsupportedByFileSystem(error)) throw error;
  } finally {
    closeSync(fd);
  }
}

/** How a file system says it cannot do something at all: fusefat a mode, some network file systems a link or a mode. */
export function unsupportedByFileSystem(error: unknown): boolean {
  return ['ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes((error as NodeJS.ErrnoException).code ?? '');
}
