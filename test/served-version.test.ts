/**
 * Each server start records its version in the database (SQLite's user_version) when it is newer than
 * the one recorded, migrations or not, so an older binary refused later names the newest that served it.
 */
import { Database } from 'bun:sqlite';
import { expect, test } from 'bun:test';
import { join } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { VERSION } from '../src/version.ts';
import { tempDir, testConfig } from './support.ts';

const [major, minor, patch] = VERSION.split('.').map(Number) as [number, number, number];
const THIS_VERSION = major * 1_000_000 + minor * 1_000 + patch;

/** A database of this schema whose user_version is `recorded`, as an earlier or a later release left it. */
function databaseRecording(recorded: number): string {
  const path = join(tempDir(), 'ev.db');
  const db = openDatabase(path, 'full');
  migrate(db);
  db.run(`PRAGMA user_version = ${recorded}`);
  db.close();
  return path;
}

const recordedIn = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.query<{ user_version: number }, []>('PRAGMA user_version').get()!.user_version;
  } finally {
    db.close();
  }
};

async function startAndStop(path: string): Promise<void> {
  const running = await serve({ ...testConfig(tempDir()), databasePath: path }, createMemoryLogger());
  await running.stop();
}

test('a start with no migration to apply records this version over the earlier release that left none', async () => {
  const path = databaseRecording(0);
  await startAndStop(path);
  expect(recordedIn(path)).toBe(THIS_VERSION);
  await startAndStop(path);
  expect(recordedIn(path)).toBe(THIS_VERSION);
});

test('a start never lowers the version a newer release recorded', async () => {
  const newer = THIS_VERSION + 1_000;
  const path = databaseRecording(newer);
  await startAndStop(path);
  expect(recordedIn(path)).toBe(newer);
});
