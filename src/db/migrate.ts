import type { Database } from 'bun:sqlite';
import { embeddedMigrations } from './migrations.macro.ts' with { type: 'macro' };
import { drizzle } from 'drizzle-orm/bun-sqlite';
import { StorageError } from './open.ts';

/** The part of drizzle's bun-sqlite driver that its own file-based `migrate()` uses. */
interface MigratingOrm {
  dialect: { migrate(migrations: unknown, session: unknown, config: object): void };
  session: unknown;
}

/** The drizzle-kit migrations, inlined at build time: once, each call of the macro inlining them all again. */
const MIGRATIONS = embeddedMigrations();

/**
 * Applies the migrations that this database has not seen yet; `migrations` narrows them, for tests that
 * build a database of an earlier schema.
 */
export function migrate(db: Database, migrations: unknown[] = MIGRATIONS): void {
  const orm = drizzle(db) as unknown as MigratingOrm;
  try {
    orm.dialect.migrate(migrations, orm.session, {});
  } catch (error) {
    throw new StorageError(`the database could not be migrated: ${(error as Error).message}`);
  }
}

/** Whether `migrate` would change this database: a migration newer than the last one it recorded, or none recorded. */
export function migrationsPending(db: Database): boolean {
  const table = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get();
  if (table === null) return MIGRATIONS.length > 0;
  const last = db.query<{ at: number | null }, []>('SELECT max(created_at) AS at FROM __drizzle_migrations').get()?.at ?? -Infinity;
  return MIGRATIONS.some((migration) => migration.folderMillis > last);
}
