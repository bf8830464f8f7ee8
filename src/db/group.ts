/**
 * Group commit: the writes of requests that arrived together share one transaction and one sync.
 * Each write runs in its own savepoint, so a write that fails rolls back alone; a failure of the
 * database itself (disk full, I/O error) fails the whole group and leaves nothing half-written.
 */
import type { Database } from 'bun:sqlite';
import { sqliteCode } from './open.ts';

/** A write operation: runs inside the group's transaction on the writer's connection; `end` absent if run alone. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds ops of every argument and result type.
export type WriteOp<Args = any, Result = any> = (db: Database, args: Args, end?: GroupEnd) => Result;

/**
 * Work the writes of a group leave to its end, done once each just before the commit: many writes
 * touching one row make one statement. A write that rolls back leaves nothing there.
 */
export class GroupEnd {
  private readonly kept = new Map<string, { value: unknown; run: (db: Database, value: never) => void }>();
  private staged = new Map<string, { value: unknown; run: (db: Database, value: never) => void }>();

  /** What is left under `key` so far: by the writes released, or by this one. */
  peek<T>(key: string): T | undefined {
    return (this.staged.get(key) ?? this.kept.get(key))?.value as T | undefined;
  }

  /** Leaves `run(db, value)` under `key`, replacing what was there. */
  defer<T>(key: string, value: T, run: (db: Database, value: T) => void): void {
    this.staged.set(key, { value, run });
  }

  /** The current write was released: what it left is kept. */
  release(): void {
    for (const [key, work] of this.staged) this.kept.set(key, work);
    this.staged = new Map();
  }

  /** The current write was rolled back: what it left goes. */
  discard(): void {
    this.staged = new Map();
  }

  run(db: Database): void {
    for (const { value, run } of this.kept.values()) run(db, value as never);
  }
}

export interface Write {
  op: string;
  args: unknown;
}

export interface WriteFailure {
  message: string;
  code: string | undefined;
  /** `write`: only this write was rolled back; `group`: the whole group was. */
  scope: 'write' | 'group';
}

export type Outcome = { ok: true; value: unknown } | { ok: false; error: WriteFailure };

/** SQLite result codes after which the transaction cannot be trusted to go on. */
const GROUP_FATAL = /^SQLITE_(FULL|IOERR|NOMEM|CORRUPT|NOTADB|READONLY|CANTOPEN|BUSY|LOCKED|PROTOCOL)/;

export function commitGroup(db: Database, ops: Record<string, WriteOp>, writes: readonly Write[]): Outcome[] {
  const outcomes: Outcome[] = [];
  try {
    db.query('BEGIN IMMEDIATE').run();
  } catch (error) {
    return writes.map(() => failed(error, 'group'));
  }
  const end = new GroupEnd();
  for (const write of writes) {
    const op = ops[write.op];
    try {
      db.query('SAVEPOINT write').run();
    } catch (error) {
      return failGroup(db, writes, error);
    }
    try {
      if (!op) throw new Error(`unknown write operation ${write.op}`);
      const value = op(db, write.args, end);
      db.query('RELEASE write').run();
      end.release();
      outcomes.push({ ok: true, value });
    } catch (error) {
      end.discard();
      if (isGroupFatal(error) || !db.inTransaction) return failGroup(db, writes, error);
      try {
        db.query('ROLLBACK TO write').run();
        db.query('RELEASE write').run();
      } catch (rollbackError) {
        return failGroup(db, writes, rollbackError);
      }
      outcomes.push(failed(error, 'write'));
    }
  }
  try {
    end.run(db);
    db.query('COMMIT').run();
  } catch (error) {
    return failGroup(db, writes, error);
  }
  return outcomes;
}

function failGroup(db: Database, writes: readonly Write[], error: unknown): Outcome[] {
  if (db.inTransaction) {
    try {
      db.query('ROLLBACK').run();
    } catch {
      // SQLite already rolled back on its own (it does for SQLITE_FULL and most I/O errors).
    }
  }
  return writes.map(() => failed(error, 'group'));
}

function isGroupFatal(error: unknown): boolean {
  return GROUP_FATAL.test(sqliteCode(error) ?? '');
}

function failed(error: unknown, scope: WriteFailure['scope']): Outcome {
  return {
    ok: false,
    error: { message: error instanceof Error ? error.message : String(error), code: sqliteCode(error), scope },
  };
}
