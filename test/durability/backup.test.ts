/** `ev-ingest backup FILE` under load: the copy alone serves, and holds every write acknowledged before it began. */
import { Database } from 'bun:sqlite';
import { beforeAll, expect, test } from 'bun:test';
import {
  closeSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { BACKUP_USAGE, backupCommand } from '../../src/cli/backup.ts';
import type { LinkFile } from '../../src/db/backup.ts';
import {
  answer,
  consumptionChunk,
  finished,
  INSTALLATION,
  refusedStart,
  runDevicesCommand,
  startTestService,
  tempDir,
  testConfig,
} from '../support.ts';

const MAIN = resolve(import.meta.dir, '../../src/main.ts');

interface BackupOptions {
  /** The child inherits it. */
  umask?: number;
  /** A module Bun runs before the CLI. */
  preload?: string;
}

/** Starts `ev-ingest backup FILE` from the source, as a command of its own. */
function spawnBackup(databasePath: string, file: string, { umask = 0o022, preload }: BackupOptions = {}) {
  const previous = process.umask(umask);
  const child = Bun.spawn([process.execPath, ...(preload ? ['--preload', preload] : []), MAIN, 'backup', file], {
    env: { PATH: process.env.PATH ?? '', DATABASE_PATH: databasePath },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  process.umask(previous);
  return child;
}

const runBackup = (databasePath: string, file: string, options?: BackupOptions) =>
  finished(spawnBackup(databasePath, file, options));

// 1 km each: the history's km counts the chunks.
const chunk = (recordedAt: number) =>
  consumptionChunk({ recordedAt, day: { km: 1, kwh: 0.25, hours: 0.1, socDrop: 0.5 } });

test('a backup taken under load restores to a working database with every write acknowledged before it', async () => {
  const service = await startTestService({}, { dir: tempDir('ev-ingest-backup-') });
  const restoredDir = tempDir('ev-ingest-backup-');
  const file = join(restoredDir, 'ev-ingest.db');
  const acknowledged: number[] = [];
  let sending = true;
  let next = 1_764_000_000_000;
  const load = Array.from({ length: 8 }, async () => {
    while (sending) {
      const recordedAt = next++;
      const response = await service.request('PUT', '/v1/consumption/daily', { body: chunk(recordedAt) });
      expect(response.status).toBe(204);
      acknowledged.push(recordedAt);
    }
  });
  try {
    while (acknowledged.length < 300) await Bun.sleep(5);
    const before = [...acknowledged];
    const backup = await runBackup(service.config.databasePath, file);
    const during = acknowledged.length - before.length;
    sending = false;
    await Promise.all(load);
    expect(backup).toMatchObject({ code: 0, stderr: '' });
    expect(backup.stdout).toStartWith(`backup of ${service.config.databasePath} written to ${file} (`);
    expect(during).toBeGreaterThan(0); // the server went on writing while the copy was taken
    expect(readdirSync(restoredDir)).toEqual(['ev-ingest.db']); // one self-contained file, no -wal, no partial

    const restored = await startTestService({}, { dir: restoredDir });
    try {
      const stored = new Set(
        restored.storage.db
          .query<{ at: number }, []>('SELECT recorded_at AS at FROM consumption_chunks')
          .all()
          .map((row) => row.at),
      );
      expect(before.filter((at) => !stored.has(at))).toEqual([]);
      const history = await answer(await restored.request('GET', `/v1/consumption/history/${INSTALLATION}`));
      expect(history.status).toBe(200);
      expect((history.body as { records: { day: { km: number } }[] }).records[0]!.day.km).toBe(stored.size);
      expect(
        await answer(await restored.request('PUT', '/v1/consumption/daily', { body: chunk(1_700_000_000_001) })),
      ).toEqual({ status: 204, body: null });
      expect(restored.storage.db.query('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    } finally {
      await restored.close();
    }
  } finally {
    sending = false;
    await Promise.all(load);
    await service.close();
  }
});

test("a backup beside the old database's -wal refuses the start, both untouched; without it, it serves", async () => {
  const dir = tempDir('ev-ingest-backup-');
  const service = await startTestService({}, { dir });
  const path = service.config.databasePath;
  const copy = join(tempDir('ev-ingest-backup-'), 'copy.db');
  const staleWal = join(tempDir('ev-ingest-backup-'), 'stale-wal');
  try {
    expect((await service.request('PUT', '/v1/consumption/daily', { body: chunk(1_700_000_000_001) })).status).toBe(
      204,
    );
    expect((await runBackup(path, copy)).code).toBe(0);
    expect((await service.request('PUT', '/v1/consumption/daily', { body: chunk(1_700_000_000_002) })).status).toBe(
      204,
    );
    copyFileSync(`${path}-wal`, staleWal); // as a crash (or a restore that skipped the rm) would leave it
  } finally {
    await service.close();
  }
  copyFileSync(copy, path);
  copyFileSync(staleWal, `${path}-wal`);
  const walBytes = statSync(`${path}-wal`).size;
  expect(walBytes).toBeGreaterThan(32);

  const refusal =
    `DATABASE_PATH ${path} cannot be used: ${path}-wal (${walBytes} bytes) belongs to another database: ` +
    "this file is not in WAL mode (a backup put in place?), and SQLite would take that -wal's writes into it; " +
    `move ${path}-wal and its -shm away first (docs/operations.md: Backup and restore)`;
  expect((await refusedStart(testConfig(dir))).message).toBe(refusal);
  // A backup of it would take them in for good, as a start would.
  expect(await runBackup(path, join(dir, 'saved.db'))).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: ${refusal}\n`,
  });
  expect(await runDevicesCommand(path, ['list'])).toEqual({ code: 1, stdout: '', stderr: `ev-ingest: ${refusal}\n` });
  expect(readFileSync(path).equals(readFileSync(copy))).toBe(true);
  expect(readFileSync(`${path}-wal`).equals(readFileSync(staleWal))).toBe(true);

  renameSync(`${path}-wal`, join(dir, 'moved-away-wal'));
  const restored = await startTestService({}, { dir });
  try {
    expect(restored.storage.db.query('SELECT recorded_at AS at FROM consumption_chunks').all()).toEqual([
      { at: 1_700_000_000_001 },
    ]);
  } finally {
    await restored.close();
  }
});

test('backup refuses a FILE that exists, and a missing database, with a message and exit 1', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'live.db');
  new Database(source).close();
  const taken = join(dir, 'taken.db');
  writeFileSync(taken, 'keep me');
  expect(await runBackup(source, taken)).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: ${taken} already exists; choose a new file\n`,
  });
  const missing = join(dir, 'missing.db');
  expect(await runBackup(missing, join(dir, 'copy.db'))).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: no database at ${missing} (set DATABASE_PATH)\n`,
  });
  expect(existsSync(join(dir, 'copy.db'))).toBe(false);
  expect((await runBackup(source, '')).code).toBe(2);
});

test('backup refuses a FILE in a folder that does not exist, naming the folder, with exit 1', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'live.db');
  new Database(source).close();
  const absent = join(dir, 'absent');
  expect(await runBackup(source, join(absent, 'copy.db'))).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: the folder ${absent} does not exist\n`,
  });
  expect(readdirSync(dir)).toEqual(['live.db']);
});

test('backup refuses a FILE that is a dangling symbolic link before copying, as an existing file', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'live.db');
  new Database(source).close();
  const dangling = join(dir, 'dangling.db');
  symlinkSync(join(dir, 'nowhere.db'), dangling);
  expect(await runBackup(source, dangling)).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: ${dangling} already exists; choose a new file\n`,
  });
  expect(readdirSync(dir).sort()).toEqual(['dangling.db', 'live.db']);
});

// 022 lets everyone read a new file; 277 would leave even its owner unable to write it.
for (const umask of [0o022, 0o277]) {
  test(`the copy is readable and writable by its owner alone (0600) under the umask ${umask.toString(8)}`, async () => {
    const dir = tempDir('ev-ingest-backup-');
    const source = join(dir, 'live.db');
    new Database(source).run('CREATE TABLE t (x)');
    const file = join(dir, 'copy.db');
    expect((await runBackup(source, file, { umask })).code).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
}

test('a temporary copy that cannot be created is told as such, not as a failed removal of it', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'live.db');
  new Database(source).close();
  // A name of 248 bytes is allowed (255 at most); with `.partial-PID` appended it is not.
  const backup = await runBackup(source, join(dir, `${'a'.repeat(245)}.db`));
  expect(backup).toMatchObject({ code: 1, stdout: '' });
  expect(backup.stderr).toMatch(
    /^ev-ingest: backup failed: ENAMETOOLONG: name too long, open '[^']*\.db\.partial-\d+'\n$/,
  );
  expect(readdirSync(dir)).toEqual(['live.db']);
});

test('a copy whose Worker ends without an answer (killed) fails the backup with a message, not a hang', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'live.db');
  new Database(source).run('CREATE TABLE t (x)');
  const child = spawnBackup(source, join(dir, 'copy.db'), {
    preload: join(import.meta.dir, 'backup-worker-killed.ts'),
  });
  // A backup left waiting is stopped, so that it fails on its message rather than on the test's timeout.
  const waitedTooLong = setTimeout(() => child.kill('SIGTERM'), 3000);
  const backup = await finished(child);
  clearTimeout(waitedTooLong);
  expect(backup).toEqual({
    code: 1,
    stdout: '',
    stderr: 'ev-ingest: backup failed: the copy stopped without an answer\n',
  });
  expect(readdirSync(dir)).toEqual(['live.db']);
});

/** `backupCommand` on `args` in this process, with `link` (if given) in place of the file system's hard link. */
async function backupInProcess(databasePath: string, args: string[], link?: LinkFile) {
  let stdout = '';
  let stderr = '';
  const code = await backupCommand(
    args,
    (text) => (stdout += text),
    (text) => (stderr += text),
    { databasePath, link },
  );
  return { code, stdout, stderr };
}

/** `backupCommand` in this process, with `link` in place of the file system's hard link. */
const backupLinkingWith = (databasePath: string, file: string, link: LinkFile) =>
  backupInProcess(databasePath, [file], link);

/** A link refused as Node refuses one, with `code`; `meanwhile` runs first, as another process could. */
function refusedLink(code: string, meanwhile: (existing: string, target: string) => void = () => {}): LinkFile {
  return (existing, target) => {
    meanwhile(existing, target);
    throw Object.assign(new Error(`${code}: refused, link '${existing}' -> '${target}'`), {
      code,
      syscall: 'link',
      path: existing,
      dest: target,
    });
  };
}

/** A database of three rows in a folder of its own, and where its backup goes in another. */
function sourceAndBackupFolder() {
  const source = join(tempDir('ev-ingest-backup-'), 'live.db');
  const db = new Database(source);
  db.run('CREATE TABLE t (x)');
  db.run('INSERT INTO t VALUES (1), (2), (3)');
  db.close();
  return { source, dir: tempDir('ev-ingest-backup-') };
}

// FAT and exFAT (USB drives) refuse a hard link with EPERM; some network file systems with the others.
for (const code of ['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']) {
  test(`without links (${code}) the copy is renamed into place: whole, private, nothing beside it`, async () => {
    const { source, dir } = sourceAndBackupFolder();
    const file = join(dir, 'copy.db');
    const backup = await backupLinkingWith(source, file, refusedLink(code));
    expect(backup).toEqual({
      code: 0,
      stdout: `backup of ${source} written to ${file} (${statSync(file).size} bytes)\n`,
      stderr: '',
    });
    expect(readdirSync(dir)).toEqual(['copy.db']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const copy = new Database(file, { readonly: true });
    expect(copy.query('SELECT x FROM t ORDER BY x').all()).toEqual([{ x: 1 }, { x: 2 }, { x: 3 }]);
    copy.close();
  });
}

test('without links, a FILE that appeared during the copy is refused and left as it was', async () => {
  const { source, dir } = sourceAndBackupFolder();
  const file = join(dir, 'copy.db');
  const backup = await backupLinkingWith(
    source,
    file,
    refusedLink('EPERM', (_, target) => writeFileSync(target, 'keep me')),
  );
  expect(backup).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: EEXIST: file already exists, open '${file}'\n`,
  });
  expect(readdirSync(dir)).toEqual(['copy.db']);
  expect(readFileSync(file, 'utf8')).toBe('keep me');
});

test('a failed rename into place gives up the name it had taken for it too: nothing left behind', async () => {
  const { source, dir } = sourceAndBackupFolder();
  const file = join(dir, 'copy.db');
  const backup = await backupLinkingWith(
    source,
    file,
    refusedLink('EPERM', (partial) => rmSync(partial)),
  );
  expect(backup).toEqual({
    code: 1,
    stdout: '',
    stderr:
      'ev-ingest: backup failed: ENOENT: no such file or directory, ' +
      `rename '${file}.partial-${process.pid}' -> '${file}'\n`,
  });
  expect(readdirSync(dir)).toEqual([]);
});

test('a link refused for another reason fails the backup with its message and removes the copy', async () => {
  const { source, dir } = sourceAndBackupFolder();
  const file = join(dir, 'copy.db');
  const backup = await backupLinkingWith(source, file, refusedLink('EACCES'));
  expect(backup).toEqual({
    code: 1,
    stdout: '',
    stderr: `ev-ingest: backup failed: EACCES: refused, link '${file}.partial-${process.pid}' -> '${file}'\n`,
  });
  expect(readdirSync(dir)).toEqual([]);
});

test('backup takes one FILE: a second is refused with the usage, exit 2, and nothing is written', async () => {
  const { source, dir } = sourceAndBackupFolder();
  const [first, second] = [join(dir, 'first.db'), join(dir, 'second.db')];
  expect(await backupInProcess(source, [first, second])).toEqual({
    code: 2,
    stdout: '',
    stderr: `ev-ingest: usage:\n${BACKUP_USAGE}\n`,
  });
  expect(readdirSync(dir)).toEqual([]);
});

test('a partial copy that cannot be removed is named on stderr before why the backup failed', async () => {
  const { source, dir } = sourceAndBackupFolder();
  const file = join(dir, 'copy.db');
  const partial = `${file}.partial-${process.pid}`;
  // A folder in the partial copy's place: rmSync refuses it, as a read-only file system would the copy.
  const folderInItsPlace = refusedLink('EACCES', () => {
    rmSync(partial);
    mkdirSync(partial);
  });
  expect(await backupLinkingWith(source, file, folderInItsPlace)).toEqual({
    code: 1,
    stdout: '',
    stderr:
      `ev-ingest: could not remove ${partial}: Path is a directory: rm returned EISDIR (is a directory) ${partial}\n` +
      `ev-ingest: backup failed: EACCES: refused, link '${partial}' -> '${file}'\n`,
  });
  expect(readdirSync(dir)).toEqual([`copy.db.partial-${process.pid}`]);
});

// 100 MB: its copy lasts long enough (0.5 s here) to be stopped half-way.
let large = '';
beforeAll(() => {
  large = join(tempDir('ev-ingest-backup-'), 'large.db');
  const db = new Database(large);
  db.run('CREATE TABLE t (x BLOB)');
  db.run(
    'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000) ' +
      'INSERT INTO t SELECT randomblob(4000) FROM n',
  );
  db.close();
});

const modeOf = (path: string) => (lstatSync(path, { throwIfNoEntry: false })?.mode ?? 0) & 0o777;

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`a backup stopped by ${signal} half-way says so, exits 1 and removes its partial copy and journal`, async () => {
    const dir = tempDir('ev-ingest-backup-');
    const file = join(dir, 'copy.db');
    const child = spawnBackup(large, file);
    const partial = `${file}.partial-${child.pid}`;
    // The journal is there from VACUUM INTO's first write into the copy to its commit.
    const deadline = Date.now() + 10_000;
    while (modeOf(`${partial}-journal`) === 0 && child.exitCode === null && Date.now() < deadline) await Bun.sleep(1);
    const modes = [modeOf(partial), modeOf(`${partial}-journal`)];
    child.kill(signal);
    expect(await finished(child)).toEqual({
      code: 1,
      stdout: '',
      stderr: `ev-ingest: backup failed: stopped by ${signal}\n`,
    });
    expect(modes).toEqual([0o600, 0o600]); // both as private as the copy while it is written
    expect(readdirSync(dir)).toEqual([]);
  });
}

test('a copy that fails half-way (a damaged page of the source) leaves no file behind', async () => {
  const dir = tempDir('ev-ingest-backup-');
  const source = join(dir, 'damaged.db');
  const db = new Database(source);
  db.run('CREATE TABLE t (x BLOB)');
  for (let i = 0; i < 200; i++) db.query('INSERT INTO t VALUES (randomblob(3000))').run();
  db.close();
  const fd = openSync(source, 'r+');
  writeSync(fd, Buffer.alloc(20 * 4096, 0xab), 0, 20 * 4096, 60 * 4096); // pages 61-80 overwritten
  closeSync(fd);
  expect(await runBackup(source, join(dir, 'copy.db'))).toEqual({
    code: 1,
    stdout: '',
    stderr: 'ev-ingest: backup failed: database disk image is malformed\n',
  });
  expect(readdirSync(dir)).toEqual(['damaged.db']);
});
