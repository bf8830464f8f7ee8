import type { Durability } from '../config.ts';
import type { Outcome, Write } from './group.ts';

/** Messages from the main thread to the writer. */
export type ToWriter =
  /** `syncApart`: commit FULL's writes without their sync, which the main thread runs (wal-sync.ts). */
  | { type: 'open'; path: string; durability: Durability; syncApart: boolean }
  | { type: 'group'; writes: Write[] }
  | { type: 'pragma'; pragma: string }
  | { type: 'close' };

/** Messages from the writer to the main thread. */
export type FromWriter =
  /** `walPath`: the WAL as SQLite names it, symbolic links resolved. */
  | { type: 'opened'; walPath: string }
  | { type: 'failed'; message: string }
  /** The group committed; with FULL durability its answers still wait for the WAL's sync. */
  | { type: 'committed'; outcomes: Outcome[] }
  | { type: 'pragma'; rows: unknown[] | null; error?: string }
  | { type: 'closed' };
