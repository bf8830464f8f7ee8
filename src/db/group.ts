/**
 * Group commit: the writes of requests that arrived together share one transaction and one sync.
 * Each write runs in its own savepoint, so a write that fails rolls back alone; a failure of the
 * database itself (disk full, I/O error) fails the whole group and leaves nothing half-written.
 */
import type { Database } from 'bun:sqlite';
import { sqliteCode } from './open.ts';

/** A write operation: runs inside the group's transaction on the writer's connection. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds ops of every argument and result type.
export type WriteOp<Args = any, Result = any> = (db: Database, args: Args) => Result;

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
  for (const write of writes) {
    const op = ops[write.op];
    try {
      db.query('SAVEPOINT write').run();
    } catch (error) {
      return failGroup(db, writes, error);
    }
    try {
      if (!op) throw new Error(`unknown write operation ${write.op}`);
      const value = op(db, write.args);
      db.query('RELEASE write').run();
      outcomes.push({ ok: true, value });
    } catch (error) {
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
