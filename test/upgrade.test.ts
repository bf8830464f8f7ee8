/**
 * The upgrade guard: a database migrated by a newer ev-ingest (here: this version's migrations plus one
 * added by the test, recorded by "2.99.0") is refused in one line naming both versions, and left as it was.
 */
import { Database } from 'bun:sqlite';
import { beforeAll, expect, test } from 'bun:test';
import type { MigrationMeta } from 'drizzle-orm/migrator';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase, StorageError } from '../src/db/open.ts';
import { VERSION } from '../src/version.ts';
import { compiledBinary, launchBinary, startBinary } from './binary.ts';
import { migratedByNewerRefusal, OWNER_TOKEN, refusedStart, tempDir, testConfig } from './support.ts';

const MIGRATIONS = embeddedMigrations();
const NEWER = '2.99.0';
const ADDED_AT = MIGRATIONS.at(-1)!.folderMillis + 86_400_000;

/** A migration this version does not have, as a newer build would ship it. */
const newerMigration: MigrationMeta = {
  sql: ['CREATE TABLE `newer_feature` (`x` integer)'],
  folderMillis: ADDED_AT,
  hash: 'newer',
  bps: true,
};

/** A database at `path` that the newer build migrated: this version's migrations, then its own, recorded as NEWER. */
function migratedByNewerBuild(path: string): void {
  const db = openDatabase(path, 'full');
  migrate(db, [...MIGRATIONS, newerMigration], NEWER);
  db.close();
}

const refusal = (path: string) =>
  migratedByNewerRefusal(
    path,
    `1 migration this version does not know, the newest dated ${new Date(ADDED_AT).toISOString()}`,
    NEWER,
  );

let binary: string;
beforeAll(async () => {
  binary = await compiledBinary();
}, 120_000);

test('the server refuses a database a newer build migrated, naming both versions, and changes nothing', async () => {
  const config = testConfig(tempDir());
  migratedByNewerBuild(config.databasePath);
  const before = readFileSync(config.databasePath);
  const refused = await refusedStart(config);
  expect(refused).toBeInstanceOf(StorageError);
  expect(refused.message).toBe(refusal(config.databasePath));
  expect(refused.message).toContain(`ev-ingest ${NEWER}, newer than this ${VERSION}`);
  expect(readFileSync(config.databasePath)).toEqual(before);
});

test('the compiled binary exits 1 with that one line, and leaves the file and its folder as they were', async () => {
  const cwd = tempDir();
  const path = join(cwd, 'ev.db');
  migratedByNewerBuild(path);
  const before = readFileSync(path);
  const start = await launchBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path }, cwd);
  expect(start).toEqual({ exited: { code: 1, stdout: '', stderr: `ev-ingest: ${refusal(path)}\n` } });
  expect(readFileSync(path)).toEqual(before);
  expect(readdirSync(cwd).filter((name) => !name.endsWith('.stdout.log'))).toEqual(['ev.db']); // no -wal, -shm or lock
});

test('a database this version migrates records it; a newer build that adds nothing does not block it', async () => {
  const cwd = tempDir();
  const path = join(cwd, 'ev.db');
  const server = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path }, cwd);
  expect(await server.stop()).toBe(0);
  const [major, minor, patch] = VERSION.split('.').map(Number) as [number, number, number];
  const db = new Database(path);
  expect(db.query('PRAGMA user_version').get()).toEqual({ user_version: major * 1_000_000 + minor * 1_000 + patch });
  db.close();
  // A newer build without migrations of its own migrates nothing, so it records nothing: this version still runs.
  const again = openDatabase(path, 'full');
  migrate(again, MIGRATIONS, NEWER);
  again.close();
  const restarted = await startBinary(binary, { INGEST_TOKEN: OWNER_TOKEN, DATABASE_PATH: path }, cwd);
  expect(await restarted.stop()).toBe(0);
});
