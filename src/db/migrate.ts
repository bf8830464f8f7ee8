/**
 * Applying drizzle-kit's migrations with a migrator of our own: drizzle's reads what is applied before
 * its plain BEGIN, so two processes migrating at once (a command beside a server's first start) both
 * applied them and the later one failed. This one decides under the write lock, and records each
 * migration as drizzle's does, so a database either migrated goes on with the other.
 */
import type { Database } from 'bun:sqlite';
import type { MigrationMeta } from 'drizzle-orm/migrator';
import { embeddedMigrations } from './migrations.macro.ts' with { type: 'macro' };
import { VERSION } from '../version.ts';
import { StorageError, unusableDatabase } from './open.ts';

/** The drizzle-kit migrations, inlined at build time: once, each call of the macro inlining them all again. */
const MIGRATIONS = embeddedMigrations();

/** The created_at of this version's newest migration: a database recording a later one was migrated by a newer one. */
const NEWEST_EMBEDDED = Math.max(...MIGRATIONS.map((migration) => migration.folderMillis));

/** Drizzle's own statement, to the whitespace: sqlite_master cannot tell which migrator made the table. */
const CREATE_MIGRATIONS_TABLE =
  'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (\n\t\t\t\tid SERIAL PRIMARY KEY,\n' +
  '\t\t\t\thash text NOT NULL,\n\t\t\t\tcreated_at numeric\n\t\t\t)';

/**
 * Applies the migrations that this database has not seen yet, all in one transaction, and records
 * `version` (see recordVersion); `migrations` and `version` stand in for another build's, for tests
 * that build a database of an earlier or a later schema.
 */
export function migrate(db: Database, migrations: readonly MigrationMeta[] = MIGRATIONS, version = VERSION): void {
  try {
    // Nothing to do (every start but the first): no write lock, so a command does not wait for a busy server's writer.
    if (!migrationsPending(db, migrations)) return;
    // IMMEDIATE: the write lock (waited for up to the connection's busy_timeout) before anything is read,
    // so a process that migrated meanwhile is seen, and its migrations are not applied again.
    db.transaction(() => {
      applyAndRecord(db, migrations);
      recordVersion(db, version);
    }).immediate();
  } catch (error) {
    throw new StorageError(`the database could not be migrated: ${(error as Error).message}`);
  }
}

/** Whether `migrate` would change this database: no migrations table yet, or one newer than the last it recorded. */
export function migrationsPending(db: Database, migrations: readonly MigrationMeta[] = MIGRATIONS): boolean {
  return !migrationsRecorded(db) || unapplied(db, migrations).length > 0;
}

/**
 * Refuses a database that a newer ev-ingest migrated: this version would run on a schema it does not
 * know (a build before the sums' unit wrote sums that history then read wildly wrong). Told by
 * created_at, as drizzle tells what is applied, not by hash: one of this version's own migrations
 * recorded under another hash (edited after a build applied it) is no newer version's to run.
 */
export function refuseNewerDatabase(db: Database, databasePath: string): void {
  if (!migrationsRecorded(db)) return;
  const { count, newest } = db
    .query<{ count: number; newest: number }, [number]>(
      'SELECT count(*) AS count, max(created_at) AS newest FROM __drizzle_migrations WHERE created_at > ?',
    )
    .get(NEWEST_EMBEDDED)!;
  if (count === 0) return;
  const dated = new Date(newest).toISOString();
  const unknown = `${count} migration${count === 1 ? '' : 's'} this version does not know, the newest dated ${dated}`;
  const by = migratedBy(db);
  const whom = by === null ? `a newer ev-ingest than this ${VERSION}` : `ev-ingest ${by}, newer than this ${VERSION}`;
  throw unusableDatabase(
    databasePath,
    `it was migrated by ${whom} (${unknown}); run ${by ?? 'that newer version'} or later, ` +
      'or restore the backup taken before the upgrade (docs/operations.md: Upgrades)',
  );
}

/**
 * The newest version that has migrated or served the database, kept in SQLite's `user_version` header
 * field as major × 1,000,000 + minor × 1,000 + patch (no table: a version that does not know the schema
 * reads it). Raised, never lowered: written only when it grows, so a start of the same version only reads it.
 */
export function recordVersion(db: Database, version = VERSION): void {
  const { user_version: recorded } = db.query<{ user_version: number }, []>('PRAGMA user_version').get()!;
  if (recorded < versionNumber(version)) db.run(`PRAGMA user_version = ${versionNumber(version)}`);
}

function versionNumber(version: string): number {
  const [major = 0, minor = 0, patch = 0] = version.split(/[.+-]/).map(Number);
  return major * 1_000_000 + minor * 1_000 + patch;
}

/** The newer version `recordVersion` recorded, or null: none recorded (an older build), or none newer than this. */
function migratedBy(db: Database): string | null {
  const { user_version: number } = db.query<{ user_version: number }, []>('PRAGMA user_version').get()!;
  if (number <= versionNumber(VERSION)) return null;
  return `${Math.floor(number / 1_000_000)}.${Math.floor(number / 1_000) % 1_000}.${number % 1_000}`;
}
function migrationsRecorded(db: Database): boolean {
  return db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get() !== null;
}

/** Drizzle's rule: every migration newer than the last one recorded, whatever was recorded before it. */
function unapplied(db: Database, migrations: readonly MigrationMeta[]): MigrationMeta[] {
  const last =
    db.query<{ at: number | null }, []>('SELECT max(created_at) AS at FROM __drizzle_migrations').get()?.at ??
    -Infinity;
  return migrations.filter((migration) => migration.folderMillis > last);
}

/** Makes the migrations table if missing, then applies each migration not yet applied and records it. */
function applyAndRecord(db: Database, migrations: readonly MigrationMeta[]): void {
  db.run(CREATE_MIGRATIONS_TABLE);
  const record = db.query('INSERT INTO "__drizzle_migrations" ("hash", "created_at") VALUES (?, ?)');
  for (const migration of unapplied(db, migrations)) {
    // run(), not drizzle's prepare(): a part holding two statements (a breakpoint forgotten) runs whole.
    for (const statement of migration.sql) db.run(statement);
    record.run(migration.hash, migration.folderMillis);
  }
}
