/** The write path: group commit on the writer thread, savepoints per write, whole-group failures. */
import { Database } from 'bun:sqlite';
import { afterEach, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { Committer } from '../src/db/committer.ts';
import { commitGroup, type WriteOp } from '../src/db/group.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open.ts';
import { openStorage, type Storage } from '../src/db/storage.ts';
import { tempDir, within } from './support.ts';

const device = (n: number) => ({
  id: `device-${n}`,
  installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
  name: `car ${n}`,
  tokenHash: `hash-${n}`,
  createdAt: 1_764_000_000_000 + n,
});

const open: Storage[] = [];
async function storageIn(dir = tempDir()) {
  const storage = await openStorage({ databasePath: join(dir, 'ev.db'), durability: 'full' });
  open.push(storage);
  return storage;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((storage) => within(storage.close(), 'closing the storage')));
});

const countDevices = (db: Database) => db.query<{ n: number }, []>('SELECT count(*) AS n FROM devices').get()!.n;

describe('Committer (the writer thread)', () => {
  test('concurrent writes share few transactions, and each is answered only once committed', async () => {
    const storage = await storageIn();
    const observer = new Database(storage.db.filename, { readonly: true });
    const seenAtAnswer: boolean[] = [];
    await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        storage.committer.write('insertDevice', device(n)).then(() => {
          // Another connection sees the row the moment the write is answered: it has committed.
          seenAtAnswer.push(observer.query('SELECT 1 FROM devices WHERE id = ?').get(`device-${n}`) !== null);
        }),
      ),
    );
    observer.close();
    expect(seenAtAnswer).toEqual(Array(200).fill(true));
    expect(storage.committer.stats.writes).toBe(200);
    expect(storage.committer.stats.groups).toBeLessThanOrEqual(20);
  });

  test('a group-size of one commits every write on its own (the benchmark baseline)', async () => {
    const dir = tempDir();
    const db = openDatabase(join(dir, 'ev.db'), 'fast');
    migrate(db);
    const committer = await Committer.start({ path: join(dir, 'ev.db'), durability: 'fast', maxGroupWrites: 1 });
    await Promise.all(Array.from({ length: 10 }, (_, n) => committer.write('insertDevice', device(n))));
    expect(committer.stats).toEqual({ groups: 10, writes: 10, syncs: 0 });
    await committer.close();
    db.close();
  });

  test('close() commits what is queued before it stops', async () => {
    const dir = tempDir();
    const storage = await openStorage({ databasePath: join(dir, 'ev.db'), durability: 'full' });
    const writes = Array.from({ length: 50 }, (_, n) => storage.committer.write('insertDevice', device(n)));
    await storage.close();
    await Promise.all(writes);
    const reopened = await storageIn(dir);
    expect(countDevices(reopened.db)).toBe(50);
  });

  test('a write after close is refused', async () => {
    const storage = await openStorage({ databasePath: join(tempDir(), 'ev.db'), durability: 'full' });
    await storage.close();
    await expect(storage.committer.write('insertDevice', device(1))).rejects.toThrow('the writer is closed');
  });
});

describe('commitGroup', () => {
  function databaseWithTable() {
    const db = openDatabase(join(tempDir(), 'group.db'), 'full');
    db.run('CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)');
    return db;
  }
  const ops: Record<string, WriteOp> = {
    put: (db, { id, bytes }: { id: number; bytes: number }) => {
      db.query('INSERT INTO blobs (id, data) VALUES (?, zeroblob(?))').run(id, bytes);
      return id;
    },
  };

  test('an I/O failure of the database (disk full) fails the whole group and leaves nothing half-written', () => {
    const db = databaseWithTable();
    const pages = db.query<{ page_count: number }, []>('PRAGMA page_count').get()!.page_count;
    db.run(`PRAGMA max_page_count = ${pages + 8}`); // room for a few pages only: the disk is "full"
    const outcomes = commitGroup(db, ops, [
      { op: 'put', args: { id: 1, bytes: 100 } },
      { op: 'put', args: { id: 2, bytes: 1_000_000 } },
      { op: 'put', args: { id: 3, bytes: 100 } },
    ]);
    expect(outcomes.map((outcome) => (outcome.ok ? 'ok' : `${outcome.error.scope}:${outcome.error.code}`))).toEqual([
      'group:SQLITE_FULL',
      'group:SQLITE_FULL',
      'group:SQLITE_FULL',
    ]);
    expect(db.inTransaction).toBe(false);
    expect(db.query('SELECT count(*) AS n FROM blobs').get()).toEqual({ n: 0 });

    // Space comes back: the same connection writes again without a restart.
    db.run('PRAGMA max_page_count = 1000000');
    expect(commitGroup(db, ops, [{ op: 'put', args: { id: 4, bytes: 100 } }])).toEqual([{ ok: true, value: 4 }]);
    expect(db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });
});

test('a writer that dies fails what it held and every later write, and close() still finishes', async () => {
  const storage = await storageIn();
  const failures: Error[] = [];
  storage.committer.onBroken = (error) => failures.push(error);
  await storage.committer.write('insertDevice', device(1));
  const pending = storage.committer.write('insertDevice', device(2));
  (storage.committer as unknown as { worker: Worker }).worker.terminate(); // the thread ends without an error
  await expect(within(pending, 'the failure of the write the writer held')).rejects.toThrow('writer exited');
  await expect(
    within(storage.committer.write('insertDevice', device(3)), 'the failure of a later write'),
  ).rejects.toThrow('writer exited');
  expect(failures.map((error) => error.message)).toEqual(['writer exited']);
  await within(storage.close(), 'closing the storage'); // settles though the writer can no longer answer its close
});
