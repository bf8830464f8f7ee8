import type { Durability } from '../config.ts';
import type { Outcome, Write } from './group.ts';

/** Messages from the main thread to the writer. */
export type ToWriter =
  | { type: 'open'; path: string; durability: Durability }
  | { type: 'group'; writes: Write[] }
  | { type: 'pragma'; pragma: string }
  | { type: 'close' };

/** Messages from the writer to the main thread. */
export type FromWriter =
  | { type: 'opened' }
  | { type: 'failed'; message: string }
  | { type: 'done'; outcomes: Outcome[] }
  | { type: 'pragma'; rows: unknown[] | null; error?: string }
  | { type: 'closed' };

