/**
 * Runs at bundle time (imported `with { type: 'macro' }`): reads drizzle-kit's migration folder and
 * inlines it, so the compiled binary carries its migrations and never looks for them on disk.
 */
import { join } from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';

export function embeddedMigrations() {
  return readMigrationFiles({ migrationsFolder: join(import.meta.dir, '../../drizzle') });
}
