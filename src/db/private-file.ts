/**
 * The files the service creates hold every location and all token hashes: they are its owner's alone,
 * whatever the umask. SQLite gives a database's -wal and -shm files the database file's own mode.
 */
import { closeSync, fchmodSync, openSync, statSync } from 'node:fs';

/** A folder the service creates for its database. */
export const PRIVATE_FOLDER_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

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
