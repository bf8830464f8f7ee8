/**
 * The backup's copy, on a Worker: `VACUUM INTO` and the check of the copy are synchronous and take
 * as long as the database is large, and on the main thread they would hold a SIGTERM's listener back
 * until they ended (backup.ts).
 */
import { Database } from 'bun:sqlite';
import { limits } from '../limits.ts';
import { syncPath } from './private-file.ts';

declare const self: Worker;

export interface CopyRequest {
  source: string;
  /** An empty file, which takes the copy. */
  partial: string;
}

export type CopyOutcome = { type: 'copied' } | { type: 'failed'; message: string };

self.onmessage = (event: MessageEvent<CopyRequest>) => {
  try {
    copyDatabase(event.data);
    self.postMessage({ type: 'copied' } satisfies CopyOutcome);
  } catch (error) {
    self.postMessage({ type: 'failed', message: (error as Error).message } satisfies CopyOutcome);
  }
};

/** One consistent snapshot of `source` into `partial`, checked and on the disk. */
function copyDatabase({ source, partial }: CopyRequest): void {
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
}
