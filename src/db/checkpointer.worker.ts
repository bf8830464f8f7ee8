/**
 * The checkpointer: copies committed pages from the WAL into the database file on a connection and
 * thread of its own, so that neither the writer's group commits nor the request thread ever wait for
 * a checkpoint's writes and sync.
 */
import type { Database } from 'bun:sqlite';
import { openDatabase } from './open.ts';
import type { ToCheckpointer } from './protocol.ts';

declare const self: Worker;

let db: Database | null = null;
let timer: Timer | null = null;

self.onmessage = (event: MessageEvent<ToCheckpointer>) => {
  const message = event.data;
  if (message.type === 'start') {
    db = openDatabase(message.path, message.durability);
    const checkpoint = db.query('PRAGMA wal_checkpoint(PASSIVE)');
    timer = setInterval(() => checkpoint.get(), message.intervalMs);
    self.postMessage({ type: 'started' });
  } else {
    if (timer) clearInterval(timer);
    db?.close();
    db = null;
    self.postMessage({ type: 'stopped' });
  }
};
