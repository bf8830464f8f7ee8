/** One server per database, in this process (the compiled binary's processes: test/binary.test.ts). */
import { afterEach, expect, test } from 'bun:test';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../src/config.ts';
import { embeddedMigrations } from '../src/db/migrations.macro.ts';
import { migrate } from '../src/db/migrate.ts';
import { openDatabase, StorageError } from '../src/db/open.ts';
import { takeServerLock } from '../src/db/server-lock.ts';
import { openStorage } from '../src/db/storage.ts';
import { createMemoryLogger } from '../src/log.ts';
import { serve, type Running } from '../src/server.ts';
import { immutable, refusedStart, runDevicesCommand, tempDir, testConfig } from './support.ts';

const servers: Running[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function started(config: Config): Promise<Running> {
  const server = await serve(config, createMemoryLogger());
  servers.push(server);
  return server;
}

const used = (path: string) =>
  `DATABASE_PATH ${path} is used by another ev-ingest server (or a command migrating it); ` +
  'refusing to start a second one';

async function health(server: Running): Promise<number> {
  return (await fetch(new URL('/v1/health', server.url))).status;
}

test('a second server on the same database is refused with one line, and the first goes on serving', async () => {
  const config = testConfig(tempDir());
  const first = await started(config);
  const refused = await refusedStart(config);
  expect(refused).toBeInstanceOf(StorageError);
  expect(refused.message).toBe(used(config.databasePath));
  expect(await health(first)).toBe(200);
  // The lock is held by the running server, not by a connection the garbage collector may close.
  Bun.gc(true);
  expect((await refusedStart(config)).message).toBe(used(config.databasePath));
  // Beside SQLite's own files only the lock, empty: nothing there to back up or to mistake for data.
  expect(readdirSync(dirname(config.databasePath)).sort()).toEqual([
    'ev-ingest.db',
    'ev-ingest.db-shm',
    'ev-ingest.db-wal',
    'ev-ingest.db.lock',
  ]);
  expect(statSync(`${config.databasePath}.lock`).size).toBe(0);
});

test('once the server has stopped, the next one starts on its database', async () => {
  const config = testConfig(tempDir());
  const first = await started(config);
  await first.stop();
  expect(await health(await started(config))).toBe(200);
});

test('every path to a database meets the same lock: a link to a file not yet created, a linked folder', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'real'));
  symlinkSync(join(dir, 'real', 'ev.db'), join(dir, 'link.db')); // dangling: SQLite creates the file it names
  symlinkSync(join(dir, 'real'), join(dir, 'folder'));
  await started(testConfig(dir, { databasePath: join(dir, 'link.db') }));
  expect(existsSync(join(dir, 'real', 'ev.db.lock'))).toBe(true);
  expect(statSync(join(dir, 'real', 'ev.db')).mode & 0o077).toBe(0); // made through the link, as private as any
  for (const path of [join(dir, 'real', 'ev.db'), join(dir, 'folder', 'ev.db')]) {
    expect((await refusedStart(testConfig(dir, { databasePath: path }))).message).toBe(used(path));
  }
});

test('two databases in one folder each have their server', async () => {
  const dir = tempDir();
  const a = await started(testConfig(dir, { databasePath: join(dir, 'a.db') }));
  const b = await started(testConfig(dir, { databasePath: join(dir, 'b.db') }));
  expect([await health(a), await health(b)]).toEqual([200, 200]);
});

test('a start refused after taking the lock (its port in use) gives the lock back: the next start serves', async () => {
  const taken = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') });
  const config = testConfig(tempDir());
  try {
    expect((await refusedStart({ ...config, port: taken.port! })).message).toStartWith(
      'cannot listen on HOST 127.0.0.1',
    );
  } finally {
    taken.stop(true);
  }
  expect(await health(await started(config))).toBe(200);
});

test('a lock file that cannot be made refuses the start, naming the database and the lock file', async () => {
  const config = testConfig(tempDir());
  mkdirSync(`${config.databasePath}.lock`); // a folder where the lock file should be
  const refused = await refusedStart(config);
  expect(refused).toBeInstanceOf(StorageError);
  expect(refused.message).toStartWith(
    `DATABASE_PATH ${config.databasePath} cannot be used: its lock file ${config.databasePath}.lock: `,
  );
  expect(refused.message).not.toContain('\n');
});

// Even root cannot write an immutable file: SQLite then opens it read-only, and its exclusive lock holds nothing.
test('a lock file the server cannot write refuses the start instead of leaving it without a lock', async () => {
  const config = testConfig(tempDir());
  const lockPath = `${config.databasePath}.lock`;
  writeFileSync(lockPath, '');
  const undo = immutable(lockPath);
  try {
    const refused = await refusedStart(config);
    expect(refused).toBeInstanceOf(StorageError);
    expect(refused.message).toBe(
      `DATABASE_PATH ${config.databasePath} cannot be used: ` +
        `its lock file ${lockPath} must be readable and writable (EPERM)`,
    );
  } finally {
    undo();
  }
});

/** A database of the schema before this version's, and `ev-ingest devices list` run on it in a process of its own. */
function earlierDatabase() {
  const path = join(tempDir(), 'ev-ingest.db');
  const db = openDatabase(path, 'fast');
  migrate(db, embeddedMigrations().slice(0, -1));
  const applied = () => db.query('SELECT count(*) AS n FROM __drizzle_migrations').get();
  const devicesList = async () => {
    const { code, stderr } = await runDevicesCommand(path, ['list']);
    return { code, stderr };
  };
  return { path, db, applied, devicesList };
}

test('a command migrating a database no server held makes no lock file: a server does, as its own user', async () => {
  const { path, db, applied, devicesList } = earlierDatabase();
  expect(await devicesList()).toEqual({ code: 0, stderr: '' });
  expect(applied()).toEqual({ n: embeddedMigrations().length });
  expect(existsSync(`${path}.lock`)).toBe(false);
  db.close();
});

test('a command migrates only where no server runs: beside an earlier one it refuses, schema untouched', async () => {
  const { path, db, applied, devicesList } = earlierDatabase();

  const earlierServer = takeServerLock(db, path); // held by this process, as a running server holds it
  expect(await devicesList()).toEqual({
    code: 1,
    stderr:
      `ev-ingest: DATABASE_PATH ${path} is served by an earlier ev-ingest (or one migrating it now), ` +
      'whose schema this version would change under it; ' +
      'stop that server and start this version first, or use that version for the command\n',
  });
  expect(applied()).toEqual({ n: embeddedMigrations().length - 1 });
  earlierServer.release();

  expect(await devicesList()).toEqual({ code: 0, stderr: '' }); // no server: it migrates
  expect(applied()).toEqual({ n: embeddedMigrations().length });
  const server = takeServerLock(db, path);
  expect(await devicesList()).toEqual({ code: 0, stderr: '' }); // beside a server of its own version
  server.release();
  db.close();
});

test('a command gives the lock back once it has migrated: a server starts while the command still runs', async () => {
  const { path, db } = earlierDatabase();
  takeServerLock(db, path).release(); // a server ran on it before: its lock file is there
  db.close();
  const command = await openStorage({ databasePath: path, durability: 'full' }); // migrates under the lock
  try {
    const config = testConfig(dirname(path), { databasePath: path });
    expect(await health(await started(config))).toBe(200);
  } finally {
    await command.close();
  }
});
