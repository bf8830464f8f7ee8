/** Opening the database: what the service refuses to touch, and what survives a restart. */
import { Database } from 'bun:sqlite';
import { expect, test } from 'bun:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StorageError } from '../src/db/open.ts';
import { openStorage } from '../src/db/storage.ts';
import { tokenHash } from '../src/devices/token.ts';
import journal from '../drizzle/meta/_journal.json' with { type: 'json' };
import { INSTALLATION, startTestService, tempDir } from './support.ts';

test('a file that is not an SQLite database is refused and left as it was', async () => {
  const path = join(tempDir(), 'notes.db');
  writeFileSync(path, 'my precious notes, not a database\n'.repeat(100));
  await expect(openStorage({ databasePath: path, durability: 'full' })).rejects.toThrow(
    `DATABASE_PATH ${path} is not an SQLite database; refusing to open it`,
  );
  expect(readFileSync(path, 'utf8')).toBe('my precious notes, not a database\n'.repeat(100));
});

test('the database folder is created, with WAL and the chosen durability', async () => {
  const path = join(tempDir(), 'nested', 'deeper', 'ev.db');
  const storage = await openStorage({ databasePath: path, durability: 'full' });
  expect(storage.db.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
  expect(storage.db.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 }); // FULL
  expect(storage.db.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 });
  await storage.close();
});

test('a devices table that cannot be read refuses the start', async () => {
  const dir = tempDir();
  const storage = await openStorage({ databasePath: join(dir, 'ev-ingest.db'), durability: 'full' });
  storage.db.run('DROP TABLE devices');
  await storage.close();
  await expect(startTestService({}, { dir })).rejects.toThrow(StorageError);
});

test('a restart keeps paired devices, and revoked ones stay revoked', async () => {
  const dir = tempDir();
  const first = await startTestService({}, { dir });
  const base = { installationId: INSTALLATION, name: 'MG4', createdAt: 1 };
  await first.storage.committer.write('insertDevice', { ...base, id: 'kept', tokenHash: tokenHash('token-kept') });
  await first.storage.committer.write('insertDevice', { ...base, id: 'gone', tokenHash: tokenHash('token-gone') });
  await first.storage.committer.write('revokeDevice', { id: 'gone', at: 2 });
  await first.close();

  const second = await startTestService({}, { dir });
  expect(second.devices.find(tokenHash('token-kept'))).toEqual({ id: 'kept', installationId: INSTALLATION });
  expect(second.devices.find(tokenHash('token-gone'))).toBeUndefined();
  await second.close();
  const raw = new Database(join(dir, 'ev-ingest.db'), { readonly: true });
  // Migrations ran once, not again at the restart.
  expect(raw.query('SELECT count(*) AS n FROM __drizzle_migrations').get()).toEqual({ n: journal.entries.length });
  raw.close();
});
