/** Opening the database: what the service refuses to touch, and what survives a restart. */
import { Database } from 'bun:sqlite';
import { expect, test } from 'bun:test';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase, refusalOf, StorageError } from '../src/db/open.ts';
import { createPrivateFile, createPrivateFolders } from '../src/db/private-file.ts';
import { pendingSamplesReader } from '../src/planner/store.ts';
import { PlannerState } from '../src/telemetry/table.ts';
import { openStorage } from '../src/db/storage.ts';
import { WalSync } from '../src/db/wal-sync.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve } from '../src/server.ts';
import { tokenHash } from '../src/devices/token.ts';
import journal from '../drizzle/meta/_journal.json' with { type: 'json' };
import {
  immutable,
  INSTALLATION,
  migratedByNewerRefusal,
  migratedByNewerVersion,
  OTHER_INSTALLATION,
  refusedStart,
  runDevicesCommand,
  startTestService,
  tempDir,
  testConfig,
} from './support.ts';

const T0 = 1_764_080_000;

test('a file that is not an SQLite database is refused and left as it was', async () => {
  const path = join(tempDir(), 'notes.db');
  writeFileSync(path, 'my precious notes, not a database\n'.repeat(100));
  const refused = await openStorage({ databasePath: path, durability: 'full' }).catch((error: Error) => error);
  expect(refused).toBeInstanceOf(StorageError);
  expect((refused as Error).message).toBe(`DATABASE_PATH ${path} is not an SQLite database; refusing to open it`);
  expect(readFileSync(path, 'utf8')).toBe('my precious notes, not a database\n'.repeat(100));
});

test('a path that cannot hold a database is refused with one message naming DATABASE_PATH', async () => {
  const dir = tempDir();
  const file = join(dir, 'a-file');
  writeFileSync(file, '');
  for (const path of [join(file, 'ev.db'), dir]) {
    const refused = await openStorage({ databasePath: path, durability: 'full' }).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as Error).message).toStartWith(`DATABASE_PATH ${path} cannot be used: `);
    expect((refused as Error).message).not.toContain('\n');
  }
});

/** Overwrites the header of `name`'s root page (table or index) in a database closed cleanly: SQLite sees damage. */
function damageRootPage(path: string, name: string): void {
  const db = new Database(path, { readonly: true });
  const { page, size } = db
    .query<{ page: number; size: number }, [string]>(
      'SELECT rootpage AS page, (SELECT page_size FROM pragma_page_size) AS size FROM sqlite_master WHERE name = ?',
    )
    .get(name)!;
  db.close();
  const bytes = readFileSync(path);
  bytes.fill(0xff, (page - 1) * size, (page - 1) * size + 8);
  writeFileSync(path, bytes);
}

const damaged = (path: string) =>
  `DATABASE_PATH ${path} cannot be used: database disk image is malformed; ` +
  'restore a backup (docs/operations.md: Backup and restore)';

test('a damaged page only the start reads refuses it in one line, not a stack trace; the file left alone', async () => {
  const migrations = await startTestService({}, { dir: tempDir() });
  const path = migrations.config.databasePath;
  await migrations.close();
  damageRootPage(path, '__drizzle_migrations');
  const before = readFileSync(path);
  expect((await refusedStart(testConfig(tempDir(), { databasePath: path }))).message).toBe(damaged(path));
  expect(readFileSync(path).equals(before)).toBe(true);

  // The planner's outbox is read at start only with forwarding on.
  const outbox = await startTestService({}, { dir: tempDir() });
  const other = outbox.config.databasePath;
  await outbox.close();
  damageRootPage(other, 'samples_planner_pending');
  const planner = { url: 'http://127.0.0.1:9/', apiKey: 'key', defaultToken: 'token', tokens: new Map() };
  expect((await refusedStart(testConfig(tempDir(), { databasePath: other, planner }))).message).toBe(damaged(other));

  // Page 1's own b-tree (the schema), read as the file is opened.
  const schema = await startTestService({}, { dir: tempDir() });
  const third = schema.config.databasePath;
  await schema.close();
  const bytes = readFileSync(third);
  bytes.fill(0xff, 100, 108);
  writeFileSync(third, bytes);
  expect((await refusedStart(testConfig(tempDir(), { databasePath: third }))).message).toBe(damaged(third));
});

test('a full file system is named where SQLite says only "disk I/O error"; it starts once space is freed', async () => {
  const mountPoint = tempDir();
  // The tests run as root, as chattr's do.
  expect(Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mountPoint]).exitCode).toBe(0);
  try {
    const config = testConfig(join(mountPoint, 'data'));
    await (await startTestService({ databasePath: config.databasePath })).close();
    const filler = join(mountPoint, 'filler');
    Bun.spawnSync(['dd', 'if=/dev/zero', `of=${filler}`, 'bs=4k']); // until the file system is full
    expect((await refusedStart(config)).message).toBe(
      `DATABASE_PATH ${config.databasePath} cannot be used: ` +
        'disk I/O error; the file system holding it has no space left',
    );
    rmSync(filler);
    await (await startTestService({ databasePath: config.databasePath })).close();
  } finally {
    Bun.spawnSync(['umount', '-l', mountPoint]);
  }
});

test('a failure at start is refused in one line, with the advice its SQLite code calls for', () => {
  const path = join(tempDir(), 'ev.db'); // on a file system with space left
  const failure = (code: string, message: string) =>
    refusalOf(path, Object.assign(new Error(message), { code })).message;
  const advice = '; restore a backup (docs/operations.md: Backup and restore)';
  expect(failure('SQLITE_CORRUPT_INDEX', 'database disk image is malformed')).toBe(
    `DATABASE_PATH ${path} cannot be used: database disk image is malformed${advice}`,
  );
  expect(failure('SQLITE_NOTADB', 'file is not a database')).toBe(
    `DATABASE_PATH ${path} cannot be used: file is not a database${advice}`,
  );
  expect(failure('SQLITE_IOERR_SHMOPEN', 'disk I/O error')).toBe(
    `DATABASE_PATH ${path} cannot be used: disk I/O error`,
  ); // no full disk to blame
  expect(failure('EACCES', 'permission denied')).toBe(`DATABASE_PATH ${path} cannot be used: permission denied`);
  const made = new StorageError('already a refusal');
  expect(refusalOf(path, made)).toBe(made);
});

/** Why openStorage refuses `path`, or null when it opens. */
async function refusal(path: string): Promise<string | null> {
  const opened = await openStorage({ databasePath: path, durability: 'full' }).catch((error: Error) => error);
  if (opened instanceof Error) return opened.message;
  await opened.close();
  return null;
}

test('an unwritable database file or folder is refused in one line: DATABASE_PATH, what must be writable', async () => {
  const dir = tempDir();
  const locked = join(dir, 'locked');
  const existing = join(locked, 'real.db');
  expect(await refusal(existing)).toBeNull();
  const link = join(dir, 'link.db');
  symlinkSync(existing, link);
  const writable = join(dir, 'ev.db');
  expect(await refusal(writable)).toBeNull();
  const undo = [immutable(locked), immutable(writable)];
  try {
    expect(await refusal(join(locked, 'new.db'))).toBe(
      `DATABASE_PATH ${join(locked, 'new.db')} cannot be used: the folder ${locked} must be writable (EPERM); ` +
        'SQLite keeps new.db-wal and new.db-shm beside the file',
    );
    // Through a link the folder that counts is the real file's, where SQLite puts the -wal and -shm.
    expect(await refusal(link)).toBe(
      `DATABASE_PATH ${link} cannot be used: the folder ${locked} must be writable (EPERM); ` +
        'SQLite keeps real.db-wal and real.db-shm beside the file',
    );
    expect(await refusal(writable)).toBe(
      `DATABASE_PATH ${writable} cannot be used: the file ${writable} must be readable and writable (EPERM)`,
    );
  } finally {
    for (const undoOne of undo) undoOne();
  }
});

test.each(['-wal', '-shm'])(
  'a %s the server cannot read and write (a server run as another user left it) is refused naming it',
  async (suffix) => {
    const path = join(tempDir(), 'ev.db');
    expect(await refusal(path)).toBeNull();
    const holder = new Database(path); // keeps a WAL in place, as a crash would leave it
    holder.run('CREATE TABLE kept (x)');
    const undo = immutable(`${path}${suffix}`);
    try {
      expect(await refusal(path)).toBe(
        `DATABASE_PATH ${path} cannot be used: the file ${path}${suffix} must be readable and writable (EPERM); ` +
          `give it the database file's owner${suffix === '-wal' ? ', never delete it: it holds answered writes' : ''}`,
      );
    } finally {
      undo();
      holder.close();
    }
  },
);

test('a WAL that cannot be opened to sync is refused naming it', () => {
  const walPath = join(tempDir(), 'gone.db-wal');
  expect(() => new WalSync(walPath)).toThrow(
    new StorageError(`cannot open the WAL ${walPath} to sync it: ENOENT: no such file or directory, open '${walPath}'`),
  );
});

test('a database migrated by a newer ev-ingest: server and devices refuse it in one line, leave it alone', async () => {
  const dir = tempDir();
  const config = testConfig(dir);
  const path = config.databasePath;
  migratedByNewerVersion(path, [Date.UTC(2030, 0, 2), Date.UTC(2030, 5, 1, 12)]);
  const before = readFileSync(path);
  const refusal = migratedByNewerRefusal(
    path,
    '2 migrations this version does not know, the newest dated 2030-06-01T12:00:00.000Z',
  );
  const refused = await refusedStart(config);
  expect(refused).toBeInstanceOf(StorageError);
  expect(refused.message).toBe(refusal);
  expect(await runDevicesCommand(path, ['list'])).toEqual({ code: 1, stdout: '', stderr: `ev-ingest: ${refusal}\n` });
  expect(readFileSync(path)).toEqual(before);
  expect(readdirSync(dir)).toEqual(['ev-ingest.db']); // no lock file, no WAL
});

test("opens at this version's migrations, even with one recorded under another hash (edited later)", async () => {
  const path = join(tempDir(), 'ev.db');
  const db = openDatabase(path, 'fast');
  migrate(db);
  db.run("UPDATE __drizzle_migrations SET hash = 'edited since' WHERE created_at = ?", [journal.entries.at(-1)!.when]);
  db.close();
  expect(await refusal(path)).toBeNull();
});

const SQLITE3 = '/usr/bin/sqlite3';
const haveSqlite3 = existsSync(SQLITE3);
if (!haveSqlite3 && process.env.CI !== 'true') {
  console.warn(
    `\n!!! ${SQLITE3} is missing: SKIPPING the test of an sqlite3 shell beside the server ` +
      '(apt-get install sqlite3) !!!\n',
  );
}

/** What the `sqlite3` shell prints for `sql` on the database, run as an owner would, in a process of its own. */
function sqlite3(path: string, sql: string): string {
  const shell = Bun.spawnSync([SQLITE3, path, sql]);
  if (shell.exitCode !== 0) throw new Error(`sqlite3 failed: ${shell.stderr.toString()}`);
  return shell.stdout.toString().trim();
}

test.skipIf(!haveSqlite3 && process.env.CI !== 'true')(
  'an sqlite3 shell reading the live database leaves its WAL, so a write answered afterwards is kept',
  async () => {
    expect(existsSync(SQLITE3)).toBe(true); // under CI=true a missing shell fails
    const path = join(tempDir(), 'ev.db');
    const storage = await openStorage({ databasePath: path, durability: 'full' });
    try {
      const device = { installationId: INSTALLATION, name: null, createdAt: 1 };
      await storage.committer.write('insertDevice', { ...device, id: 'before', tokenHash: 'h1' });
      // Should the server hold no lock on the file, the shell takes itself for the last connection and deletes the WAL.
      expect(sqlite3(path, 'SELECT count(*) FROM devices')).toBe('1');
      expect(existsSync(`${path}-wal`)).toBe(true);
      await storage.committer.write('insertDevice', { ...device, id: 'after', tokenHash: 'h2' });
      expect(sqlite3(path, 'SELECT id FROM devices ORDER BY id')).toBe('after\nbefore');
    } finally {
      await storage.close();
    }
  },
);

test('the database folder is created, with WAL and the chosen durability', async () => {
  const path = join(tempDir(), 'nested', 'deeper', 'ev.db');
  const storage = await openStorage({ databasePath: path, durability: 'full' });
  expect(storage.db.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
  expect(storage.db.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 });
  // FULL: a write is answered after a sync of the WAL (run apart from the writer's NORMAL commits).
  await storage.committer.write('insertDevice', {
    id: 'd',
    installationId: INSTALLATION,
    name: null,
    tokenHash: 'h',
    createdAt: 1,
  });
  expect(storage.committer.stats.syncs).toBe(1);
  await storage.close();
});

test('a devices table that cannot be read refuses the start', async () => {
  const dir = tempDir();
  const storage = await openStorage({ databasePath: join(dir, 'ev-ingest.db'), durability: 'full' });
  storage.db.run('DROP TABLE devices');
  await storage.close();
  await expect(startTestService({}, { dir })).rejects.toThrow(StorageError);
});

test('a restart keeps paired devices whose token was collected, and revoked ones stay revoked', async () => {
  const dir = tempDir();
  const first = await startTestService({}, { dir });
  const base = { installationId: INSTALLATION, name: 'MG4', createdAt: 1 };
  await first.storage.committer.write('insertDevice', { ...base, id: 'kept', tokenHash: tokenHash('token-kept') });
  await first.storage.committer.write('markCollected', { id: 'kept' });
  await first.storage.committer.write('insertDevice', { ...base, id: 'gone', tokenHash: tokenHash('token-gone') });
  await first.storage.committer.write('markCollected', { id: 'gone' });
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

test('a database of the first schema keeps every sample across the move to numbered installations', async () => {
  const path = join(tempDir(), 'ev-ingest.db');
  const old = openDatabase(path, 'fast');
  migrate(old, embeddedMigrations().slice(0, 1)); // 0000_init: samples keyed by the text id
  const insert = old.query(
    'INSERT INTO samples (installation_id, utc, soc, car_model, planner_state) VALUES (?, ?, ?, ?, ?)',
  );
  insert.run(OTHER_INSTALLATION, T0, 60, null, PlannerState.sent);
  insert.run(INSTALLATION, T0, 50, 'mg:mg4', PlannerState.pending);
  insert.run(INSTALLATION, T0 + 1, 51, null, PlannerState.none);
  old.close();

  const storage = await openStorage({ databasePath: path, durability: 'fast' });
  try {
    const rows = storage.db
      .query(
        'SELECT uuid, utc, soc, car_model, planner_state FROM samples ' +
          'JOIN installations ON id = installation ORDER BY uuid, utc',
      )
      .all();
    expect(rows).toEqual([
      { uuid: OTHER_INSTALLATION, utc: T0, soc: 60, car_model: null, planner_state: PlannerState.sent },
      { uuid: INSTALLATION, utc: T0, soc: 50, car_model: 'mg:mg4', planner_state: PlannerState.pending },
      { uuid: INSTALLATION, utc: T0 + 1, soc: 51, car_model: null, planner_state: PlannerState.none },
    ]);
    expect(storage.db.query('SELECT count(*) AS n FROM installations').get()).toEqual({ n: 2 });
    // The waiting sample is still found for the planner, through the rebuilt index.
    expect(pendingSamplesReader(storage.db)(INSTALLATION, 10).map((row) => row.slice(0, 2))).toEqual([[T0, 50]]);
    expect(storage.db.query('PRAGMA foreign_key_check').all()).toEqual([]);
    expect(storage.db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
  } finally {
    await storage.close();
  }
});

test('a device without the collection mark (paired before it or by an earlier version) is collected', async () => {
  const dir = tempDir();
  const path = join(dir, 'ev-ingest.db');
  const old = openDatabase(path, 'fast');
  migrate(old, embeddedMigrations().slice(0, 3)); // 0000 to 0002: before awaiting_collection
  const add = (db: Database, id: string) =>
    db
      .query('INSERT INTO devices (id, installation_id, token_hash, created_at) VALUES (?, ?, ?, 7)')
      .run(id, INSTALLATION, tokenHash(`token-${id}`));
  add(old, 'before');
  old.close();

  const first = await startTestService({}, { dir });
  add(first.storage.db, 'beside'); // an earlier version's insert, on the migrated schema
  await first.close();
  const second = await startTestService({}, { dir });
  try {
    expect(
      second.storage.db.query('SELECT id, revoked_at, awaiting_collection FROM devices ORDER BY id').all(),
    ).toEqual([
      { id: 'before', revoked_at: null, awaiting_collection: 0 },
      { id: 'beside', revoked_at: null, awaiting_collection: 0 },
    ]);
    expect(second.devices.size).toBe(2);
  } finally {
    await second.close();
  }
});

test('a database of the second schema keeps its devices, and then counts their changes', async () => {
  const dir = tempDir();
  const old = openDatabase(join(dir, 'ev-ingest.db'), 'fast');
  migrate(old, embeddedMigrations().slice(0, 2)); // 0000 and 0001: before the devices' version
  const add = old.query(
    'INSERT INTO devices (id, installation_id, token_hash, created_at, revoked_at) VALUES (?, ?, ?, 1, ?)',
  );
  add.run('kept', INSTALLATION, tokenHash('token-kept'), null);
  add.run('gone', INSTALLATION, tokenHash('token-gone'), 2);
  old.close();

  const service = await startTestService({}, { dir });
  try {
    expect(service.devices.find(tokenHash('token-kept'))).toEqual({ id: 'kept', installationId: INSTALLATION });
    expect(service.devices.find(tokenHash('token-gone'))).toBeUndefined();
    const other = openDatabase(join(dir, 'ev-ingest.db'), 'fast');
    other.run("UPDATE devices SET revoked_at = 3 WHERE id = 'kept'");
    other.close();
    service.devices.reloadIfChanged();
    expect(service.devices.size).toBe(0);
  } finally {
    await service.close();
  }
});

test('missing folders are made private whatever the umask, each synced into its parent; others left alone', () => {
  const base = tempDir();
  const synced: string[] = [];
  const recordSync = (fd: number) => void synced.push(readlinkSync(`/proc/self/fd/${fd}`));
  const umask = process.umask(0o277); // takes even the owner's write bit from what mkdir makes
  try {
    createPrivateFolders(join(base, 'a', 'b', 'data'), recordSync);
  } finally {
    process.umask(umask);
  }
  const modes = ['a', 'a/b', 'a/b/data'].map((folder) => (statSync(join(base, folder)).mode & 0o777).toString(8));
  expect(modes).toEqual(['700', '700', '700']);
  expect(synced).toEqual([base, join(base, 'a'), join(base, 'a', 'b')]);
  synced.length = 0;
  createPrivateFolders(join(base, 'a', 'b', 'data'), recordSync);
  expect(synced).toEqual([]);
  // `m/..` names a folder that exists: made through the missing `m`, it keeps its mode.
  mkdirSync(join(base, 'shared'), { mode: 0o755 });
  createPrivateFolders(`${base}/m/../shared/ev`, recordSync); // not join(), which would drop `m/..`
  const modeOf = (folder: string) => (statSync(join(base, folder)).mode & 0o777).toString(8);
  expect([modeOf('shared'), modeOf('shared/ev'), modeOf('m')]).toEqual(['755', '700', '700']);
  expect(synced).toEqual([base, join(base, 'shared')]);
});

/** An error as `fchmod` throws it, with its code and syscall. */
function fchmodError(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: fchmod`), { code, syscall: 'fchmod' });
}

test('a private file is made where the file system keeps no modes (fusefat: fchmod ENOSYS), create mode kept', () => {
  const path = join(tempDir(), 'copy.db.partial');
  const umask = process.umask(0o022);
  try {
    createPrivateFile(path, () => {
      throw fchmodError('ENOSYS');
    });
  } finally {
    process.umask(umask);
  }
  expect(statSync(path).mode & 0o777).toBe(0o600);
});

test('a new private file whose mode cannot be set otherwise (EPERM: not its owner) is removed, failure thrown', () => {
  const dir = tempDir();
  for (const code of ['EIO', 'EPERM']) {
    expect(() =>
      createPrivateFile(join(dir, 'copy.db.partial'), () => {
        throw fchmodError(code);
      }),
    ).toThrow(`${code}: fchmod`);
    expect(readdirSync(dir)).toEqual([]);
  }
});

test('a private file is never made over an existing one, which is left as it was', () => {
  const path = join(tempDir(), 'copy.db.partial');
  writeFileSync(path, 'not ours');
  expect(() => createPrivateFile(path)).toThrow('EEXIST');
  expect(readFileSync(path, 'utf8')).toBe('not ours');
});

test('a database file with a second name (hard link) is warned of: it escapes the -wal and the lock', async () => {
  const warned = async (link: boolean) => {
    const dir = tempDir();
    const config = testConfig(dir);
    openDatabase(config.databasePath, 'fast').close();
    if (link) linkSync(config.databasePath, join(dir, 'snapshot.db'));
    const log = createMemoryLogger();
    const running = await serve(config, log);
    await running.stop();
    return log.lines.filter((line) => line.includes(' warn database.hard_linked '));
  };
  expect(await warned(false)).toEqual([]);
  expect(await warned(true)).toEqual([expect.stringContaining(' links=2 hint=')]);
});
