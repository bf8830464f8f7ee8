/** The database as the service uses it: a read connection on this thread, writes through the writer. */
import { SQLiteError, type Database } from 'bun:sqlite';
import type { Config } from '../config.ts';
import { Committer, type CommitterOptions } from './committer.ts';
import { migrate, migrationsPending, recordVersion, refuseNewerDatabase } from './migrate.ts';
import { openDatabase, refusalOf } from './open.ts';
import { takeServerLock, type ServerLock } from './server-lock.ts';

export interface Storage {
  /** The main thread's connection: reads, and migrations at start-up. */
  db: Database;
  committer: Committer;
  /** DATABASE_PATH, as the refusals name it. */
  path: string;
  close(): Promise<void>;
}

/** `syncFile`: the committer's fault seam, for tests holding the WAL's sync in a service; the binary never sets it. */
export type StorageOptions = Pick<Config, 'databasePath' | 'durability' | 'maxGroupWrites'> &
  Pick<CommitterOptions, 'syncFile'>;

/**
 * Opens the database for the server (`serverLock`: one server per database, see server-lock.ts) or for
 * a command-line tool, which runs beside the server and takes the lock only to migrate.
 */
export async function openStorage(options: StorageOptions, { serverLock = false } = {}): Promise<Storage> {
  // The process's first connection to the file, so the one that checks it; the writer's comes after.
  const db = openDatabase(options.databasePath, options.durability, { checkHeader: true });
  let lock: ServerLock | undefined;
  let committer: Committer;
  try {
    // First, so that a refused start leaves nothing beside the database, not even a lock file.
    refuseNewerDatabase(db, options.databasePath);
    // Before the migrations: a second server must not change the schema under the one running, nor
    // a command (which takes the lock only to migrate) under a server of an earlier version.
    if (serverLock) lock = takeServerLock(db, options.databasePath);
    else if (migrationsPending(db)) lock = takeServerLock(db, options.databasePath, 'migrating command');
    migrate(db);
    // A release that adds no migration must still be named should a later one's database come back to it.
    if (serverLock) recordVersion(db);
    if (!serverLock) {
      lock?.release();
      lock = undefined;
    }
    committer = await Committer.start({
      path: options.databasePath,
      durability: options.durability,
      maxGroupWrites: options.maxGroupWrites,
      syncFile: options.syncFile,
    });
  } catch (error) {
    db.close();
    lock?.release();
    throw startRefusal(options.databasePath, error);
  }
  return {
    db,
    committer,
    path: options.databasePath,
    async close() {
      await committer.close();
      db.close();
      lock?.release(); // last: a server started next in this process finds the database closed
    },
  };
}

/** Builds on an open storage; should that fail (an unreadable devices table), the storage is closed. */
export async function withStorage<T>(storage: Storage, build: () => T): Promise<T> {
  try {
    return build();
  } catch (error) {
    await storage.close();
    throw startRefusal(storage.path, error);
  }
}

/** A read at start that SQLite fails (a damaged page) refuses the start in one line; other errors keep their stack. */
function startRefusal(path: string, error: unknown): unknown {
  return error instanceof SQLiteError ? refusalOf(path, error) : error;
}
