/**
 * One server per database. Two servers on one file would both store safely, but each would run its own
 * planner forwarder over the one outbox and send every sample twice. So the server holds an SQLite
 * write lock on `<database file>.lock` for as long as it runs, and a second server refuses to start.
 * The lock is the kernel's (fcntl), dropped when the process ends however it ends: a crash never leaves
 * a stale one. The command-line tools do not take it, so they keep working beside the server, but to
 * migrate a database whose schema is older than theirs: the server holding it then is an earlier one.
 */
import { Database } from 'bun:sqlite';
import { existsSync } from 'node:fs';
import { databaseFile, sqliteCode, StorageError, unusableDatabase, accessRefusal, READ_WRITE } from './open.ts';
import { createPrivateFileIfAbsent } from './private-file.ts';

export interface ServerLock {
  /** Gives the lock up. Until then keep this object reachable: bun:sqlite closes a collected connection. */
  release(): void;
}

/**
 * Takes the lock of the database `db` is connected to, named after the file SQLite itself opened, so
 * that every path to one database (a symbolic link, a relative path) meets the same lock. Never open
 * the lock file any other way in this process: closing any descriptor of it drops the lock.
 */
export function takeServerLock(db: Database, databasePath: string, taker: Taker = 'server'): ServerLock {
  const lockPath = `${databaseFile(db)}.lock`;
  let lock: Database | undefined;
  try {
    // Only a server makes the file, as its own user: one made by a command run as root could not be
    // written by the server, and SQLite would open it read-only, taking no lock at all.
    if (taker === 'migrating command' && !existsSync(lockPath)) return { release: () => {} }; // no server ran since
    // Private, as the database beside it. Opening it here is safe: no lock is held on a file that did not exist.
    createPrivateFileIfAbsent(lockPath);
    // Before opening: SQLite opens a file it cannot write read-only (taking no lock) and one it cannot read not at all.
    const refused = accessRefusal(lockPath, READ_WRITE);
    if (refused)
      throw unusableDatabase(databasePath, `its lock file ${lockPath} must be readable and writable (${refused})`);
    lock = new Database(lockPath, { create: true });
    lock.run('PRAGMA busy_timeout = 0'); // another server's lock is refused at once, not waited for
    lock.run('PRAGMA journal_mode = MEMORY'); // nothing is written: no -journal file beside it
    // Held open until release: the exclusive lock on the (empty) file is taken now and kept.
    lock.run('BEGIN EXCLUSIVE');
    return { release: () => lock!.close() };
  } catch (error) {
    lock?.close();
    if (error instanceof StorageError) throw error;
    if (sqliteCode(error) === 'SQLITE_BUSY') throw new StorageError(busyRefusal(databasePath, taker));
    throw unusableDatabase(databasePath, `its lock file ${lockPath}: ${(error as Error).message}`);
  }
}

/** Who takes the lock: a server for as long as it runs, or a command for the time of a migration. */
type Taker = 'server' | 'migrating command';

function busyRefusal(databasePath: string, taker: Taker): string {
  if (taker === 'server') {
    return (
      `DATABASE_PATH ${databasePath} is used by another ev-ingest server (or a command migrating it); ` +
      'refusing to start a second one'
    );
  }
  // A server of the same version would have migrated the database already: the running one is older.
  return (
    `DATABASE_PATH ${databasePath} is served by an earlier ev-ingest (or one migrating it now), ` +
    'whose schema this version would change under it; ' +
    'stop that server and start this version first, or use that version for the command'
  );
}
