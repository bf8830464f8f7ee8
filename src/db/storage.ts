/** The database as the service uses it: a read connection on this thread, writes through the writer. */
import type { Database } from 'bun:sqlite';
import type { StorageConfig } from '../config.ts';
import type { Logger } from '../log.ts';
import { startCheckpointer, type Checkpointer } from './checkpointer.ts';
import { Committer } from './committer.ts';
import { migrate } from './migrate.ts';
import { openDatabase, ormOf, type Orm } from './open.ts';

export interface Storage {
  /** The main thread's connection: reads, and migrations at start-up. */
  db: Database;
  orm: Orm;
  committer: Committer;
  close(): Promise<void>;
}

export interface StorageOptions extends Pick<StorageConfig, 'databasePath' | 'durability' | 'maxGroupWrites'> {
  /** Where a failure of a background thread is reported. */
  log?: Logger;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  const db = openDatabase(options.databasePath, options.durability);
  let committer: Committer;
  let checkpointer: Checkpointer;
  try {
    migrate(db);
    committer = await Committer.start({
      path: options.databasePath,
      durability: options.durability,
      maxGroupWrites: options.maxGroupWrites,
    });
    checkpointer = startCheckpointer(options.databasePath, options.durability, options.log);
  } catch (error) {
    db.close();
    throw error;
  }
  return {
    db,
    orm: ormOf(db),
    committer,
    async close() {
      await checkpointer.stop();
      await committer.close();
      db.close();
    },
  };
}
