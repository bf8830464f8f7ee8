/** Opening the SQLite file: refusing what is not ours, and the pragmas set on purpose. */
import { Database } from 'bun:sqlite';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readSync,
  realpathSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Durability } from '../config.ts';
import { limits } from '../limits.ts';
import { createPrivateFileIfAbsent, createPrivateFolders } from './private-file.ts';

/** A reason the database cannot be used; the server refuses to start with it. */
export class StorageError extends Error {
  override name = 'StorageError';
}

const SQLITE_HEADER = 'SQLite format 3\0';

export interface OpenOptions {
  /** Commit FULL's writes without their sync, which the committer runs apart (wal-sync.ts). */
  syncApart?: boolean;
  /**
   * Whether to read the header and refuse a non-database or a foreign -wal. Only on the process's first
   * connection: closing the read's descriptor would drop the process's locks, and an outside reader would
   * then take itself for the last connection and delete the live WAL.
   */
  checkHeader?: boolean;
}

/** Opens the database with the service's pragmas, creating it private when absent; a StorageError when unusable. */
export function openDatabase(path: string, durability: Durability, options: OpenOptions = {}): Database {
  let db: Database | undefined;
  try {
    createPrivateFolders(dirname(path));
    // Before the writability checks, which would call a -wal left by another user one holding answered writes.
    if (options.checkHeader) refuseForeignWal(path);
    assertWritable(path);
    // Made here, 0600: SQLite would give it (and its -wal and -shm) the umask's mode.
    createPrivateFileIfAbsent(path);
    if (options.checkHeader) assertSqliteFile(path);
    db = new Database(path, { create: true, strict: true });
    applyPragmas(db, durability, options.syncApart ?? false);
    return db;
  } catch (error) {
    db?.close();
    throw refusalOf(path, error);
  }
}

/** The refusal of a DATABASE_PATH that cannot hold the database, in one line naming it. */
export function unusableDatabase(path: string, reason: string): StorageError {
  return new StorageError(`DATABASE_PATH ${path} cannot be used: ${reason}`);
}

/** A failure at start as one line refusing DATABASE_PATH, with what to do where SQLite's words do not say it. */
export function refusalOf(path: string, error: unknown): StorageError {
  if (error instanceof StorageError) return error;
  const reason = (error as Error).message;
  const code = sqliteCode(error) ?? '';
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return unusableDatabase(path, `${reason}; restore a backup (docs/operations.md: Backup and restore)`);
  }
  if (code.startsWith('SQLITE_IOERR') && noSpaceLeft(path))
    return unusableDatabase(path, `${reason}; the file system holding it has no space left`);
  return unusableDatabase(path, reason);
}

/** Whether the database's file system is full (blocks free to all), where SQLite says only `disk I/O error`. */
function noSpaceLeft(path: string): boolean {
  try {
    return statfsSync(dirname(realFile(path))).bavail === 0;
  } catch {
    return false; // no folder: the reason says so
  }
}

/** Refuses a file or folder the process cannot write, which SQLite would report later without naming it. */
function assertWritable(path: string): void {
  const exists = existsSync(path);
  const file = realFile(path);
  const folder = dirname(file);
  const folderRefused = accessRefusal(folder);
  if (folderRefused) {
    const name = basename(file);
    const wanted = `SQLite keeps ${name}-wal and ${name}-shm beside the file`;
    throw unusableDatabase(path, `the folder ${folder} must be writable (${folderRefused}); ${wanted}`);
  }
  const fileRefused = exists ? accessRefusal(file, READ_WRITE) : undefined;
  if (fileRefused) throw unusableDatabase(path, `the file ${file} must be readable and writable (${fileRefused})`);
  // Left by a server run as another user (root, once): SQLite would say only `unable to open database file`.
  const besides = [
    [`${file}-wal`, ', never delete it: it holds answered writes'],
    [`${file}-shm`, ''],
  ] as const;
  for (const [beside, advice] of besides) {
    const refused = existsSync(beside) ? accessRefusal(beside, READ_WRITE) : undefined;
    if (refused)
      throw unusableDatabase(
        path,
        `the file ${beside} must be readable and writable (${refused}); give it the database file's owner${advice}`,
      );
  }
}

export const READ_WRITE = constants.R_OK | constants.W_OK;

/** Why this process may not use `path` as `mode` asks (EACCES, EROFS, EPERM), or undefined when it may. */
export function accessRefusal(path: string, mode: number = constants.W_OK): string | undefined {
  try {
    accessSync(path, mode);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'error';
  }
}

/** The SQLite result code an error carries (`SQLITE_BUSY`, `SQLITE_CONSTRAINT_UNIQUE`, …), if any. */
export function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The absolute path SQLite resolved the main database to, symbolic links followed: its WAL and lock lie beside it. */
export function databaseFile(db: Database): string {
  return db.query<{ file: string }, []>("SELECT file FROM pragma_database_list WHERE name = 'main'").get()!.file;
}

/** The file a path names, symbolic links resolved (SQLite keeps its -wal and -shm beside it); the path while absent. */
function realFile(path: string): string {
  return existsSync(path) ? realpathSync(path) : path;
}

const isSqliteHeader = (header: Buffer) => header.toString('latin1', 0, 16) === SQLITE_HEADER;

/** Never open (and so never overwrite) a file that is not an SQLite database. */
function assertSqliteFile(path: string): void {
  const header = readHeader(path);
  if (header !== null && !isSqliteHeader(header)) {
    throw new StorageError(`DATABASE_PATH ${path} is not an SQLite database; refusing to open it`);
  }
}

/** The first bytes of the file, through its write version (byte 18); null when it is absent, empty or unreadable. */
function readHeader(path: string): Buffer | null {
  let fd: number;
  try {
    if (statSync(path).size === 0) return null;
    fd = openSync(path, 'r');
  } catch {
    return null; // absent (SQLite creates it), or unreadable (assertWritable refuses it)
  }
  try {
    const header = Buffer.alloc(20);
    readSync(fd, header, 0, header.length, 0);
    return header;
  } finally {
    closeSync(fd);
  }
}

/** The header's write version (byte 18) of a database in WAL mode. */
const WAL_MODE = 2;
/** A -wal no longer than its header holds no writes. */
const WAL_HEADER_BYTES = 32;

/**
 * Refuses a database not in WAL mode beside a -wal holding writes (a backup put in place): SQLite would take
 * the replaced database's writes into it. The -wal is read first, so a header read after it is current.
 */
export function refuseForeignWal(path: string): void {
  const wal = `${realFile(path)}-wal`;
  const size = statSync(wal, { throwIfNoEntry: false })?.size ?? 0;
  if (size <= WAL_HEADER_BYTES) return;
  const header = readHeader(path);
  if (header === null || !isSqliteHeader(header) || header[18] === WAL_MODE) return;
  throw unusableDatabase(
    path,
    `${wal} (${size} bytes) belongs to another database: this file is not in WAL mode (a backup put in place?), ` +
      `and SQLite would take that -wal's writes into it; move ${wal} and its -shm away first ` +
      '(docs/operations.md: Backup and restore)',
  );
}

function applyPragmas(db: Database, durability: Durability, syncApart: boolean): void {
  const mode = switchToWal(db);
  if (mode !== 'wal') throw new Error(`journal_mode is ${mode}, WAL was refused`);
  // FULL: a commit is on disk before it returns; NORMAL (fast): survives a process crash only.
  // With FULL and group commit the committer syncs the writer's commits apart (WalSync), so they skip SQLite's own.
  db.run(`PRAGMA synchronous = ${durability === 'full' && !syncApart ? 'FULL' : 'NORMAL'}`);
  db.run('PRAGMA foreign_keys = ON');
  // Small, frequent checkpoints by the committing writer: measured against a checkpointer thread and
  // against 40 MiB checkpoints, both of which stalled group commits for 100-200 ms now and then.
  db.run('PRAGMA wal_autocheckpoint = 1000');
  // Give the space back after a checkpoint instead of keeping a WAL of the peak's size.
  db.run('PRAGMA journal_size_limit = 67108864');
  // Memory for hot pages of the day totals and samples index; 16 MiB per connection.
  db.run('PRAGMA cache_size = -16384');
  db.run('PRAGMA temp_store = MEMORY');
}

/** A database without a page yet gets incremental auto-vacuum: pages freed by deletions can go back to the disk. */
function incrementalIfNew(db: Database): void {
  if (db.query<{ page_count: number }, []>('PRAGMA page_count').get()!.page_count === 0)
    db.run('PRAGMA auto_vacuum = INCREMENTAL');
}

/**
 * Puts a new file in WAL mode (and incremental auto-vacuum), retried within the busy timeout: while another
 * process switches it, SQLite answers SQLITE_BUSY at once rather than wait (two lock upgrades could deadlock).
 */
function switchToWal(db: Database): string | undefined {
  const giveUpAt = performance.now() + limits.databaseBusyMs;
  db.run(`PRAGMA busy_timeout = ${limits.databaseBusyMs}`);
  try {
    for (;;) {
      try {
        incrementalIfNew(db);
        return db.query<{ journal_mode: string }, []>('PRAGMA journal_mode = WAL').get()?.journal_mode;
      } catch (error) {
        // Given up when no time is left for another try after the pause.
        if (sqliteCode(error) !== 'SQLITE_BUSY' || giveUpAt - performance.now() <= limits.walSwitchRetryMs) throw error;
        Bun.sleepSync(limits.walSwitchRetryMs);
        db.run(`PRAGMA busy_timeout = ${Math.max(1, Math.floor(giveUpAt - performance.now()))}`);
      }
    }
  } finally {
    // The connection's wait for the other one's lock (writer or reader) from now on, whatever the tries left.
    db.run(`PRAGMA busy_timeout = ${limits.databaseBusyMs}`);
  }
}

/**
 * A read-only connection to the database `db` is open on, with a small page cache: for one long
 * sequential read (an export), which needs no cache and must not take the shared connection's.
 */
export function exportReader(db: Database): Database {
  const reader = new Database(databaseFile(db), { readonly: true, strict: true });
  reader.run(`PRAGMA busy_timeout = ${limits.databaseBusyMs}`);
  reader.run(`PRAGMA cache_size = -${limits.exportCacheKiB}`);
  return reader;
}
