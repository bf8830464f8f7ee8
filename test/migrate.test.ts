/** The migrator: what it leaves, next to drizzle's own migrator, and processes migrating one database at once. */
import { Database } from 'bun:sqlite';
import { expect, test } from 'bun:test';
import { drizzle } from 'drizzle-orm/bun-sqlite';
import { migrate as drizzleMigrate } from 'drizzle-orm/bun-sqlite/migrator';
import type { MigrationMeta } from 'drizzle-orm/migrator';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import journal from '../drizzle/meta/_journal.json' with { type: 'json' };
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate, migrationsPending } from '../src/db/migrate.ts';
import { openDatabase, StorageError } from '../src/db/open.ts';
import { limits } from '../src/limits.ts';
import { tempDir } from './support.ts';

const MIGRATIONS = embeddedMigrations();
const CHILD = join(import.meta.dir, 'migrate-child.ts');

/** Drizzle's own migrator, as earlier versions ran it, applying the first `count` migrations of drizzle/. */
function migrateWithDrizzle(db: Database, count: number): void {
  const folder = tempDir();
  mkdirSync(join(folder, 'meta'));
  const entries = journal.entries.slice(0, count);
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  for (const { tag } of entries)
    copyFileSync(join(import.meta.dir, '../drizzle', `${tag}.sql`), join(folder, `${tag}.sql`));
  drizzleMigrate(drizzle(db), { migrationsFolder: folder });
}

/** What a migrator leaves that one could tell apart: the schema and, if their table exists, the migrations recorded. */
function footprint(db: Database) {
  const schema = db
    .query<{ name: string }, []>('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name')
    .all();
  const recorded = schema.some((row) => row.name === '__drizzle_migrations')
    ? db.query('SELECT id, hash, created_at FROM __drizzle_migrations ORDER BY rowid').all()
    : null;
  return { schema, recorded };
}

function freshDatabase(): Database {
  return openDatabase(join(tempDir(), 'ev-ingest.db'), 'fast');
}

/** The footprint of drizzle's own migrator on a fresh database: the one every database must end with. */
function migratedByDrizzle() {
  const db = freshDatabase();
  migrateWithDrizzle(db, MIGRATIONS.length);
  const result = footprint(db);
  db.close();
  return result;
}

test("a fresh database is migrated and recorded as drizzle's own migrator does it", () => {
  const db = freshDatabase();
  expect(migrationsPending(db)).toBe(true);
  migrate(db);
  expect(migrationsPending(db)).toBe(false);
  expect(footprint(db)).toEqual(migratedByDrizzle());
  expect(footprint(db).recorded).toEqual(
    journal.entries.map(({ when }, i) => ({ id: null, hash: MIGRATIONS[i]!.hash, created_at: when })),
  );
  db.close();
});

test('a database either migrator took part of the way is finished by the other as drizzle alone finishes it', () => {
  const whole = migratedByDrizzle();
  for (let count = 0; count < MIGRATIONS.length; count++) {
    const byDrizzle = freshDatabase();
    migrateWithDrizzle(byDrizzle, count);
    expect(migrationsPending(byDrizzle)).toBe(true);
    migrate(byDrizzle);
    expect(migrationsPending(byDrizzle)).toBe(false);
    expect(footprint(byDrizzle)).toEqual(whole);
    byDrizzle.close();

    const byUs = freshDatabase();
    migrate(byUs, MIGRATIONS.slice(0, count));
    migrateWithDrizzle(byUs, MIGRATIONS.length);
    expect(footprint(byUs)).toEqual(whole);
    byUs.close();
  }
});

test('a database with nothing to apply is left without the write lock: a command never waits for a busy server', () => {
  const path = join(tempDir(), 'ev-ingest.db');
  const server = openDatabase(path, 'fast');
  migrate(server);
  server.run('BEGIN IMMEDIATE');
  const command = openDatabase(path, 'fast');
  command.run('PRAGMA busy_timeout = 0'); // waiting for the lock would fail at once
  migrate(command);
  server.run('ROLLBACK');
  command.close();
  server.close();
});

/** A migration after the last one, made of `sql`. */
function extraMigration(...sql: string[]): MigrationMeta {
  return { sql, folderMillis: MIGRATIONS.at(-1)!.folderMillis + 1, hash: 'extra', bps: true };
}

function migrationFailure(db: Database, migrations: MigrationMeta[]): Error {
  try {
    migrate(db, migrations);
  } catch (error) {
    return error as Error;
  }
  throw new Error('migrate did not fail');
}

test('a migration that fails leaves the database as the run found it: nothing of the run applied or recorded', () => {
  const broken = extraMigration('CREATE TABLE `extra` (`x` integer)', 'INSERT INTO `nowhere` VALUES (1)');
  const earlier = freshDatabase();
  migrate(earlier, MIGRATIONS.slice(0, 1));
  const before = footprint(earlier);
  const failure = migrationFailure(earlier, [...MIGRATIONS, broken]); // those after the first, then the broken one
  expect(failure).toBeInstanceOf(StorageError);
  expect(failure.message).toBe('the database could not be migrated: no such table: nowhere');
  expect(footprint(earlier)).toEqual(before);
  expect(earlier.inTransaction).toBe(false);
  earlier.close();
  // On a fresh database not even the migrations table, which drizzle's migrator made before its transaction.
  const fresh = freshDatabase();
  expect(migrationFailure(fresh, [broken]).message).toBe('the database could not be migrated: no such table: nowhere');
  expect(footprint(fresh)).toEqual({ schema: [], recorded: null });
  fresh.close();
});

test("a migration part of two statements (a breakpoint forgotten) runs both; drizzle's migrator ran the first", () => {
  const db = freshDatabase();
  migrate(db, [
    ...MIGRATIONS,
    extraMigration('CREATE TABLE `first` (`x` integer);\nCREATE TABLE `second` (`y` integer);'),
  ]);
  expect(db.query("SELECT name FROM sqlite_master WHERE name IN ('first', 'second') ORDER BY name").values()).toEqual([
    ['first'],
    ['second'],
  ]);
  db.close();
});

/** migrate-child.ts started on `path`, once it has opened the database; `outcome` settles when it ends. */
async function openedMigratingProcess(path: string) {
  const child = Bun.spawn([process.execPath, CHILD, path], { stdout: 'pipe', stderr: 'pipe' });
  const outcome = Promise.all([child.exited, new Response(child.stderr).text()]).then(([code, stderr]) => ({
    code,
    stderr,
  }));
  let said = '';
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    said += decoder.decode(chunk, { stream: true });
    if (said.includes('opened\n')) break;
  }
  return { outcome };
}

// Lined up by a write lock the test holds: both get as far as their migrator goes before it writes,
// and both go on when the test lets go. Drizzle's migrator had read what was applied by then, and one
// of the two failed. (On a fresh file the first step, making the migrations table, is already a write
// that serialises the two whichever migrator runs, so that case guards nothing.)
test("drizzle's previous schema migrated by two processes at once: both succeed, each recorded once", async () => {
  const path = join(tempDir(), 'ev-ingest.db');
  const held = openDatabase(path, 'fast');
  migrateWithDrizzle(held, MIGRATIONS.length - 1);
  held.run('BEGIN IMMEDIATE');
  const processes = await Promise.all([openedMigratingProcess(path), openedMigratingProcess(path)]);
  await Bun.sleep(200); // from "opened" to waiting on the lock takes them well under a millisecond
  held.run('ROLLBACK');
  expect(await Promise.all(processes.map(({ outcome }) => outcome))).toEqual([
    { code: 0, stderr: '' },
    { code: 0, stderr: '' },
  ]);
  expect(footprint(held)).toEqual(migratedByDrizzle());
  held.close();
});

// SQLite refuses the WAL switch at once, without the busy timeout, while another connection holds a
// lock it would have to wait behind: as when two processes open a database that does not exist yet.
test('opening a new database whose lock another holds before the WAL switch waits, then migrates', async () => {
  const path = join(tempDir(), 'ev-ingest.db');
  writeFileSync(path, ''); // the empty file the service makes first
  const held = new Database(path);
  held.run('BEGIN IMMEDIATE');
  const child = Bun.spawn([process.execPath, CHILD, path], { stdout: 'pipe', stderr: 'pipe' });
  await Bun.sleep(300); // the child has met the lock long before this
  held.run('ROLLBACK');
  held.close();
  expect([await child.exited, await new Response(child.stderr).text()]).toEqual([0, '']);
  // The tries cut the busy timeout to what was left; the connection has its whole wait back after them.
  expect(await new Response(child.stdout).text()).toBe(`busy_timeout=${limits.databaseBusyMs}\nopened\n`);
  const db = new Database(path, { readonly: true });
  expect(db.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
  expect(migrationsPending(db)).toBe(false);
  db.close();
});

test(
  'the WAL switch gives up after the busy timeout, though the last lock it meets is exclusive and waited behind',
  async () => {
    const path = join(tempDir(), 'ev-ingest.db');
    writeFileSync(path, '');
    const held = new Database(path);
    held.run('BEGIN IMMEDIATE'); // refused at once: the child tries again and again
    const started = performance.now();
    const child = Bun.spawn([process.execPath, CHILD, path], { stdout: 'pipe', stderr: 'pipe' });
    await Bun.sleep(limits.databaseBusyMs - 1000);
    held.run('ROLLBACK');
    held.run('BEGIN EXCLUSIVE'); // now each try waits in SQLite's busy handler
    const code = await child.exited;
    const tookMs = performance.now() - started;
    held.run('ROLLBACK');
    held.close();
    expect([code, await new Response(child.stderr).text()]).toEqual([1, expect.stringContaining('database is locked')]);
    expect(tookMs).toBeLessThan(limits.databaseBusyMs + 1000); // not a second full timeout after the first
  },
  3 * limits.databaseBusyMs,
); // bun's default of 5 s is shorter than the wait this test makes
