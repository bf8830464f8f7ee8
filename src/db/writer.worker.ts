/**
 * The writer: a Worker owning the only write connection, so that SQLite's sync never blocks the
 * request thread. It runs one group at a time; the main thread gathers the next meanwhile.
 */
import type { Database } from 'bun:sqlite';
import { commitGroup } from './group.ts';
import { openDatabase } from './open.ts';
import type { ToWriter } from './protocol.ts';
import { writeOps } from './writes.ts';

declare const self: Worker;

let db: Database | null = null;

self.onmessage = (event: MessageEvent<ToWriter>) => {
  const message = event.data;
  switch (message.type) {
    case 'open':
      try {
        db = openDatabase(message.path, message.durability);
        self.postMessage({ type: 'opened' });
      } catch (error) {
        self.postMessage({ type: 'failed', message: (error as Error).message });
      }
      return;
    case 'group':
      self.postMessage({ type: 'done', outcomes: commitGroup(db!, writeOps, message.writes) });
      return;
    case 'pragma':
      try {
        self.postMessage({ type: 'pragma', rows: db!.query(`PRAGMA ${message.pragma}`).all() });
      } catch (error) {
        self.postMessage({ type: 'pragma', rows: null, error: (error as Error).message });
      }
      return;
    case 'close':
      db?.close();
      db = null;
      self.postMessage({ type: 'closed' });
      return;
  }
};
