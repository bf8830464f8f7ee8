/**
 * The writer: a Worker owning the only write connection, so that SQLite never blocks the request
 * thread. It runs one group at a time, in the order they come (the next may wait in its queue); the
 * main thread gathers the next meanwhile and, with FULL durability, syncs the last one's commit
 * (wal-sync.ts), so the writer waits for the disk only during checkpoints.
 */
import type { Database } from 'bun:sqlite';
import { commitGroup } from './db/group.ts';
import { databaseFile, openDatabase } from './db/open.ts';
import type { ToWriter } from './db/protocol.ts';
import { writeOps } from './writes.ts';

declare const self: Worker;

let db: Database | null = null;

self.onmessage = (event: MessageEvent<ToWriter>) => {
  const message = event.data;
  switch (message.type) {
    case 'open':
      try {
        db = openDatabase(message.path, message.durability, { syncApart: message.syncApart });
        self.postMessage({ type: 'opened', walPath: `${databaseFile(db)}-wal` });
      } catch (error) {
        self.postMessage({ type: 'failed', message: (error as Error).message });
      }
      return;
    case 'group':
      self.postMessage({ type: 'committed', outcomes: commitGroup(db!, writeOps, message.writes) });
      return;
    case 'pragma':
      try {
        self.postMessage({ type: 'pragma', rows: db!.query(`PRAGMA ${message.pragma}`).all() });
      } catch (error) {
        self.postMessage({ type: 'pragma', rows: null, error: (error as Error).message });
      }
      return;
    case 'close':
      db?.close(true); // finalizes the statements it prepared, so the connection closes now
      db = null;
      self.postMessage({ type: 'closed' });
      return;
  }
};
